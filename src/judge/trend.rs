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
    median(&mut slopes)
}

/// A leak verdict needs at least this many seconds of samples after the
/// warm-up: a per-hour claim from less is an extrapolation, so a shorter
/// window is *inconclusive* (said in the trend's note), never a leak.
pub const MIN_LEAK_WINDOW_S: f64 = 60.0;
/// …and at least this many samples in that window.
pub const MIN_LEAK_POINTS: usize = 10;
/// The growth over the window must exceed this many robust standard
/// deviations of the residuals around the Theil–Sen line.
const NOISE_SIGMAS: f64 = 3.0;

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Seconds the samples cover: first to last, plus one typical interval.
fn covered_s(w: &[(f64, f64)]) -> f64 {
    let (Some(a), Some(b)) = (w.first(), w.last()) else {
        return 0.0;
    };
    let mut dts: Vec<f64> = w.windows(2).map(|p| p[1].0 - p[0].0).collect();
    b.0 - a.0 + median(&mut dts).unwrap_or(0.0)
}

/// Robust noise of `w` around the line of slope `slope` (per second):
/// 1.4826 × the median absolute deviation of the residuals.
fn noise(w: &[(f64, f64)], slope: f64) -> f64 {
    let mut r: Vec<f64> = w.iter().map(|(t, y)| y - slope * t).collect();
    let m = median(&mut r).unwrap_or(0.0);
    let mut dev: Vec<f64> = r.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&mut dev).unwrap_or(0.0)
}

/// The trend of one series over `[from, to)` against its threshold.
///
/// A series is flagged as leaking only when it grows *steadily through the
/// window*: the Theil–Sen slope is above the threshold over the whole
/// window **and** in each half of it, the least-squares fit reaches
/// `min_r2`, and the growth over the window exceeds 3σ of the noise around
/// the line. A one-off step followed by a plateau rises in one half only:
/// not a leak, however steep its slope over the whole window. A window
/// shorter than [`MIN_LEAK_WINDOW_S`] or with fewer than [`MIN_LEAK_POINTS`]
/// samples is inconclusive (`note`), never flagged.
pub fn trend(name: &str, pts: &[(f64, f64)], from: f64, to: f64, th: &LeakThresholds) -> Trend {
    let w: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect();
    let threshold = th.for_series(name).map(|(_, v)| v);
    let covered = covered_s(&w);
    let mut t = Trend {
        series: name.into(),
        points: w.len(),
        slope_per_hour: 0.0,
        ols_slope_per_hour: 0.0,
        r2: 0.0,
        threshold_per_hour: threshold,
        flagged: false,
        note: None,
        halves_per_hour: None,
        noise: None,
        reason: None,
    };
    if let Some((slope, _, r2)) = least_squares(&w) {
        t.ols_slope_per_hour = slope * 3600.0;
        t.r2 = r2;
    }
    let slope = theil_sen(&w).unwrap_or(0.0);
    t.slope_per_hour = slope * 3600.0;
    // To the second, as the note says it: samples every second over a 60-s
    // window cover 60 s, give or take their jitter.
    if w.len() < MIN_LEAK_POINTS || covered.round() < MIN_LEAK_WINDOW_S {
        t.note = Some(format!(
            "inconclusive: {covered:.0} s of data ({} samples) after the warm-up; a per-hour leak verdict needs ≥ {MIN_LEAK_WINDOW_S:.0} s and ≥ {MIN_LEAK_POINTS} samples",
            w.len()
        ));
        return t;
    }
    let (a, b) = (w[0].0, w[w.len() - 1].0);
    let mid = (a + b) / 2.0;
    let first: Vec<(f64, f64)> = w.iter().copied().filter(|p| p.0 < mid).collect();
    let second: Vec<(f64, f64)> = w.iter().copied().filter(|p| p.0 >= mid).collect();
    let halves = theil_sen(&first)
        .zip(theil_sen(&second))
        .map(|(x, y)| (x * 3600.0, y * 3600.0));
    t.halves_per_hour = halves;
    let sigma = noise(&w, slope);
    t.noise = Some(sigma);
    let growth = slope * (b - a);
    let Some(lim) = threshold else {
        return t;
    };
    let rising = t.slope_per_hour > lim && t.r2 >= th.min_r2;
    if !rising {
        return t;
    }
    t.reason = match halves {
        None => Some("too few samples in one half of the window to tell a steady rise".into()),
        Some((h1, h2)) if h1 <= lim || h2 <= lim => Some(format!(
            "not a steady rise: {} in the first half, {} in the second (a step or a settling, then a plateau)",
            per_hour(name, h1),
            per_hour(name, h2)
        )),
        Some(_) if growth <= NOISE_SIGMAS * sigma => Some(format!(
            "growth {} over the window is within the noise (3σ = {})",
            amount(name, growth),
            amount(name, NOISE_SIGMAS * sigma)
        )),
        Some(_) => None,
    };
    t.flagged = t.reason.is_none();
    t
}

/// How a series' values are shown: bytes (and bytes per second) in MB.
fn unit(series: &str) -> (f64, &'static str) {
    if series.ends_with("_bytes_per_s") {
        (1e6, "MB/s")
    } else if series.ends_with("_bytes") {
        (1e6, "MB")
    } else {
        (1.0, "")
    }
}

/// An amount in the series' unit.
fn amount(series: &str, v: f64) -> String {
    let (scale, u) = unit(series);
    format!("{:.2}{u}", v / scale)
}

/// Show a per-hour value in the series' unit.
pub fn per_hour(series: &str, v: f64) -> String {
    let (scale, u) = unit(series);
    let per = if u.ends_with("/s") { " per h" } else { "/h" };
    format!("{:+.2}{u}{per}", v / scale)
}
