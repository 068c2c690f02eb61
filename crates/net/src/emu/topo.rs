//! The emulated network: three namespaces per instance and, per path, one veth pair between the
//! client and the router and one between the router and the server.
//!
//! ```text
//!  mps-ID-c            mps-ID-r (the emulator reads/writes here)          mps-ID-s
//!  c0 10.200.0.1 ==== rc0 --[reverse link 0]<--  <--[forward link 0]-- rs0 ==== s0 10.200.0.2
//!  c1 10.200.1.1 ==== rc1 ...                                          rs1 ==== s1 10.200.1.2
//! ```
//!
//! The router's interfaces carry no address: the emulator bridges frames between `rcI` and `rsI`
//! through the path's two links, so client and server of a path share one Ethernet segment.
//! Neighbours are static (no ARP crosses the emulated links: it would add one RTT to the first
//! packet of every path). The client routes by source address (one table per path), so an MPTCP
//! subflow bound to path I's address leaves on path I whatever the server address it joins.

use std::io;
use std::process::Command;

use super::sys;

/// One emulator instance's names and addresses.
#[derive(Clone, Debug)]
pub struct Topology {
    pub id: String,
    pub paths: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Router,
    Server,
}

impl Topology {
    pub fn new(id: &str, paths: &[String]) -> Topology {
        Topology {
            id: id.to_string(),
            paths: paths.to_vec(),
        }
    }

    pub fn ns(&self, role: Role) -> String {
        let r = match role {
            Role::Client => "c",
            Role::Router => "r",
            Role::Server => "s",
        };
        format!("mps-{}-{}", self.id, r)
    }

    pub fn namespaces(&self) -> Vec<String> {
        [Role::Client, Role::Router, Role::Server]
            .iter()
            .map(|&r| self.ns(r))
            .collect()
    }

    pub fn client_addr(&self, path: usize) -> String {
        format!("10.200.{path}.1")
    }

    pub fn server_addr(&self, path: usize) -> String {
        format!("10.200.{path}.2")
    }

    /// The /24 both ends of `path` sit in.
    fn subnet(path: usize) -> String {
        format!("10.200.{path}.0/24")
    }

    /// The client's routing table for source addresses of `path`.
    fn table(path: usize) -> String {
        (100 + path).to_string()
    }

    /// Re-states every route with route attributes (`initcwnd`, `rto_min`, `advmss`,
    /// `quickack`, ...): `server` on the server's connected routes, `client` on the client's
    /// connected routes and on its per-path tables (bound subflows and single-path runs route
    /// by source address).
    pub fn set_route_metrics(&self, server: &[String], client: &[String]) -> io::Result<()> {
        for i in 0..self.paths.len() {
            let (ca, sa, net, table) = (
                self.client_addr(i),
                self.server_addr(i),
                Self::subnet(i),
                Self::table(i),
            );
            let (ci, si) = (format!("c{i}"), format!("s{i}"));
            let link: &[&str] = &["proto", "kernel", "scope", "link"];
            let in_table: &[&str] = &["table", &table];
            for (role, head, tail, attrs) in [
                (Role::Server, [&net, "dev", &si, "src", &sa], link, server),
                (Role::Client, [&net, "dev", &ci, "src", &ca], link, client),
                (
                    Role::Client,
                    ["default", "via", &sa, "dev", &ci],
                    in_table,
                    client,
                ),
            ] {
                let mut args: Vec<&str> = vec!["route", "replace"];
                args.extend(head);
                args.extend(tail);
                args.extend(attrs.iter().map(String::as_str));
                self.ip(role, &args)?;
            }
        }
        Ok(())
    }

    fn mac(path: usize, host: u8) -> String {
        format!("02:00:00:00:{path:02x}:{host:02x}")
    }

    fn ip(&self, role: Role, args: &[&str]) -> io::Result<()> {
        sys::run(Command::new("ip").arg("-n").arg(self.ns(role)).args(args))
    }

    fn sysctl(&self, role: Role, settings: &[&str]) -> io::Result<()> {
        sys::run(
            Command::new("ip")
                .args(["netns", "exec", &self.ns(role), "sysctl", "-qw"])
                .args(settings),
        )
    }

    /// Creates the namespaces and links. On error the caller must call [`Topology::destroy`].
    pub fn create(&self) -> io::Result<()> {
        for ns in self.namespaces() {
            sys::run(Command::new("ip").args(["netns", "add", &ns]))?;
        }
        for role in [Role::Client, Role::Router, Role::Server] {
            // No IPv6 (router solicitations, DAD) on the emulated links; no reverse-path filter
            // (a subflow to the server's path-0 address arrives on another path's interface);
            // no TCP metrics cache, so that every download starts as a fresh connection would
            // on a fresh host (no ssthresh or RTT carried over from the previous repetition).
            self.sysctl(
                role,
                &[
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0",
                    "net.ipv4.tcp_no_metrics_save=1",
                ],
            )?;
            self.ip(role, &["link", "set", "lo", "up"])?;
        }
        let (c, r, s) = (
            self.ns(Role::Client),
            self.ns(Role::Router),
            self.ns(Role::Server),
        );
        for i in 0..self.paths.len() {
            let (ci, rci, rsi, si) = (
                format!("c{i}"),
                format!("rc{i}"),
                format!("rs{i}"),
                format!("s{i}"),
            );
            for (a, ans, amac, b, bns, bmac) in [
                (&ci, &c, Self::mac(i, 1), &rci, &r, Self::mac(i, 0x11)),
                (&si, &s, Self::mac(i, 2), &rsi, &r, Self::mac(i, 0x12)),
            ] {
                sys::run(Command::new("ip").args([
                    "link", "add", a, "netns", ans, "address", &amac, "type", "veth", "peer",
                    "name", b, "netns", bns, "address", &bmac,
                ]))?;
            }
            let (ca, sa) = (self.client_addr(i), self.server_addr(i));
            self.ip(
                Role::Client,
                &["addr", "add", &format!("{ca}/24"), "dev", &ci],
            )?;
            self.ip(
                Role::Server,
                &["addr", "add", &format!("{sa}/24"), "dev", &si],
            )?;
            for (role, dev) in [
                (Role::Client, &ci),
                (Role::Router, &rci),
                (Role::Router, &rsi),
                (Role::Server, &si),
            ] {
                self.ip(role, &["link", "set", dev, "up"])?;
                let dev = dev.clone();
                in_netns(&self.ns(role), move || sys::disable_offloads(&dev))?;
            }
            let mac_s = Self::mac(i, 2);
            let mac_c = Self::mac(i, 1);
            self.ip(
                Role::Client,
                &[
                    "neigh",
                    "replace",
                    &sa,
                    "lladdr",
                    &mac_s,
                    "dev",
                    &ci,
                    "nud",
                    "permanent",
                ],
            )?;
            self.ip(
                Role::Server,
                &[
                    "neigh",
                    "replace",
                    &ca,
                    "lladdr",
                    &mac_c,
                    "dev",
                    &si,
                    "nud",
                    "permanent",
                ],
            )?;
            let table = Self::table(i);
            self.ip(Role::Client, &["rule", "add", "from", &ca, "table", &table])?;
            self.ip(
                Role::Client,
                &[
                    "route", "add", "default", "via", &sa, "dev", &ci, "table", &table,
                ],
            )?;
        }
        Ok(())
    }

    /// Deletes the namespaces (their veths go with them). Best effort: reports what it could not
    /// remove but keeps going.
    pub fn destroy(&self) -> Vec<String> {
        destroy_namespaces(&self.namespaces())
    }
}

/// Deletes the named namespaces that exist; returns one message per failure.
pub fn destroy_namespaces(names: &[String]) -> Vec<String> {
    let mut failures = Vec::new();
    for ns in names {
        if !std::path::Path::new(sys::NETNS_DIR).join(ns).exists() {
            continue;
        }
        if let Err(e) = sys::run(Command::new("ip").args(["netns", "del", ns])) {
            failures.push(e.to_string());
        }
    }
    failures
}

/// Runs `f` on a new thread inside namespace `ns` and returns its result.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        sys::enter_netns(&ns)?;
        f()
    })
    .join()
    .map_err(|_| io::Error::other("namespace worker panicked"))?
}
