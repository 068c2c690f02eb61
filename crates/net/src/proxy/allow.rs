//! The server proxy's destination allow-list. By default it refuses loopback, private,
//! link-local, shared (CGNAT), multicast and unspecified addresses (RFC 1918, RFC 6598,
//! RFC 4193, RFC 4291): a proxy reachable from outside must not become a way into the
//! network it sits in. `--allow CIDR` opens a range.

use std::net::IpAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("\"{s}\" is not an address or CIDR range"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            None => max,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("\"{s}\": prefix length must be 0-{max}"))?,
        };
        Ok(Cidr { addr, len })
    }
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => prefix_eq(&a.octets(), &b.octets(), self.len),
            (IpAddr::V6(a), IpAddr::V6(b)) => prefix_eq(&a.octets(), &b.octets(), self.len),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], len: u8) -> bool {
    let (full, rest) = ((len / 8) as usize, len % 8);
    if a[..full] != b[..full] {
        return false;
    }
    rest == 0 || {
        let mask = 0xFFu8 << (8 - rest);
        a[full] & mask == b[full] & mask
    }
}

/// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

const DENIED_BY_DEFAULT: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/128",
    "::1/128",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

#[derive(Clone, Debug)]
pub struct AllowList {
    allow: Vec<Cidr>,
    deny: Vec<Cidr>,
}

impl AllowList {
    pub fn new(allow: Vec<Cidr>) -> AllowList {
        AllowList {
            allow,
            deny: DENIED_BY_DEFAULT
                .iter()
                .map(|s| s.parse().expect("built-in range"))
                .collect(),
        }
    }
    /// Explicitly allowed, or outside every range denied by default.
    pub fn permits(&self, ip: IpAddr) -> bool {
        self.allow.iter().any(|c| c.contains(ip)) || !self.deny.iter().any(|c| c.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn default_list_loopback_and_private_refused() {
        let l = AllowList::new(vec![]);
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.20.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "fd00::1",
            "169.254.1.1",
            "0.0.0.0",
        ] {
            assert!(!l.permits(ip(a)), "{a}");
        }
    }

    #[test]
    fn default_list_public_address_permitted() {
        let l = AllowList::new(vec![]);
        assert!(l.permits(ip("93.184.216.34")));
        assert!(l.permits(ip("2606:2800:220:1::1")));
        assert!(l.permits(ip("172.32.0.1")));
    }

    #[test]
    fn allowed_cidr_opens_only_its_range() {
        let l = AllowList::new(vec![
            "127.0.0.0/8".parse().unwrap(),
            "10.0.1.0/24".parse().unwrap(),
        ]);
        assert!(l.permits(ip("127.0.0.5")));
        assert!(l.permits(ip("10.0.1.200")));
        assert!(!l.permits(ip("10.0.2.1")));
    }

    #[test]
    fn bad_cidr_is_refused_with_its_text() {
        assert!("10.0.0.0/33"
            .parse::<Cidr>()
            .unwrap_err()
            .contains("10.0.0.0/33"));
        assert!("nonsense".parse::<Cidr>().is_err());
    }
}
