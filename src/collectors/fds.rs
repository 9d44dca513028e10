//! The `proc-fds` parser: what the target's file descriptors are, counted
//! on the target by the `fds` probe of `collectors/linux-host.yaml` (one
//! `ls -l /proc/PID/fd` and one read of `/proc/net/tcp{,6}`, joined by
//! socket inode in awk, so a process with 100,000 sockets still ships a few
//! lines). A soak then sees *which* descriptors grow: sockets in CLOSE_WAIT
//! from one peer (the application never closes after the peer did),
//! ESTABLISHED to one peer (a pool that never returns), pipes, files under
//! one directory.
//!
//! Lines: `kind NAME COUNT` (`socket`, `pipe`, `anon_inode:[eventpoll]`,
//! `file:/var/log`, `other`), `sock in ST LPORT RADDR COUNT` (a socket on a
//! port the process listens on: grouped by client address) and
//! `sock out ST RADDR:RPORT COUNT` (grouped by peer). Addresses are
//! `/proc/net/tcp`'s hex.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::host::tcp_state;
use crate::collectors::CollectorError;
use crate::vocab::growth::{FdRow, SocketCount};

/// One set of the process's TCP sockets: one state, one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketGroup {
    /// Accepted on a port the process listens on (the peer is a client).
    pub inbound: bool,
    /// `ESTABLISHED`, `CLOSE_WAIT`, …
    pub state: &'static str,
    /// Inbound: the listening port.
    pub local_port: Option<u16>,
    /// Inbound: the client's address; outbound: the peer's `address:port`.
    pub peer: String,
    pub count: u64,
}

/// One sample of the process's descriptors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FdCensus {
    /// Descriptors by kind.
    pub kinds: BTreeMap<String, u64>,
    pub sockets: Vec<SocketGroup>,
}

impl FdCensus {
    pub fn parse(text: &str) -> Result<FdCensus, CollectorError> {
        let mut c = FdCensus::default();
        for (i, line) in text.lines().enumerate() {
            let bad = |what: &str| CollectorError::Parse {
                parser: "proc-fds".into(),
                msg: format!("line {}: {what}: `{line}`", i + 1),
            };
            let f: Vec<&str> = line.split_whitespace().collect();
            let count = |s: &str| s.parse::<u64>().map_err(|_| bad("count is not a number"));
            match f.as_slice() {
                [] => {}
                ["kind", name, n] => *c.kinds.entry((*name).to_string()).or_default() += count(n)?,
                ["sock", "in", st, lport, raddr, n] => c.sockets.push(SocketGroup {
                    inbound: true,
                    state: tcp_state(st).ok_or_else(|| bad("unknown TCP state"))?,
                    local_port: Some(u16::from_str_radix(lport, 16).map_err(|_| bad("bad port"))?),
                    peer: hex_ip(raddr).ok_or_else(|| bad("bad address"))?,
                    count: count(n)?,
                }),
                ["sock", "out", st, remote, n] => {
                    let (a, p) = remote
                        .split_once(':')
                        .ok_or_else(|| bad("expected ADDR:PORT"))?;
                    let ip = hex_ip(a).ok_or_else(|| bad("bad address"))?;
                    let port = u16::from_str_radix(p, 16).map_err(|_| bad("bad port"))?;
                    let peer = if ip.contains(':') {
                        format!("[{ip}]:{port}")
                    } else {
                        format!("{ip}:{port}")
                    };
                    c.sockets.push(SocketGroup {
                        inbound: false,
                        state: tcp_state(st).ok_or_else(|| bad("unknown TCP state"))?,
                        local_port: None,
                        peer,
                        count: count(n)?,
                    })
                }
                _ => return Err(bad("expected `kind …` or `sock in|out …`")),
            }
        }
        c.sockets
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.peer.cmp(&b.peer)));
        Ok(c)
    }

    /// The sample row of `diagnostics/fds.jsonl`.
    pub fn row(&self) -> FdRow {
        FdRow {
            kinds: self.kinds.clone(),
            sockets: self
                .sockets
                .iter()
                .map(|s| SocketCount {
                    inbound: s.inbound,
                    state: s.state.to_string(),
                    local_port: s.local_port,
                    peer: s.peer.clone(),
                    count: s.count,
                })
                .collect(),
        }
    }

    /// All descriptors counted.
    pub fn total(&self) -> u64 {
        self.kinds.values().sum()
    }

    /// Sockets in one state, summed over peers.
    pub fn in_state(&self, state: &str) -> u64 {
        self.sockets
            .iter()
            .filter(|s| s.state == state)
            .map(|s| s.count)
            .sum()
    }
}

/// `/proc/net/tcp`'s hex address: IPv4 as one little-endian word, IPv6 as
/// four; a v4-mapped IPv6 address is shown as IPv4.
fn hex_ip(h: &str) -> Option<String> {
    let word = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::swap_bytes);
    match h.len() {
        8 => Some(Ipv4Addr::from(word(h)?).to_string()),
        32 => {
            let mut b = [0u8; 16];
            for k in 0..4 {
                b[k * 4..k * 4 + 4].copy_from_slice(&word(h.get(k * 8..k * 8 + 8)?)?.to_be_bytes());
            }
            let v6 = Ipv6Addr::from(b);
            Some(
                v6.to_ipv4_mapped()
                    .map_or_else(|| v6.to_string(), |v4| v4.to_string()),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_real_census() {
        // From a process that accepted 8 connections, 5 of whose clients closed,
        // and held its own 3 client ends.
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/proc-fds.txt");
        let text = std::fs::read_to_string(p).expect("fixture");
        let c = FdCensus::parse(&text).expect("census");
        assert_eq!(c.kinds.get("socket"), Some(&12));
        assert_eq!(c.kinds.get("pipe"), Some(&3));
        assert_eq!(c.in_state("CLOSE_WAIT"), 5);
        let cw = c
            .sockets
            .iter()
            .find(|s| s.state == "CLOSE_WAIT")
            .expect("close_wait");
        assert!(cw.inbound);
        assert_eq!(
            (cw.local_port, cw.peer.as_str()),
            (Some(0x8E47), "127.0.0.1")
        );
        let out = c.sockets.iter().find(|s| !s.inbound).expect("outbound");
        assert_eq!(
            (out.state, out.peer.as_str(), out.count),
            ("ESTABLISHED", "127.0.0.1:36423", 3)
        );
        assert_eq!(c.total(), 20);
    }

    #[test]
    fn ipv6_and_mapped_addresses() {
        assert_eq!(hex_ip("0100007F").as_deref(), Some("127.0.0.1"));
        assert_eq!(
            hex_ip("0000000000000000FFFF00000100007F").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            hex_ip("00000000000000000000000001000000").as_deref(),
            Some("::1")
        );
        assert_eq!(hex_ip("xyz"), None);
        let c =
            FdCensus::parse("sock out 08 00000000000000000000000001000000:1F90 2\n").expect("v6");
        assert_eq!(c.sockets[0].peer, "[::1]:8080");
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            "kind socket x",
            "sock in 99 1F90 0100007F 1",
            "sock out 01 0100007F 1",
            "hello",
        ] {
            assert!(FdCensus::parse(bad).is_err(), "{bad}");
        }
    }
}
