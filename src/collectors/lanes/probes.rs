//! Running one probe on the target: finding the target process and its Java
//! version, filling in placeholders, and storing what `sample`, `artifact` and
//! `tail` probes bring back.

use std::fs::{File, OpenOptions};
use std::io::Write;

use serde_json::{json, Map};

use super::{Lane, Parser};
use crate::collectors::definition::{render, PidUse, ProbeKind};
use crate::collectors::error::CollectorError;
use crate::collectors::jvm;
use crate::collectors::quote::sh_quote;
use crate::collectors::store::{artifact_name, safe};
use crate::collectors::{ArtifactInfo, PidInfo};

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
            self.event("target-pid", json!({"pid": pid}));
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
                self.event(
                    "probe-disabled",
                    json!({"probe": name, "java_major": v, "min_java": min}),
                );
                return Err(CollectorError::Other(String::new()));
            }
        }
        Ok(pid)
    }

    pub(super) fn render(
        &self,
        i: usize,
        template: &str,
        pid: Option<u32>,
        remote: &str,
        offset: u64,
    ) -> String {
        self.render_with(i, template, pid, remote, offset, &[])
    }

    /// As [`Self::render`], with values of further placeholders (`maxage`, `begin`).
    pub(super) fn render_with(
        &self,
        i: usize,
        template: &str,
        pid: Option<u32>,
        remote: &str,
        offset: u64,
        extra: &[(&str, String)],
    ) -> String {
        let d = &self.probes[i].def;
        let jcmd = self.target.jcmd.clone();
        let port = self.target.port;
        render(template, &|k| match k {
            "pid" => pid.map(|p| p.to_string()),
            "port" => port.map(|p| p.to_string()),
            "jcmd" => Some(jcmd.clone()),
            "remote_file" => Some(remote.to_string()),
            "settings" => d.settings.clone(),
            "file" => d.file.clone(),
            "offset" => Some(offset.to_string()),
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
        match res {
            Ok(()) => self.succeeded(i),
            Err(e) => self.fail(i, e),
        }
    }

    fn sample(&mut self, i: usize, pid: Option<u32>) -> Result<(), CollectorError> {
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, "", 0);
        let t = self.now();
        let phase = self.tracker.name();
        let out = self.t.exec(&cmd)?.check(&cmd)?;
        let text = out.stdout_str();
        let p = &mut self.probes[i];
        let mut fields = match &mut p.parser {
            Parser::Host(h) => {
                let (m, seen) = h.parse(&text)?;
                if pid.is_some() && seen.is_none() {
                    // The target process went away: find it again next time.
                    self.pid = None;
                    self.java_major = None;
                }
                m
            }
            Parser::Heap => jvm::parse_heap_info(&text)?,
            Parser::Fds => super::super::fds::parse_row(&text)?,
            Parser::Lines => {
                let mut m = Map::new();
                m.insert("lines".into(), json!(text.lines().collect::<Vec<_>>()));
                m
            }
            Parser::None => Map::new(),
        };
        if let Some(pid) = pid {
            fields.entry("pid").or_insert(json!(pid));
        }
        fields.insert("took_ms".into(), json!(((self.now() - t) * 1000.0).round()));
        if let Some((_, s)) = self.probes[i].stream.as_mut() {
            s.row(t, &phase, fields)?;
        }
        Ok(())
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
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, &remote, 0);
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
        self.event(
            "artifact",
            // The whole entry, so `brunt report` can rebuild the index from this file.
            json!({"probe": a.probe, "file": a.file, "bytes": a.bytes, "reason": a.reason, "artifact": a}),
        );
        self.rep.artifacts.push(a);
        Ok(())
    }

    fn tail(&mut self, i: usize, pid: Option<u32>) -> Result<(), CollectorError> {
        let file = self.probes[i].def.file.clone().unwrap_or_default();
        let Some(offset) = self.probes[i].tail_offset else {
            // Start at the current end: only lines written during the run.
            let cmd = format!("wc -c < {} 2>/dev/null || echo 0", sh_quote(&file));
            let out = self.t.exec(&cmd)?.check(&cmd)?;
            let size = out.stdout_str().trim().parse::<u64>().unwrap_or(0);
            self.probes[i].tail_offset = Some(size + 1);
            return Ok(());
        };
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, "", offset);
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
        self.event("tail", json!({"probe": self.probes[i].def.name, "file": format!("diagnostics/{name}"), "bytes": out.stdout.len()}));
        Ok(())
    }
}
