//! `--dashboard[=ADDR]` and `--dashboard-linger` of `brunt run` and `brunt
//! watch`: bind the live page before any load (a busy port is bad input),
//! say where it is and who can reach it, and keep it up after the end.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::out::errln;
use super::{flag_duration, stderr, BadInput, Failure};
use crate::run::dashboard::DashboardServer;

/// The default address: loopback, k6's dashboard port.
const DEFAULT: &str = "127.0.0.1:5665";

#[derive(clap::Args)]
pub struct DashboardArgs {
    /// Serve a live page at http://ADDR/ while the run runs (`--dashboard` alone: 127.0.0.1:5665, loopback only; `--dashboard=0.0.0.0:5665` to let other machines read it).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = DEFAULT)]
    dashboard: Option<String>,
    /// With --dashboard: keep serving the final page this long after the run ends (Ctrl-C ends it sooner).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "0s",
        requires = "dashboard"
    )]
    dashboard_linger: String,
}

/// A bound dashboard and how long it outlives the run.
pub struct Live {
    pub server: Arc<DashboardServer>,
    linger: Duration,
}

impl DashboardArgs {
    /// Bind and announce the page; `None` without `--dashboard`.
    pub fn start(&self) -> Result<Option<Live>, Failure> {
        let Some(a) = &self.dashboard else {
            return Ok(None);
        };
        let linger = flag_duration("--dashboard-linger", &self.dashboard_linger)?;
        let addr: SocketAddr = a.parse().map_err(|e| {
            BadInput(anyhow!(
                "--dashboard={a}: {e} (expected HOST:PORT, e.g. {DEFAULT})"
            ))
        })?;
        let server = DashboardServer::bind(addr, stderr())
            .map_err(|e| BadInput(anyhow!("--dashboard={a}: {e}")))?;
        let at = server.addr();
        if at.ip().is_loopback() {
            errln!("dashboard: http://{at}/ (read-only; this machine only — --dashboard=0.0.0.0:PORT serves other machines)");
        } else {
            errln!("dashboard: http://{at}/ (read-only, no authentication)");
            errln!(
                "warning: the dashboard on {at} can be read by any machine that reaches this one"
            );
        }
        Ok(Some(Live {
            server: Arc::new(server),
            linger,
        }))
    }
}

impl Live {
    /// After the run: serve the final page for the linger time, or until
    /// `stop` is set (Ctrl-C) — not at all when the run was interrupted.
    pub fn linger(&self, stop: Option<&AtomicBool>) {
        let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
        if self.linger.is_zero() || stopped() {
            return;
        }
        // The final page needs the summary on it first.
        let t0 = Instant::now();
        while !self.server.ended() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(100));
        }
        errln!(
            "dashboard: the final page stays up at http://{}/ for {} (Ctrl-C ends it)",
            self.server.addr(),
            humantime::format_duration(self.linger)
        );
        while t0.elapsed() < self.linger && !stopped() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
