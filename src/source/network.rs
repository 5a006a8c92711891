//! Which addresses an `http` source may connect to.
//!
//! A Corpus names its URLs, and the ingest pod fetches them from inside
//! the cluster, where private addresses are the cluster's own services and
//! `169.254.169.254` hands out the node's cloud credentials. So the
//! addresses a URL's host resolves to are checked when the connection is
//! made (a name that resolves one way when the spec is read and another
//! when the request is sent gains nothing), and IP literals before any
//! request is sent: public unicast addresses pass, and addresses in the
//! internal networks the source lists in `allowedNetworks`; nothing else.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;

/// An address the source may not reach, and why.
#[derive(Debug, thiserror::Error)]
#[error("{address} is {range}; list it in allowedNetworks to fetch from it")]
pub struct InternalAddress {
    pub address: IpAddr,
    pub range: &'static str,
}

/// The rule for one source: which internal networks it may reach.
#[derive(Clone, Debug, Default)]
pub struct NetworkGuard {
    allowed: Vec<IpNet>,
}

impl NetworkGuard {
    /// A guard letting through the networks `cidrs` names, or which entry
    /// is not a CIDR.
    pub fn new(cidrs: &[String]) -> Result<Self, String> {
        let allowed = cidrs
            .iter()
            .map(|c| {
                c.trim()
                    .parse::<IpNet>()
                    .or_else(|_| c.trim().parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("allowedNetworks: {c:?} is not a CIDR such as 10.0.0.0/8"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { allowed })
    }

    /// Whether the source may connect to `address`.
    pub fn check(&self, address: IpAddr) -> Result<(), InternalAddress> {
        let Some(range) = internal_range(address) else {
            return Ok(());
        };
        if self.allowed.iter().any(|net| net.contains(&address)) {
            return Ok(());
        }
        Err(InternalAddress { address, range })
    }
}

/// The non-public range `address` lies in, named; `None` for a public
/// unicast address. IPv4 inside IPv6 (mapped, NAT64) is judged as IPv4.
pub fn internal_range(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "an unspecified address (0.0.0.0/8)",
        (10, _, _) => "a private address (10.0.0.0/8)",
        (100, 64..=127, _) => "a carrier-grade NAT address (100.64.0.0/10)",
        (127, _, _) => "a loopback address (127.0.0.0/8)",
        (169, 254, _) => "a link-local address (169.254.0.0/16, where cloud metadata answers)",
        (172, 16..=31, _) => "a private address (172.16.0.0/12)",
        (192, 0, 0) => "an IETF protocol address (192.0.0.0/24)",
        (192, 168, _) => "a private address (192.168.0.0/16)",
        (198, 18..=19, _) => "a benchmarking address (198.18.0.0/15)",
        (224..=239, _, _) => "a multicast address (224.0.0.0/4)",
        (240..=255, _, _) => "a reserved or broadcast address (240.0.0.0/4)",
        _ => return None,
    })
}

fn internal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return internal_v4(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return internal_v4(Ipv4Addr::new(a, b, c, d));
    }
    Some(match s[0] {
        _ if ip.is_unspecified() => "an unspecified address (::)",
        _ if ip.is_loopback() => "a loopback address (::1)",
        0xfc00..=0xfdff => "a unique local address (fc00::/7)",
        0xfe80..=0xfebf => "a link-local address (fe80::/10)",
        0xff00..=0xffff => "a multicast address (ff00::/8)",
        // IPv4-compatible (::a.b.c.d) and other addresses in ::/8.
        0 => "a reserved address (::/8)",
        _ => return None,
    })
}

/// Resolves names as the system does and keeps only the addresses the
/// guard lets through; a name left with none fails with the first refusal.
pub struct GuardedResolver(pub Arc<NetworkGuard>);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let mut allowed = Vec::new();
            for address in resolved {
                match guard.check(address.ip()) {
                    Ok(()) => allowed.push(address),
                    Err(e) => {
                        refused.get_or_insert(e);
                    }
                }
            }
            match (allowed.is_empty(), refused) {
                (true, Some(refused)) => Err(Box::new(refused) as Box<_>),
                _ => Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn internal_ranges_are_refused_and_public_ones_pass() {
        let guard = NetworkGuard::default();
        for internal in [
            "169.254.169.254",
            "10.0.0.1",
            "172.20.1.1",
            "192.168.1.1",
            "127.0.0.1",
            "100.100.100.200",
            "0.0.0.0",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::a9fe:a9fe",
        ] {
            assert!(guard.check(ip(internal)).is_err(), "{internal}");
        }
        for public in [
            "93.184.216.34",
            "172.32.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert!(guard.check(ip(public)).is_ok(), "{public}");
        }
        let refusal = guard.check(ip("169.254.169.254")).unwrap_err().to_string();
        assert!(
            refusal.contains("cloud metadata") && refusal.contains("allowedNetworks"),
            "{refusal}"
        );
    }

    #[test]
    fn listed_networks_pass_and_only_they() {
        let guard = NetworkGuard::new(&["10.20.0.0/16".into(), "127.0.0.1".into()]).unwrap();
        assert!(guard.check(ip("10.20.3.4")).is_ok());
        assert!(guard.check(ip("127.0.0.1")).is_ok());
        assert!(guard.check(ip("10.21.0.1")).is_err());
        assert!(guard.check(ip("127.0.0.2")).is_err());
        let bad = NetworkGuard::new(&["internal".into()]).unwrap_err();
        assert!(bad.contains("\"internal\""), "{bad}");
    }
}
