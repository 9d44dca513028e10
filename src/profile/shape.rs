//! Load shapes (stress, soak, spike, overload, stages, constant) and their
//! compilation into a [`Plan`]: a list of named phases, each a linear ramp of
//! the load level from `from` to `to` over its duration.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Model;
pub use crate::vocab::ShapeKind;
use crate::vocab::{Level, PhaseInfo};

/// The `shape:` section: exactly one of the shapes below.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Shape {
    /// One level held for a duration, after an optional ramp.
    Constant(Hold),
    /// Step the level up until `max` (or the first step that breaks a budget).
    Stress {
        #[serde(alias = "start_vus")]
        start: Level,
        step: Level,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        step_duration: Duration,
        max: Level,
        /// Stop at the first step that breaks a budget (default true).
        #[serde(default = "yes")]
        stop_on_breach: bool,
        /// Fail the run (exit 99) when the knee is below this level.
        #[serde(default)]
        expect_capacity: Option<Level>,
        /// A warm-up phase before the measured ones (see [`Warmup`]).
        #[serde(default)]
        warmup: Option<Warmup>,
    },
    /// Hold a level for hours to expose leaks and drift.
    Soak(Hold),
    /// Baseline, then `factor`× at once, then baseline again.
    Spike {
        baseline: Level,
        #[serde(default = "ten")]
        factor: f64,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        baseline_duration: Duration,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        spike_duration: Duration,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        recovery_duration: Duration,
        /// A warm-up phase before the measured ones (see [`Warmup`]).
        #[serde(default)]
        warmup: Option<Warmup>,
    },
    /// Drive past capacity to check load shedding.
    Overload {
        baseline: Level,
        #[serde(alias = "vus")]
        rate: Level,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        baseline_duration: Duration,
        /// Time to ramp from baseline to `rate` (default: at once).
        #[serde(default, with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        ramp: Option<Duration>,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        duration: Duration,
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        recovery_duration: Duration,
        /// Shed responses (503/429) must come back faster than this (p99).
        #[serde(default = "fast_fail", with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        fast_fail: Duration,
        /// The capacity the shed checks measure against (default: the best
        /// ok/s sustained for 3 s in `ramp`, or the baseline's).
        #[serde(default)]
        expect_capacity: Option<Level>,
        /// A warm-up phase before the measured ones (see [`Warmup`]).
        #[serde(default)]
        warmup: Option<Warmup>,
    },
    /// A free list of ramps: each stage moves linearly from the previous target to its own.
    Stages {
        #[serde(default)]
        start: Level,
        stages: Vec<Stage>,
        /// A warm-up phase before the measured ones (see [`Warmup`]).
        #[serde(default)]
        warmup: Option<Warmup>,
    },
}

/// A level held for a duration, after an optional ramp from 0: the
/// `constant` shape, and the `soak` shape, which judges leaks and drift over it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hold {
    #[serde(alias = "vus")]
    pub rate: Level,
    #[serde(with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub duration: Duration,
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub ramp_up: Option<Duration>,
    /// A warm-up phase (see [`Warmup`]): for `constant` before `duration`;
    /// for `soak` the first part of `duration`, left out of leak trends (JIT,
    /// caches and pools warming up).
    #[serde(default)]
    pub warmup: Option<Warmup>,
}

/// `warmup:` of any shape: `warmup: 30s` (at the shape's first level) or
/// `warmup: { duration: 30s, rate: 50/s }`. It runs as its own phase named
/// `warmup`, before the measured phases (for soak: the first part of
/// `duration`, after `ramp_up`), and nothing judges it: budgets, the knee,
/// verdicts, gates and leak trends all leave it out.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Warmup {
    For(
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        Duration,
    ),
    At {
        #[serde(with = "humantime_serde")]
        #[schemars(with = "crate::profile::schema::Duration")]
        duration: Duration,
        #[serde(default, alias = "vus")]
        rate: Option<Level>,
    },
}

impl Warmup {
    pub fn duration(&self) -> Duration {
        match self {
            Warmup::For(d) | Warmup::At { duration: d, .. } => *d,
        }
    }
    /// The level it runs at: its own `rate`, else the shape's first level.
    pub fn level(&self, first: f64) -> f64 {
        match self {
            Warmup::At { rate: Some(r), .. } => r.0,
            _ => first,
        }
    }
}

fn yes() -> bool {
    true
}
fn ten() -> f64 {
    10.0
}
fn fast_fail() -> Duration {
    Duration::from_millis(50)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub duration: Duration,
    #[serde(alias = "rate", alias = "vus")]
    pub target: Level,
}

/// One phase of a plan: the level ramps linearly from `from` to `to`.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub info: PhaseInfo,
    pub from: f64,
    pub to: f64,
}

impl Phase {
    /// Level at `t` into the phase.
    pub fn level_at(&self, t: Duration) -> f64 {
        let d = self.info.duration.as_secs_f64();
        if d <= 0.0 {
            return self.to;
        }
        let f = (t.as_secs_f64() / d).clamp(0.0, 1.0);
        self.from + (self.to - self.from) * f
    }
    pub fn end(&self) -> Duration {
        self.info.start + self.info.duration
    }
}

/// The compiled schedule.
#[derive(Debug, Clone)]
pub struct Plan {
    pub model: Model,
    pub kind: ShapeKind,
    pub phases: Vec<Phase>,
}

impl Plan {
    pub fn total(&self) -> Duration {
        self.phases.last().map(|p| p.end()).unwrap_or_default()
    }
    /// Index of the phase running at offset `t` (the last one after the end).
    pub fn phase_at(&self, t: Duration) -> usize {
        self.phases
            .iter()
            .position(|p| t < p.end())
            .unwrap_or(self.phases.len().saturating_sub(1))
    }
    pub fn infos(&self) -> Vec<PhaseInfo> {
        self.phases.iter().map(|p| p.info.clone()).collect()
    }
}

fn label(model: Model, from: f64, to: f64) -> String {
    let unit = model.unit();
    let f = |v: f64| Level(v).to_string();
    if (from - to).abs() < f64::EPSILON {
        format!("{}{unit}", f(to))
    } else {
        format!("{}→{}{unit}", f(from), f(to))
    }
}

struct Builder {
    model: Model,
    scale: f64,
    at: Duration,
    phases: Vec<Phase>,
}

impl Builder {
    fn push(&mut self, name: String, d: Duration, from: f64, to: f64) {
        let duration = d.mul_f64(self.scale);
        if duration.is_zero() {
            return;
        }
        self.phases.push(Phase {
            info: PhaseInfo {
                index: self.phases.len(),
                name,
                label: label(self.model, from, to),
                start: self.at,
                duration,
                level: Some(to),
            },
            from,
            to,
        });
        self.at += duration;
    }

    /// A held level's `ramp-up` (from 0) and `warmup` phases.
    fn ramp_up(&mut self, h: &Hold) {
        if let Some(r) = h.ramp_up {
            self.push("ramp-up".into(), r, 0.0, h.rate.0);
        }
        self.warmup(h.warmup.as_ref(), h.rate.0);
    }

    /// The `warmup` phase, held at its level (the shape's `first` unless it gives a rate).
    fn warmup(&mut self, w: Option<&Warmup>, first: f64) {
        if let Some(w) = w {
            let level = w.level(first);
            self.push(crate::vocab::WARMUP.into(), w.duration(), level, level);
        }
    }
}

/// A level of `shape:` at which a phase would send nothing.
pub(super) struct Silent {
    pub message: String,
    /// The keys (with their aliases) one of which holds the level…
    pub keys: &'static [&'static str],
    /// …at this occurrence within `shape:` (the stage's index for stages).
    pub nth: usize,
}

impl Shape {
    /// The first phase that would send nothing: every level in it is 0.
    pub(super) fn silent_level(&self, model: Model) -> Option<Silent> {
        let unit = model.unit();
        let zero = |l: &Level| l.0 <= 0.0;
        let say = |what: &str, keys, nth, hint: &str| {
            Some(Silent {
                message: format!("shape: {what} is 0{unit}: that phase would send nothing; {hint}"),
                keys,
                nth,
            })
        };
        const RATE: &[&str] = &["rate", "vus"];
        match self {
            Shape::Constant(h) if zero(&h.rate) => {
                say("constant.rate", RATE, 0, "give a level above 0, e.g. 100/s")
            }
            Shape::Soak(h) if zero(&h.rate) => {
                say("soak.rate", RATE, 0, "give a level above 0, e.g. 100/s")
            }
            Shape::Stress { start, .. } if zero(start) => say(
                "stress.start",
                &["start", "start_vus"],
                0,
                "start at the first level worth measuring, e.g. the step",
            ),
            Shape::Spike { baseline, .. } if zero(baseline) => say(
                "spike.baseline",
                &["baseline"],
                0,
                "the spike is baseline × factor: give a baseline above 0",
            ),
            Shape::Overload {
                baseline,
                baseline_duration,
                recovery_duration,
                ..
            } if zero(baseline)
                && !(baseline_duration.is_zero() && recovery_duration.is_zero()) =>
            {
                say(
                    "overload.baseline",
                    &["baseline"],
                    0,
                    "the baseline and recovery phases run at it: give a level above 0",
                )
            }
            Shape::Overload { rate, .. } if zero(rate) => say(
                "overload.rate",
                RATE,
                0,
                "give the level past capacity, e.g. 1200/s",
            ),
            Shape::Stages { start, stages, .. } => {
                let mut prev = start.0;
                for (i, st) in stages.iter().enumerate() {
                    if prev <= 0.0 && st.target.0 <= 0.0 && !st.duration.is_zero() {
                        return Some(Silent {
                            message: format!(
                                "shape: stages[{i}] holds 0{unit} from start to end: that phase would send nothing; ramp to a level above 0"
                            ),
                            keys: &["target", "rate", "vus"],
                            nth: i,
                        });
                    }
                    prev = st.target.0;
                }
                None
            }
            _ => None,
        }
    }

    /// The shape's `warmup:`, whichever the shape.
    pub fn warmup(&self) -> Option<&Warmup> {
        match self {
            Shape::Constant(Hold { warmup, .. })
            | Shape::Stress { warmup, .. }
            | Shape::Soak(Hold { warmup, .. })
            | Shape::Spike { warmup, .. }
            | Shape::Overload { warmup, .. }
            | Shape::Stages { warmup, .. } => warmup.as_ref(),
        }
    }

    /// `warmup:` must last, and send something.
    fn validate_warmup(&self) -> Result<(), (String, &'static [&'static str])> {
        let Some(w) = self.warmup() else {
            return Ok(());
        };
        if w.duration().is_zero() {
            return Err(("shape: warmup must be longer than 0s".into(), &["warmup"]));
        }
        if let Warmup::At { rate: Some(r), .. } = w {
            if r.0 <= 0.0 {
                return Err(("shape: warmup.rate must be above 0 (or leave it out: the warm-up then runs at the shape's first level)".into(), &["warmup"]));
            }
        }
        if let Shape::Soak(Hold { duration, .. }) = self {
            if w.duration() >= *duration {
                return Err((
                    format!(
                        "shape.soak: warmup ({}) is the first part of duration ({}) and must be shorter than it",
                        humantime::format_duration(w.duration()),
                        humantime::format_duration(*duration)
                    ),
                    &["warmup"],
                ));
            }
        }
        Ok(())
    }

    /// Ranges serde cannot express; an error names the key that holds the
    /// cause, for its line and column in the text.
    pub(super) fn validate(&self, model: Model) -> Result<(), (String, &'static [&'static str])> {
        self.validate_warmup()?;
        let nonzero = |d: &Duration, key: &'static [&'static str]| {
            if d.is_zero() {
                Err((format!("shape: {} must be longer than 0s", key[0]), key))
            } else {
                Ok(())
            }
        };
        match self {
            Shape::Constant(h) | Shape::Soak(h) => nonzero(&h.duration, &["duration"]),
            Shape::Stress {
                start,
                step,
                step_duration,
                max,
                ..
            } => {
                nonzero(step_duration, &["step_duration"])?;
                if step.0 <= 0.0 {
                    return Err(("shape.stress.step must be above 0".into(), &["step"]));
                }
                if max.0 < start.0 {
                    return Err(("shape.stress.max must be at least start".into(), &["max"]));
                }
                if ((max.0 - start.0) / step.0) > 1000.0 {
                    return Err(("shape.stress: more than 1000 steps; raise `step`".into(), &["step"]));
                }
                Ok(())
            }
            Shape::Spike {
                factor,
                spike_duration,
                ..
            } => {
                nonzero(spike_duration, &["spike_duration"])?;
                if !(factor.is_finite() && *factor > 0.0) {
                    return Err(("shape.spike.factor must be above 0".into(), &["factor"]));
                }
                Ok(())
            }
            Shape::Overload { duration, .. } => nonzero(duration, &["duration"]),
            Shape::Stages { stages, .. } => {
                if stages.is_empty() {
                    return Err(("shape.stages needs at least one stage".into(), &["stages"]));
                }
                for s in stages {
                    if let Some(n) = &s.name {
                        if !tag_safe(n) {
                            return Err((format!("stage name `{n}`: use letters, digits, `-`, `_` and `.` only"), &["stages"]));
                        }
                    }
                }
                Ok(())
            }
        }
        .and_then(|()| {
            if model == Model::Closed {
                if let Shape::Spike { factor, baseline, .. } = self {
                    if (baseline.0 * factor).fract() != 0.0 {
                        return Err(("shape.spike: baseline × factor must be a whole number of VUs in the closed model".into(), &["factor"]));
                    }
                }
            }
            Ok(())
        })
    }

    /// Compile into phases; `scale` multiplies every duration.
    pub fn compile(&self, model: Model, scale: f64) -> Plan {
        let mut b = Builder {
            model,
            scale,
            at: Duration::ZERO,
            phases: Vec::new(),
        };
        let kind = match self {
            Shape::Constant(h) => {
                b.ramp_up(h);
                b.push("main".into(), h.duration, h.rate.0, h.rate.0);
                ShapeKind::Constant
            }
            Shape::Stress {
                start,
                step,
                step_duration,
                max,
                stop_on_breach,
                expect_capacity,
                warmup,
            } => {
                b.warmup(warmup.as_ref(), start.0);
                let mut level = start.0;
                let mut i = 1;
                while level <= max.0 + 1e-9 {
                    b.push(format!("step-{i}"), *step_duration, level, level);
                    level += step.0;
                    i += 1;
                }
                ShapeKind::Stress {
                    stop_on_breach: *stop_on_breach,
                    expect_capacity: expect_capacity.map(|l| l.0),
                }
            }
            Shape::Soak(h) => {
                b.ramp_up(h);
                // The warm-up is the first part of the soak's duration.
                let warm = h.warmup.as_ref().map(Warmup::duration);
                let rest = h.duration.saturating_sub(warm.unwrap_or_default());
                b.push("soak".into(), rest, h.rate.0, h.rate.0);
                ShapeKind::Soak {
                    warmup: warm.map(|w| w.mul_f64(scale)),
                }
            }
            Shape::Spike {
                baseline,
                factor,
                baseline_duration,
                spike_duration,
                recovery_duration,
                warmup,
            } => {
                b.warmup(warmup.as_ref(), baseline.0);
                let peak = baseline.0 * factor;
                b.push(
                    "baseline".into(),
                    *baseline_duration,
                    baseline.0,
                    baseline.0,
                );
                b.push("spike".into(), *spike_duration, peak, peak);
                b.push(
                    "recovery".into(),
                    *recovery_duration,
                    baseline.0,
                    baseline.0,
                );
                ShapeKind::Spike
            }
            Shape::Overload {
                baseline,
                rate,
                baseline_duration,
                ramp,
                duration,
                recovery_duration,
                fast_fail,
                expect_capacity,
                warmup,
            } => {
                b.warmup(warmup.as_ref(), baseline.0);
                b.push(
                    "baseline".into(),
                    *baseline_duration,
                    baseline.0,
                    baseline.0,
                );
                if let Some(r) = ramp {
                    b.push("ramp".into(), *r, baseline.0, rate.0);
                }
                b.push("overload".into(), *duration, rate.0, rate.0);
                b.push(
                    "recovery".into(),
                    *recovery_duration,
                    baseline.0,
                    baseline.0,
                );
                ShapeKind::Overload {
                    fast_fail: *fast_fail,
                    expect_capacity: expect_capacity.map(|l| l.0),
                }
            }
            Shape::Stages {
                start,
                stages,
                warmup,
            } => {
                let first = if start.0 > 0.0 {
                    start.0
                } else {
                    stages.first().map(|s| s.target.0).unwrap_or(0.0)
                };
                b.warmup(warmup.as_ref(), first);
                let mut prev = start.0;
                for (i, s) in stages.iter().enumerate() {
                    let name = s.name.clone().unwrap_or_else(|| format!("stage-{}", i + 1));
                    b.push(name, s.duration, prev, s.target.0);
                    prev = s.target.0;
                }
                ShapeKind::Stages
            }
        };
        Plan {
            model,
            kind,
            phases: b.phases,
        }
    }
}

/// Names end up as interval-log tags: no spaces, commas or newlines.
pub fn tag_safe(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stress_steps_are_contiguous() {
        let s = Shape::Stress {
            start: Level(100.0),
            step: Level(100.0),
            step_duration: Duration::from_secs(10),
            max: Level(500.0),
            stop_on_breach: true,
            expect_capacity: None,
            warmup: None,
        };
        let p = s.compile(Model::Open, 1.0);
        assert_eq!(p.phases.len(), 5);
        assert_eq!(p.phases[4].info.name, "step-5");
        assert_eq!(p.phases[4].from, 500.0);
        assert_eq!(p.phases[2].info.start, Duration::from_secs(20));
        assert_eq!(p.total(), Duration::from_secs(50));
        assert_eq!(p.phase_at(Duration::from_millis(19_999)), 1);
        let fast = s.compile(Model::Open, 0.1);
        assert_eq!(fast.total(), Duration::from_secs(5));
    }

    #[test]
    fn ramp_level() {
        let s = Shape::Stages {
            start: Level(0.0),
            stages: vec![Stage {
                name: None,
                duration: Duration::from_secs(10),
                target: Level(100.0),
            }],
            warmup: None,
        };
        let p = s.compile(Model::Open, 1.0);
        assert!((p.phases[0].level_at(Duration::from_secs(5)) - 50.0).abs() < 1e-9);
    }

    fn parse(yaml: &str) -> Shape {
        serde_saphyr::from_str(yaml).expect("shape")
    }

    #[test]
    fn every_shape_takes_a_warmup_phase() {
        // At the shape's first level by default…
        let p =
            parse("stress: { start: 10/s, step: 10/s, step_duration: 2s, max: 30/s, warmup: 3s }")
                .compile(Model::Open, 1.0);
        assert_eq!(p.phases[0].info.name, "warmup");
        assert_eq!((p.phases[0].from, p.phases[0].to), (10.0, 10.0));
        assert_eq!(p.phases[0].info.duration, Duration::from_secs(3));
        assert_eq!(p.phases[1].info.name, "step-1");
        assert_eq!(p.phases[1].info.start, Duration::from_secs(3));
        assert_eq!(p.total(), Duration::from_secs(9));
        // …or at its own rate.
        let p = parse("overload: { baseline: 50/s, rate: 500/s, baseline_duration: 2s, duration: 2s, recovery_duration: 2s, warmup: { duration: 4s, rate: 20/s } }")
            .compile(Model::Open, 1.0);
        assert_eq!(p.phases[0].info.name, "warmup");
        assert_eq!(p.phases[0].to, 20.0);
        assert_eq!(p.phases[1].info.name, "baseline");
        for y in [
            "constant: { rate: 5/s, duration: 2s, warmup: 1s }",
            "spike: { baseline: 5/s, baseline_duration: 1s, spike_duration: 1s, recovery_duration: 1s, warmup: 1s }",
            "stages: { stages: [ { duration: 2s, target: 5/s } ], warmup: 1s }",
        ] {
            let p = parse(y).compile(Model::Open, 1.0);
            assert_eq!(p.phases[0].info.name, "warmup", "{y}");
            assert_eq!(p.phases[0].to, 5.0, "{y}");
        }
    }

    #[test]
    fn a_soak_warmup_is_the_first_part_of_its_duration() {
        let s = parse("soak: { rate: 100/s, duration: 10s, ramp_up: 2s, warmup: 3s }");
        s.validate(Model::Open).expect("valid");
        let p = s.compile(Model::Open, 1.0);
        let names: Vec<&str> = p.phases.iter().map(|p| p.info.name.as_str()).collect();
        assert_eq!(names, ["ramp-up", "warmup", "soak"]);
        assert_eq!(p.total(), Duration::from_secs(12), "same length as before");
        assert_eq!(p.phases[2].info.start, Duration::from_secs(5));
        assert!(
            matches!(p.kind, ShapeKind::Soak { warmup: Some(w) } if w == Duration::from_secs(3))
        );
        let long = parse("soak: { rate: 100/s, duration: 10s, warmup: 10s }");
        assert!(long.validate(Model::Open).is_err());
        let zero = parse("stress: { start: 1/s, step: 1/s, step_duration: 1s, max: 2/s, warmup: { duration: 2s, rate: 0/s } }");
        assert!(zero.validate(Model::Open).is_err());
    }
}
