//! `summary.json`'s `server_side`: did the run see its target's server
//! side, judged from the collectors' index (typed, from `vocab`) and whether
//! `evidence.json` held anything.

use serde::{Deserialize, Serialize};

use crate::vocab::collectors::{CollectorErrorKind, CollectorsSummary, GapInfo, TRANSPORT_PROBE};

/// Did the run see its server side? Causes and leaks rest on it, so when it
/// is missing the summary says so plainly, with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerSideStatus {
    /// Samples or artifacts came back from the target.
    Ok,
    /// Some came back, but with gaps (a link down, a recording lost) or
    /// without the target process ever found.
    Partial,
    /// Collectors were configured and brought back nothing from the target
    /// (refused host key, unreachable host, failed login, …).
    Missing,
    /// No collectors watch the target.
    NotConfigured,
    /// A shard other than the first: only shard 1 samples the target.
    NotCollected,
}

/// `summary.json`'s `server_side`: the status, why, and one line to show.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServerSide {
    pub status: ServerSideStatus,
    /// Why it is not `ok` (the first transport error, the gaps…).
    pub reason: Option<String>,
    /// One line for the terminal and the report.
    pub text: String,
}

impl ServerSide {
    fn new(status: ServerSideStatus, reason: Option<String>, text: String) -> Self {
        ServerSide {
            status,
            reason,
            text,
        }
    }

    /// Judge it from the collectors' index (`summary.json`'s `collectors`)
    /// and whether `evidence.json` held anything from the target; `shard` is
    /// the run's (index from 0, count).
    pub fn of(collectors: Option<&CollectorsSummary>, evidence: bool, shard: (u32, u32)) -> Self {
        use ServerSideStatus as S;
        const UNSEEN: &str = "no target CPU, memory, threads or locks were seen, so causes and leaks cannot be attributed";
        let Some(c) = collectors else {
            return if evidence {
                ServerSide::new(S::Ok, None, "server side: evidence.json".into())
            } else if shard.0 > 0 {
                let why = format!(
                    "shard {} of {}: only shard 1 samples the target",
                    shard.0 + 1,
                    shard.1
                );
                ServerSide::new(
                    S::NotCollected,
                    Some(why.clone()),
                    format!("server side: not collected here ({why})"),
                )
            } else {
                ServerSide::new(
                    S::NotConfigured,
                    None,
                    "no server-side collectors configured: causes (CPU, locks, pools) and leaks cannot be attributed".into(),
                )
            };
        };
        let rows = c.rows();
        let artifacts = c.artifacts.len();
        let (errors, gaps) = (&c.errors, &c.gaps);
        // `none`: no transport lane ran; a source of its own (Prometheus) may have.
        let transport = match c.transport.as_str() {
            "none" | "" => {
                if c.streams.is_empty() && artifacts == 0 && errors.is_empty() && !evidence {
                    return ServerSide::of(None, false, shard);
                }
                let names: Vec<&str> = c.streams.iter().map(|s| s.name.as_str()).collect();
                names.join(", ")
            }
            t => t.to_string(),
        };
        if rows == 0 && artifacts == 0 && !evidence {
            let reason = errors
                .iter()
                .find(|e| e.probe == TRANSPORT_PROBE)
                .or_else(|| errors.first())
                .map(|e| e.message.clone())
                .or_else(|| gaps.first().map(|g| g.reason.clone()))
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "no sample or artifact came back".into());
            return ServerSide::new(
                S::Missing,
                Some(reason.clone()),
                format!("server side MISSING: the collectors ({transport}) brought back nothing from the target — {reason}; {UNSEEN}"),
            );
        }
        let never_found = c.target_pids.is_empty()
            && errors
                .iter()
                .any(|e| e.kind == CollectorErrorKind::TargetNotFound);
        let gap_secs: f64 = gaps.iter().map(GapInfo::secs).sum();
        let mut why = Vec::new();
        if let Some(first) = gaps.first() {
            why.push(format!(
                "{} gap(s), {gap_secs:.1} s in all (first: {})",
                gaps.len(),
                first.reason
            ));
        }
        if never_found {
            why.push("the target process was never found (target.pid, pgrep or jcmd_match matched nothing)".into());
        }
        if why.is_empty() {
            return ServerSide::new(
                S::Ok,
                None,
                format!("server side: {rows} samples, {artifacts} artifacts ({transport})"),
            );
        }
        let reason = why.join("; ");
        ServerSide::new(
            S::Partial,
            Some(reason.clone()),
            format!("server side partial ({transport}): {reason}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{ServerSide, ServerSideStatus as S};
    use crate::vocab::collectors::{
        CollectorErrorKind as K, CollectorsSummary, ErrorInfo, GapInfo, PidInfo, StreamInfo,
    };

    fn of(c: CollectorsSummary, evidence: bool) -> ServerSide {
        ServerSide::of(Some(&c), evidence, (0, 1))
    }

    fn index(transport: &str, rows: u64) -> CollectorsSummary {
        CollectorsSummary {
            transport: transport.into(),
            streams: vec![StreamInfo {
                name: "host".into(),
                rows,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn error(probe: &str, message: &str, kind: K) -> ErrorInfo {
        ErrorInfo {
            probe: probe.into(),
            message: message.into(),
            kind,
            ..Default::default()
        }
    }

    #[test]
    fn server_side_status_from_the_collectors_index() {
        assert_eq!(ServerSide::of(None, false, (0, 1)).status, S::NotConfigured);
        assert_eq!(ServerSide::of(None, false, (2, 4)).status, S::NotCollected);
        assert_eq!(ServerSide::of(None, true, (0, 1)).status, S::Ok);
        // Only the generator ran: no target collectors.
        let none = CollectorsSummary {
            transport: "none".into(),
            ..Default::default()
        };
        assert_eq!(of(none, false).status, S::NotConfigured);
        let refused = of(
            CollectorsSummary {
                errors: vec![
                    error("x/y", "first", K::ProbeFailed),
                    error("transport", "host key of h:22 does NOT match", K::Transport),
                ],
                ..index("ssh a@h:22", 0)
            },
            false,
        );
        assert_eq!(refused.status, S::Missing);
        assert_eq!(
            refused.reason.as_deref(),
            Some("host key of h:22 does NOT match")
        );
        assert!(refused.text.contains("MISSING"), "{}", refused.text);
        let gapped = of(
            CollectorsSummary {
                gaps: vec![GapInfo {
                    from_t: 1.0,
                    to_t: 3.5,
                    reason: "JFR lost".into(),
                    ..Default::default()
                }],
                ..index("local", 9)
            },
            true,
        );
        assert_eq!(gapped.status, S::Partial);
        assert!(gapped.text.contains("2.5 s") && gapped.text.contains("JFR lost"));
        let no_pid = of(
            CollectorsSummary {
                errors: vec![error(
                    "jvm/heap",
                    "target process not found",
                    K::TargetNotFound,
                )],
                ..index("local", 9)
            },
            true,
        );
        assert_eq!(no_pid.status, S::Partial);
        let fine = of(
            CollectorsSummary {
                target_pids: vec![PidInfo {
                    pid: 7,
                    ..Default::default()
                }],
                ..index("local", 9)
            },
            true,
        );
        assert_eq!((fine.status, fine.reason), (S::Ok, None));
    }
}
