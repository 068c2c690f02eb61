//! The connection timeline as Linux opens an MPTCP connection (crates/sim/src/world.rs, `Ctl`):
//! handshake on the initial subflow, the request in the third ACK, MP_JOIN on the other paths
//! once the first DSS data-ACK reaches the client, uplink rates on every client packet, and
//! trace links whose packets fit mahimahi's 1,504-byte delivery opportunities.
//!
//! Expected times are computed from the scenario (propagation plus serialization); they compare
//! against the kernel's sequence, not against the simulator's own output.

use mpsched_core::packet::data_header_bytes;
use mpsched_sim::framing::{data_wire_bytes, ETHERNET_BYTES};
use mpsched_sim::scenario::{LinkSpec, PathSpec, Scenario, SimOptions, Transport, Workload};
use mpsched_sim::world::REQUEST_BYTES;
use serde_json::Value;

const MIB: u64 = 1 << 20;
/// Linux MPTCP data segments carry 1,420 bytes (`transport.mss` unset, multipath scheduler).
const MSS: f64 = mpsched_sim::scenario::MSS_MPTCP as f64;

fn scenario(paths: Vec<PathSpec>, workload: Workload) -> Scenario {
    Scenario {
        paths,
        workload,
        transport: Transport::default(),
        sim: SimOptions::default(),
    }
}

/// The DEMS WiFi/LTE profile (Guo et al., MobiCom 2017, §3.2) with LTE RTT `lte_rtt`.
fn wifi_lte(lte_rtt: f64) -> Vec<PathSpec> {
    vec![
        PathSpec::bottleneck("wifi", 7_040e3, 0.050, 0.050, 0.0),
        PathSpec::bottleneck("lte", 9_185e3, lte_rtt, 0.500, 0.0),
    ]
}

fn chunk(size_bytes: u64) -> Workload {
    Workload::Chunk { size_bytes }
}

fn run(sc: &Scenario, sched: &str) -> Value {
    let v = mpsched_sim::run(sc, sched, 1).unwrap_or_else(|e| panic!("{sched}: {e}"));
    assert_eq!(v["truncated"], false, "{sched}: run cut short");
    v
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

fn established(v: &Value, path: &str) -> Option<f64> {
    v["established_s_by_path"][path].as_f64()
}

/// Serialization time of `bytes` at `rate_bps`.
fn ser(bytes: u32, rate_bps: f64) -> f64 {
    f64::from(bytes) * 8.0 / rate_bps
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// `tcp_v4_connect` sends the SYN at connect(); the server's subflow is established when the
/// third ACK arrives (`tcp_rcv_state_process`, TCP_SYN_RECV), 1.5 RTTs later, plus the SYN/ACK's
/// serialization on the 7.04 Mbit/s downlink (the uplink is unlimited here): 76 bytes of IP
/// packet in an Ethernet frame.
#[test]
fn fresh_connection_initial_subflow_established_after_one_and_a_half_rtt() {
    let v = run(&scenario(wifi_lte(0.070), chunk(MIB)), "minrtt");
    let expect = 0.075 + ser(76 + ETHERNET_BYTES, 7_040e3);
    let got = established(&v, "wifi").expect("wifi established");
    assert!(
        close(got, expect, 1e-6),
        "wifi established at {got}, expected {expect}"
    );
}

/// The client joins LTE when the server's first DSS data-ACK arrives on WiFi
/// (`check_fully_established`, net/mptcp/options.c, then `mptcp_pm_fully_established` and
/// `mptcp_pm_create_subflow_or_signal_addr`, net/mptcp/pm_kernel.c): about 2 WiFi RTTs after
/// the SYN; the server may send on LTE 1.5 LTE RTTs after the join (RFC 8684 §3.2). At 270 ms
/// the kernel made LTE usable 0.43 s after WiFi.
#[test]
fn join_after_first_dss_lte_usable_0_43_s_after_wifi_at_270ms() {
    let v = run(&scenario(wifi_lte(0.270), chunk(MIB)), "minrtt");
    let wifi = established(&v, "wifi").unwrap();
    let lte = established(&v, "lte").unwrap();
    // First data on WiFi: the request reaches the server at `wifi`, the first segment arrives
    // one WiFi one-way delay and its serialization later; then SYN, SYN/ACK, ACK on LTE.
    let first_data = wifi + 0.025 + ser(data_wire_bytes(MSS as u32, true, false), 7_040e3);
    let expect = first_data + 0.405 + ser(76 + ETHERNET_BYTES, 9_185e3);
    println!(
        "wifi established {wifi:.4} s, lte {lte:.4} s (expected {expect:.4}), gap {:.3} s",
        lte - wifi
    );
    assert!(
        close(lte, expect, 1e-6),
        "lte established at {lte}, expected {expect}"
    );
    assert!(
        close(lte - wifi, 0.43, 0.005),
        "LTE usable {} s after WiFi",
        lte - wifi
    );
}

/// `download_time_s` runs from connect (the SYN), as the user waits; `server_download_time_s`
/// from the request's arrival: on a fresh connection they differ by the time the request took
/// to reach the server, i.e. when the initial subflow was established.
#[test]
fn download_time_from_connect_server_time_from_request() {
    let v = run(&scenario(wifi_lte(0.070), chunk(MIB)), "dems-f");
    let diff = f(&v, "download_time_s") - f(&v, "server_download_time_s");
    let wifi = established(&v, "wifi").unwrap();
    assert!(
        close(diff, wifi, 1e-9),
        "client - server = {diff}, established {wifi}"
    );
}

/// On an established connection (a chunk train) later chunks need no handshake: their client
/// time exceeds the server's by the request's one-way trip only.
#[test]
fn later_chunks_start_from_the_request_without_handshake() {
    let sc = scenario(
        wifi_lte(0.070),
        Workload::Chunks {
            size_bytes: 256 << 10,
            count: 2,
            think_s: 0.1,
            hint: true,
        },
    );
    let v = run(&sc, "minrtt");
    let client = v["chunk_times_s"][1].as_f64().unwrap();
    let server = v["server_chunk_times_s"][1].as_f64().unwrap();
    assert!(
        close(client - server, 0.025, 1e-9),
        "chunk 1: {client} - {server}"
    );
}

/// A single-path connection is plain TCP over its path: the handshake on that path, no joins.
#[test]
fn single_path_connection_gets_its_own_handshake_and_no_join() {
    let v = run(&scenario(wifi_lte(0.070), chunk(MIB)), "single:lte");
    let lte = established(&v, "lte").expect("lte established");
    assert!(
        close(lte, 0.105 + ser(76 + ETHERNET_BYTES, 9_185e3), 1e-6),
        "lte at {lte}"
    );
    assert_eq!(established(&v, "wifi"), None);
    let v = run(
        &scenario(vec![wifi_lte(0.070).remove(1)], chunk(MIB)),
        "minrtt",
    );
    assert!(close(established(&v, "lte").unwrap(), lte, 1e-12));
}

/// A split that gives the initial subflow nothing still joins: the server's ACK of the request
/// carries the DSS data-ACK (`check_fully_established`: "subflows are fully established as soon
/// as we get any additional ack").
#[test]
fn no_data_on_initial_subflow_request_ack_still_triggers_join() {
    let v = run(&scenario(wifi_lte(0.070), chunk(MIB)), "fixed-split:0");
    let wifi = established(&v, "wifi").unwrap();
    // The request's ACK is a pure ACK (80 bytes at the IP layer), framed like every packet.
    let ack = mpsched_core::packet::ACK_HEADER_BYTES + ETHERNET_BYTES;
    let expect = wifi + 0.025 + ser(ack, 7_040e3) + 0.105 + ser(76 + ETHERNET_BYTES, 9_185e3);
    assert!(close(established(&v, "lte").unwrap(), expect, 1e-6));
    assert_eq!(v["bytes_by_path"]["wifi"], 0);
}

/// Uplink rates (`reverse_rate`; Guo et al., MobiCom 2017, §3.2 footnote 2: WiFi 2,020 kbit/s
/// up) delay the SYN and the third ACK carrying the request by their serialization.
#[test]
fn uplink_rate_delays_handshake_and_request() {
    let mut paths = wifi_lte(0.070);
    paths[0].reverse.rate_bps = Some(2_020e3);
    let v = run(&scenario(paths, chunk(MIB)), "minrtt");
    // Every packet is an Ethernet frame on these constant-rate links: SYN (72 bytes at the IP
    // layer), SYN/ACK (76), and the third ACK carrying the request as an MPTCP data segment.
    let frame = |ip: u32| ip + ETHERNET_BYTES;
    let expect = 0.075
        + ser(frame(72), 2_020e3)
        + ser(frame(76), 7_040e3)
        + ser(frame(data_header_bytes(true) + REQUEST_BYTES), 2_020e3);
    let got = established(&v, "wifi").unwrap();
    assert!(
        close(got, expect, 1e-6),
        "wifi established at {got}, expected {expect}"
    );
}

/// A SYN lost to an outage is sent again after Linux's initial RTO (`TCP_TIMEOUT_INIT`, 1 s,
/// `tcp_retransmit_timer`).
#[test]
fn syn_dropped_by_outage_is_retried_after_the_initial_rto() {
    let mut paths = wifi_lte(0.070);
    paths[0].reverse.outages = vec![(0.0, 0.5)];
    let v = run(&scenario(paths, chunk(256 << 10)), "minrtt");
    let got = established(&v, "wifi").unwrap();
    assert!(
        close(got, 1.075 + ser(76 + ETHERNET_BYTES, 7_040e3), 1e-6),
        "wifi established at {got}"
    );
}

/// Trace links carry packets no larger than the 1,500-byte MTU (mahimahi refuses anything over
/// its 1,504-byte `PACKET_SIZE`, src/frontend/link_queue.cc): a configured MSS is clamped so a
/// data packet with its headers fits (TCP: 52 bytes, MPTCP: 80). Linux's own MSS fits as is.
#[test]
fn trace_link_clamps_mss_to_the_mtu() {
    let dir = std::env::temp_dir().join(format!("mpsched-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("one-per-ms.down");
    let text: String = (1..=100).map(|ms| format!("{ms}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let mut p = PathSpec::bottleneck("wifi", 1.0, 0.050, 0.050, 0.0);
    p.forward = LinkSpec {
        rate_bps: None,
        trace: Some(file.to_string_lossy().into()),
        ..p.forward
    };
    let mut sc = scenario(vec![p], chunk(MIB));
    let mss = |sc: &Scenario, sched: &str, mptcp| {
        mpsched_sim::effective_mss(&sc.resolved_for(sched), mptcp)
    };
    assert_eq!(mss(&sc, "single", false), 1448);
    assert_eq!(mss(&sc, "minrtt", true), 1420);
    // A 1,460-byte MSS (no timestamps' worth taken off) does not fit either way.
    sc.transport.mss = 1460;
    assert_eq!(mss(&sc, "single", false), 1448);
    assert_eq!(mss(&sc, "minrtt", true), 1420);
    let v = run(&sc, "single");
    // Every full segment is one packet of exactly the MTU: the chunk needs ⌈S / 1448⌉ of them.
    let packets = f(&v, "data_packets");
    let retx: f64 = f(&v["retransmissions_by_path"], "wifi");
    assert_eq!(packets - retx, (MIB as f64 / 1448.0).ceil());
    let _ = std::fs::remove_dir_all(&dir);
}
