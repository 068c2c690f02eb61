//! The scenario's `[transport]` table applied to real Linux: each key the simulator models is
//! set where the kernel offers it (per socket, per route, per namespace), and a key the kernel
//! cannot follow is refused up front with one line, so a kernel baseline never runs on silent
//! defaults.
//!
//! | key | where | how |
//! |---|---|---|
//! | `cc` | socket | `TCP_CONGESTION` (cubic, reno) |
//! | `init_cwnd` | route, both ends | `initcwnd` (`tcp_init_cwnd`) |
//! | `min_rto` | route, both ends | `rto_min` (`tcp_rto_min`), whole milliseconds |
//! | `mss` | client routes | `advmss` (`tcp_advertise_mss`): what the client lets the server send |
//! | `send_buffer` | namespace | `net.ipv4.tcp_wmem` = 4096 16384 SIZE (`tcp_wmem[2]`) |
//! | `recv_buffer` | namespace / socket | unset: `tcp_rmem` = 4096 131072 6291456 (Linux's defaults, autotuned); a size: `SO_RCVBUFFORCE` + `TCP_WINDOW_CLAMP` on the client |
//! | `delayed_ack` | client routes | `false`: `quickack 1` (`tcp_in_quickack_mode`) |
//! | `slow_start_after_idle` | namespace | `net.ipv4.tcp_slow_start_after_idle` |
//! | `hystart` | machine | only `linux`, and only while `tcp_cubic`'s module parameters are Linux's defaults (they are machine-wide) |
//! | `nodelay` | server socket | `TCP_NODELAY` |
//! | `send_buffer_lock` | server socket | `SO_SNDBUFFORCE` = `send_buffer` / 2 (Linux doubles it): `sk_sndbuf` fixed at `send_buffer`, `SOCK_SNDBUF_LOCK` (MPTCP passes both to every subflow) |
//! | `pacing` | — | `true` refused: Linux paces CUBIC/Reno only under the `fq` qdisc, checked at run time |
//! | `receiver` | — | only `default`: the kernel's receiver has no R-TSC |
//!
//! The namespaces start from the machine's sysctls (`tcp_sk_init` copies `init_net`'s
//! `tcp_rmem`/`tcp_wmem`), so the buffer sysctls are always written, not only when a key is set.

use std::process::Command;

use mpsched_sim::scenario::{Scenario, MSS_BY_SCHEDULER};

use crate::emu::sys;
use crate::emu::topo::{Role, Topology};

/// Linux's `tcp_rmem` defaults (`tcp_init_mem`/`tcp_rmem` in net/ipv4/tcp.c): min, initial
/// (128 KiB), max (6 MiB), as the simulator's autotuned receiver assumes.
pub const TCP_RMEM_DEFAULT: [u64; 3] = [4096, 131_072, 6_291_456];
/// `tcp_wmem[0..2]`: min and initial send buffer.
pub const TCP_WMEM_LOW: [u64; 2] = [4096, 16_384];
/// Bytes of TCP options on every data segment: timestamps (12, with padding).
const TS_OPTION: u32 = 12;
/// MPTCP's DSS option on a data segment with a mapping and a data ACK, padded: with the
/// timestamps it leaves 1,420 bytes of a 1,460-byte advertised MSS (`mptcp_established_options`).
const DSS_OPTION: u32 = 28;
/// The advertised MSS of a 1,500-byte MTU: 1,500 less 20 bytes of IP and 20 of TCP header.
const ADVMSS_MTU: u32 = 1460;

/// What [`plan`] decided: every value in the kernel's units.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub cc: String,
    /// `ip route` attributes for the server's routes (the data sender).
    pub server_route: Vec<String>,
    /// `ip route` attributes for the client's routes (request sender, data receiver).
    pub client_route: Vec<String>,
    /// `sysctl -w` assignments for both end hosts' namespaces.
    pub sysctls: Vec<String>,
    /// A fixed receive buffer for the client socket, bytes.
    pub recv_buffer: Option<u64>,
    /// `TCP_NODELAY` on the server's (the sender's) sockets.
    pub nodelay: bool,
    /// The server's send buffer locked at this many bytes (`sk_sndbuf`).
    pub send_buffer_lock: Option<u64>,
}

/// Writes the plan's namespace sysctls on both end hosts and its attributes on their routes
/// (what sockets cannot carry; the socket options are the runner's own).
pub fn apply(t: &Topology, plan: &Plan) -> std::io::Result<()> {
    for role in [Role::Client, Role::Server] {
        sys::run(
            Command::new("ip")
                .args(["netns", "exec", &t.ns(role), "sysctl", "-qw"])
                .args(&plan.sysctls),
        )?;
    }
    t.set_route_metrics(&plan.server_route, &plan.client_route)
}

/// The plan for other programs' kernel TCP connections between the emulator's end hosts (the
/// proxy's subflows, `mpsched-emu up --transport`): the namespace and route half of
/// [`plan`] for single-path TCP; keys that would need options on sockets this program does
/// not open are refused.
pub fn plan_for_others(sc: &Scenario) -> Result<Plan, String> {
    let p = plan(sc, false)?;
    if p.recv_buffer.is_some() {
        return Err(
            "transport.recv_buffer: a fixed receive buffer is a socket option of \
                    the receiving program (SO_RCVBUF), not something the emulator can set"
                .into(),
        );
    }
    if p.nodelay {
        return Err(
            "transport.nodelay: TCP_NODELAY is a socket option of the sending \
                    program, not something the emulator can set"
                .into(),
        );
    }
    if p.send_buffer_lock.is_some() {
        return Err(
            "transport.send_buffer_lock: a fixed send buffer is a socket option of the \
                    sending program (SO_SNDBUF), not something the emulator can set"
                .into(),
        );
    }
    Ok(p)
}

/// Checks the scenario's transport against what the kernel runner can set for `mptcp` or
/// single-path TCP; `Err` is one line naming the key.
pub fn plan(sc: &Scenario, mptcp: bool) -> Result<Plan, String> {
    let t = &sc.transport;
    if !["cubic", "reno"].contains(&t.cc.as_str()) {
        return Err(format!(
            "transport.cc = {:?}: the kernel runner sets cubic or reno per socket (Linux has no {})",
            t.cc,
            if t.cc == "cubic-rfc9438" {
                "RFC 9438 CUBIC apart from tcp_cubic.c"
            } else {
                "such module here"
            }
        ));
    }
    if t.hystart != "linux" {
        return Err(format!(
            "transport.hystart = {:?}: Linux's CUBIC runs its classic HyStart (tcp_cubic.c); \
             turning it off or using HyStart++ is a machine-wide module setting the kernel runner \
             does not change",
            t.hystart
        ));
    }
    if t.pacing {
        return Err(
            "transport.pacing = true: Linux paces CUBIC and Reno only under the fq qdisc, which \
             the kernel runner does not install"
                .into(),
        );
    }
    if t.receiver != "default" {
        return Err(format!(
            "transport.receiver = {:?}: the kernel's receiver is Linux's own (simulator only)",
            t.receiver
        ));
    }
    let rto_ms = t.min_rto_s * 1e3;
    if rto_ms < 1.0 || (rto_ms - rto_ms.round()).abs() > 1e-6 {
        return Err(format!(
            "transport.min_rto = {} s: Linux's route rto_min takes whole milliseconds, at least 1 ms",
            t.min_rto_s
        ));
    }
    let rto = format!("{}ms", rto_ms.round() as u64);
    let server_route = vec![
        "initcwnd".into(),
        t.init_cwnd.to_string(),
        "rto_min".into(),
        rto.clone(),
    ];
    let mut client_route = server_route.clone();
    if t.mss != MSS_BY_SCHEDULER {
        let overhead = TS_OPTION + if mptcp { DSS_OPTION } else { 0 };
        let advmss = t.mss + overhead;
        if advmss > ADVMSS_MTU {
            return Err(format!(
                "transport.mss = {}: a 1,500-byte MTU carries at most {} bytes of {} payload",
                t.mss,
                ADVMSS_MTU - overhead,
                if mptcp { "MPTCP" } else { "TCP" }
            ));
        }
        client_route.extend(["advmss".into(), advmss.to_string()]);
    }
    if !t.delayed_ack {
        client_route.extend(["quickack".into(), "1".into()]);
    }
    let wmem = format!(
        "net.ipv4.tcp_wmem={} {} {}",
        TCP_WMEM_LOW[0], TCP_WMEM_LOW[1], t.send_buffer_bytes
    );
    let [r0, r1, r2] = TCP_RMEM_DEFAULT;
    let sysctls = vec![
        format!(
            "net.ipv4.tcp_slow_start_after_idle={}",
            u8::from(t.slow_start_after_idle)
        ),
        wmem,
        format!("net.ipv4.tcp_rmem={r0} {r1} {r2}"),
    ];
    Ok(Plan {
        cc: t.cc.clone(),
        server_route,
        client_route,
        sysctls,
        recv_buffer: t.recv_buffer_bytes,
        nodelay: t.nodelay,
        send_buffer_lock: t.send_buffer_lock.then_some(t.send_buffer_bytes),
    })
}

/// `tcp_cubic`'s module parameters as Linux ships them (`hystart=1`, `hystart_detect=3`,
/// `hystart_low_window=16`, `fast_convergence=1`, `beta=717`): the simulator's `cubic`
/// follows those, so a machine that changed them is refused.
pub fn check_cubic_module() -> Result<(), String> {
    let dir = std::path::Path::new("/sys/module/tcp_cubic/parameters");
    if !dir.exists() {
        return Ok(()); // built in without parameters exposed, or not loaded yet: defaults
    }
    for (name, want) in [
        ("hystart", "1"),
        ("hystart_detect", "3"),
        ("hystart_low_window", "16"),
        ("fast_convergence", "1"),
        ("beta", "717"),
    ] {
        if let Ok(got) = std::fs::read_to_string(dir.join(name)) {
            if got.trim() != want {
                return Err(format!(
                    "tcp_cubic's {name} is {} on this machine (Linux's default {want}); the \
                     simulator's cubic follows the default, so the kernel run would not compare",
                    got.trim()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_sim::scenario::{PathSpec, Transport, Workload};

    fn scenario(t: Transport) -> Scenario {
        Scenario {
            paths: vec![PathSpec::bottleneck("p", 10e6, 0.05, 0.05, 0.0)],
            workload: Workload::Chunk {
                size_bytes: 1 << 20,
            },
            transport: t,
            sim: Default::default(),
        }
    }

    fn refusal(t: Transport) -> String {
        plan(&scenario(t), true).expect_err("refused")
    }

    #[test]
    fn defaults_set_linux_values_everywhere() {
        let p = plan(&scenario(Transport::default()), true).unwrap();
        assert_eq!(p.cc, "cubic");
        assert_eq!(p.server_route, ["initcwnd", "10", "rto_min", "200ms"]);
        // No advmss: the kernel's own MSS is the simulator's default for each mode.
        assert_eq!(p.client_route, p.server_route);
        assert!(p
            .sysctls
            .contains(&"net.ipv4.tcp_rmem=4096 131072 6291456".to_string()));
        assert!(p
            .sysctls
            .contains(&"net.ipv4.tcp_wmem=4096 16384 4194304".to_string()));
        assert_eq!(p.recv_buffer, None);
    }

    #[test]
    fn mss_becomes_advmss_with_the_options_of_each_mode() {
        let t = Transport {
            mss: 1000,
            ..Transport::default()
        };
        let tcp = plan(&scenario(t.clone()), false).unwrap();
        let mptcp = plan(&scenario(t), true).unwrap();
        assert!(tcp
            .client_route
            .ends_with(&["advmss".into(), "1012".into()]));
        assert!(mptcp
            .client_route
            .ends_with(&["advmss".into(), "1040".into()]));
        assert!(!tcp.server_route.contains(&"advmss".to_string()));
    }

    #[test]
    fn mss_beyond_the_mtu_is_refused() {
        let e = refusal(Transport {
            mss: 1448,
            ..Transport::default()
        });
        assert!(e.contains("at most 1420 bytes of MPTCP"), "{e}");
        let ok = plan(
            &scenario(Transport {
                mss: 1448,
                ..Transport::default()
            }),
            false,
        );
        assert!(ok.is_ok(), "1,448 B is single-path TCP's full MSS");
    }

    #[test]
    fn send_buffer_lock_is_the_server_sockets_and_refused_to_other_programs() {
        let t = Transport {
            send_buffer_lock: true,
            send_buffer_bytes: 16 << 20,
            ..Transport::default()
        };
        let p = plan(&scenario(t.clone()), true).unwrap();
        assert_eq!(p.send_buffer_lock, Some(16 << 20));
        assert_eq!(
            plan(&scenario(Transport::default()), true)
                .unwrap()
                .send_buffer_lock,
            None
        );
        let e = plan_for_others(&scenario(t)).expect_err("refused");
        assert!(e.starts_with("transport.send_buffer_lock:"), "{e}");
    }

    #[test]
    fn delayed_ack_off_is_quickack_on_the_client() {
        let p = plan(
            &scenario(Transport {
                delayed_ack: false,
                init_cwnd: 4,
                min_rto_s: 1.0,
                ..Transport::default()
            }),
            true,
        )
        .unwrap();
        assert_eq!(p.server_route, ["initcwnd", "4", "rto_min", "1000ms"]);
        assert!(p.client_route.ends_with(&["quickack".into(), "1".into()]));
    }

    #[test]
    fn what_linux_cannot_do_is_refused_with_the_key() {
        for (t, key) in [
            (
                Transport {
                    cc: "lia".into(),
                    ..Transport::default()
                },
                "transport.cc",
            ),
            (
                Transport {
                    cc: "cubic-rfc9438".into(),
                    ..Transport::default()
                },
                "transport.cc",
            ),
            (
                Transport {
                    hystart: "off".into(),
                    ..Transport::default()
                },
                "transport.hystart",
            ),
            (
                Transport {
                    pacing: true,
                    ..Transport::default()
                },
                "transport.pacing",
            ),
            (
                Transport {
                    receiver: "rtsc".into(),
                    ..Transport::default()
                },
                "transport.receiver",
            ),
            (
                Transport {
                    min_rto_s: 0.2005,
                    ..Transport::default()
                },
                "transport.min_rto",
            ),
        ] {
            let e = refusal(t);
            assert!(e.starts_with(key), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
