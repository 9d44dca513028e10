//! Prometheus for the tests (Debian's `prometheus`, installed by
//! tests/setup.sh): a scratch server on 127.0.0.1 scraping the given
//! targets with its remote-write receiver and exemplar storage on, and its
//! HTTP API read back.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::nginx::free_port;

pub fn binary(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found: run tests/setup.sh (apt-get install prometheus prometheus-node-exporter)");
}

/// A child process killed when the test ends.
pub struct Proc(pub Child, pub String);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn get(url: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    agent
        .get(url)
        .call()
        .map_err(|e| e.to_string())?
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())
}

pub fn wait_ready(url: &str, what: &str, p: &mut Proc) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if get(url).is_ok() {
            return;
        }
        if let Ok(Some(st)) = p.0.try_wait() {
            panic!("{what} exited at start ({st}); log: {}", p.1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what} not ready at {url} within 30 s");
}

pub struct Prom {
    pub base: String,
    _p: Proc,
    _dir: tempfile::TempDir,
}

/// Prometheus scraping `targets` (job → host:port) every second, remote-write receiver on.
pub fn prometheus(targets: &[(&str, String)]) -> Prom {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut cfg =
        String::from("global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n");
    for (job, t) in targets {
        cfg.push_str(&format!(
            "  - job_name: {job}\n    static_configs: [ {{ targets: [\"{t}\"] }} ]\n"
        ));
    }
    let cfg_path = dir.path().join("prometheus.yml");
    std::fs::write(&cfg_path, cfg).expect("write config");
    let log = dir.path().join("prometheus.log");
    let child = Command::new(binary("prometheus"))
        .arg(format!("--config.file={}", cfg_path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        // The traced requests' exemplars (tests/traces.rs); it also makes
        // Prometheus ask for OpenMetrics first.
        .arg("--enable-feature=exemplar-storage")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start prometheus");
    let mut p = Proc(child, log.display().to_string());
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&format!("{base}/-/ready"), "prometheus", &mut p);
    Prom {
        base,
        _p: p,
        _dir: dir,
    }
}

/// A sample's number (`[time, "value"]`).
pub fn value(v: &serde_json::Value) -> f64 {
    v[1].as_str()
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

impl Prom {
    /// `data.result` of an API query (`query` or `query_range`), which must succeed.
    pub fn api(&self, endpoint: &str, params: &[(&str, &str)]) -> Vec<serde_json::Value> {
        let url = url::Url::parse_with_params(&format!("{}/api/v1/{endpoint}", self.base), params)
            .expect("url");
        let promql = params.first().map_or("", |p| p.1);
        let text = get(url.as_str()).unwrap_or_else(|e| panic!("query {promql}: {e}"));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json answer");
        assert_eq!(v["status"], "success", "{promql}: {text}");
        v["data"]["result"].as_array().expect("a result").clone()
    }

    /// An instant query's vector: (labels, value) per series.
    pub fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        self.api("query", &[("query", promql)])
            .iter()
            .map(|r| (r["metric"].clone(), value(&r["value"])))
            .collect()
    }

    /// How many points a range query returns over `[from, to]` (1-s steps), all series.
    pub fn range(&self, promql: &str, from: f64, to: f64) -> usize {
        let (from, to) = (format!("{from:.3}"), format!("{to:.3}"));
        let params = [
            ("query", promql),
            ("start", &from),
            ("end", &to),
            ("step", "1"),
        ];
        self.api("query_range", &params)
            .iter()
            .map(|r| r["values"].as_array().map_or(0, Vec::len))
            .sum()
    }

    /// An instant query's single value at time `at`.
    pub fn query_at(&self, promql: &str, at: f64) -> f64 {
        let r = self.api("query", &[("query", promql), ("time", &format!("{at:.3}"))]);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        value(&r[0]["value"])
    }

    pub fn one(&self, promql: &str) -> f64 {
        let r = self.query(promql);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        r[0].1
    }
}
