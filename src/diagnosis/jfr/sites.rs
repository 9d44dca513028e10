//! Aggregating events into sites (event, class, call site, phase), sampled
//! stacks into hot application methods and collapsed stacks (flame graphs)
//! per phase, and the frame tests that find a call site and tell idle
//! threads apart.

use std::collections::HashMap;
use std::rc::Rc;

use super::recording::{FlameKind, FoldedStacks, HotFrame, JfrRecording, JfrSite};
use crate::diagnosis::model::Frame;
use crate::diagnosis::{phase_at, PhaseWindow};

/// Frames that say nothing about the application: skipped to find the call site.
pub fn is_internal_frame(method: &str) -> bool {
    const P: &[&str] = &[
        "java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "scala.",
    ];
    P.iter().any(|p| method.starts_with(p)) || method.contains("$$Lambda")
}

/// Threads waiting for work (see [`is_idle_methods`]): parked, but not contention.
pub fn is_idle_stack(frames: &[Frame]) -> bool {
    is_idle_methods(frames.iter().map(|f| f.method.as_str()), frames.len())
}

/// The same test on frames as displayed (`pkg.Class.method(Loc)`).
pub fn is_idle_stack_lines(lines: &[String]) -> bool {
    is_idle_methods(
        lines.iter().map(|l| l.split('(').next().unwrap_or(l)),
        lines.len(),
    )
}

/// Threads waiting for work (executor queues, timers, ForkJoinPool workers,
/// selector loops, reference handlers, JFR, the JDK HTTP server's
/// dispatcher, pool libraries' helper threads): parked, but not contention.
fn is_idle_methods<'a>(mut methods: impl Iterator<Item = &'a str>, depth: usize) -> bool {
    methods.any(|m| {
        m.ends_with("ThreadPoolExecutor.getTask")
            || m == "java.util.TimerThread.mainLoop"
            || m.starts_with("sun.nio.ch.EPoll")
            || m.starts_with("sun.nio.ch.KQueue")
            || m.ends_with("SelectorImpl.doSelect")
            || m.ends_with("SelectorImpl.lockAndDoSelect")
            || m.starts_with("jdk.internal.net.http.HttpClientImpl$SelectorManager")
            || m.starts_with("com.mchange.v2.async.ThreadPoolAsynchronousRunner$PoolThread")
            || m.starts_with("org.apache.tomcat.jdbc.pool.ConnectionPool$PoolCleaner")
            || m.ends_with("ForkJoinPool.awaitQuiescence")
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

/// A decoded stack's collapsed form and facts, computed once per stack.
struct StackFacts {
    /// Keeps the stack alive, so its address (the cache key) is never reused.
    _stack: Rc<Vec<Frame>>,
    folded: Rc<str>,
    idle: bool,
    /// The top application frame's method, and the JDK frame on top of it.
    app_self: Option<Rc<str>>,
    jdk_top: Option<Rc<str>>,
    /// Distinct application methods in the stack.
    app_methods: Vec<Rc<str>>,
}

/// Self samples of an application method and the JDK frames on top of it.
#[derive(Default)]
struct SelfCount {
    samples: u64,
    jdk_top: HashMap<Rc<str>, u64>,
}

/// Sites and sampled stacks gathered over a whole recording.
#[derive(Default)]
pub(super) struct Agg<'p> {
    sites: SiteMap,
    hot: HashMap<String, u64>,
    samples: u64,
    hot_self: HashMap<Rc<str>, SelfCount>,
    hot_total: HashMap<Rc<str>, u64>,
    facts: HashMap<*const Vec<Frame>, StackFacts>,
    /// (phase index, kind) → collapsed stack → count.
    folded: HashMap<(Option<usize>, FlameKind), HashMap<Rc<str>, u64>>,
    phases: &'p [PhaseWindow],
    /// Events ending at or before this (Unix s) are left out of the totals.
    pub(super) cut_unix: f64,
}

/// `root;…;leaf` of class.method names (lines left out, so one method is
/// one frame); `;` inside a name would split it and is replaced.
fn fold(frames: &[Frame]) -> String {
    if frames.is_empty() {
        return "(no stack)".into();
    }
    let mut s = String::with_capacity(frames.len() * 40);
    for (i, f) in frames.iter().rev().enumerate() {
        if i > 0 {
            s.push(';');
        }
        s.push_str(&f.method.replace([';', ' '], "_"));
    }
    s
}

impl<'p> Agg<'p> {
    pub(super) fn new(phases: &'p [PhaseWindow]) -> Self {
        Agg {
            phases,
            ..Agg::default()
        }
    }

    fn facts(&mut self, stack: &Rc<Vec<Frame>>) -> &StackFacts {
        // Stack-less events each bring a fresh empty Vec: share one key.
        let key = if stack.is_empty() {
            std::ptr::null()
        } else {
            Rc::as_ptr(stack)
        };
        self.facts.entry(key).or_insert_with(|| {
            let frames: &[Frame] = stack;
            let app = frames.iter().position(|f| !is_internal_frame(&f.method));
            let mut app_methods: Vec<Rc<str>> = vec![];
            for f in frames.iter().filter(|f| !is_internal_frame(&f.method)) {
                if !app_methods.iter().any(|m| **m == *f.method) {
                    app_methods.push(Rc::from(f.method.as_str()));
                }
            }
            StackFacts {
                _stack: stack.clone(),
                folded: Rc::from(fold(frames)),
                idle: is_idle_stack(frames),
                app_self: app
                    .and_then(|i| frames.get(i))
                    .map(|f| Rc::from(f.method.as_str())),
                jdk_top: app
                    .filter(|i| *i > 0)
                    .and_then(|_| frames.first())
                    .map(|f| Rc::from(f.method.as_str())),
                app_methods,
            }
        })
    }

    /// Drops the per-stack cache: stack ids and their decoded stacks belong
    /// to one chunk, and keeping them would grow with the recording.
    pub(super) fn end_chunk(&mut self) {
        self.facts.clear();
    }

    /// The index of the phase holding `unix` (no allocation per event).
    fn phase_index(&self, unix: f64) -> Option<usize> {
        self.phases
            .iter()
            .position(|p| unix >= p.start_unix && unix < p.end_unix)
    }

    fn add_folded(&mut self, phase: Option<usize>, kind: FlameKind, folded: Rc<str>, n: u64) {
        *self
            .folded
            .entry((phase, kind))
            .or_default()
            .entry(folded)
            .or_default() += n;
    }

    /// A waiting stack (monitor entry, park, pinning) for the wait flame
    /// graph; false when it is an idle wait (a worker waiting for work).
    pub(super) fn waited(&mut self, stack: &Rc<Vec<Frame>>, ms: f64, unix: f64) -> bool {
        let phase = self.phase_index(unix);
        let f = self.facts(stack);
        if f.idle {
            return false;
        }
        let folded = f.folded.clone();
        // Whole milliseconds, at least 1: every event shows.
        self.add_folded(phase, FlameKind::Wait, folded, (ms.round() as u64).max(1));
        true
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

    /// One `jdk.ExecutionSample`: its top frame, its application frames
    /// and its collapsed stack.
    pub(super) fn sample(&mut self, stack: &Rc<Vec<Frame>>, unix: f64) {
        self.samples += 1;
        if let Some(top) = stack.first() {
            *self.hot.entry(top.display()).or_default() += 1;
        }
        let phase = self.phase_index(unix);
        let f = self.facts(stack);
        let (folded, app_self, jdk_top) = (f.folded.clone(), f.app_self.clone(), f.jdk_top.clone());
        let methods = f.app_methods.clone();
        self.add_folded(phase, FlameKind::Cpu, folded, 1);
        for m in methods {
            *self.hot_total.entry(m).or_default() += 1;
        }
        if let Some(m) = app_self {
            let c = self.hot_self.entry(m).or_default();
            c.samples += 1;
            if let Some(top) = jdk_top {
                *c.jdk_top.entry(top).or_default() += 1;
            }
        }
    }

    /// Sites by total time (pinning apart) and the hottest methods into `rec`.
    pub(super) fn finish(self, rec: &mut JfrRecording) {
        let phases = self.phases;
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
        rec.samples = self.samples;
        let mut hs: Vec<HotFrame> = self
            .hot_self
            .into_iter()
            .map(|(m, c)| {
                let jdk_top = c
                    .jdk_top
                    .into_iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                    .map(|(f, n)| (f.to_string(), n));
                HotFrame {
                    method: m.to_string(),
                    samples: c.samples,
                    jdk_top,
                }
            })
            .collect();
        hs.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.method.cmp(&b.method)));
        hs.truncate(20);
        rec.hot_self = hs;
        let mut ht: Vec<(String, u64)> = self
            .hot_total
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        ht.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ht.truncate(20);
        rec.hot_total = ht;
        let mut flames: Vec<FoldedStacks> = self
            .folded
            .into_iter()
            .map(|((phase, kind), st)| FoldedStacks {
                source: rec.source.clone(),
                phase: phase.and_then(|i| phases.get(i)).map(|p| p.name.clone()),
                kind: Some(kind),
                stacks: st.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            })
            .collect();
        flames.sort_by(|a, b| a.phase.cmp(&b.phase).then(a.kind.cmp(&b.kind)));
        rec.flames = flames;
    }
}
