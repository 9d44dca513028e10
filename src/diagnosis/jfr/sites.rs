//! Aggregating events into sites (event, class, call site, phase), and the
//! frame tests that find a call site and tell idle threads apart.

use std::collections::HashMap;
use std::rc::Rc;

use super::recording::{JfrRecording, JfrSite};
use crate::diagnosis::model::Frame;
use crate::diagnosis::{phase_at, PhaseWindow};

/// Frames that say nothing about the application: skipped to find the call site.
pub fn is_internal_frame(method: &str) -> bool {
    const P: &[&str] = &[
        "java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "scala.",
    ];
    P.iter().any(|p| method.starts_with(p)) || method.contains("$$Lambda")
}

fn is_idle_stack(frames: &[Frame]) -> bool {
    is_idle_methods(frames.iter().map(|f| f.method.as_str()), frames.len())
}

/// The same test on frames as displayed (`pkg.Class.method(Loc)`).
pub fn is_idle_stack_lines(lines: &[String]) -> bool {
    is_idle_methods(
        lines.iter().map(|l| l.split('(').next().unwrap_or(l)),
        lines.len(),
    )
}

/// Threads waiting for work (executor queues, reference handlers, JFR, the
/// JDK HTTP server's dispatcher): parked, but not contention.
fn is_idle_methods<'a>(mut methods: impl Iterator<Item = &'a str>, depth: usize) -> bool {
    methods.any(|m| {
        m.ends_with("ThreadPoolExecutor.getTask")
            || m.ends_with("ForkJoinPool.awaitWork")
            || (m.ends_with("ForkJoinPool.runWorker") && depth < 8)
            || m.ends_with("ScheduledThreadPoolExecutor$DelayedWorkQueue.take")
            || m.starts_with("jdk.internal.misc.InnocuousThread")
            || m.starts_with("java.lang.ref.")
            || m.starts_with("jdk.jfr.")
            || m.starts_with("sun.net.httpserver.ServerImpl$Dispatcher")
            || m.starts_with("sun.net.httpserver.ServerImpl$DefaultExecutor")
    })
}

/// First application frame; else the first frame past park/wait internals.
pub fn site_of(frames: &[Frame]) -> String {
    frames
        .iter()
        .find(|f| !is_internal_frame(&f.method))
        .or_else(|| {
            frames.iter().find(|f| {
                !(f.method.starts_with("jdk.internal.misc.Unsafe")
                    || f.method
                        .starts_with("java.util.concurrent.locks.LockSupport")
                    || f.method.starts_with("java.lang.Object.wait")
                    || f.method.contains("AbstractQueuedSynchronizer"))
            })
        })
        .or(frames.first())
        .map(Frame::display)
        .unwrap_or_else(|| "(no stack)".into())
}

/// (event, class, site, phase) → the site and its previous owners' counts.
type SiteKey = (String, Option<String>, String, Option<String>);
type SiteMap = HashMap<SiteKey, (JfrSite, HashMap<String, u64>)>;

/// Sites and sampled top frames gathered over a whole recording.
#[derive(Default)]
pub(super) struct Agg<'p> {
    sites: SiteMap,
    hot: HashMap<String, u64>,
    phases: &'p [PhaseWindow],
}

impl<'p> Agg<'p> {
    pub(super) fn new(phases: &'p [PhaseWindow]) -> Self {
        Agg {
            phases,
            ..Agg::default()
        }
    }

    pub(super) fn add(
        &mut self,
        event: &str,
        class: Option<String>,
        frames: &[Frame],
        ms: f64,
        unix: f64,
        owner: Option<Rc<str>>,
    ) {
        let site = site_of(frames);
        let phase = phase_at(self.phases, unix).map(str::to_string);
        let e = self
            .sites
            .entry((
                event.to_string(),
                class.clone(),
                site.clone(),
                phase.clone(),
            ))
            .or_insert_with(|| {
                (
                    JfrSite {
                        event: event.to_string(),
                        class,
                        site,
                        phase,
                        stack: frames.iter().take(12).map(Frame::display).collect(),
                        first_unix: unix,
                        last_unix: unix,
                        idle: is_idle_stack(frames),
                        ..JfrSite::default()
                    },
                    HashMap::new(),
                )
            });
        e.0.count += 1;
        e.0.total_ms += ms;
        e.0.max_ms = e.0.max_ms.max(ms);
        e.0.first_unix = e.0.first_unix.min(unix);
        e.0.last_unix = e.0.last_unix.max(unix);
        if let Some(o) = owner {
            *e.1.entry(o.to_string()).or_default() += 1;
        }
    }

    /// One `jdk.ExecutionSample`: its top frame.
    pub(super) fn sample(&mut self, top: &Frame) {
        *self.hot.entry(top.display()).or_default() += 1;
    }

    /// Sites by total time (pinning apart) and the hottest methods into `rec`.
    pub(super) fn finish(self, rec: &mut JfrRecording) {
        let mut sites: Vec<JfrSite> = self
            .sites
            .into_values()
            .map(|(mut s, owners)| {
                let mut o: Vec<(String, u64)> = owners.into_iter().collect();
                o.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                o.truncate(5);
                s.previous_owners = o;
                s
            })
            .collect();
        sites.sort_by(|a, b| {
            b.total_ms
                .total_cmp(&a.total_ms)
                .then(b.count.cmp(&a.count))
        });
        let (pinned, sites): (Vec<JfrSite>, Vec<JfrSite>) = sites
            .into_iter()
            .partition(|s| s.event == "jdk.VirtualThreadPinned");
        rec.sites = sites;
        rec.pinned = pinned;
        let mut hot: Vec<(String, u64)> = self.hot.into_iter().collect();
        hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        hot.truncate(20);
        rec.hot_methods = hot;
    }
}
