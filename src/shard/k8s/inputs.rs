//! What the manifest is built from: the profile read and checked, its
//! feeder files (text or base64) and its `{{ env.X }}` variables, in one
//! [`Plan`].

use std::path::Path;
use std::time::SystemTime;

use super::{check, default_job_name, K8sOptions, CONFIG_MAP_LIMIT};
use crate::profile::template::{Expr, Template};
use crate::profile::Profile;
use crate::shard::ShardError;

/// One feeder file as the ConfigMap carries it.
pub(super) struct FeederFile {
    pub(super) name: String,
    /// ConfigMap key, `feeder-NAME[.EXT]`.
    pub(super) key: String,
    /// Where the pod sees it, relative to `/profile`.
    pub(super) path: String,
    /// Text (`data`) or base64 of bytes that are not UTF-8 (`binaryData`).
    pub(super) text: Option<String>,
    pub(super) binary: Option<String>,
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

/// The checked options and what the documents are built from.
pub(super) struct Plan<'a> {
    pub(super) opts: &'a K8sOptions,
    /// The profile's text, as the ConfigMap carries it.
    pub(super) text: String,
    pub(super) job: String,
    /// Unix seconds of the shared start.
    pub(super) start_at: u64,
    /// The profile's planned duration.
    pub(super) run_secs: u64,
    /// Seconds a finished pod waits for `kubectl cp` (0 with a results claim).
    pub(super) hold: u64,
    pub(super) feeders: Vec<FeederFile>,
    /// `--target`, checked.
    pub(super) target: Option<String>,
    /// Variables the profile reads from the environment (name, has a default).
    pub(super) env: Vec<(String, bool)>,
}

impl<'a> Plan<'a> {
    /// Read and check the profile and the options.
    pub(super) fn new(profile_path: &Path, opts: &'a K8sOptions) -> Result<Self, ShardError> {
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
}
