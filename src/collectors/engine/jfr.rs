//! JFR recordings: started with their phase (or the run), stopped at the
//! phase's end or at shutdown, then downloaded and recorded as artifacts.

use serde_json::json;

use super::{Engine, JfrActive};
use crate::collectors::error::CollectorError;
use crate::collectors::store::artifact_name;

impl Engine {
    pub(super) fn jfr_start(&mut self, i: usize) {
        if self.probes[i].next_due.is_some_and(|d| d > self.now()) {
            return;
        }
        if !self.ensure_link() {
            return;
        }
        let pid = match self.prepare(i) {
            Ok(p) => p,
            Err(CollectorError::Other(m)) if m.is_empty() => return,
            Err(e) => {
                // Retry at the next loop turn, but not in a tight loop.
                self.probes[i].next_due = Some(self.now() + 1.0);
                return self.fail(i, e);
            }
        };
        let remote = self.remote_file(i);
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, &remote, 0);
        let t = self.now();
        match self.t.exec(&cmd).and_then(|o| o.check(&cmd)) {
            Ok(_) => {
                let phase = self.probes[i]
                    .def
                    .phase
                    .clone()
                    .unwrap_or_else(|| "run".into());
                self.event("jfr-start", json!({"remote": remote, "pid": pid}));
                self.probes[i].jfr = Some(JfrActive { remote, t, phase });
                self.probes[i].next_due = None;
            }
            Err(e) => {
                self.probes[i].next_due = Some(self.now() + 2.0);
                self.fail(i, e);
            }
        }
    }

    pub(super) fn jfr_stop(&mut self, i: usize) {
        let Some(active) = self.probes[i].jfr.take() else {
            return;
        };
        if !self.ensure_link() {
            // One immediate retry: the recording is worth it.
            self.next_retry = 0.0;
            if !self.ensure_link() {
                let e =
                    CollectorError::Other(format!("JFR {} lost: link down at stop", active.remote));
                return self.error("jvm/jfr", &e);
            }
        }
        let res = (|| -> Result<(String, u64), CollectorError> {
            let pid = self.ensure_pid()?;
            let stop = self.probes[i].def.stop_command.clone().unwrap_or_default();
            let cmd = self.render(i, &stop, pid, &active.remote, 0);
            self.t.exec(&cmd)?.check(&cmd)?;
            let p = &self.probes[i];
            let name = artifact_name(
                &p.def.name,
                active.t,
                &active.phase,
                p.count + 1,
                &p.def.extension,
            );
            let local = self.dir.join(&name);
            let n = self.t.download(&active.remote, &local);
            let rm = self.t.remove(&active.remote);
            let n = n?;
            rm?;
            Ok((name, n))
        })();
        self.probes[i].count += 1;
        match res {
            Ok((name, n)) => self.record_artifact(i, name, active.t, active.phase, n, "jfr"),
            Err(e) => self.fail(i, e),
        }
    }
}
