//! Findings and flame graphs from Go's mutex and block profiles: each
//! probe's profiles diffed in time order, each difference charged to the
//! load phase its earlier profile was taken in, summed per phase and site
//! ("contention on `sync.(*Mutex).Lock` in `main.(*ledger).post`: 54 s
//! waited per s in step-4"). Idle waits (a worker loop receiving, stacks
//! with no application frame) are left out of both.

use std::collections::BTreeMap;
use std::path::Path;

use super::finding::{waiting_severity, Detail, Evidence, Finding, Severity};
use crate::diagnosis::jfr::{FlameKind, FoldedStacks};
use crate::diagnosis::pprof::{chains, wait_site, Chain, Delta, GoProfile, WaitSite};
use crate::diagnosis::{phase_at, PhaseWindow};

/// Below this mean number of goroutines waiting at a site, no finding.
const MIN_PER_S: f64 = 0.01;

/// Per (phase, site): the sums over the differences charged to it.
#[derive(Default)]
struct Sum {
    count: i64,
    delay_ns: i64,
    /// Stack → delay ns (the heaviest is shown).
    stacks: BTreeMap<Vec<String>, i64>,
    from_unix: f64,
    source: String,
}

/// Findings of every chain, and wait stacks per phase for the flame graphs.
pub fn profile_findings(
    profiles: &[GoProfile],
    phases: &[PhaseWindow],
) -> (Vec<Finding>, Vec<FoldedStacks>) {
    let chains = chains(profiles);
    let mut findings = vec![];
    let mut flames = vec![];
    // The mutex profile's stacks are the holders'; the waiters' (block
    // profile) make the wait graph when there are any, as JFR's do.
    let waiter_chains = chains.iter().filter(|c| !holder_chain(c)).count();
    for c in &chains {
        let deltas = c.deltas();
        let (sums, spans) = sum_by_phase(&deltas, phases);
        for ((phase, ws), sum) in &sums {
            let span = spans.get(phase).copied();
            if let Some(f) = finding(c, phase.as_deref(), ws, sum, span) {
                findings.push(f);
            }
        }
        if waiter_chains == 0 || !holder_chain(c) {
            flames.extend(folded(c, &sums));
        }
    }
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    flames.extend(cpu_flames(profiles, phases));
    (findings, flames)
}

/// CPU profiles (`profile?seconds=N`, each its own span): samples per
/// stack, root first, charged to the phase the profile started in.
fn cpu_flames(profiles: &[GoProfile], phases: &[PhaseWindow]) -> Vec<FoldedStacks> {
    let mut per: BTreeMap<(String, Option<String>), BTreeMap<String, u64>> = BTreeMap::new();
    for p in profiles {
        let (Some(i), None, Some(t)) = (
            p.value_index("samples"),
            p.value_index("contentions"),
            p.time_unix,
        ) else {
            continue;
        };
        let phase = phase_at(phases, t + 1e-3).map(str::to_string);
        let dir = Path::new(&p.source).parent().unwrap_or(Path::new(""));
        let source = dir.join("go-cpu").display().to_string();
        let m = per.entry((source, phase)).or_default();
        for (stack, v) in &p.stacks {
            let n = v.get(i).copied().unwrap_or(0);
            if n > 0 {
                let key: Vec<&str> = stack.iter().rev().map(String::as_str).collect();
                *m.entry(key.join(";")).or_default() += n as u64;
            }
        }
    }
    per.into_iter()
        .filter(|(_, m)| !m.is_empty())
        .map(|((source, phase), stacks)| FoldedStacks {
            source,
            phase,
            kind: Some(FlameKind::Cpu),
            stacks,
        })
        .collect()
}

/// Most of the chain's delay is recorded at unlock (a mutex profile).
fn holder_chain(c: &Chain) -> bool {
    let Some(p) = c.profiles.last() else {
        return false;
    };
    let (mut held, mut all) = (0i64, 0i64);
    for (k, (_, d)) in p.waits().unwrap_or_default() {
        all += d;
        if wait_site(&k).held {
            held += d;
        }
    }
    all > 0 && held * 2 > all
}

type Sums = BTreeMap<(Option<String>, WaitSite), Sum>;

fn sum_by_phase(deltas: &[Delta], phases: &[PhaseWindow]) -> (Sums, BTreeMap<Option<String>, f64>) {
    let mut sums: Sums = BTreeMap::new();
    let mut spans: BTreeMap<Option<String>, f64> = BTreeMap::new();
    for d in deltas {
        let phase = phase_at(phases, d.from_unix + 1e-3).map(str::to_string);
        if !phases.is_empty() && phase.is_none() {
            continue; // before the load or after it
        }
        *spans.entry(phase.clone()).or_default() += (d.to_unix - d.from_unix).max(0.0);
        for (stack, (n, ns)) in &d.waits {
            let ws = wait_site(stack);
            if ws.idle {
                continue;
            }
            let s = sums.entry((phase.clone(), ws)).or_insert_with(|| Sum {
                from_unix: d.from_unix,
                ..Sum::default()
            });
            s.count += n;
            s.delay_ns += ns;
            *s.stacks.entry(stack.clone()).or_default() += ns;
            s.source.clone_from(&d.source);
        }
    }
    (sums, spans)
}

fn finding(
    c: &Chain,
    phase: Option<&str>,
    ws: &WaitSite,
    sum: &Sum,
    span: Option<f64>,
) -> Option<Finding> {
    if ws.wait == "other" {
        return None;
    }
    let waited_s = sum.delay_ns as f64 / 1e9;
    let per_s = span.filter(|s| *s > 0.0).map(|s| waited_s / s);
    if per_s.is_none_or(|r| r < MIN_PER_S) {
        return None;
    }
    let rate = per_s.unwrap_or(0.0);
    let when = match phase {
        Some(p) => format!("in {p}"),
        None => format!("over {:.0} s", span.unwrap_or(0.0)),
    };
    let what = match (ws.wait, ws.held) {
        ("lock", true) => format!("contention on `{}` in `{}`", ws.primitive, ws.site),
        ("lock", false) => format!("goroutines waiting on `{}` in `{}`", ws.primitive, ws.site),
        _ => format!("channel wait (`{}`) in `{}`", ws.primitive, ws.site),
    };
    let how = if ws.held {
        "held there: go mutex profile"
    } else {
        "go block profile"
    };
    let stack = sum
        .stacks
        .iter()
        .max_by_key(|(_, ns)| **ns)
        .map(|(k, _)| k.clone())
        .unwrap_or_default();
    Some(Finding {
        severity: if rate >= 0.5 {
            waiting_severity(rate.round() as usize)
        } else {
            Severity::Low
        },
        summary: format!(
            "{what}: {} waited per s {when} ({} waits; {how})",
            per_s_text(rate),
            sum.count
        ),
        key: format!("{}:{}:{}:{}", ws.wait, c.probe, ws.primitive, ws.site),
        evidence: Evidence {
            file: sum.source.clone(),
            dump_index: None,
            time: None,
            time_unix: Some(sum.from_unix + 1e-3),
            phase: phase.map(str::to_string),
            threads: vec![],
        },
        detail: Detail::WaitProfile {
            runtime: "go".into(),
            profile: c.probe.clone(),
            wait: ws.wait.into(),
            primitive: ws.primitive.clone(),
            site: ws.site.clone(),
            held: ws.held,
            count: sum.count,
            waited_s,
            span_s: span,
            per_s,
            stack,
        },
    })
}

/// `54 s`, `0.42 s`.
fn per_s_text(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0} s")
    } else {
        format!("{r:.2} s")
    }
}

/// Wait stacks (root first, milliseconds) per phase, under the name
/// `go-<probe>` beside the profiles.
fn folded(c: &Chain, sums: &Sums) -> Vec<FoldedStacks> {
    let Some(first) = c.profiles.first() else {
        return vec![];
    };
    let dir = Path::new(&first.source).parent().unwrap_or(Path::new(""));
    let source = dir.join(format!("go-{}", c.probe)).display().to_string();
    let mut per: BTreeMap<Option<String>, BTreeMap<String, u64>> = BTreeMap::new();
    for ((phase, _), sum) in sums {
        let m = per.entry(phase.clone()).or_default();
        for (stack, ns) in &sum.stacks {
            let ms = (*ns as f64 / 1e6).round() as u64;
            if ms > 0 {
                let key: Vec<&str> = stack.iter().rev().map(String::as_str).collect();
                *m.entry(key.join(";")).or_default() += ms;
            }
        }
    }
    per.into_iter()
        .filter(|(_, m)| !m.is_empty())
        .map(|(phase, stacks)| FoldedStacks {
            source: source.clone(),
            phase,
            kind: Some(FlameKind::Wait),
            stacks,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::pprof::parse_profile;
    use crate::vocab::findings::FindingKind;

    const MUTEX: &[u8] = include_bytes!("../../../tests/fixtures/go/mutex.pprof");
    const BLOCK: &[u8] = include_bytes!("../../../tests/fixtures/go/block.pprof");
    const CPU: &[u8] = include_bytes!("../../../tests/fixtures/go/cpu.pprof");

    #[test]
    fn a_cpu_profile_is_a_cpu_flame_graph_of_its_phase() {
        let c = parse_profile(CPU, "d/cpu-t0001.0-step-1-001.pprof").expect("cpu profile");
        let t = c.time_unix.expect("time");
        let phases = [PhaseWindow {
            name: "step-1".into(),
            start_unix: t - 1.0,
            end_unix: t + 10.0,
        }];
        let (fs, flames) = profile_findings(&[c], &phases);
        assert!(fs.is_empty());
        assert_eq!(flames.len(), 1, "{flames:?}");
        let f = &flames[0];
        assert_eq!(
            (f.kind, f.phase.as_deref()),
            (Some(FlameKind::Cpu), Some("step-1"))
        );
        assert!(f.source.ends_with("go-cpu"));
        assert!(crate::diagnosis::flame::total(&f.stacks) > 0);
    }

    /// The same capture twice, the second with no time: a chain of one
    /// timed profile has no difference, so no rate and no finding.
    #[test]
    fn one_profile_alone_claims_no_rate() {
        let m = parse_profile(MUTEX, "d/mutex-t0001.0-step-1-001.pprof").expect("mutex");
        let (fs, flames) = profile_findings(&[m], &[]);
        assert!(fs.is_empty() && flames.is_empty(), "{fs:?}");
    }

    /// A profile diffed against an empty start: the capture's waits become
    /// one phase's rate, the mutex site named, idle receivers left out.
    #[test]
    fn differences_become_rates_per_phase_at_the_site() {
        let m = parse_profile(MUTEX, "d/mutex-t0002.0-step-1-002.pprof").expect("mutex");
        let b = parse_profile(BLOCK, "d/block-t0002.0-step-1-002.pprof").expect("block");
        let t = m.time_unix.expect("time");
        let empty = |p: &GoProfile, name: &str| GoProfile {
            source: name.into(),
            time_unix: Some(t - 2.0),
            stacks: BTreeMap::new(),
            ..p.clone()
        };
        let profiles = vec![
            empty(&m, "d/mutex-t0000.0-step-1-001.pprof"),
            m.clone(),
            empty(&b, "d/block-t0000.0-step-1-001.pprof"),
            b.clone(),
        ];
        let phases = [PhaseWindow {
            name: "step-1".into(),
            start_unix: t - 3.0,
            end_unix: t + 10.0,
        }];
        let (fs, flames) = profile_findings(&profiles, &phases);
        for f in &fs {
            eprintln!("{:?} {}: {}", f.severity, f.detail.kind(), f.summary);
        }
        let held = fs
            .iter()
            .find(|f| {
                f.summary
                    .starts_with("contention on `sync.(*Mutex).Lock` in `main.(*ledger).post`")
            })
            .expect("the mutex profile's finding");
        assert_eq!(held.detail.kind(), FindingKind::Lock);
        assert!(
            held.summary.contains("waited per s in step-1"),
            "{}",
            held.summary
        );
        assert!(fs.iter().any(|f| f.detail.kind() == FindingKind::Channel));
        assert!(
            fs.iter().all(|f| !f.summary.contains("main.worker")),
            "idle worker ranked"
        );
        // Flames from the waiters (block), not the holders.
        assert_eq!(flames.len(), 1);
        assert!(flames[0].source.ends_with("go-block"));
        assert!(flames[0]
            .stacks
            .keys()
            .any(|k| k.ends_with("main.(*ledger).post;sync.(*Mutex).Lock")));
    }
}
