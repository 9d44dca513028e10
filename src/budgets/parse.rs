//! Reading a budget: the expression's scope, metric, operator and value
//! with strict units, and its step or scenario name resolved against the profile.

use super::{Budget, BudgetError, BudgetSpec, Metric, Names, Op, Subject};
use crate::metrics::Class;
use crate::vocab::{Level, Percent};

impl BudgetSpec {
    pub fn expr(&self) -> &str {
        match self {
            BudgetSpec::Expr(e) | BudgetSpec::Scoped { expr: e, .. } => e,
        }
    }
    pub fn parse(&self) -> Result<Budget, BudgetError> {
        let mut b = Budget::parse(self.expr())?;
        if let BudgetSpec::Scoped { phase, step, .. } = self {
            if let Some(p) = phase {
                if b.phase.is_some() {
                    return Err(BudgetError(format!(
                        "`{}` names a phase and `phase: {p}` names another",
                        self.expr()
                    )));
                }
                b.phase = Some(p.clone());
            }
            if let Some(st) = step {
                if b.subject != Subject::All {
                    return Err(BudgetError(format!(
                        "`{}` names a step or iterations and `step: {st}` names another",
                        self.expr()
                    )));
                }
                b.subject = Subject::Step {
                    name: st.clone(),
                    at: Vec::new(),
                };
                // Shown as if written in the expression: a verdict names its step.
                b.text = format!("step({st}).{}", b.text);
                b.check_subject()?;
            }
        }
        Ok(b)
    }
}

fn quantile(s: &str) -> Option<f64> {
    let digits = s.strip_prefix('p')?;
    let q: f64 = match digits {
        "999" => 99.9,
        "9999" => 99.99,
        d => d.parse().ok()?,
    };
    // Round away binary noise: p99.9 is exactly 0.999, not 0.9990000000000001.
    (q > 0.0 && q <= 100.0).then_some((q * 1e6).round() / 1e8)
}

impl Budget {
    pub fn parse(text: &str) -> Result<Budget, BudgetError> {
        let err = |m: String| BudgetError(m);
        let t = text.trim();
        let (lhs, op, rhs) = ["<=", ">=", "<", ">"]
            .iter()
            .find_map(|o| t.split_once(o).map(|(a, b)| (a.trim(), *o, b.trim())))
            .ok_or_else(|| err("expected `metric < value`, e.g. `p99 < 500ms`".into()))?;
        let op = match op {
            "<=" => Op::Le,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            _ => Op::Gt,
        };
        // `step(NAME)` / `iteration(NAME)` may hold dots: split outside parentheses.
        let all_parts = split_dots(lhs).map_err(err)?;
        let mut subject = Subject::All;
        let mut subject_at = None;
        for (i, seg) in all_parts.iter().enumerate() {
            let found = if let Some(name) = call(seg, &["step", "request"]) {
                Some(Subject::Step {
                    name: name.map_err(err)?,
                    at: Vec::new(),
                })
            } else if *seg == "iteration" || *seg == "iterations" {
                Some(Subject::Iteration {
                    name: None,
                    at: Vec::new(),
                })
            } else {
                call(seg, &["iteration", "iterations"])
                    .map(|name| {
                        name.map(|n| Subject::Iteration {
                            name: Some(n),
                            at: Vec::new(),
                        })
                    })
                    .transpose()
                    .map_err(err)?
            };
            if let Some(sub) = found {
                if subject_at.is_some() {
                    return Err(err(format!(
                        "`{lhs}`: two subjects (step(…), iteration); give one"
                    )));
                }
                if i > 1 {
                    return Err(err(format!(
                        "`{lhs}`: `{seg}` comes first or after the phase: [phase.][step(NAME).|iteration.][class.]metric"
                    )));
                }
                subject = sub;
                subject_at = Some(i);
            }
        }
        // The phase (if any) is before the subject; class and metric after it.
        let (before, parts): (Vec<&str>, Vec<&str>) = match subject_at {
            Some(i) => (all_parts[..i].to_vec(), all_parts[i + 1..].to_vec()),
            None => (Vec::new(), all_parts.clone()),
        };
        // Metrics may contain a dot (p99.9, svc.p99): find the longest metric suffix.
        let mut found = None;
        for k in (1..=parts.len().min(3)).rev() {
            let m = parts[parts.len() - k..].join(".");
            if let Some(metric) = parse_metric(&m) {
                found = Some((metric, parts.len() - k));
                break;
            }
        }
        let (metric, nscope) = found.ok_or_else(|| {
            err(format!(
                "`{lhs}`: unknown metric; expected p50, p90, p95, p99, p99.9, max, mean, svc.p99, error_rate, shed_rate, drop_rate, throughput, rps or requests"
            ))
        })?;
        let mut phase = before.first().map(|p| p.to_string());
        let mut class = None;
        for s in &parts[..nscope] {
            match Class::from_name(s) {
                Some(c) if class.is_none() => class = Some(c),
                Some(_) => return Err(err(format!("`{lhs}`: two outcome classes"))),
                None if phase.is_none() && class.is_none() && subject_at.is_none() => {
                    phase = Some(s.to_string())
                }
                None => return Err(err(format!("`{lhs}`: `{s}` is neither a phase nor an outcome class (ok, shed, http_error, timeout, connect_error, reset, check_failed, other_error, unfinished)"))),
            }
        }
        let limit = match metric {
            Metric::Quantile(_) | Metric::ServiceQuantile(_) | Metric::Max | Metric::Mean => {
                if rhs.parse::<f64>().is_ok() {
                    return Err(err(format!("`{rhs}`: expected a unit: {rhs}ms")));
                }
                humantime::parse_duration(rhs)
                    .map(|d| d.as_secs_f64() * 1000.0)
                    .map_err(|_| {
                        err(format!(
                            "`{rhs}`: expected a duration such as `500ms` or `1.5s`"
                        ))
                    })
                    .or_else(|e| {
                        // humantime has no fractions: accept `1.5s`/`0.5ms` by hand.
                        parse_frac_duration_ms(rhs).ok_or(e)
                    })?
            }
            Metric::ErrorRate | Metric::ShedRate | Metric::DropRate => {
                if !rhs.ends_with('%') {
                    let n = rhs.trim();
                    return Err(err(if n.parse::<f64>().is_ok() {
                        format!(
                            "`{n}`: expected a percentage: write {n}% (a bare number is ambiguous)"
                        )
                    } else {
                        format!("`{n}`: expected a percentage such as `1%` or `0.1%`")
                    }));
                }
                rhs.parse::<Percent>().map(|p| p.0).map_err(err)?
            }
            Metric::Throughput | Metric::Rps => rhs.parse::<Level>().map(|l| l.0).map_err(err)?,
            Metric::Requests => rhs
                .parse::<f64>()
                .map_err(|_| err(format!("`{rhs}`: expected a number")))?,
        };
        if matches!(
            metric,
            Metric::ErrorRate | Metric::ShedRate | Metric::DropRate
        ) && class.is_some()
        {
            return Err(err(format!(
                "`{lhs}`: rates are over all classes; drop the class"
            )));
        }
        let b = Budget {
            text: t.to_string(),
            phase,
            subject,
            class,
            metric,
            op,
            limit,
        };
        b.check_subject()?;
        Ok(b)
    }

    /// The metrics a step or iteration subject cannot measure.
    fn check_subject(&self) -> Result<(), BudgetError> {
        let Some(what) = self.subject.describe() else {
            return Ok(());
        };
        match self.metric {
            Metric::ServiceQuantile(_) => Err(BudgetError(format!(
                "`{}`: service time is kept for all requests only, not per {what}; budget its latency (p99) instead",
                self.text
            ))),
            Metric::DropRate => Err(BudgetError(format!(
                "`{}`: drops happen before a request or scenario is picked, so there is no drop_rate per {what}; budget drop_rate over all requests",
                self.text
            ))),
            _ => Ok(()),
        }
    }

    /// Resolve a step or iteration name against the profile's requests and
    /// scenarios; an unknown name is an error that lists the known ones.
    pub fn resolve(&mut self, names: &Names<'_>) -> Result<(), BudgetError> {
        match &mut self.subject {
            Subject::All => Ok(()),
            Subject::Step { name, at } => {
                *at = names
                    .requests
                    .iter()
                    .enumerate()
                    .filter(|(_, (full, own))| full == name || own.as_deref() == Some(name))
                    .map(|(i, _)| i)
                    .collect();
                if at.is_empty() {
                    let known: Vec<&str> = names.requests.iter().map(|(f, _)| f.as_str()).collect();
                    return Err(BudgetError(format!(
                        "no step or request named `{name}`; the profile has {}",
                        known.join(", ")
                    )));
                }
                Ok(())
            }
            Subject::Iteration { name, at } => {
                if names.scenarios.is_empty() {
                    return Err(BudgetError(
                        "iterations are measured for `scenarios:` only, and the profile has none"
                            .into(),
                    ));
                }
                if let Some(n) = name {
                    match names.scenarios.iter().position(|s| s == n) {
                        Some(k) => *at = vec![k],
                        None => {
                            return Err(BudgetError(format!(
                                "no scenario named `{n}`; the profile has {}",
                                names.scenarios.join(", ")
                            )))
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// Split `a.step(x.y).p99` on the dots outside parentheses.
fn split_dots(lhs: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut from = 0;
    for (i, c) in lhs.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '.' if depth == 0 => {
                out.push(lhs[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("`{lhs}`: a `)` without its `(`"));
        }
    }
    if depth != 0 {
        return Err(format!("`{lhs}`: a `(` without its `)`"));
    }
    out.push(lhs[from..].trim());
    Ok(out)
}

/// `word(NAME)` for one of `words`: the name, or an error when it is empty.
fn call(seg: &str, words: &[&str]) -> Option<Result<String, String>> {
    let (w, rest) = seg.split_once('(')?;
    if !words.contains(&w.trim()) {
        return None;
    }
    let name = rest.strip_suffix(')')?.trim();
    Some(if name.is_empty() {
        Err(format!(
            "`{seg}`: name the {} inside the parentheses",
            w.trim()
        ))
    } else {
        Ok(name.to_string())
    })
}

fn parse_frac_duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let units = [
        ("ms", 1.0),
        ("us", 0.001),
        ("µs", 0.001),
        ("s", 1000.0),
        ("m", 60_000.0),
    ];
    for (u, f) in units {
        if let Some(n) = s.strip_suffix(u) {
            if let Ok(v) = n.trim().parse::<f64>() {
                if v.is_finite() && v >= 0.0 {
                    return Some(v * f);
                }
            }
        }
    }
    None
}

fn parse_metric(m: &str) -> Option<Metric> {
    Some(match m {
        "max" => Metric::Max,
        "mean" | "avg" => Metric::Mean,
        "error_rate" => Metric::ErrorRate,
        "shed_rate" => Metric::ShedRate,
        "drop_rate" => Metric::DropRate,
        "throughput" => Metric::Throughput,
        "rps" => Metric::Rps,
        "requests" => Metric::Requests,
        _ => {
            if let Some(q) = m.strip_prefix("svc.") {
                return quantile(q).map(Metric::ServiceQuantile);
            }
            return quantile(m).map(Metric::Quantile);
        }
    })
}
