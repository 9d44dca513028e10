//! `brunt k8s`: a ready-to-apply Kubernetes manifest that runs a profile as N
//! shards — a ConfigMap with the profile and its feeder files and an Indexed
//! Job whose pod `i` runs `brunt run --shard i+1/N` at a shared `--start-at`
//! — followed, as YAML comments, by the commands that generate and apply it
//! in one pipeline, wait, gather the N run directories and merge them.
//!
//! - Feeder files travel in the ConfigMap (keys `feeder-NAME.EXT`, mounted as
//!   `/profile/feeders/NAME.EXT`, the pod's `--set feeders.NAME.file=…`); a
//!   ConfigMap holds 1 MiB, so a profile and feeders over
//!   [`CONFIG_MAP_LIMIT`] are refused with what to do instead.
//! - `{{ env.X }}` values never enter the manifest: `--secret NAME` names a
//!   Kubernetes Secret whose keys become the pod's environment (`envFrom`);
//!   a variable without a default and no `--secret` is refused.
//! - A profile whose target is `builtin` is refused without `--target URL`
//!   (every pod would load-test its own demo target); the URL reaches the pod
//!   as an environment value, never as shell text.
//! - The start time is fixed when the manifest is generated (now +
//!   `--start-delay`), so the commands generate and apply in one pipeline,
//!   and each shard runs with `--max-late`: one that is ready later than
//!   that after the start refuses to run (exit 3, the reason in its exit
//!   code file) rather than skew the merge.
//!
//! The manifest is serialized from a small ordered tree (so documents read
//! in the usual `apiVersion, kind, metadata, spec` order), never from string
//! templates: profile text, image and names reach YAML only through the
//! serializer. The shell script in the pod contains only numbers we made.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::ShardError;
use crate::profile::template::{Expr, Template};
use crate::profile::Profile;

/// What a ConfigMap may hold: 1 MiB for the whole object; this leaves room
/// for its metadata and YAML quoting.
pub const CONFIG_MAP_LIMIT: usize = 1_000_000;

/// Options of `brunt k8s`.
#[derive(Debug, Clone)]
pub struct K8sOptions {
    pub shards: u32,
    pub image: String,
    pub namespace: String,
    /// Time from now to the shared start: enough to schedule N pods and pull the image.
    pub start_delay: Duration,
    /// CPU request per shard (a generator short of CPU makes fake latency).
    pub cpu: String,
    /// Memory request and limit per shard.
    pub memory: String,
    /// A ReadWriteMany claim for the results; `None`: an emptyDir per pod, fetched with `kubectl cp`.
    pub results_pvc: Option<String>,
    /// emptyDir mode: how long a finished pod keeps its run directory for `kubectl cp`.
    pub hold: Duration,
    /// Job name (default `brunt-<profile name>`).
    pub job_name: Option<String>,
    /// "Now", for the start time (tests pin it).
    pub now: SystemTime,
    /// The URL the shards load (`brunt run --target`); required when the
    /// profile's target is `builtin`.
    pub target: Option<String>,
    /// A Kubernetes Secret whose keys are the profile's `{{ env.X }}` variables.
    pub secret: Option<String>,
    /// A shard ready later than this after the shared start refuses to run.
    pub max_late: Duration,
}

impl K8sOptions {
    pub fn new(shards: u32, image: &str) -> Self {
        K8sOptions {
            shards,
            image: image.to_string(),
            namespace: "default".into(),
            start_delay: Duration::from_secs(60),
            cpu: "2".into(),
            memory: "1Gi".into(),
            results_pvc: None,
            hold: Duration::from_secs(30 * 60),
            job_name: None,
            now: SystemTime::now(),
            target: None,
            secret: None,
            max_late: Duration::from_secs(5),
        }
    }
}

/// An ordered YAML node.
enum Y {
    S(String),
    I(i64),
    B(bool),
    L(Vec<Y>),
    M(Vec<(String, Y)>),
}

impl Serialize for Y {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            Y::S(s) => ser.serialize_str(s),
            Y::I(i) => ser.serialize_i64(*i),
            Y::B(b) => ser.serialize_bool(*b),
            Y::L(v) => {
                let mut seq = ser.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Y::M(v) => {
                let mut map = ser.serialize_map(Some(v.len()))?;
                for (k, x) in v {
                    map.serialize_entry(k, x)?;
                }
                map.end()
            }
        }
    }
}

fn s(v: impl Into<String>) -> Y {
    Y::S(v.into())
}

fn m<const K: usize>(entries: [(&str, Y); K]) -> Y {
    Y::M(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// The Dockerfile's non-root user; `fsGroup` makes the results volume writable for it.
fn pod_security() -> Y {
    m([
        ("runAsNonRoot", Y::B(true)),
        ("runAsUser", Y::I(10001)),
        ("runAsGroup", Y::I(10001)),
        ("fsGroup", Y::I(10001)),
    ])
}

/// RFC 1123 label: what Kubernetes accepts as a namespace, claim or job name.
fn is_dns_label(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-')
}

/// RFC 1123 subdomain: what Kubernetes accepts as a Secret name.
fn is_dns_subdomain(v: &str) -> bool {
    v.len() <= 253 && v.split('.').all(is_dns_label)
}

/// A Kubernetes resource quantity such as `2`, `1500m`, `1Gi`, `512M`.
fn is_quantity(v: &str) -> bool {
    let num_end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(num_end);
    num.parse::<f64>().is_ok_and(|n| n > 0.0)
        && [
            "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ]
        .contains(&unit)
}

/// `brunt-<profile name>` folded into a DNS label short enough for pod names.
fn default_job_name(profile: &str) -> String {
    let mut out = String::from("brunt-");
    for c in profile.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    // Pods are named <job>-<index>-<5 chars>: keep room under 63.
    out.truncate(50);
    out.trim_end_matches('-').to_string()
}

fn check(opts: &K8sOptions, job: &str) -> Result<(), ShardError> {
    let bad = |m: String| Err(ShardError::Invalid(m));
    if opts.shards == 0 {
        return bad("--shards must be at least 1".into());
    }
    if opts.image.trim().is_empty() || opts.image.chars().any(char::is_whitespace) {
        return bad(format!(
            "--image {:?}: expected an image reference such as registry.example.com/brunt:0.1",
            opts.image
        ));
    }
    if !is_dns_label(&opts.namespace) {
        return bad(format!(
            "--namespace {:?}: expected a DNS label (lowercase letters, digits, '-')",
            opts.namespace
        ));
    }
    if !is_dns_label(job) || job.len() > 50 {
        return bad(format!(
            "job name {job:?}: expected a DNS label of at most 50 characters"
        ));
    }
    if let Some(sec) = &opts.secret {
        if !is_dns_subdomain(sec) {
            return bad(format!(
                "--secret {sec:?}: expected a Secret name (lowercase letters, digits, '-', '.')"
            ));
        }
    }
    if opts.max_late.is_zero() || opts.max_late > Duration::from_secs(600) {
        return bad("--max-late must be above 0 and at most 10m".into());
    }
    match &opts.results_pvc {
        Some(pvc) if !is_dns_label(pvc) => {
            return bad(format!("--results-pvc {pvc:?}: expected a claim name"));
        }
        // The emptyDir vanishes with the pod: without a hold nothing can be fetched.
        None if opts.hold < Duration::from_secs(60) => {
            return bad("--hold must be at least 1m without --results-pvc: it is the time left to kubectl cp the results".into());
        }
        _ => {}
    }
    for (flag, v) in [("--cpu", &opts.cpu), ("--memory", &opts.memory)] {
        if !is_quantity(v) {
            return bad(format!(
                "{flag} {v:?}: expected a Kubernetes quantity such as 2, 1500m, 1Gi"
            ));
        }
    }
    Ok(())
}

/// The manifest (multi-document YAML) and the commands to run it, as comments.
pub fn manifest(profile_path: &Path, opts: &K8sOptions) -> Result<String, ShardError> {
    let plan = Plan::new(profile_path, opts)?;
    let mut docs = vec![plan.config_map(), plan.job()];
    if let Some(pvc) = &opts.results_pvc {
        docs.push(plan.gather_pod(pvc));
    }
    let mut out = String::new();
    for d in &docs {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(d).map_err(|e| ShardError::Invalid(e.to_string()))?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str(&commands(&plan, profile_path));
    Ok(out)
}

/// One feeder file as the ConfigMap carries it.
struct FeederFile {
    name: String,
    /// ConfigMap key, `feeder-NAME[.EXT]`.
    key: String,
    /// Where the pod sees it, relative to `/profile`.
    path: String,
    /// Text (`data`) or base64 of bytes that are not UTF-8 (`binaryData`).
    text: Option<String>,
    binary: Option<String>,
}

impl FeederFile {
    fn size(&self) -> usize {
        self.text
            .as_ref()
            .or(self.binary.as_ref())
            .map_or(0, String::len)
    }
}

/// Read every feeder file of the profile (relative paths from the profile's directory).
fn feeder_files(profile: &Profile, profile_path: &Path) -> Result<Vec<FeederFile>, ShardError> {
    let base = profile_path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (name, f) in &profile.feeders {
        let path = if f.file.is_absolute() {
            f.file.clone()
        } else {
            base.join(&f.file)
        };
        let bytes = std::fs::read(&path).map_err(|e| ShardError::Read {
            path: path.clone(),
            message: format!("feeder `{name}`: {e}"),
        })?;
        // Keep a plain extension: the format may be read from it.
        let ext = f
            .file
            .extension()
            .and_then(|e| e.to_str())
            .filter(|e| e.len() <= 8 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
            .map(|e| format!(".{e}"))
            .unwrap_or_default();
        let (text, binary) = match String::from_utf8(bytes) {
            Ok(t) => (Some(t), None),
            Err(e) => {
                use base64::Engine as _;
                let b = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                (None, Some(b))
            }
        };
        out.push(FeederFile {
            name: name.clone(),
            key: format!("feeder-{name}{ext}"),
            path: format!("feeders/{name}{ext}"),
            text,
            binary,
        });
    }
    Ok(out)
}

/// The `{{ env.X }}` variables of the profile: (name, has a default).
fn env_vars(profile: &Profile) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for (_, value) in profile.template_fields() {
        let Ok(t) = Template::parse(value) else {
            continue; // the profile check already refused it
        };
        for e in t.exprs() {
            if let Expr::Env(name, default) = e {
                match out.iter_mut().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 &= default.is_some(),
                    None => out.push((name.clone(), default.is_some())),
                }
            }
        }
    }
    out
}

/// A word for a shell command line in the printed comments: single-quoted
/// unless it is plainly safe.
fn sh_word(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// The checked options and what the documents are built from.
struct Plan<'a> {
    opts: &'a K8sOptions,
    /// The profile's text, as the ConfigMap carries it.
    text: String,
    job: String,
    /// Unix seconds of the shared start.
    start_at: u64,
    /// The profile's planned duration.
    run_secs: u64,
    /// Seconds a finished pod waits for `kubectl cp` (0 with a results claim).
    hold: u64,
    feeders: Vec<FeederFile>,
    /// `--target`, checked.
    target: Option<String>,
    /// Variables the profile reads from the environment (name, has a default).
    env: Vec<(String, bool)>,
}

impl<'a> Plan<'a> {
    /// Read and check the profile and the options.
    fn new(profile_path: &Path, opts: &'a K8sOptions) -> Result<Self, ShardError> {
        let text = std::fs::read_to_string(profile_path).map_err(|e| ShardError::Read {
            path: profile_path.to_path_buf(),
            message: e.to_string(),
        })?;
        let profile = Profile::from_yaml(&text, profile_path)?;
        let target = match &opts.target {
            Some(url) => {
                crate::profile::target_url(url)
                    .map_err(|e| ShardError::Invalid(format!("--target {url}: {e}")))?;
                Some(url.clone())
            }
            None if profile.target.url.trim() == "builtin" => {
                return Err(ShardError::Invalid(format!(
                    "{}: the target is `builtin`: every pod would load-test its own built-in demo target; give the service to load with --target URL",
                    profile_path.display()
                )))
            }
            None => None,
        };
        let env = env_vars(&profile);
        let missing: Vec<&str> = env
            .iter()
            .filter(|(_, has_default)| !has_default)
            .map(|(n, _)| n.as_str())
            .collect();
        if !missing.is_empty() && opts.secret.is_none() {
            return Err(ShardError::Invalid(format!(
                "{}: the profile reads {} from the environment, and values never go into a manifest: create a Secret (kubectl create secret generic NAME --from-literal={}=…) and pass --secret NAME",
                profile_path.display(),
                missing.join(", "),
                missing[0]
            )));
        }
        let feeders = feeder_files(&profile, profile_path)?;
        // A ConfigMap holds at most 1 MiB, profile and feeder files together.
        let total = text.len() + feeders.iter().map(FeederFile::size).sum::<usize>();
        if total > CONFIG_MAP_LIMIT {
            let parts: Vec<String> = std::iter::once(format!("profile {} B", text.len()))
                .chain(
                    feeders
                        .iter()
                        .map(|f| format!("feeder `{}` {} B", f.name, f.size())),
                )
                .collect();
            return Err(ShardError::Invalid(format!(
                "{}: the profile and its feeder files come to {total} bytes ({}), over the {CONFIG_MAP_LIMIT} a ConfigMap can carry (1 MiB in all): put large feeder files in the image and point `feeders.NAME.file` at their absolute path there, or split them",
                profile_path.display(),
                parts.join(", ")
            )));
        }
        let job = opts
            .job_name
            .clone()
            .unwrap_or_else(|| default_job_name(&profile.name));
        check(opts, &job)?;
        let start_at = opts
            .now
            .checked_add(opts.start_delay)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
            .ok_or_else(|| ShardError::Invalid("--start-delay is out of range".into()))?;
        let run_secs = profile.plan(1.0).total().as_secs();
        let hold = if opts.results_pvc.is_none() {
            opts.hold.as_secs()
        } else {
            0
        };
        Ok(Plan {
            opts,
            text,
            job,
            start_at,
            run_secs,
            hold,
            feeders,
            target,
            env,
        })
    }

    /// No results claim: each pod keeps its run directory in an emptyDir.
    fn emptydir(&self) -> bool {
        self.opts.results_pvc.is_none()
    }

    fn config_map_name(&self) -> String {
        format!("{}-profile", self.job)
    }

    fn labels(&self, component: &str) -> Y {
        m([
            ("app.kubernetes.io/name", s("brunt")),
            ("app.kubernetes.io/instance", s(&self.job)),
            ("app.kubernetes.io/component", s(component)),
        ])
    }

    fn meta(&self, name: &str, component: &str) -> Y {
        m([
            ("name", s(name)),
            ("namespace", s(&self.opts.namespace)),
            ("labels", self.labels(component)),
        ])
    }

    /// The ConfigMap that carries the profile and its feeder files to every pod.
    fn config_map(&self) -> Y {
        let mut data = vec![("profile.yaml".to_string(), s(&self.text))];
        let mut binary = Vec::new();
        for f in &self.feeders {
            if let Some(t) = &f.text {
                data.push((f.key.clone(), s(t)));
            }
            if let Some(b) = &f.binary {
                binary.push((f.key.clone(), s(b)));
            }
        }
        let mut doc = vec![
            ("apiVersion".to_string(), s("v1")),
            ("kind".to_string(), s("ConfigMap")),
            (
                "metadata".to_string(),
                self.meta(&self.config_map_name(), "profile"),
            ),
            ("data".to_string(), Y::M(data)),
        ];
        if !binary.is_empty() {
            doc.push(("binaryData".to_string(), Y::M(binary)));
        }
        Y::M(doc)
    }

    /// The Indexed Job: one completion per shard, all running at once.
    fn job(&self) -> Y {
        let n = self.opts.shards;
        let deadline = self.opts.start_delay.as_secs() + self.run_secs + self.hold + 600;
        m([
            ("apiVersion", s("batch/v1")),
            ("kind", s("Job")),
            ("metadata", self.meta(&self.job, "shard")),
            (
                "spec",
                m([
                    ("completionMode", s("Indexed")),
                    ("completions", Y::I(n.into())),
                    ("parallelism", Y::I(n.into())),
                    // A retried shard would start late and skew the merge: fail instead.
                    ("backoffLimit", Y::I(0)),
                    ("activeDeadlineSeconds", Y::I(deadline as i64)),
                    ("template", self.pod_template()),
                ]),
            ),
        ])
    }

    /// A shard's pod: one per node, the brunt container, profile and results volumes.
    fn pod_template(&self) -> Y {
        m([
            ("metadata", m([("labels", self.labels("shard"))])),
            (
                "spec",
                m([
                    ("restartPolicy", s("Never")),
                    ("securityContext", pod_security()),
                    ("affinity", self.one_shard_per_node()),
                    ("containers", Y::L(vec![self.container()])),
                    ("volumes", self.volumes()),
                ]),
            ),
        ])
    }

    /// Shards on separate nodes, so they do not share a machine's CPU.
    fn one_shard_per_node(&self) -> Y {
        let shard_selector = m([(
            "matchLabels",
            m([
                ("app.kubernetes.io/instance", s(&self.job)),
                ("app.kubernetes.io/component", s("shard")),
            ]),
        )]);
        m([(
            "podAntiAffinity",
            m([(
                "requiredDuringSchedulingIgnoredDuringExecution",
                Y::L(vec![m([
                    ("labelSelector", shard_selector),
                    ("topologyKey", s("kubernetes.io/hostname")),
                ])]),
            )]),
        )])
    }

    fn volumes(&self) -> Y {
        let results = match &self.opts.results_pvc {
            Some(pvc) => m([
                ("name", s("results")),
                ("persistentVolumeClaim", m([("claimName", s(pvc))])),
            ]),
            None => m([("name", s("results")), ("emptyDir", m([]))]),
        };
        Y::L(vec![
            m([
                ("name", s("profile")),
                (
                    "configMap",
                    m([
                        ("name", s(self.config_map_name())),
                        // Feeder keys land where the pod's --set points.
                        (
                            "items",
                            Y::L(
                                std::iter::once(m([
                                    ("key", s("profile.yaml")),
                                    ("path", s("profile.yaml")),
                                ]))
                                .chain(
                                    self.feeders
                                        .iter()
                                        .map(|f| m([("key", s(&f.key)), ("path", s(&f.path))])),
                                )
                                .collect(),
                            ),
                        ),
                    ]),
                ),
            ]),
            results,
        ])
    }

    /// The brunt container; with an emptyDir, Ready means "finished, fetch me".
    fn container(&self) -> Y {
        let opts = self.opts;
        let mut container = vec![
            ("name".to_string(), s("brunt")),
            ("image".to_string(), s(&opts.image)),
            (
                "command".to_string(),
                Y::L(vec![s("sh"), s("-c"), s(self.script())]),
            ),
            (
                "resources".to_string(),
                // No CPU limit: throttling a generator shows up as fake latency.
                m([
                    (
                        "requests",
                        m([("cpu", s(&opts.cpu)), ("memory", s(&opts.memory))]),
                    ),
                    ("limits", m([("memory", s(&opts.memory))])),
                ]),
            ),
            (
                "volumeMounts".to_string(),
                Y::L(vec![
                    m([
                        ("name", s("profile")),
                        ("mountPath", s("/profile")),
                        ("readOnly", Y::B(true)),
                    ]),
                    m([("name", s("results")), ("mountPath", s("/results"))]),
                ]),
            ),
        ];
        if let Some(url) = &self.target {
            container.push((
                "env".to_string(),
                Y::L(vec![m([("name", s("BRUNT_TARGET")), ("value", s(url))])]),
            ));
        }
        if let Some(sec) = &opts.secret {
            // The values stay in the Secret: the manifest only names it.
            container.push((
                "envFrom".to_string(),
                Y::L(vec![m([("secretRef", m([("name", s(sec))]))])]),
            ));
        }
        if self.emptydir() {
            container.push(("readinessProbe".to_string(), done_probe()));
        }
        Y::M(container)
    }

    /// The pod's shell script: run shard `index + 1`, record its exit code and,
    /// with an emptyDir, hold the results until they were fetched.
    fn script(&self) -> String {
        let (n, start_at, hold) = (self.opts.shards, self.start_at, self.hold);
        let root = results_root(self.opts, start_at);
        let mut script = String::new();
        let late = self.opts.max_late.as_secs().max(1);
        let _ = writeln!(script, "i=$((JOB_COMPLETION_INDEX + 1))");
        // Only numbers and checked names here; the URL comes from the environment.
        let mut extra = String::new();
        if self.target.is_some() {
            extra.push_str(" --target \"$BRUNT_TARGET\"");
        }
        for f in &self.feeders {
            let _ = write!(extra, " --set feeders.{}.file={}", f.name, f.path);
        }
        let _ = writeln!(
            script,
            "brunt run /profile/profile.yaml --shard \"$i/{n}\" --start-at {start_at} --max-late {late}s{extra} --out \"{root}/shard-$i\" --plain"
        );
        let _ = writeln!(script, "code=$?");
        let _ = writeln!(script, "mkdir -p {root}/exit-codes");
        let _ = writeln!(
            script,
            "if [ \"$code\" = 3 ]; then why=\" refused: ready more than {late}s after --start-at {start_at}, so it sent nothing (a late shard would skew the merge)\"; else why=; fi"
        );
        let _ = writeln!(
            script,
            "echo \"$code$why\" > \"{root}/exit-codes/shard-$i\""
        );
        if self.emptydir() {
            let _ = writeln!(
                script,
                "# Ready = finished: hold the run directory until `kubectl cp` fetched it."
            );
            let _ = writeln!(script, "touch /results/.done");
            let _ = writeln!(script, "waited=0");
            let _ = writeln!(
                script,
                "while [ ! -e /results/.collected ] && [ \"$waited\" -lt {hold} ]; do sleep 5; waited=$((waited + 5)); done"
            );
        }
        let _ = writeln!(
            script,
            "# One shard's budgets mean little (99): brunt merge judges the union."
        );
        let _ = writeln!(
            script,
            "case \"$code\" in 0|99) exit 0 ;; *) exit \"$code\" ;; esac"
        );
        script
    }

    /// With a results claim: a pod that mounts it, for `kubectl cp` after the Job.
    fn gather_pod(&self, pvc: &str) -> Y {
        m([
            ("apiVersion", s("v1")),
            ("kind", s("Pod")),
            (
                "metadata",
                self.meta(&format!("{}-gather", self.job), "gather"),
            ),
            (
                "spec",
                m([
                    ("restartPolicy", s("Never")),
                    ("securityContext", pod_security()),
                    ("containers", Y::L(vec![self.gather_container()])),
                    (
                        "volumes",
                        Y::L(vec![m([
                            ("name", s("results")),
                            ("persistentVolumeClaim", m([("claimName", s(pvc))])),
                        ])]),
                    ),
                ]),
            ),
        ])
    }

    fn gather_container(&self) -> Y {
        m([
            ("name", s("gather")),
            ("image", s(&self.opts.image)),
            ("command", Y::L(vec![s("sleep"), s("infinity")])),
            (
                "resources",
                m([("requests", m([("cpu", s("10m")), ("memory", s("32Mi"))]))]),
            ),
            (
                "volumeMounts",
                Y::L(vec![m([
                    ("name", s("results")),
                    ("mountPath", s("/results")),
                ])]),
            ),
        ])
    }
}

/// Ready once the script touched `/results/.done`.
fn done_probe() -> Y {
    m([
        (
            "exec",
            m([(
                "command",
                Y::L(vec![s("test"), s("-e"), s("/results/.done")]),
            )]),
        ),
        ("periodSeconds", Y::I(5)),
    ])
}

/// Where the shards write: the pod's own emptyDir, or a directory of this
/// run on a shared claim (so a reused claim never mixes two runs).
fn results_root(opts: &K8sOptions, start_at: u64) -> String {
    match opts.results_pvc {
        None => "/results".into(),
        Some(_) => format!("/results/{start_at}"),
    }
}

/// The commands after the manifest. Every value in them was checked to be a
/// DNS label or a number, or is shell-quoted, so they are safe to paste.
fn commands(plan: &Plan<'_>, profile_path: &Path) -> String {
    let (job, opts, start_at) = (plan.job.as_str(), plan.opts, plan.start_at);
    let ns = &opts.namespace;
    let n = opts.shards;
    let file = format!("{job}.yaml");
    let when = chrono::DateTime::from_timestamp(start_at as i64, 0)
        .map(|d| d.to_rfc3339())
        .unwrap_or_default();
    let delay = opts.start_delay.as_secs();
    let wait = delay + plan.run_secs + 600;
    // The command that made this manifest, to generate and apply in one go.
    let mut gen = format!(
        "brunt k8s {} --shards {n} --image {}",
        sh_word(&profile_path.display().to_string()),
        sh_word(&opts.image)
    );
    if ns != "default" {
        let _ = write!(gen, " --namespace {ns}");
    }
    if let Some(t) = &plan.target {
        let _ = write!(gen, " --target {}", sh_word(t));
    }
    if let Some(sec) = &opts.secret {
        let _ = write!(gen, " --secret {sec}");
    }
    if let Some(pvc) = &opts.results_pvc {
        let _ = write!(gen, " --results-pvc {pvc}");
    }
    if let Some(j) = &opts.job_name {
        let _ = write!(gen, " --job-name {j}");
    }
    let _ = write!(
        gen,
        " --cpu {} --memory {} --max-late {}s --start-delay {delay}s",
        sh_word(&opts.cpu),
        sh_word(&opts.memory),
        opts.max_late.as_secs().max(1)
    );
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# brunt k8s: {n} shards starting together at {when} (--start-at {start_at}),"
    );
    let _ = writeln!(
        c,
        "# fixed when this was generated: then + --start-delay {delay}s. Generate and apply"
    );
    let _ = writeln!(
        c,
        "# in one pipeline, so the delay goes to scheduling pods and pulling the image:"
    );
    let _ = writeln!(c, "#");
    let _ = writeln!(c, "#   {gen} | tee {file} | kubectl apply -f -");
    let _ = writeln!(c, "#");
    let _ = writeln!(
        c,
        "# A shard ready more than {}s after the start refuses to run (exit 3, the reason",
        opts.max_late.as_secs().max(1)
    );
    let _ = writeln!(
        c,
        "# in exit-codes/shard-I) rather than skew the merge: then delete and run the pipeline again."
    );
    if let Some(sec) = &opts.secret {
        let names: Vec<&str> = plan.env.iter().map(|(n, _)| n.as_str()).collect();
        if !names.is_empty() {
            let _ = writeln!(
                c,
                "# The Secret {sec} holds the profile's environment ({}), e.g.:",
                names.join(", ")
            );
            let lits: Vec<String> = names
                .iter()
                .map(|v| format!("--from-literal={v}=…"))
                .collect();
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} create secret generic {sec} {}",
                lits.join(" ")
            );
        }
    }
    let _ = writeln!(c, "#");
    match &opts.results_pvc {
        None => {
            let _ = writeln!(
                c,
                "#   # every shard has finished when all {n} pods are Ready:"
            );
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=jsonpath='{{.status.ready}}'={n} --timeout={wait}s"
            );
            let _ = writeln!(c, "#   mkdir -p {job}/exit-codes");
            let _ = writeln!(c, "#   for i in $(seq 0 {}); do", n - 1);
            let _ = writeln!(
                c,
                "#     pod=$(kubectl -n {ns} get pods -l batch.kubernetes.io/job-name={job},batch.kubernetes.io/job-completion-index=$i -o jsonpath='{{.items[0].metadata.name}}')"
            );
            let _ = writeln!(
                c,
                "#     kubectl -n {ns} cp \"$pod:/results/shard-$((i + 1))\" \"{job}/shard-$((i + 1))\""
            );
            let _ = writeln!(
                c,
                "#     kubectl -n {ns} cp \"$pod:/results/exit-codes/shard-$((i + 1))\" \"{job}/exit-codes/shard-$((i + 1))\""
            );
            let _ = writeln!(
                c,
                "#     kubectl -n {ns} exec \"$pod\" -- touch /results/.collected"
            );
            let _ = writeln!(c, "#   done");
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=condition=complete --timeout=120s"
            );
        }
        Some(_) => {
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait job/{job} --for=condition=complete --timeout={wait}s"
            );
            let _ = writeln!(
                c,
                "#   kubectl -n {ns} wait pod/{job}-gather --for=condition=Ready --timeout=120s"
            );
            let root = results_root(opts, start_at);
            let _ = writeln!(c, "#   kubectl -n {ns} cp {job}-gather:{root} {job}");
        }
    }
    let _ = writeln!(
        c,
        "#   cat {job}/exit-codes/*   # 0 or 99 each; 3 = refused, started late"
    );
    let _ = writeln!(c, "#   brunt merge {job}/shard-* --out {job}/merged");
    let _ = writeln!(c, "#   kubectl delete -f {file}");
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_quantities() {
        assert_eq!(
            default_job_name("Checkout: peak's"),
            "brunt-checkout-peak-s"
        );
        assert_eq!(default_job_name(&"x".repeat(80)).len(), 50);
        assert!(default_job_name("---").ends_with("brunt"));
        for ok in ["default", "load-test", "a1"] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        for ok in ["2", "1500m", "0.5", "1Gi", "512M"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "lots", "2 cores", "-1", "1GB", "0"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }
}
