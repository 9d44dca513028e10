//! The lane's link to the target: reconnects with back-off, the gaps an
//! outage leaves, keepalives, and what a probe failure or success does to them.

use crate::vocab::samples::CollectorEvent;

use super::{Lane, FIRST_BACKOFF};
use crate::collectors::error::CollectorError;
use crate::collectors::GapInfo;

impl Lane {
    /// Is the link up? Reconnects (respecting back-off) when it is not.
    pub(super) fn ensure_link(&mut self) -> bool {
        if self.t.is_connected() {
            return true;
        }
        if self.permanent.is_some() {
            return false;
        }
        let now = self.now();
        if now < self.next_retry {
            return false;
        }
        match self.t.reconnect() {
            Ok(()) => {
                self.close_gap(now);
                true
            }
            Err(e) => {
                if self.down_since.is_none() {
                    self.down_since = Some(now);
                    self.down_reason = e.to_string();
                }
                if e.is_permanent() {
                    self.permanent = Some(e.to_string());
                    self.error("transport", &e);
                } else {
                    if self.backoff <= FIRST_BACKOFF {
                        self.error("transport", &e);
                    }
                    self.next_retry = now + self.backoff;
                    self.backoff = (self.backoff * 2.0).min(self.max_backoff);
                }
                false
            }
        }
    }

    /// The link works again: record the gap it left.
    fn close_gap(&mut self, now: f64) {
        if let Some(from) = self.down_since.take() {
            let gap = GapInfo {
                lane: self.lane.to_string(),
                from_t: from,
                to_t: now,
                reason: std::mem::take(&mut self.down_reason),
                missed: std::mem::take(&mut self.missed),
                probe: None,
            };
            self.event(CollectorEvent::Reconnected {
                from_t: Some(gap.from_t),
                missed: gap.missed,
            });
            self.rep.gaps.push(gap);
        }
        self.backoff = FIRST_BACKOFF;
    }

    fn link_broke(&mut self, e: &CollectorError) {
        let now = self.now();
        if self.down_since.is_none() {
            self.down_since = Some(now);
            self.down_reason = e.to_string();
            self.event(CollectorEvent::LinkDown {
                message: e.to_string(),
            });
        }
        self.next_retry = now;
        self.backoff = FIRST_BACKOFF;
    }

    /// Handle a probe failure: link errors start a gap; a failed command on
    /// the target process makes us look for the PID again (it may have restarted).
    pub(super) fn fail(&mut self, i: usize, e: CollectorError) {
        let name = format!("{}/{}", self.probes[i].collector, self.probes[i].def.name);
        if e.is_link() {
            self.link_broke(&e);
            self.missed += 1;
        } else if self.probes[i].def.uses("pid") {
            self.pid = None;
            self.java_major = None;
        }
        self.error(&name, &e);
    }

    pub(super) fn succeeded(&mut self, i: usize) {
        // Transports without a session (openssh) come back without a reconnect call.
        if self.down_since.is_some() {
            let t = self.now();
            self.close_gap(t);
        }
        let name = format!("{}/{}", self.probes[i].collector, self.probes[i].def.name);
        self.last_error.remove(&name);
    }

    pub(super) fn keepalive_if_idle(&mut self) {
        let now = self.now();
        if now - self.last_keepalive < 1.0 {
            return;
        }
        self.last_keepalive = now;
        if self.t.is_connected() {
            if let Err(e) = self.t.keepalive() {
                self.link_broke(&e);
                self.error("transport", &e);
            }
        } else if self.down_since.is_some() && self.permanent.is_none() {
            // Reconnect between probes too, so the gap ends as soon as the link is back.
            let _ = self.ensure_link();
        }
    }
}
