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

//!
//! | file | job |
//! |---|---|
//! | `mod.rs` | the options of `brunt k8s`, their checks, [`manifest`] |
//! | `inputs.rs` | reading the profile, its feeder files and `{{ env.X }}` variables into a checked plan |
//! | `documents.rs` | the ConfigMap, the Indexed Job, the gather pod and the shards' control Service, as YAML trees |
//! | `yaml.rs` | the ordered YAML tree the documents are serialized from |
//! | `commands.rs` | the shell commands printed after the manifest |

mod commands;
mod documents;
mod inputs;
mod yaml;

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::ShardError;
use inputs::Plan;

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

/// RFC 1123 label: what Kubernetes accepts as a namespace, claim or job name.
pub(super) fn is_dns_label(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-')
}

/// RFC 1123 subdomain: what Kubernetes accepts as a Secret name.
pub(super) fn is_dns_subdomain(v: &str) -> bool {
    v.len() <= 253 && v.split('.').all(is_dns_label)
}

/// A Kubernetes resource quantity such as `2`, `1500m`, `1Gi`, `512M`.
pub(super) fn is_quantity(v: &str) -> bool {
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
pub(super) fn default_job_name(profile: &str) -> String {
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

pub(super) fn check(opts: &K8sOptions, job: &str) -> Result<(), ShardError> {
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
    docs.push(plan.control_service());
    let mut out = String::new();
    for d in &docs {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(d).map_err(|e| ShardError::Invalid(e.to_string()))?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str(&commands::commands(&plan, profile_path));
    Ok(out)
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
