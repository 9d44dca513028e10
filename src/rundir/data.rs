//! A run directory read once into the typed data the judge and every
//! renderer take ([`RunData`]). A single run (once its files are written),
//! `brunt report` and `brunt merge` read through [`RunData::read`] and hand
//! the result to `judge::judge` and to `report`, which open no file.
//!
//! A single run reads back what it has just written on purpose:
//! `timeseries.csv` rounds its per-second figures, so judging from the
//! seconds still in memory would give a summary that `brunt report` on the
//! same directory could not rebuild. Read from the files, both agree.
//!
//! Big files stay streamed: the latency log is decoded one line at a time
//! into per-phase histograms here, and the soak's drift check streams it
//! again per query ([`LogWindows`]) rather than holding hours of seconds.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;

use super::read::{LogWindows, Second};
use super::{
    RunMeta, RundirError, DIAGNOSTICS, EVIDENCE, EXPORT_LOG, FLAME_STACKS, LATENCY_LOG, TIME_SERIES,
};
use crate::evidence::ServerEvidence;
use crate::metrics::{hlog, new_hist, Class, LatencyWindows};
use crate::vocab::export::{ExportTally, PushRow};

/// What a run directory holds for the judge and the renderers, read once.
pub struct RunData {
    pub meta: RunMeta,
    /// The run second by second, all phases merged.
    pub seconds: Vec<Second>,
    /// Merged latency over time windows (the soak's drift check); a query
    /// streams the log, so a long soak is never held in memory.
    pub windows: Option<Box<dyn LatencyWindows>>,
    /// `diagnostics/evidence.json`, when it holds anything.
    pub server: Option<ServerEvidence>,
    /// Latency per phase, merged from the log's histograms.
    pub latency: Distributions,
    /// The flame graphs' stacks left beside the recordings in `diagnostics/`.
    pub flames: Vec<FlameFile>,
    /// What went wrong (`errors.jsonl`), empty when nothing did.
    pub errors: crate::metrics::errors::ErrorTally,
    /// The remote-write pushes (`export.jsonl`), when the run pushed.
    pub export: Option<ExportTally>,
    /// What `setup:` and `teardown:` did (`setup.json`; empty without them).
    pub setup: crate::vocab::setup::OnceFile,
    /// Server-streaming gRPC calls per request (`streams.json`), when there were any.
    pub streams: Vec<crate::vocab::streams::StreamRow>,
    /// The slowest requests sent with a trace context (`traces.jsonl`),
    /// when the run traced any.
    pub traces: Option<super::traces::TraceData>,
    /// What could not be read (never fatal here: the judge notes it, the
    /// renderers draw what there is).
    pub unread: Vec<Unread>,
}

/// A file of the run directory that could not be read.
#[derive(Debug)]
pub struct Unread {
    /// Its name in the run directory ([`TIME_SERIES`], [`LATENCY_LOG`], …).
    pub file: &'static str,
    pub error: RundirError,
}

/// The latency of every answer (from its intended start), merged per phase
/// from the log's tagged lines; percentiles come from these, never averaged.
pub struct Distributions {
    /// By phase name.
    pub phases: BTreeMap<String, PhaseLatency>,
    /// The log's untagged lines: every answer of the run.
    pub run: Histogram<u64>,
}

impl Default for Distributions {
    fn default() -> Self {
        Distributions {
            phases: BTreeMap::new(),
            run: new_hist(),
        }
    }
}

/// One phase's latency: every class merged, ok and shed apart.
pub struct PhaseLatency {
    pub all: Histogram<u64>,
    /// Ok answers alone (`None`: there were none).
    pub ok: Option<Histogram<u64>>,
    /// Shed answers (503/429) alone: an overload run draws them apart, as
    /// fast refusals would pull a merged line below the baseline's.
    pub shed: Option<Histogram<u64>>,
    /// Answers counted per class.
    pub counts: BTreeMap<Class, u64>,
}

/// A `.folded` file of `diagnostics/`: one recording's stacks of one phase
/// and kind, as the diagnosis wrote it (its name says which).
#[derive(Debug, Clone)]
pub struct FlameFile {
    pub name: String,
    pub text: String,
    /// Its interactive `.svg` beside it, when there is one.
    pub svg: Option<String>,
}

impl RunData {
    /// Read a run directory. Only `run.json` is required; every other piece
    /// missing or broken is left empty and listed in [`RunData::unread`].
    pub fn read(dir: &Path) -> Result<RunData, RundirError> {
        let meta = super::read_meta(dir)?;
        let mut unread = vec![];
        let seconds = match super::read::rows(dir) {
            Ok(rows) => super::read::seconds(&rows),
            Err(error) => {
                unread.push(Unread {
                    file: TIME_SERIES,
                    error,
                });
                vec![]
            }
        };
        let server = match super::evidence::load(dir) {
            Ok(s) => s.filter(|s| !s.is_empty()),
            Err(error) => {
                unread.push(Unread {
                    file: EVIDENCE,
                    error,
                });
                None
            }
        };
        let latency = distributions(dir).unwrap_or_else(|error| {
            unread.push(Unread {
                file: LATENCY_LOG,
                error,
            });
            Distributions::default()
        });
        let export = pushes(dir).map(|rows| ExportTally::of(&rows, meta.started_at));
        Ok(RunData {
            meta,
            seconds,
            export,
            streams: std::fs::read(dir.join(super::STREAMS))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default(),
            errors: super::errors::read(dir),
            traces: super::traces::read(dir),
            windows: LogWindows::of(dir).map(|w| Box::new(w) as Box<dyn LatencyWindows>),
            server,
            latency,
            flames: flames(dir),
            setup: super::read_setup(dir),
            unread,
        })
    }

    /// The first of `files` that could not be read, if one could not:
    /// `brunt compare` has no figures without the series and the log.
    pub fn require(&self, files: &[&str]) -> Result<(), &RundirError> {
        match self.unread.iter().find(|u| files.contains(&u.file)) {
            Some(u) => Err(&u.error),
            None => Ok(()),
        }
    }
}

/// The log's latency lines merged per phase (by class too) and for the run.
fn distributions(dir: &Path) -> Result<Distributions, RundirError> {
    let mut d = Distributions::default();
    hlog::for_each(&dir.join(LATENCY_LOG), |iv| {
        let Some(tag) = iv.tag.as_deref() else {
            let _ = d.run.add(&iv.hist);
            return;
        };
        let Some((phase, class, hlog::TagKind::Latency)) = hlog::parse_tag(tag) else {
            return;
        };
        let p = d
            .phases
            .entry(phase.to_string())
            .or_insert_with(|| PhaseLatency {
                all: new_hist(),
                ok: None,
                shed: None,
                counts: BTreeMap::new(),
            });
        let _ = p.all.add(&iv.hist);
        *p.counts.entry(class).or_default() += iv.hist.len();
        let apart = match class {
            Class::Ok => &mut p.ok,
            Class::Shed => &mut p.shed,
            _ => return,
        };
        let _ = apart.get_or_insert_with(new_hist).add(&iv.hist);
    })
    .map_err(|e| RundirError::Read {
        path: dir.join(LATENCY_LOG),
        message: e.to_string(),
    })?;
    Ok(d)
}

/// `export.jsonl`'s rows (a row cut short at a kill is skipped); `None`
/// when the run pushed nothing.
fn pushes(dir: &Path) -> Option<Vec<PushRow>> {
    let text = std::fs::read_to_string(dir.join(EXPORT_LOG)).ok()?;
    Some(
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    )
}

/// Every `.folded` file of `diagnostics/`, by name; none when there is no
/// such directory (no recording was made).
fn flames(dir: &Path) -> Vec<FlameFile> {
    let diag = dir.join(DIAGNOSTICS);
    let Ok(rd) = std::fs::read_dir(&diag) else {
        return vec![];
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(FLAME_STACKS))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(diag.join(&name)).ok()?;
            let svg = name.trim_end_matches(FLAME_STACKS).to_string() + ".svg";
            let svg = diag.join(&svg).exists().then_some(svg);
            Some(FlameFile { name, text, svg })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::hlog::HlogWriter;
    use crate::metrics::Stats;

    const RUN_JSON: &str = r#"{"name":"t","target":"http://127.0.0.1:1","model":"open",
        "shape":{"kind":"constant"},"phases":[{"index":0,"name":"main","label":"10/s",
        "start":"0s","duration":"2s","level":10.0}],"started_at":0.0,"time_scale":1.0,
        "shard_index":0,"shard_count":1,"workers":1,"brunt_version":"0"}"#;

    #[test]
    fn what_cannot_be_read_is_listed_and_only_run_json_is_required() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(RunData::read(dir.path()).is_err(), "no run.json");
        std::fs::write(dir.path().join(super::super::RUN_JSON), RUN_JSON).expect("run.json");
        let d = RunData::read(dir.path()).expect("read");
        let files: Vec<&str> = d.unread.iter().map(|u| u.file).collect();
        assert_eq!(files, [TIME_SERIES, LATENCY_LOG]);
        assert!(d.seconds.is_empty() && d.server.is_none() && d.windows.is_none());
        assert!(d.require(&[EVIDENCE]).is_ok());
        let e = d.require(&[LATENCY_LOG]).expect_err("no log");
        assert!(e.to_string().contains(LATENCY_LOG), "{e}");
    }

    #[test]
    fn ok_and_shed_apart_counts_by_class_and_flame_files_with_their_pages() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(super::super::RUN_JSON), RUN_JSON).expect("run.json");
        let mut st = Stats::default();
        let h = |ms: u64, n: u64| {
            let mut h = new_hist();
            h.record_n(ms * 1_000_000, n).expect("record");
            h
        };
        st.add_hist(Class::Ok, &h(10, 3), hlog::TagKind::Latency);
        st.add_hist(Class::Shed, &h(1, 2), hlog::TagKind::Latency);
        st.add_hist(Class::Timeout, &h(900, 1), hlog::TagKind::Latency);
        let mut w = HlogWriter::create(&dir.path().join(LATENCY_LOG), 0.0, "test").expect("log");
        w.window(0, &[("main", &st)]).expect("window");
        drop(w);
        let diag = dir.path().join(DIAGNOSTICS);
        std::fs::create_dir_all(&diag).expect("mkdir");
        for f in [
            "r.jfr.main.cpu.folded",
            "r.jfr.main.cpu.svg",
            "r.jfr.all.wait.folded",
        ] {
            std::fs::write(diag.join(f), "a;b 3\n").expect("write");
        }
        let d = RunData::read(dir.path()).expect("read");
        let p = &d.latency.phases["main"];
        assert_eq!(p.all.len(), 6);
        assert_eq!(p.ok.as_ref().map(|h| h.len()), Some(3));
        assert_eq!(p.shed.as_ref().map(|h| h.len()), Some(2));
        assert_eq!(p.counts[&Class::Timeout], 1);
        assert_eq!(d.latency.run.len(), 6);
        let flames: Vec<(&str, Option<&str>)> = d
            .flames
            .iter()
            .map(|f| (f.name.as_str(), f.svg.as_deref()))
            .collect();
        assert_eq!(
            flames,
            [
                ("r.jfr.all.wait.folded", None),
                ("r.jfr.main.cpu.folded", Some("r.jfr.main.cpu.svg"))
            ]
        );
        assert_eq!(d.flames[0].text, "a;b 3\n");
    }
}
