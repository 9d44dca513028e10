//! The charts that make a stress run's case: p99 and throughput against the
//! offered rate (the knee chart), one point per step run, with the p99
//! budget as a line; and the budget lines the latency chart over time
//! draws. Read from the summary (the stress verdict's steps, the budgets'
//! verdicts); nothing here judges.

use std::collections::BTreeMap;

use super::charts::{fmt_ms, fmt_num, linear, log, Chart, Line};
use crate::judge::verdict::StressVerdict;
use crate::judge::Summary;
use crate::metrics::series::Second;
use crate::report::ReportError;
use crate::vocab::Model;

/// The limit of a latency budget's verdict in ms (`300.0ms`, `1.5s`).
fn limit_ms(limit: &str) -> Option<f64> {
    if let Some(ms) = limit.strip_suffix("ms") {
        return ms.trim().parse().ok();
    }
    limit
        .strip_suffix('s')?
        .trim()
        .parse::<f64>()
        .ok()
        .map(|s| s * 1000.0)
}

/// The p99 budgets' limits (ms), each once, with their text: the stress
/// breach's budgets first (a stress run judges its unscoped budgets step
/// by step, so they are not among the run's verdicts).
pub(super) fn p99_budgets(s: &Summary) -> Vec<(String, f64)> {
    let breached = s.stress.iter().flat_map(|st| st.breached.iter());
    let mut out: Vec<(String, f64)> = Vec::new();
    for v in breached.chain(&s.budgets) {
        let Some(ms) = limit_ms(&v.limit).filter(|_| v.latency && v.budget.contains("p99")) else {
            continue;
        };
        if !out.iter().any(|(b, _)| *b == v.budget) {
            out.push((v.budget.clone(), ms));
        }
    }
    out
}

/// A horizontal line per budget across `x`, named as the budget.
pub(super) fn budget_lines(budgets: &[(String, f64)], x: (f64, f64)) -> Vec<Line> {
    budgets
        .iter()
        .map(|(b, ms)| Line {
            name: format!("budget {b}"),
            pts: vec![(x.0, *ms), (x.1, *ms)],
        })
        .collect()
}

/// The knee chart (p99 against the offered rate) and throughput against
/// it, for a stress run of at least two steps. A step cut short (offered
/// well under its level: the stop at a breach) is left out; throughput is
/// the ok answers per second over the step's seconds (an answer counts in
/// the second it came, not in the step that sent it).
pub(super) fn section(
    o: &mut String,
    s: &Summary,
    st: &StressVerdict,
    secs: &BTreeMap<u64, Second>,
) -> Result<(), ReportError> {
    let mut steps: Vec<_> = st
        .steps
        .iter()
        .filter(|r| r.offered_rate > 0.0)
        .filter(|r| r.level.is_none_or(|l| r.offered_rate >= 0.9 * l))
        .collect();
    if steps.len() < 2 {
        return Ok(());
    }
    steps.sort_by(|a, b| a.offered_rate.total_cmp(&b.offered_rate));
    let ok_per_s = |name: &str| {
        let p = s.meta.phases.iter().find(|p| p.name == name)?;
        let (from, to) = (p.start.as_secs(), (p.start + p.duration).as_secs());
        let oks: Vec<f64> = secs.range(from..to).map(|(_, r)| r.ok as f64).collect();
        (!oks.is_empty()).then(|| oks.iter().sum::<f64>() / oks.len() as f64)
    };
    let x_hi = steps.iter().map(|r| r.offered_rate).fold(0.0, f64::max) * 1.05;
    let x = (0.0, x_hi.max(1.0));
    let mut lines = vec![Line {
        name: "p99 of each step (ms)".into(),
        pts: steps.iter().map(|r| (r.offered_rate, r.p99_ms)).collect(),
    }];
    lines.extend(budget_lines(&p99_budgets(s), x));
    let unit = match s.meta.model {
        Model::Open => "requests/s",
        Model::Closed => "virtual users",
    };
    let x_desc = format!("offered ({unit})");
    let step_chart = |id, title: &str, y_desc: &str, lines, y_fmt| Chart {
        id,
        title: title.into(),
        x_desc: &x_desc,
        y_desc: y_desc.into(),
        x,
        lines,
        bands: &[],
        x_fmt: Some(&fmt_num),
        x_labels: 10,
        y_labels: 8,
        y_fmt,
    };
    o.push_str(&log(&step_chart(
        "chart-knee",
        "The knee: p99 against the offered rate (one point per step)",
        "p99 (log)",
        lines,
        &fmt_ms,
    ))?);
    let lines = vec![
        Line {
            name: "offered/s (all answered ok)".into(),
            pts: vec![(0.0, 0.0), (x.1, x.1)],
        },
        Line {
            name: "ok answers/s over the step's seconds".into(),
            pts: steps
                .iter()
                .filter_map(|r| Some((r.offered_rate, ok_per_s(&r.name)?)))
                .collect(),
        },
    ];
    o.push_str(&linear(&step_chart(
        "chart-knee-throughput",
        "Throughput against the offered rate: where ok/s leaves the diagonal",
        "ok answers/s",
        lines,
        &fmt_num,
    ))?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::limit_ms;

    #[test]
    fn limits_read_in_ms() {
        assert_eq!(limit_ms("300.0ms"), Some(300.0));
        assert_eq!(limit_ms("1.5s"), Some(1500.0));
        assert_eq!(limit_ms("1.000%"), None);
    }
}
