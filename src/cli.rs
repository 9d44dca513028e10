//! The command line: argument parsing, Ctrl-C, exit codes, and all the
//! printing (the library hands its notices here). Everything else lives in
//! the library; `brunt analyze` and `brunt watch` have files of their own.

pub mod analyze;
mod dashboard;
mod generate;
mod k8s;
pub mod out;
mod show;
pub mod watch;

use out::{errln, out, outln};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};

use crate::engine::Shard;
use crate::profile::ProfileError;
use crate::run::spec::{CompileInputs, SpecError};
use crate::run::{self, Progress, RunOptions, RunSpec};
use crate::vocab::exit;

const EXIT_CODES: &str = "Exit codes: 0 every gate met · 99 a budget failed (or a gate: knee, verdict, no data) · 105 interrupted · 74 the run directory could not be written (disk full; the load stops at once) · 3 a shard ready later than --max-late after --start-at (nothing sent) · 2 bad input (profile, arguments) · 1 any other failure.";

#[derive(Parser)]
#[command(name = "brunt", version, about = "Profile-driven HTTP load that watches the server side and tells you where — and why — it broke.", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a load profile and write a run directory (summary.json, latency.hlog, timeseries.csv).
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Check a profile without running it.
    #[command(after_help = EXIT_CODES)]
    Validate {
        profile: PathBuf,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Serve the built-in demo target (fast, slow, contended, shedding and stalling endpoints).
    DemoTarget {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
        /// Pause the whole server every this often (e.g. 10s): the coordinated-omission trap.
        #[arg(long)]
        stall_every: Option<String>,
        /// Length of each pause.
        #[arg(long, default_value = "1s")]
        stall_for: String,
    },
    /// Read thread dumps, JFR recordings and pinning traces (or a run directory's diagnostics/) into findings.
    #[command(
        after_help = "Exit codes: 0 analysed · 2 nothing readable or a path missing · 1 any other failure."
    )]
    Analyze {
        /// Files or directories, any mix: jstack / jcmd Thread.print / SIGQUIT logs, JSON dumps, .jfr, pinning traces.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the analysis as JSON (the findings.json schema).
        #[arg(long)]
        json: bool,
        /// Also draw the JFR recordings' CPU flame graph into OUT.svg (the
        /// waiting one into OUT.wait.svg), each with its `.folded` stacks.
        #[arg(long, value_name = "OUT.svg")]
        flamegraph: Option<PathBuf>,
    },
    /// Watch the run writing DIR from another terminal: the live view (plain lines when piped), then its summary once it has ended.
    #[command(
        after_help = "Exit codes: the run's own once it has ended (0 every gate met · 99 a gate failed · 105 interrupted) · 2 no run writes DIR · 1 the run stopped writing without a summary (killed?) or any other failure."
    )]
    Watch {
        dir: PathBuf,
        /// How long to wait for the run to start writing DIR (its run.json).
        #[arg(long, default_value = "30s")]
        wait: String,
        #[command(flatten)]
        dashboard: dashboard::DashboardArgs,
    },
    /// Rebuild summary.json, report.html and the terminal summary from a run directory, also an interrupted one.
    #[command(after_help = EXIT_CODES)]
    Report {
        dir: PathBuf,
        /// Also write the gates as JUnit XML to FILE (one test case per gate), for CI.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// Merge the run directories of N shards (`run --shard i/N`) into one: histograms added, budgets judged on the union.
    #[command(after_help = EXIT_CODES)]
    Merge {
        /// The shard run directories, all N of them.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// The merged run directory (must not exist or be empty).
        #[arg(long)]
        out: PathBuf,
        /// Also write the gates as JUnit XML to FILE (one test case per gate), for CI.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// Print a Kubernetes manifest (ConfigMap + Indexed Job) that runs PROFILE as N shards, then the commands to gather and merge.
    #[command(after_help = EXIT_CODES)]
    K8s(k8s::K8sArgs),
    /// Compare two run directories side by side: per phase percentiles (merged histograms), requests, errors and deltas (B − A); with --fail-if, a regression gate.
    #[command(
        after_help = "Conditions: METRIC OP CHANGE [in PHASE] — METRIC p50 p90 p95 p99 p99.9 max mean throughput rps requests errors shed error_rate; OP > >= < <=; CHANGE relative to A (+10%, -5%) or absolute (+50ms, -20/s, +100, +1pp for error_rate). Scope: the run without its warm-up, or `in PHASE`.\nExit codes: 0 no condition holds · 99 a condition holds or has no data in either run · 2 bad input (a condition, a directory) · 1 any other failure."
    )]
    Compare {
        /// The run before (the reference).
        run_a: PathBuf,
        /// The run after.
        run_b: PathBuf,
        /// Print the comparison as JSON.
        #[arg(long)]
        json: bool,
        /// Fail (exit 99) when B moved from A past this, e.g. 'p99 > +10%', 'throughput < -5%'. Repeatable.
        #[arg(long = "fail-if", value_name = "COND")]
        fail_if: Vec<String>,
    },
    /// Print shell completions to stdout: `brunt completions bash > /etc/bash_completion.d/brunt` (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff) to stdout: `brunt man > brunt.1; man ./brunt.1`.
    Man,
    /// Print the profiles' JSON Schema to stdout, for editors: `brunt schema > brunt.schema.json`.
    Schema,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The YAML profile (see profiles/).
    profile: PathBuf,
    /// Run directory (default: runs/<timestamp>-<name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Target base URL, overriding the profile's `target.url` (e.g. staging vs production).
    #[arg(long)]
    target: Option<String>,
    /// Multiply every phase duration, e.g. 0.1 for a quick rehearsal of a long profile.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Run shard I of N (1-based): take 1/N of the load.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// With --shard: shard 1 serves a stop endpoint at HOST:PORT and every shard stops when one does (a breach, a feeder run out, Ctrl-C).
    #[arg(long, value_name = "HOST:PORT", requires = "shard")]
    control: Option<String>,
    /// Start the load at this Unix time (seconds), so shards step together.
    #[arg(long, value_name = "UNIX_SECONDS")]
    start_at: Option<f64>,
    /// With --start-at: refuse to run (exit 3) when ready more than this long after it, e.g. 5s.
    #[arg(long, value_name = "DURATION", requires = "start_at")]
    max_late: Option<String>,
    /// Plain progress lines instead of the live view (the default when stderr is not a terminal).
    #[arg(long)]
    plain: bool,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
    /// Empty an existing run directory given with --out first (without it, a non-empty --out is refused).
    #[arg(long)]
    force: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while the run runs (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Push live figures to this Prometheus remote-write URL every second (beats output.prometheus_remote_write).
    #[arg(long, value_name = "URL")]
    remote_write: Option<String>,
    /// With --metrics-listen: after the run, wait at most this long for a scrape of the final figures.
    #[arg(long, value_name = "DURATION", default_value = "15s")]
    metrics_linger: String,
    /// Also write the gates as JUnit XML to FILE (one test case per gate), for CI.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    #[command(flatten)]
    overrides: Overrides,
    #[command(flatten)]
    dashboard: dashboard::DashboardArgs,
}

/// Values from the command line that beat the profile and the environment.
#[derive(clap::Args)]
struct Overrides {
    /// A template variable `{{ env.KEY }}` (beats the process environment). Repeatable.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Override a profile value, checked like the file, e.g. --set shape.constant.rate=500/s. Repeatable.
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    set: Vec<String>,
}

impl Overrides {
    fn pairs(list: &[String], flag: &str) -> Result<Vec<(String, String)>, Failure> {
        list.iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
                _ => Err(Failure::Bad(anyhow!("{flag} {kv}: expected KEY=VALUE"))),
            })
            .collect()
    }
    fn env(&self) -> Result<std::collections::BTreeMap<String, String>, Failure> {
        Ok(Self::pairs(&self.env, "--env")?.into_iter().collect())
    }
    fn sets(&self) -> Result<Vec<(String, String)>, Failure> {
        Self::pairs(&self.set, "--set")
    }
}

/// Bad input (exit 2) versus other failures (exit 1).
struct BadInput(anyhow::Error);

/// A duration flag (`--wait 30s`); a bad one names the flag and the value.
fn flag_duration(flag: &str, v: &str) -> Result<std::time::Duration, BadInput> {
    humantime::parse_duration(v).map_err(|e| BadInput(anyhow!("{flag} {v}: {e}")))
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::PASS
            };
            let _ = e.print();
            return code;
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(Failure::Bad(e)) => {
            errln!("error: {}", error_text(&e));
            exit::BAD_INPUT
        }
        Err(Failure::Other(e)) => {
            errln!("error: {}", error_text(&e));
            exit::FAILURE
        }
        Err(Failure::Exit(code, e)) => {
            errln!("error: {}", error_text(&e));
            code
        }
    }
}

/// The error and its causes, each said once: many typed errors already put
/// their source into their own message, and `{:#}` would repeat it.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}

enum Failure {
    Bad(anyhow::Error),
    Other(anyhow::Error),
    /// A failure with its own exit code (a run directory that cannot be written).
    Exit(i32, anyhow::Error),
}

impl From<BadInput> for Failure {
    fn from(b: BadInput) -> Self {
        Failure::Bad(b.0)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

/// A profile that cannot be read or parsed: bad input, with the parser's snippet.
fn bad_profile(e: ProfileError) -> Failure {
    match &e {
        ProfileError::Syntax { snippet, .. } => Failure::Bad(anyhow!("{e}\n{snippet}")),
        _ => Failure::Bad(anyhow!(e)),
    }
}

fn parse_shard(s: &str) -> Result<Shard, Failure> {
    let bad = || {
        Failure::Bad(anyhow!(
            "--shard {s}: expected I/N with 1 ≤ I ≤ N, e.g. 2/4"
        ))
    };
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: u32 = i.trim().parse().map_err(|_| bad())?;
    let n: u32 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i == 0 || i > n {
        return Err(bad());
    }
    Ok(Shard {
        index: i - 1,
        count: n,
    })
}

fn shard_failure(e: crate::shard::ShardError) -> Failure {
    if e.is_bad_input() {
        Failure::Bad(anyhow!(e))
    } else {
        Failure::Other(anyhow!(e))
    }
}

/// The signals that stop a run: Ctrl-C (SIGINT) and, on Unix, SIGTERM (what
/// `timeout`, a cancelled CI job and a deleted pod send).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "Ctrl-C",
            StopSignal::Terminate => "SIGTERM",
        }
    }
    /// Who stopped the run, for `stopped_reason` ("stopped by …").
    fn by(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "the user (Ctrl-C)",
            StopSignal::Terminate => "SIGTERM",
        }
    }
    /// Exit code when a second signal quits at once: 128 + signal number.
    fn exit_code(self) -> i32 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

/// The stop signals being watched.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Must be called inside a tokio runtime.
    fn watch() -> Signals {
        Signals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// The next Ctrl-C or SIGTERM; `None` when signals cannot be watched.
    async fn next(&mut self) -> Option<StopSignal> {
        let int = async {
            tokio::signal::ctrl_c()
                .await
                .ok()
                .map(|_| StopSignal::Interrupt)
        };
        #[cfg(unix)]
        if let Some(t) = &mut self.term {
            return tokio::select! {
                r = int => r,
                r = t.recv() => r.map(|_| StopSignal::Terminate),
            };
        }
        int.await
    }
}

/// Signals this close after the first are the same request to stop: GNU
/// `timeout` sends SIGTERM to the child and then to its process group, a
/// terminal's Ctrl-C reaches every process of the foreground group, and a
/// supervisor may repeat itself.
const SIGNAL_BURST: std::time::Duration = std::time::Duration::from_millis(500);

/// First Ctrl-C or SIGTERM (and any within [`SIGNAL_BURST`] of it): stop the
/// load, drain what is in flight, finish the report (marked interrupted).
/// A later one: exit now (130 after SIGINT, 143 after SIGTERM).
fn install_stop_signals(stop: Arc<AtomicBool>, stopped_by: Arc<OnceLock<String>>) {
    let _ = std::thread::Builder::new()
        .name("brunt-signal".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let mut signals = Signals::watch();
                if let Some(sig) = signals.next().await {
                    let _ = stopped_by.set(sig.by().to_string());
                    errln!(
                        "\nstopping on {}: draining requests in flight, then writing the report (again to quit at once)",
                        sig.name()
                    );
                    stop.store(true, Ordering::Relaxed);
                } else {
                    return;
                }
                let first = std::time::Instant::now();
                while let Some(sig) = signals.next().await {
                    if first.elapsed() < SIGNAL_BURST {
                        continue;
                    }
                    errln!("\nquit: the run directory holds every second measured so far");
                    std::process::exit(sig.exit_code());
                }
            });
        });
}

fn dispatch(cli: Cli) -> Result<i32, Failure> {
    match cli.cmd {
        Cmd::Validate { profile, overrides } => validate(&profile, &overrides),
        Cmd::Run(args) => run_profile(args),
        Cmd::DemoTarget {
            listen,
            stall_every,
            stall_for,
        } => demo_target(&listen, stall_every.as_deref(), &stall_for),
        Cmd::Merge { dirs, out, junit } => {
            check_junit(junit.as_deref())?;
            let merged = crate::shard::merge(&dirs, &out).map_err(shard_failure)?;
            for w in &merged.warnings {
                errln!("warning: {w}");
            }
            // Like a single run's directory: the page stands beside the summary.
            if let Err(e) = crate::report::html::write(&merged.dir, &merged.summary, &merged.data) {
                errln!("warning: {e}");
            }
            show::summary(&merged.summary, show::colour_on(false));
            show::paths(Some(&merged.dir), &merged.dir);
            write_junit(junit.as_deref(), &merged.summary)?;
            Ok(merged.exit_code())
        }
        Cmd::K8s(args) => k8s::k8s(args),
        Cmd::Analyze {
            paths,
            json,
            flamegraph,
        } => Ok(analyze::analyze_cli(&paths, json, flamegraph.as_deref())?),
        Cmd::Watch {
            dir,
            wait,
            dashboard,
        } => watch(&dir, &wait, &dashboard),
        Cmd::Report { dir, junit } => report(&dir, junit.as_deref()),
        Cmd::Compare {
            run_a,
            run_b,
            json,
            fail_if,
        } => compare(&run_a, &run_b, json, &fail_if),
        Cmd::Completions { shell } => generate::completions(shell),
        Cmd::Man => generate::man(),
        Cmd::Schema => generate::schema(),
    }
}

fn validate(profile: &std::path::Path, o: &Overrides) -> Result<i32, Failure> {
    // The run's own compile (templates, feeders, target, TLS), its result dropped.
    let inputs = CompileInputs {
        env: o.env()?,
        ..Default::default()
    };
    let spec = RunSpec::load(profile, &o.sets()?, inputs).map_err(|e| match e {
        SpecError::Profile(e) => bad_profile(e),
        e => Failure::Bad(anyhow!("{}: {e}", profile.display())),
    })?;
    for w in spec.profile.lint() {
        errln!("warning: {}: {w}", profile.display());
    }
    let plan = &spec.plan;
    let p = &spec.profile;
    let steps: usize = p.scenarios.iter().map(|s| s.flat_steps().len()).sum();
    outln!(
        "{}: OK — {} phase(s), {} total, {} request(s) and {} scenario(s) ({} step(s)) in the mix, {} budget(s)",
        profile.display(),
        plan.phases.len(),
        humantime::format_duration(plan.total()),
        p.requests.len(),
        p.scenarios.len(),
        steps,
        spec.budgets.len()
    );
    for sc in &p.scenarios {
        let step = |st: &crate::profile::RequestSpec| match st.think_time {
            Some(t) => format!("{} (+{})", st.label(), humantime::format_duration(t)),
            None => st.label(),
        };
        let times = |r: &Option<crate::profile::Repeat>| match r {
            Some(crate::profile::Repeat::Times(n)) => format!(" ×{n}"),
            Some(crate::profile::Repeat::Range(r)) => format!(" ×{r}"),
            None => String::new(),
        };
        let names: Vec<String> = sc
            .steps
            .iter()
            .map(|st| match st.is_block() {
                true => {
                    let inner: Vec<String> = st.steps.iter().map(step).collect();
                    format!("[{}]{}", inner.join(" → "), times(&st.repeat))
                }
                false => format!("{}{}", step(st), times(&st.repeat)),
            })
            .collect();
        outln!(
            "  scenario {} (weight {}): {}",
            sc.name,
            sc.weight,
            names.join(" → ")
        );
    }
    for (what, steps) in [("setup", &p.setup), ("teardown", &p.teardown)] {
        if !steps.is_empty() {
            let names: Vec<String> = steps.iter().map(|st| st.label()).collect();
            outln!("  {what} (once): {}", names.join(" → "));
        }
    }
    for ph in &plan.phases {
        outln!(
            "  {:<12} {:>12}  at {:>8}  for {}",
            ph.info.name,
            ph.info.label,
            humantime::format_duration(ph.info.start).to_string(),
            humantime::format_duration(ph.info.duration)
        );
    }
    Ok(exit::PASS)
}

fn run_profile(a: RunArgs) -> Result<i32, Failure> {
    let profile = crate::profile::Profile::load_with(&a.profile, &a.overrides.sets()?)
        .map_err(bad_profile)?;
    for w in profile.lint() {
        errln!("warning: {}: {w}", a.profile.display());
    }
    let env = a.overrides.env()?;
    if !(a.time_scale.is_finite() && a.time_scale > 0.0) {
        return Err(BadInput(anyhow!("--time-scale must be above 0")).into());
    }
    let shard = match &a.shard {
        Some(s) => parse_shard(s)?,
        None => Shard::default(),
    };
    let start_at = match a.start_at {
        Some(t) if t.is_finite() && t > 0.0 => {
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(t))
        }
        Some(_) => return Err(BadInput(anyhow!("--start-at: expected Unix seconds")).into()),
        None => None,
    };
    let max_late = match &a.max_late {
        Some(v) => Some(flag_duration("--max-late", v)?),
        None => None,
    };
    let metrics_listen = match &a.metrics_listen {
        Some(s) => Some(s.parse::<std::net::SocketAddr>().map_err(|e| {
            BadInput(anyhow!(
                "--metrics-listen {s}: {e} (expected HOST:PORT, e.g. 127.0.0.1:9464)"
            ))
        })?),
        None => None,
    };
    let metrics_linger = flag_duration("--metrics-linger", &a.metrics_linger)?;
    check_junit(a.junit.as_deref())?;
    let live = a.dashboard.start()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped_by = Arc::new(OnceLock::new());
    install_stop_signals(stop.clone(), stopped_by.clone());
    let opts = RunOptions {
        dashboard: live.as_ref().map(|l| l.server.clone()),
        control: a.control,
        metrics_listen,
        remote_write: a.remote_write,
        metrics_linger: Some(metrics_linger),
        target: a.target,
        out: a.out,
        time_scale: a.time_scale,
        shard,
        start_at,
        max_late,
        progress: if a.quiet {
            Progress::Quiet
        } else if a.plain {
            Progress::Plain
        } else {
            Progress::Auto
        },
        stop: Some(stop.clone()),
        stopped_by: Some(stopped_by),
        observers: Vec::new(),
        base_dir: a.profile.parent().map(std::path::Path::to_path_buf),
        env,
        force: a.force,
        say: stderr(),
    };
    let result = run::execute_profile(profile, &a.profile, opts).map_err(|e| {
        if e.is_bad_input() {
            Failure::Bad(anyhow!(e))
        } else if e.is_write_failure() {
            Failure::Exit(exit::WRITE_FAILED, anyhow!(e))
        } else if matches!(e, run::RunError::LateStart(_)) {
            Failure::Exit(exit::LATE_START, anyhow!(e))
        } else {
            Failure::Other(anyhow!(e))
        }
    })?;
    show::summary(&result.summary, show::colour_on(a.plain));
    show::paths(Some(&result.dir), &result.dir);
    write_junit(a.junit.as_deref(), &result.summary)?;
    if let Some(l) = &live {
        l.linger(Some(&stop));
    }
    Ok(result.exit_code())
}

fn demo_target(listen: &str, stall_every: Option<&str>, stall_for: &str) -> Result<i32, Failure> {
    let mut cfg = crate::demo::DemoConfig {
        listen: listen
            .parse()
            .map_err(|e| BadInput(anyhow!("--listen {listen}: {e}")))?,
        ..Default::default()
    };
    if let Some(s) = stall_every {
        cfg.stall_every = Some(flag_duration("--stall-every", s)?);
        cfg.stall_for = flag_duration("--stall-for", stall_for)?;
    }
    crate::demo::run_standalone(cfg, &|l| outln!("{l}")).context("demo target")?;
    Ok(exit::PASS)
}

/// The library's notices on stderr, as the CLI shows them.
fn stderr() -> crate::vocab::Say {
    crate::vocab::Say::to(|n| match n {
        crate::vocab::Notice::Warning(m) => errln!("warning: {m}"),
        crate::vocab::Notice::Line(l) => errln!("{l}"),
    })
}

fn report(dir: &std::path::Path, junit: Option<&std::path::Path>) -> Result<i32, Failure> {
    check_junit(junit)?;
    let r = crate::run::rebuild::rebuild_saying(dir, &stderr()).map_err(|e| {
        if e.is_write_failure() {
            Failure::Exit(exit::WRITE_FAILED, anyhow!(e))
        } else {
            Failure::Bad(anyhow!(e))
        }
    })?;
    let s = r.summary;
    crate::report::html::write(dir, &s, &r.data).map_err(|e| Failure::Other(anyhow!(e)))?;
    show::summary(&s, show::colour_on(false));
    show::paths(None, dir);
    write_junit(junit, &s)?;
    Ok(s.exit_code())
}

fn watch(
    dir: &std::path::Path,
    wait: &str,
    dashboard: &dashboard::DashboardArgs,
) -> Result<i32, Failure> {
    let wait = flag_duration("--wait", wait)?;
    let live = dashboard.start()?;
    if let Some(l) = &live {
        l.server.follow(dir);
    }
    match watch::watch(dir, wait).map_err(|e| Failure::Bad(anyhow!(e)))? {
        watch::WatchEnd::Finished(s) => {
            if let Some(l) = &live {
                l.linger(None);
            }
            Ok(s.exit_code())
        }
        watch::WatchEnd::Stalled(why) => Err(Failure::Other(anyhow!(why))),
    }
}

/// A `--junit` path that cannot be written is refused before any work (exit 2).
fn check_junit(path: Option<&std::path::Path>) -> Result<(), Failure> {
    match path {
        Some(p) => crate::report::junit::check_path(p).map_err(|e| Failure::Bad(anyhow!(e))),
        None => Ok(()),
    }
}

/// Write the JUnit file; failing to is an error (exit 1): CI would miss its results.
fn write_junit(path: Option<&std::path::Path>, s: &crate::judge::Summary) -> Result<(), Failure> {
    if let Some(p) = path {
        crate::report::junit::write(p, s).map_err(|e| Failure::Other(anyhow!(e)))?;
        outln!("junit: {}", p.display());
    }
    Ok(())
}

fn compare(
    a: &std::path::Path,
    b: &std::path::Path,
    json: bool,
    fail_if: &[String],
) -> Result<i32, Failure> {
    let conditions = fail_if
        .iter()
        .map(|t| t.parse::<crate::report::compare::Condition>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::Bad(anyhow!(e)))?;
    // No figures without a run's series and latency log: bad input, as a missing run.json.
    let read = |dir: &std::path::Path| {
        let data = crate::rundir::RunData::read(dir).map_err(|e| Failure::Bad(anyhow!(e)))?;
        data.require(&[crate::rundir::TIME_SERIES, crate::rundir::LATENCY_LOG])
            .map_err(|e| Failure::Bad(anyhow!(e.to_string())))?;
        Ok::<_, Failure>(data)
    };
    let (da, db) = (read(a)?, read(b)?);
    let c = crate::report::compare::compare_gated((a, &da), (b, &db), &conditions);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&c).map_err(|e| Failure::Other(anyhow!(e)))?
        );
    } else {
        out!("{}", crate::report::compare::render(&c));
    }
    Ok(c.exit_code())
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let io = std::io::Error::other("No space left on device");
        let e =
            anyhow::Error::new(io).context("cannot write summary.json: No space left on device");
        assert_eq!(
            error_text(&e),
            "cannot write summary.json: No space left on device"
        );
        let e = anyhow::anyhow!("connection refused").context("preflight");
        assert_eq!(error_text(&e), "preflight: connection refused");
    }
}
