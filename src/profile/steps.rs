//! A scenario's steps as the engine runs them: `repeat` on a step, or on a
//! block of steps (`{ repeat: 20, steps: [...] }`), flattened into one list
//! in which each loop is its first step's index, its length and its count.

use serde::{Deserialize, Serialize};

use super::locate::Place;
use super::{Profile, RequestSpec, ScenarioSpec};

/// `repeat:` — a count (`20`), or a range (`5..20`, both ends included)
/// from which each iteration draws its count uniformly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Repeat {
    Times(u64),
    Range(String),
}

/// `refresh:` on a scenario step: when its credentials expire, run the
/// step `from` (a login) again, take its extracts again, and go on. On a
/// status of `on_status` the answer counts as `retried` and the step is
/// sent once more after the refresh (so on a `body_regex` match); `after`, `after_uses` and
/// `expires_in` refresh before sending (nothing is retried).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshSpec {
    /// The step of this scenario (its name) that gets the credentials.
    pub from: String,
    /// Statuses that mean the credentials expired (e.g. `[401]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_status: Vec<u16>,
    /// A regex on the answer's body that means the same (every answer of
    /// the step is then read, up to `expect.max_body`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_regex: Option<String>,
    /// Refresh once `from` answered this long ago.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub after: Option<std::time::Duration>,
    /// Refresh after this many sends of refreshing steps since `from` answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_uses: Option<u64>,
    /// A JSON pointer into `from`'s answer: the credentials' lifetime in
    /// seconds; refreshed when 90 % of it has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<String>,
}

/// The most repetitions one `repeat` may ask for.
pub const MAX_REPEAT: u64 = 1_000_000;

impl Repeat {
    /// The count's bounds, both included; an error says what is wrong.
    pub fn bounds(&self) -> Result<(u32, u32), String> {
        let (lo, hi) = match self {
            Repeat::Times(n) => (*n, *n),
            Repeat::Range(s) => {
                let (a, b) = s
                    .split_once("..=")
                    .or_else(|| s.split_once(".."))
                    .ok_or_else(|| format!("`{s}` is neither a count nor a range `LO..HI`"))?;
                let num = |x: &str| {
                    x.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("`{s}`: `{}` is not a whole number", x.trim()))
                };
                (num(a)?, num(b)?)
            }
        };
        if lo > hi {
            return Err(format!("{lo}..{hi}: the low end is above the high end"));
        }
        if lo == 0 {
            return Err("a step repeats at least once (counts start at 1)".into());
        }
        if hi > MAX_REPEAT {
            return Err(format!(
                "{hi} repetitions is over the limit of {MAX_REPEAT}"
            ));
        }
        Ok((lo as u32, hi as u32))
    }
}

/// One loop of a scenario's flat step list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loop {
    /// Its first step, an index into [`ScenarioSpec::flat_steps`].
    pub first: usize,
    /// How many steps it repeats.
    pub len: usize,
    /// Its count's bounds, both included.
    pub lo: u32,
    pub hi: u32,
}

impl RequestSpec {
    /// A block of steps (`steps:`), not a request of its own.
    pub fn is_block(&self) -> bool {
        !self.steps.is_empty()
    }
}

impl ScenarioSpec {
    /// Its steps in the order the engine sends them: a block's steps in
    /// its place (each once; [`ScenarioSpec::loops`] says what repeats).
    pub fn flat_steps(&self) -> Vec<&RequestSpec> {
        let mut out = Vec::new();
        for s in &self.steps {
            if s.is_block() {
                out.extend(s.steps.iter());
            } else {
                out.push(s);
            }
        }
        out
    }

    /// Its loops, in step order (a bad `repeat` counts as once: the
    /// profile's validation has refused it already).
    pub fn loops(&self) -> Vec<Loop> {
        let mut out = Vec::new();
        let mut at = 0;
        for s in &self.steps {
            let len = if s.is_block() { s.steps.len() } else { 1 };
            if let Some(r) = &s.repeat {
                let (lo, hi) = r.bounds().unwrap_or((1, 1));
                out.push(Loop {
                    first: at,
                    len,
                    lo,
                    hi,
                });
            }
            at += len;
        }
        out
    }
}

impl Profile {
    /// Every scenario's `repeat` values and blocks well formed: one level
    /// of repeat, a block with a `repeat` and no request of its own. An
    /// error points at the `repeat` (or `steps`) it is about.
    pub(super) fn check_repeats(&self) -> Result<(), (String, Option<Place>)> {
        // `steps:` keys in text order: each scenario's, then its blocks'.
        let (mut repeats, mut steps_keys) = (0, 0);
        for sc in &self.scenarios {
            steps_keys += 1;
            for s in &sc.steps {
                let what = format!("scenario `{}`", sc.name);
                let here = Some(Place::Key("scenarios", &["steps"], steps_keys));
                if let Some(r) = &s.repeat {
                    r.bounds().map_err(|m| {
                        (
                            format!("{what}: repeat: {m}"),
                            Some(Place::Key("scenarios", &["repeat"], repeats)),
                        )
                    })?;
                    repeats += 1;
                }
                if !s.is_block() {
                    continue;
                }
                steps_keys += 1;
                if s.repeat.is_none() {
                    return Err((
                        format!("{what}: a block of `steps` needs `repeat` (a count or LO..HI)"),
                        here,
                    ));
                }
                if !s.path.is_empty() || s.name.is_some() || !s.extract.is_empty() {
                    return Err((
                        format!("{what}: a repeat block holds only `repeat` and `steps`; its steps are the requests"),
                        here,
                    ));
                }
                if s.steps.iter().any(|t| t.repeat.is_some() || t.is_block()) {
                    return Err((
                        format!("{what}: a repeat block's steps cannot repeat again (one level of `repeat`)"),
                        here,
                    ));
                }
            }
        }
        self.check_refreshes()
    }

    /// Every step's `refresh`: `from` names another step of its scenario
    /// that refreshes nothing itself, and at least one trigger is given.
    fn check_refreshes(&self) -> Result<(), (String, Option<Place>)> {
        let mut nth = 0;
        for sc in &self.scenarios {
            let flat = sc.flat_steps();
            for r in &flat {
                let Some(f) = &r.refresh else { continue };
                let here = Some(Place::Key("scenarios", &["refresh"], nth));
                nth += 1;
                let what = format!("scenario `{}` step {}: refresh", sc.name, r.label());
                let from = flat
                    .iter()
                    .find(|s| s.name.as_deref() == Some(f.from.as_str()));
                let Some(from) = from else {
                    return Err((
                        format!("{what}: from: no step named `{}` in this scenario", f.from),
                        Some(Place::Text("scenarios", format!("from: {}", f.from))),
                    ));
                };
                if std::ptr::eq(*from, *r) || from.refresh.is_some() {
                    return Err((
                        format!(
                            "{what}: from: `{}` refreshes itself; name the login step",
                            f.from
                        ),
                        here,
                    ));
                }
                if f.on_status.is_empty()
                    && f.body_regex.is_none()
                    && f.after.is_none()
                    && f.after_uses.is_none()
                    && f.expires_in.is_none()
                {
                    return Err((
                        format!(
                            "{what}: give on_status, body_regex, after, after_uses or expires_in"
                        ),
                        here,
                    ));
                }
                if let Some(s) = f.on_status.iter().find(|s| !(100..=599).contains(*s)) {
                    return Err((format!("{what}: on_status {s} is not an HTTP status"), here));
                }
                if let Some(re) = &f.body_regex {
                    regex::bytes::Regex::new(re).map_err(|e| {
                        (
                            format!("{what}: body_regex: {e}"),
                            Some(Place::Text("scenarios", re.clone())),
                        )
                    })?;
                }
                if f.after_uses == Some(0) {
                    return Err((format!("{what}: after_uses must be at least 1"), here));
                }
                if f.expires_in.as_ref().is_some_and(|p| !p.starts_with('/')) {
                    return Err((
                        format!("{what}: expires_in is a JSON pointer (`/expires_in`)"),
                        here,
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ranges() {
        assert_eq!(Repeat::Times(3).bounds(), Ok((3, 3)));
        assert_eq!(Repeat::Range("5..20".into()).bounds(), Ok((5, 20)));
        assert_eq!(Repeat::Range("1..=2".into()).bounds(), Ok((1, 2)));
        assert!(Repeat::Range("0..2".into()).bounds().is_err());
        assert!(Repeat::Times(0).bounds().is_err());
        assert!(Repeat::Range("9..2".into()).bounds().is_err());
        assert!(Repeat::Range("a..2".into()).bounds().is_err());
        assert!(Repeat::Range("7".into()).bounds().is_err());
        assert!(Repeat::Times(MAX_REPEAT + 1).bounds().is_err());
    }
}
