//! The stall clock: when the whole demo server is paused.
//!
//! Windows are computed from the server's start instant, never from a timer
//! that could drift, so a test can predict every window exactly: with
//! `every = E` and `stall_for = S` the server is paused during
//! `[k·E + (E − S), (k + 1)·E)` for k = 0, 1, 2, … — the last `S` of each
//! period. Placing the stall at the end of the period means any run that
//! covers one whole period from the server start sees exactly one stall
//! (a 10-s run against a "1 s every 10 s" server is stalled 10% of the time).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When the server pauses, relative to its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallSchedule {
    /// Period of the stall cycle.
    #[serde(with = "humantime_serde")]
    pub every: Duration,
    /// Length of the pause at the end of each period (`< every`).
    #[serde(with = "humantime_serde")]
    pub stall_for: Duration,
}

impl StallSchedule {
    /// The stall window containing `elapsed` (time since server start) as
    /// `(window start, window end)`, both offsets from the server start;
    /// `None` when the server is running normally at `elapsed`.
    pub fn window_at(&self, elapsed: Duration) -> Option<(Duration, Duration)> {
        let every = self.every.as_nanos();
        if every == 0 || self.stall_for.is_zero() {
            return None;
        }
        let stall = self.stall_for.as_nanos().min(every);
        let e = elapsed.as_nanos();
        let k = e / every;
        let phase = e % every;
        if phase < every - stall {
            return None;
        }
        let end = (k + 1) * every;
        Some((nanos(end - stall), nanos(end)))
    }

    /// The q-quantile (0..=1) of the wait a stall adds to a request arriving
    /// at a uniformly random time — what open-model traffic over whole
    /// periods sees: a fraction S/E of requests wait uniformly 0..S, the
    /// rest not at all. With 1 s every 10 s: p99 = 0.9 s, p99.9 = 0.99 s.
    /// Add the endpoint's own service time for the expected latency.
    pub fn added_latency_quantile(&self, q: f64) -> Duration {
        let f = self.stalled_fraction();
        let q = q.clamp(0.0, 1.0);
        if f <= 0.0 || q <= 1.0 - f {
            return Duration::ZERO;
        }
        self.stall_for.mul_f64(((q - (1.0 - f)) / f).min(1.0))
    }

    /// Fraction of time the server is paused (S / E).
    pub fn stalled_fraction(&self) -> f64 {
        if self.every.is_zero() {
            return 0.0;
        }
        (self.stall_for.as_secs_f64() / self.every.as_secs_f64()).min(1.0)
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn window_is_the_last_part_of_each_period() {
        let s = StallSchedule {
            every: ms(10_000),
            stall_for: ms(1_000),
        };
        assert_eq!(s.window_at(ms(0)), None);
        assert_eq!(s.window_at(ms(8_999)), None);
        assert_eq!(s.window_at(ms(9_000)), Some((ms(9_000), ms(10_000))));
        assert_eq!(s.window_at(ms(9_999)), Some((ms(9_000), ms(10_000))));
        assert_eq!(s.window_at(ms(10_000)), None);
        assert_eq!(s.window_at(ms(19_500)), Some((ms(19_000), ms(20_000))));
        assert!((s.stalled_fraction() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn added_latency_quantiles() {
        let s = StallSchedule {
            every: ms(10_000),
            stall_for: ms(1_000),
        };
        let q = |q: f64| s.added_latency_quantile(q).as_secs_f64();
        assert_eq!(q(0.5), 0.0);
        assert_eq!(q(0.9), 0.0);
        assert!((q(0.95) - 0.5).abs() < 1e-9);
        assert!((q(0.99) - 0.9).abs() < 1e-9);
        assert!((q(0.999) - 0.99).abs() < 1e-9);
        assert!((q(1.0) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn zero_stall_never_pauses() {
        let s = StallSchedule {
            every: ms(100),
            stall_for: Duration::ZERO,
        };
        for t in 0..300 {
            assert_eq!(s.window_at(ms(t)), None);
        }
    }
}
