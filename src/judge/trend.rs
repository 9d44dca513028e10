//! Trends of server-side series over a soak: robust slope (Theil–Sen),
//! least-squares fit, and the comparison against a leak threshold.

use super::verdict::Trend;
use crate::profile::verdicts::LeakThresholds;

// ---------------------------------------------------------------------------
// Trends

/// Least-squares slope (per second), intercept and R² of `pts`.
pub fn least_squares(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    // A flat series explains nothing: R² 0, not NaN.
    let r2 = if syy <= 0.0 {
        0.0
    } else {
        (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
    };
    Some((slope, intercept, r2))
}

/// Theil–Sen slope (per second): the median of all pairwise slopes, on at
/// most 400 evenly spaced points (≤ 80k pairs) so an 8-hour series stays cheap.
pub fn theil_sen(pts: &[(f64, f64)]) -> Option<f64> {
    const MAX: usize = 400;
    let sample: Vec<(f64, f64)> = if pts.len() > MAX {
        (0..MAX)
            .map(|i| pts[i * (pts.len() - 1) / (MAX - 1)])
            .collect()
    } else {
        pts.to_vec()
    };
    let mut slopes = Vec::with_capacity(sample.len() * sample.len() / 2);
    for i in 0..sample.len() {
        for j in i + 1..sample.len() {
            let dt = sample[j].0 - sample[i].0;
            if dt > 0.0 {
                slopes.push((sample[j].1 - sample[i].1) / dt);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let n = slopes.len();
    Some(if n % 2 == 1 {
        slopes[n / 2]
    } else {
        (slopes[n / 2 - 1] + slopes[n / 2]) / 2.0
    })
}

/// Fewer samples or a shorter span than this gives no verdict.
const MIN_POINTS: usize = 5;
const MIN_SPAN_S: f64 = 5.0;

/// The trend of one series over `[from, to)` against its threshold.
pub fn trend(name: &str, pts: &[(f64, f64)], from: f64, to: f64, th: &LeakThresholds) -> Trend {
    let w: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect();
    let threshold = th.for_series(name).map(|(_, v)| v);
    let span = match (w.first(), w.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    };
    let mut t = Trend {
        series: name.into(),
        points: w.len(),
        slope_per_hour: 0.0,
        ols_slope_per_hour: 0.0,
        r2: 0.0,
        threshold_per_hour: threshold,
        flagged: false,
        note: None,
    };
    if w.len() < MIN_POINTS || span < MIN_SPAN_S {
        t.note = Some(format!(
            "too few samples after the warm-up ({} over {span:.0}s)",
            w.len()
        ));
        return t;
    }
    if let Some((slope, _, r2)) = least_squares(&w) {
        t.ols_slope_per_hour = slope * 3600.0;
        t.r2 = r2;
    }
    t.slope_per_hour = theil_sen(&w).unwrap_or(0.0) * 3600.0;
    t.flagged = threshold.is_some_and(|lim| t.slope_per_hour > lim && t.r2 >= th.min_r2);
    t
}

/// Show a per-hour value in the series' unit.
pub fn per_hour(series: &str, v: f64) -> String {
    if series.ends_with("_bytes") {
        format!("{:+.2}MB/h", v / 1e6)
    } else {
        format!("{v:+.2}/h")
    }
}
