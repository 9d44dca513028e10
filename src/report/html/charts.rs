//! Drawing: plotters' SVG backend behind one small [`Chart`] description,
//! linear and log y axes, thinning long series, axis label formats, and
//! HTML escaping.

use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::super::ReportError;

pub(super) const W: u32 = 1100;
pub(super) const H: u32 = 330;

pub(super) const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

pub(super) fn err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Html(e.to_string())
}

/// A phase drawn as a shaded band behind time charts.
pub(super) struct Band {
    pub from: f64,
    pub to: f64,
    pub name: String,
}

pub(super) struct Line {
    pub name: String,
    pub pts: Vec<(f64, f64)>,
}

pub(super) struct Chart<'a> {
    pub id: &'a str,
    pub title: String,
    pub x_desc: &'a str,
    pub y_desc: String,
    pub x: (f64, f64),
    pub lines: Vec<Line>,
    pub bands: &'a [Band],
    /// Formats x tick labels (the distribution chart's percentile axis).
    pub x_fmt: Option<&'a dyn Fn(&f64) -> String>,
    /// How many x ticks plotters should aim for.
    pub x_labels: usize,
    /// Set by [`linear`] and [`log`].
    pub y_labels: usize,
    pub y_fmt: &'a dyn Fn(&f64) -> String,
}

/// Draw a chart with a linear or a log y axis.
pub(super) fn draw<Y>(c: &Chart, y: Y, y_lo: f64, y_hi: f64) -> Result<String, ReportError>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut ch = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 17))
            .margin(8)
            .margin_right(48)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(c.x.0..c.x.1, y)
            .map_err(err)?;
        // Bands first, so lines draw over them.
        for (i, b) in c.bands.iter().enumerate() {
            let shade = if i % 2 == 0 {
                RGBColor(230, 236, 245)
            } else {
                RGBColor(245, 240, 228)
            };
            let (a, z) = (b.from.max(c.x.0), b.to.min(c.x.1));
            if z <= a {
                continue;
            }
            ch.draw_series(std::iter::once(Rectangle::new(
                [(a, y_lo), (z, y_hi)],
                shade.filled(),
            )))
            .map_err(err)?;
        }
        let mut mesh = ch.configure_mesh();
        mesh.x_desc(c.x_desc)
            .y_desc(c.y_desc.as_str())
            .light_line_style(RGBColor(238, 238, 238))
            .label_style(("sans-serif", 12))
            .x_labels(c.x_labels)
            .y_labels(c.y_labels)
            .y_label_formatter(c.y_fmt)
            .x_label_formatter(c.x_fmt.unwrap_or(&fmt_secs));
        mesh.draw().map_err(err)?;
        // Phase names over the mesh, a few pixels inside the band's top-left corner.
        let area = ch.plotting_area();
        for b in c.bands {
            if b.to <= c.x.0 || b.from >= c.x.1 {
                continue;
            }
            let (px, py) = area.map_coordinate(&(b.from.max(c.x.0), y_hi));
            root.draw(&Text::new(
                b.name.clone(),
                (px + 4, py + 4),
                ("sans-serif", 12).into_font().color(&RGBColor(60, 60, 60)),
            ))
            .map_err(err)?;
        }
        for (i, l) in c.lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            ch.draw_series(LineSeries::new(thin(l.pts.clone()), color.stroke_width(2)))
                .map_err(err)?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        if c.lines.len() > 1 || c.lines.iter().any(|l| !l.name.is_empty()) {
            ch.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", 12))
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(format!("<figure id=\"{}\">{svg}</figure>\n", c.id))
}

/// At most this many points per line: an 8-hour soak has 28,800 seconds,
/// more than a chart has pixels.
pub(super) const MAX_POINTS: usize = 1500;

/// Thin a line to [`MAX_POINTS`] buckets, keeping each bucket's peak so
/// spikes stay visible.
pub(super) fn thin(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= MAX_POINTS {
        return pts;
    }
    let per = pts.len().div_ceil(MAX_POINTS);
    pts.chunks(per)
        .filter_map(|c| {
            let x = c.iter().map(|p| p.0).sum::<f64>() / c.len() as f64;
            c.iter().map(|p| p.1).reduce(f64::max).map(|y| (x, y))
        })
        .collect()
}

pub(super) fn y_extent(lines: &[Line]) -> (f64, f64, f64) {
    let vals = lines.iter().flat_map(|l| l.pts.iter().map(|p| p.1));
    let max = vals.clone().fold(0.0f64, f64::max);
    let min_pos = vals.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    (0.0, max, min_pos)
}

pub(super) fn linear(c: &Chart) -> Result<String, ReportError> {
    let (_, max, _) = y_extent(&c.lines);
    let hi = if max > 0.0 { max * 1.15 } else { 1.0 };
    draw(c, 0.0..hi, 0.0, hi)
}

/// Log y axis: latency spans µs to seconds.
pub(super) fn log(c: &Chart) -> Result<String, ReportError> {
    let (_, max, min_pos) = y_extent(&c.lines);
    // From the decade below the smallest value, so the axis has a label under the data.
    let lo = if min_pos.is_finite() {
        10f64.powf(min_pos.log10().floor())
    } else {
        0.01
    };
    let hi = if max > lo { max * 2.0 } else { lo * 10.0 };
    // Zeros (no answers in a second) cannot sit on a log axis.
    let lines: Vec<Line> = c
        .lines
        .iter()
        .map(|l| Line {
            name: l.name.clone(),
            pts: l.pts.iter().copied().filter(|p| p.1 > 0.0).collect(),
        })
        .collect();
    // Ask for every 1..9×10^k tick; `fmt_log_ms` labels only 1, 2 and 5.
    let c2 = Chart {
        lines,
        title: c.title.clone(),
        y_desc: c.y_desc.clone(),
        y_labels: 40,
        y_fmt: &fmt_log_ms,
        ..*c
    };
    draw(&c2, (lo..hi).log_scale(), lo, hi)
}

pub(super) fn fmt_ms(v: &f64) -> String {
    let v = *v;
    if v >= 1000.0 {
        format!("{:.1}s", v / 1000.0)
    } else if v >= 1.0 {
        format!("{v:.0}ms")
    } else {
        format!("{v:.2}ms")
    }
}

/// Log-axis labels at 1, 2 and 5 × 10^k only; the other ticks keep their grid line.
pub(super) fn fmt_log_ms(v: &f64) -> String {
    if *v <= 0.0 {
        return String::new();
    }
    let mant = *v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mant - m).abs() < 0.05)
    {
        fmt_ms(v)
    } else {
        String::new()
    }
}

/// Axis labels in run time: `2.5s`, `45s`, `12m30s`, `2h05m`.
pub(super) fn fmt_secs(v: &f64) -> String {
    let v = *v;
    if v.abs() < 60.0 {
        if (v - v.round()).abs() > 0.01 {
            format!("{v:.1}s")
        } else {
            format!("{v:.0}s")
        }
    } else if v.abs() < 3600.0 {
        let s = v.round() as i64;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = (v / 60.0).round() as i64;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

pub(super) fn fmt_num(v: &f64) -> String {
    let v = *v;
    if v.abs() >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// x = log10(1/(1−q)) → "99%".
pub(super) fn fmt_pct_axis(x: &f64) -> String {
    let q = 1.0 - 10f64.powf(-*x);
    let p = q * 100.0;
    if p < 99.0 {
        format!("{p:.0}%")
    } else {
        let digits = (*x - 2.0).ceil().max(0.0) as usize;
        format!("{p:.digits$}%")
    }
}

pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn thinning_keeps_peaks() {
        let mut pts: Vec<(f64, f64)> = (0..30_000).map(|i| (i as f64, 1.0)).collect();
        pts[12_345].1 = 99.0;
        let t = thin(pts);
        assert!(t.len() <= MAX_POINTS);
        assert!(t.iter().any(|p| p.1 == 99.0));
    }

    #[test]
    fn percentile_axis_labels() {
        assert_eq!(fmt_pct_axis(&0.0), "0%");
        assert_eq!(fmt_pct_axis(&1.0), "90%");
        assert_eq!(fmt_pct_axis(&2.0), "99%");
        assert_eq!(fmt_pct_axis(&3.0), "99.9%");
    }
}
