//! Running one probe on the target: finding the target process and its Java
//! version, filling in placeholders, and storing what `sample`, `artifact` and
//! `tail` probes bring back.

use std::fs::{File, OpenOptions};
use std::io::Write;

use serde::Serialize;

use super::{Lane, Parser};
use crate::collectors::definition::{render, PidUse, ProbeKind};
use crate::collectors::error::CollectorError;
use crate::collectors::jvm;
use crate::collectors::quote::sh_quote;
use crate::collectors::store::{artifact_name, safe};
use crate::collectors::{ArtifactInfo, PidInfo};
use crate::vocab::samples::{CollectorEvent, LinesSample, NoSample, ProbeRow};

/// The values of a probe command's run-time placeholders.
#[derive(Default)]
pub(super) struct Fill<'a> {
    pub pid: Option<u32>,
    /// `{remote_file}`
    pub remote: &'a str,
    /// `{offset}`
    pub offset: u64,
    /// Further placeholders (`maxage`, `begin`).
    pub extra: &'a [(&'a str, String)],
}

impl<'a> Fill<'a> {
    /// `{pid}` (empty when `None`) and `{remote_file}`.
    pub fn pid(pid: Option<u32>, remote: &'a str) -> Self {
        Fill {
            pid,
            remote,
            ..Fill::default()
        }
    }
}

/// A file brought back from the target, as [`Lane::record_artifact`] lists it.
pub(super) struct Taken {
    /// Its name under `diagnostics/`.
    pub file: String,
    /// When it was taken (a recording: when it started).
    pub t: f64,
    pub phase: String,
    pub bytes: u64,
    /// The process it came from.
    pub pid: Option<u32>,
}

impl Lane {
    pub(super) fn ensure_pid(&mut self) -> Result<Option<u32>, CollectorError> {
        if self.pid.is_some() {
            return Ok(self.pid);
        }
        let found = jvm::find_pid(self.t.as_mut(), &self.target)?;
        if let Some(pid) = found {
            let t = self.now();
            self.pid = Some(pid);
            self.rep.target_pids.push(PidInfo {
                t,
                pid,
                java_major: None,
            });
            self.event(CollectorEvent::TargetPid { pid });
        }
        Ok(found)
    }

    fn ensure_java(&mut self, pid: u32) -> Result<Option<u32>, CollectorError> {
        if self.java_major.is_none() {
            self.java_major = jvm::java_major(self.t.as_mut(), &self.target.jcmd, pid)?;
            if let Some(last) = self.rep.target_pids.last_mut() {
                if last.pid == pid {
                    last.java_major = self.java_major;
                }
            }
        }
        Ok(self.java_major)
    }

    /// Values for a probe's placeholders; Err(reason) = skip this run.
    pub(super) fn prepare(&mut self, i: usize) -> Result<Option<u32>, CollectorError> {
        let needs_pid = self.probes[i].def.uses("pid");
        let pid = if needs_pid { self.ensure_pid()? } else { None };
        if needs_pid && pid.is_none() && self.probes[i].def.pid == PidUse::Required {
            return Err(CollectorError::TargetNotFound);
        }
        if let (Some(min), Some(pid)) = (self.probes[i].def.min_java, pid) {
            let v = self.ensure_java(pid)?;
            if v.is_none_or(|v| v < min) {
                // Not an error: this JVM simply lacks the feature.
                self.probes[i].disabled = true;
                let name = self.probes[i].def.name.clone();
                self.event(CollectorEvent::ProbeDisabled {
                    probe: name,
                    java_major: v,
                    min_java: min,
                });
                return Err(CollectorError::Other(String::new()));
            }
        }
        Ok(pid)
    }

    /// Probe `i`'s `template` with its placeholders filled in (quoted).
    pub(super) fn render(&self, i: usize, template: &str, fill: Fill) -> String {
        let Fill {
            pid,
            remote,
            offset,
            extra,
        } = fill;
        let d = &self.probes[i].def;
        let jcmd = self.target.jcmd.clone();
        let pprof = self.target.pprof_url();
        let port = self.target.port;
        render(template, &|k| match k {
            "pid" => pid.map(|p| p.to_string()),
            "port" => port.map(|p| p.to_string()),
            "jcmd" => Some(jcmd.clone()),
            "pprof" => Some(pprof.clone()),
            "remote_file" => Some(remote.to_string()),
            "settings" => d.tune.settings.clone(),
            "file" => d.tune.file.clone(),
            "offset" => Some(offset.to_string()),
            k if super::super::definition::DB_PLACEHOLDERS.contains(&k) => {
                super::database::db_value(self.database.as_ref().map(|(d, _)| d), k)
            }
            k => extra.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()),
        })
    }

    pub(super) fn remote_file(&mut self, i: usize) -> String {
        self.seq += 1;
        let p = &self.probes[i].def;
        format!(
            "{}/brunt-{}-{}-{}.{}",
            self.remote_dir,
            self.run_tag,
            safe(&p.name),
            self.seq,
            p.extension
        )
    }

    pub(super) fn run_probe(&mut self, i: usize, reason: &'static str) {
        if !self.ensure_link() {
            self.missed += 1;
            return;
        }
        let pid = match self.prepare(i) {
            Ok(p) => p,
            Err(CollectorError::Other(m)) if m.is_empty() => return,
            Err(e) => return self.fail(i, e),
        };
        let res = match self.probes[i].def.kind {
            ProbeKind::Sample => self.sample(i, pid),
            ProbeKind::Artifact => self.artifact(i, pid, reason),
            ProbeKind::Tail => self.tail(i, pid),
            ProbeKind::Jfr => Ok(()),
        };
        self.probes[i].count += 1;
        if matches!(self.probes[i].parser, Parser::Pg) {
            self.db_outcome(i, res.as_ref().err());
        }
        match res {
            Ok(()) => self.succeeded(i),
            Err(e) => self.fail(i, e),
        }
    }

    fn sample(&mut self, i: usize, pid: Option<u32>) -> Result<(), CollectorError> {
        let cmd = self.render(i, &self.probes[i].def.command, Fill::pid(pid, ""));
        let at = (self.now(), self.tracker.name());
        let password = self
            .database
            .as_ref()
            .map(|(_, p)| p.as_str())
            .unwrap_or("");
        let out =
            super::database::exec_probe(self.t.as_mut(), &self.probes[i].def, &cmd, password)?
                .check(&cmd)?;
        let text = out.stdout_str();
        match &mut self.probes[i].parser {
            Parser::Host(h) => {
                let (sample, seen) = h.parse(&text)?;
                if pid.is_some() && seen.is_none() {
                    // The target process went away: find it again next time.
                    self.pid = None;
                    self.java_major = None;
                }
                self.store_sample(i, &at, pid, sample)
            }
            Parser::Heap => {
                let sample = jvm::parse_heap_info(&text)?;
                self.store_sample(i, &at, pid, sample)
            }
            Parser::Fds => {
                let sample = super::super::fds::FdCensus::parse(&text)?.row();
                self.store_sample(i, &at, pid, sample)
            }
            Parser::Pg => {
                let sample = crate::collectors::postgres::parse(&text)?;
                self.store_sample(i, &at, pid, sample)
            }
            Parser::Lines => {
                let lines = text.lines().map(str::to_string).collect();
                self.store_sample(i, &at, pid, LinesSample { lines })
            }
            Parser::None => self.store_sample(i, &at, pid, NoSample {}),
        }
    }

    /// One row of probe `i`'s stream: the sample whose command started at
    /// `at` (run time, phase).
    fn store_sample<S: Serialize>(
        &mut self,
        i: usize,
        (t, phase): &(f64, String),
        pid: Option<u32>,
        sample: S,
    ) -> Result<(), CollectorError> {
        let row = ProbeRow {
            sample,
            pid,
            took_ms: ((self.now() - t) * 1000.0).round(),
        };
        match self.probes[i].stream.as_mut() {
            Some((_, s)) => s.row(*t, phase, row),
            None => Ok(()),
        }
    }

    fn artifact(&mut self, i: usize, pid: Option<u32>, reason: &str) -> Result<(), CollectorError> {
        let t = self.now();
        let phase = self.tracker.name();
        let fetch = self.probes[i].def.fetch;
        let remote = if fetch {
            self.remote_file(i)
        } else {
            String::new()
        };
        let cmd = self.render(i, &self.probes[i].def.command, Fill::pid(pid, &remote));
        let out = self.t.exec(&cmd)?.check(&cmd)?;
        let p = &self.probes[i];
        let name = artifact_name(&p.def.name, t, &phase, p.count + 1, &p.def.extension);
        let local = self.dir.join(&name);
        let bytes = if fetch {
            let n = self.t.download(&remote, &local);
            // Remove the remote file even when the download failed.
            let rm = self.t.remove(&remote);
            let n = n?;
            rm?;
            n
        } else {
            let mut f = File::create(&local).map_err(|e| CollectorError::io(&local, e))?;
            f.write_all(&out.stdout)
                .map_err(|e| CollectorError::io(&local, e))?;
            out.stdout.len() as u64
        };
        let taken = Taken {
            file: name,
            t,
            phase,
            bytes,
            pid,
        };
        self.record_artifact(i, taken, reason)
    }

    /// List a file brought back in `diagnostics/` — unless it is empty: an
    /// empty dump or recording is no evidence, so it is removed and an error.
    pub(super) fn record_artifact(
        &mut self,
        i: usize,
        taken: Taken,
        reason: &str,
    ) -> Result<(), CollectorError> {
        let Taken {
            file,
            t,
            phase,
            bytes,
            pid,
        } = taken;
        if bytes == 0 {
            let local = self.dir.join(&file);
            let _ = std::fs::remove_file(&local);
            return Err(CollectorError::Other(format!(
                "{} came back empty (0 bytes): not kept",
                self.probes[i].def.name
            )));
        }
        let p = &self.probes[i];
        let a = ArtifactInfo {
            collector: p.collector.clone(),
            probe: p.def.name.clone(),
            kind: match p.def.kind {
                ProbeKind::Jfr => "jfr",
                _ => "artifact",
            }
            .into(),
            file: format!("diagnostics/{file}"),
            t: (t * 1000.0).round() / 1000.0,
            phase,
            bytes,
            reason: reason.to_string(),
            pid,
        };
        // The whole entry, so `brunt report` can rebuild the index from this file.
        self.event(CollectorEvent::Artifact {
            probe: a.probe.clone(),
            file: a.file.clone(),
            bytes: a.bytes,
            reason: a.reason.clone(),
            artifact: Some(a.clone()),
        });
        self.rep.artifacts.push(a);
        Ok(())
    }

    fn tail(&mut self, i: usize, pid: Option<u32>) -> Result<(), CollectorError> {
        let file = self.probes[i].def.tune.file.clone().unwrap_or_default();
        let Some(offset) = self.probes[i].tail_offset else {
            // Start at the current end: only lines written during the run.
            let cmd = format!("wc -c < {} 2>/dev/null || echo 0", sh_quote(&file));
            let out = self.t.exec(&cmd)?.check(&cmd)?;
            let size = out.stdout_str().trim().parse::<u64>().unwrap_or(0);
            self.probes[i].tail_offset = Some(size + 1);
            return Ok(());
        };
        let fill = Fill {
            offset,
            ..Fill::pid(pid, "")
        };
        let cmd = self.render(i, &self.probes[i].def.command, fill);
        let out = self.t.exec(&cmd)?.check(&cmd)?;
        if out.stdout.is_empty() {
            return Ok(());
        }
        let t = self.now();
        let phase = self.tracker.name();
        let name = format!("{}.log", safe(&self.probes[i].def.name));
        let path = self.dir.join(&name);
        if self.probes[i].tail_out.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| CollectorError::io(&path, e))?;
            self.probes[i].tail_out = Some(f);
        }
        if let Some(f) = self.probes[i].tail_out.as_mut() {
            // A header per chunk ties the lines to the run's clock and phase.
            writeln!(
                f,
                "# brunt t={t:.3} phase={phase} bytes={}",
                out.stdout.len()
            )
            .and_then(|_| f.write_all(&out.stdout))
            .and_then(|_| f.flush())
            .map_err(|e| CollectorError::io(&path, e))?;
        }
        self.probes[i].tail_offset = Some(offset + out.stdout.len() as u64);
        self.event(CollectorEvent::Tail {
            probe: self.probes[i].def.name.clone(),
            file: format!("{}/{name}", crate::vocab::files::DIAGNOSTICS),
            bytes: out.stdout.len() as u64,
        });
        Ok(())
    }
}
