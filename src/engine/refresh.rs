//! Token refresh in scenarios: which steps renew their credentials by
//! running a login step again (`refresh:`), compiled once, and the state one
//! iteration keeps to tell when a proactive refresh is due.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::client::{Extractor, Prepared};
use crate::profile::ScenarioSpec;

/// A step's `refresh`, compiled.
#[derive(Debug)]
pub(super) struct Refresh {
    /// The login step: an index into the mix.
    pub from: usize,
    pub on_status: Vec<u16>,
    pub after: Option<Duration>,
    pub after_uses: Option<u64>,
}

/// Every step's refresh, and which steps are a login some step names.
#[derive(Debug, Default)]
pub(super) struct Refreshes {
    /// Indexed by request.
    pub at: Vec<Option<Box<Refresh>>>,
    /// Indexed by request: a `from` step (its answers renew the credentials).
    pub renews: Vec<bool>,
    /// Indexed by request: the variable slot a `from` step's `expires_in`
    /// is extracted into.
    pub expires: Vec<Option<usize>>,
}

impl Refreshes {
    pub fn new(requests: usize) -> Refreshes {
        Refreshes {
            at: (0..requests).map(|_| None).collect(),
            renews: vec![false; requests],
            expires: vec![None; requests],
        }
    }

    /// Compile scenario `sc`'s refreshes; its steps are the mix's requests
    /// from `first` on and its variables take `vars` slots. An `expires_in`
    /// becomes one more extract of the login step, into a slot after the
    /// scenario's own; returns the slots the scenario needs in all.
    pub fn add(
        &mut self,
        sc: &ScenarioSpec,
        first: usize,
        mut vars: usize,
        requests: &mut [Prepared],
    ) -> usize {
        let flat = sc.flat_steps();
        for (j, r) in flat.iter().enumerate() {
            let Some(f) = &r.refresh else { continue };
            // Validation made sure it names a step.
            let Some(k) = flat
                .iter()
                .position(|s| s.name.as_deref() == Some(f.from.as_str()))
            else {
                continue;
            };
            let from = first + k;
            if let (Some(ptr), Some(slot), Some(login)) = (
                &f.expires_in,
                self.expires.get_mut(from).filter(|s| s.is_none()),
                requests.get_mut(from),
            ) {
                login.extract.push((vars, Extractor::Json(ptr.clone())));
                *slot = Some(vars);
                vars += 1;
            }
            if let Some(slot) = self.renews.get_mut(from) {
                *slot = true;
            }
            let re = f.body_regex.as_deref().map(regex::bytes::Regex::new);
            if let (Some(Ok(re)), Some(step)) = (re, requests.get_mut(first + j)) {
                step.expired = Some(re);
            }
            if let Some(slot) = self.at.get_mut(first + j) {
                *slot = Some(Box::new(Refresh {
                    from,
                    on_status: f.on_status.clone(),
                    after: f.after,
                    after_uses: f.after_uses,
                }));
            }
        }
        vars
    }
}

/// One iteration's credentials: when the login last answered, the sends
/// since, and when they expire.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Creds {
    since: Option<Instant>,
    uses: u64,
    expires: Option<Instant>,
}

impl Creds {
    /// The login answered ok at `at`; `vars` holds what it extracted, its
    /// lifetime in slot `expires` if it has one.
    pub fn renewed(&mut self, at: Instant, expires: Option<usize>, vars: &[Option<Bytes>]) {
        self.since = Some(at);
        self.uses = 0;
        self.expires = expires
            .and_then(|i| vars.get(i)?.as_ref())
            .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| at + Duration::from_secs_f64(s * 0.9));
    }

    /// Whether the step guarded by `r` must refresh before it is sent (a
    /// budget ran out).
    pub fn due(&self, r: &Refresh, now: Instant) -> bool {
        let Some(since) = self.since else {
            // No login answered in this iteration yet: nothing to renew.
            return false;
        };
        r.after.is_some_and(|a| now >= since + a)
            || r.after_uses.is_some_and(|n| self.uses >= n)
            || self.expires.is_some_and(|e| now >= e)
    }

    /// A guarded step is sent with the credentials.
    pub fn used(&mut self) {
        self.uses += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refresh(after_uses: Option<u64>) -> Refresh {
        Refresh {
            from: 0,
            on_status: vec![401],
            after: None,
            after_uses,
        }
    }

    #[test]
    fn uses_and_expiry_budgets() {
        let t0 = Instant::now();
        let r = refresh(Some(2));
        let mut c = Creds::default();
        assert!(!c.due(&r, t0), "no login yet");
        c.renewed(t0, None, &[]);
        for _ in 0..2 {
            assert!(!c.due(&r, t0));
            c.used();
        }
        assert!(c.due(&r, t0), "the third send after the login");
        let r = refresh(None);
        c.renewed(t0, Some(0), &[Some(Bytes::from_static(b"10"))]);
        assert!(!c.due(&r, t0 + Duration::from_secs(8)));
        assert!(c.due(&r, t0 + Duration::from_secs(9)), "90 % of 10 s");
    }
}
