//! Collector definitions as data (`collectors/*.yaml`): each definition is a
//! list of probes saying what command runs, when, and which built-in parser
//! reads its output. Built-in definitions are compiled in (so the binary works
//! anywhere) and the same files ship in `collectors/` for users to copy.
//!
//! Placeholders in commands (`{pid}`, `{port}` (target.port), `{jcmd}`,
//! `{pprof}` (target.pprof, a Go service's net/http/pprof base URL),
//! `{remote_file}`, `{settings}`, `{file}`, `{offset}`, for windowed JFR
//! `{maxage}`, `{begin}`, and from `collectors.database` `{psql}`,
//! `{db_host}`, `{db_port}`, `{db_user}`, `{db_name}`) are replaced by
//! shell-quoted values. Only `{lowercase_name}` is a placeholder; other
//! braces (`{ print $1 }`, `${HOME}`) are literal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::CollectorError;
use super::quote::sh_quote;
use crate::profile::collectors::{CollectEntry, ProbeOverride};

/// Built-in definitions: name → YAML text (the files in `collectors/`).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "linux-host",
        include_str!("../../collectors/linux-host.yaml"),
    ),
    ("jvm", include_str!("../../collectors/jvm.yaml")),
    ("jvm-extra", include_str!("../../collectors/jvm-extra.yaml")),
    (
        "jvm-memory",
        include_str!("../../collectors/jvm-memory.yaml"),
    ),
    ("postgres", include_str!("../../collectors/postgres.yaml")),
    ("go", include_str!("../../collectors/go.yaml")),
    ("python", include_str!("../../collectors/python.yaml")),
];

/// One collector definition file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub probes: Vec<ProbeDef>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// Output parsed by `parser` into one row of `diagnostics/<stream>.jsonl`.
    #[default]
    Sample,
    /// Output (or the fetched `{remote_file}`) saved as a file under `diagnostics/`.
    Artifact,
    /// JFR: `command` at the chosen phase's start, `stop_command` at its end,
    /// then `{remote_file}` downloaded and removed.
    Jfr,
    /// Follow a file on the target (`{file}` from `{offset}`), appended to `diagnostics/<name>.log`.
    Tail,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PidUse {
    /// Resolved from `target:`; the probe is skipped while no PID is found.
    #[default]
    Required,
    /// `{pid}` becomes `''` when no target process is configured or found.
    Optional,
}

/// One probe of a definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeDef {
    pub name: String,
    #[serde(default)]
    pub kind: ProbeKind,
    /// Shell command template (see the module doc for placeholders).
    pub command: String,
    /// `jfr`: the command that ends the recording.
    pub stop_command: Option<String>,
    /// `sample`: built-in parser: `proc-host`, `gc-heap-info`, `lines`, `proc-fds`.
    pub parser: Option<String>,
    /// `sample`: name of the `.jsonl` series (default: the probe name).
    pub stream: Option<String>,
    /// `artifact`: the command writes `{remote_file}`, which is downloaded then removed.
    #[serde(default)]
    pub fetch: bool,
    /// File extension of artifacts.
    #[serde(default = "d_ext")]
    pub extension: String,
    #[serde(default)]
    pub pid: PidUse,
    /// Run only when the target JVM's major version is at least this.
    pub min_java: Option<u32>,
    /// When and how it runs (`enabled`, `every`, `at_phase_start`,
    /// `on_trigger`, `max`, `phase`, `settings`, `file`, `window`,
    /// `keep_windows`): the settings a profile may override, one type for
    /// the definition and the override. Unset: see the accessors.
    #[serde(flatten)]
    pub tune: ProbeOverride,
    /// Text sent to the command's standard input, after one line holding
    /// the database password (`database.password_env`; empty without one):
    /// a script for `psql -f -`, so secrets stay off command lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// `jfr` windows: the commands of the windowed recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<JfrWindow>,
}

/// The commands of a windowed JFR recording: a recording bounded in the JVM
/// (`maxage`, `maxsize`, on disk), a dump of the span since the previous
/// window every `window`, and a stop that writes nothing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JfrWindow {
    /// Starts the bounded recording (`{maxage}`: two windows).
    pub start_command: String,
    /// Writes the chunks since the previous window (`{begin}`: `-Ns`,
    /// relative to the target's own clock) to `{remote_file}`.
    pub dump_command: String,
    /// Ends the recording without writing it (the last window was dumped).
    pub stop_command: String,
}

/// A jfr probe recording a run or phase at least this long gets windows of
/// [`AUTO_WINDOW`] unless its `window` is set (`0s`: one recording).
pub const AUTO_WINDOW_FROM: Duration = Duration::from_secs(3600);
pub const AUTO_WINDOW: Duration = Duration::from_secs(600);
/// Window files kept locally when `keep_windows` is unset.
pub const DEFAULT_KEEP_WINDOWS: u32 = 12;
/// The shortest window: each dump is a jcmd attach and a chunk rotation.
pub const MIN_WINDOW: Duration = Duration::from_secs(5);

fn d_ext() -> String {
    "txt".to_string()
}

/// Parsers known to the lanes.
pub const PARSERS: &[&str] = &["proc-host", "gc-heap-info", "lines", "proc-fds", "pg-json"];
const PLACEHOLDERS: &[&str] = &[
    "pid",
    "port",
    "jcmd",
    "remote_file",
    "settings",
    "file",
    "offset",
    "maxage",
    "begin",
    "psql",
    "db_host",
    "db_port",
    "db_user",
    "db_name",
    "pprof",
];

/// The placeholders `collectors.database` fills.
pub const DB_PLACEHOLDERS: &[&str] = &["psql", "db_host", "db_port", "db_user", "db_name"];

impl ProbeDef {
    /// The window length in seconds when this jfr probe records in windows
    /// (`window` set and not `0s`, and the definition has `windows:` commands).
    pub fn window_s(&self) -> Option<f64> {
        self.windows.as_ref()?;
        self.tune
            .window
            .filter(|w| !w.is_zero())
            .map(|w| w.as_secs_f64())
    }

    /// Does the probe talk to the database (`collectors.database` needed)?
    pub fn uses_database(&self) -> bool {
        DB_PLACEHOLDERS.iter().any(|p| self.uses(p))
    }

    pub fn uses(&self, placeholder: &str) -> bool {
        let p = format!("{{{placeholder}}}");
        self.command.contains(&p) || self.stop_command.as_ref().is_some_and(|c| c.contains(&p))
    }

    /// Runs at all (default: yes).
    pub fn enabled(&self) -> bool {
        self.tune.enabled.unwrap_or(true)
    }

    /// Runs when a phase starts (default: no).
    pub fn at_phase_start(&self) -> bool {
        self.tune.at_phase_start.unwrap_or(false)
    }

    /// Runs when a 1-s p99 crosses the threshold (default: no).
    pub fn on_trigger(&self) -> bool {
        self.tune.on_trigger.unwrap_or(false)
    }

    fn validate(&self, src: &str) -> Result<(), CollectorError> {
        let bad = |msg: String| CollectorError::Definition {
            source_name: src.to_string(),
            msg: format!("probe {}: {msg}", self.name),
        };
        if self.name.is_empty()
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(bad("name must be letters, digits, `-` or `_`".into()));
        }
        let win = self
            .windows
            .iter()
            .flat_map(|w| [&w.start_command, &w.dump_command, &w.stop_command]);
        for t in std::iter::once(&self.command)
            .chain(self.stop_command.iter())
            .chain(win)
        {
            check_template(t).map_err(bad)?;
        }
        if let Some(w) = self.tune.window.filter(|w| !w.is_zero()) {
            if self.kind != ProbeKind::Jfr {
                return Err(bad("`window` is for jfr probes".into()));
            }
            if w < MIN_WINDOW {
                return Err(bad(format!(
                    "`window` below {}s (each window is a jcmd attach and a JFR chunk rotation)",
                    MIN_WINDOW.as_secs()
                )));
            }
            match &self.windows {
                None => {
                    return Err(bad(
                        "`window` needs `windows:` commands (start_command, dump_command, stop_command) in the definition".into(),
                    ))
                }
                Some(c) if !c.dump_command.contains("{remote_file}") => {
                    return Err(bad("`windows.dump_command` needs `{remote_file}`".into()))
                }
                Some(_) => {}
            }
        }
        if self.tune.keep_windows == Some(0) {
            return Err(bad("`keep_windows` must be at least 1".into()));
        }
        match self.kind {
            ProbeKind::Sample => match self.parser.as_deref() {
                Some(p) if PARSERS.contains(&p) => {}
                Some(p) => {
                    return Err(bad(format!(
                        "unknown parser `{p}` (known: {})",
                        PARSERS.join(", ")
                    )))
                }
                None => return Err(bad("a sample probe needs `parser`".into())),
            },
            ProbeKind::Artifact => {
                if self.fetch && !self.uses("remote_file") {
                    return Err(bad(
                        "`fetch: true` needs `{remote_file}` in the command".into()
                    ));
                }
            }
            ProbeKind::Jfr => {
                if self.stop_command.is_none() {
                    return Err(bad("a jfr probe needs `stop_command`".into()));
                }
                if !self.uses("remote_file") {
                    return Err(bad("a jfr probe needs `{remote_file}`".into()));
                }
            }
            ProbeKind::Tail => {
                if self.enabled() && self.tune.file.is_none() {
                    return Err(bad(
                        "a tail probe needs `file` (set it in the profile)".into()
                    ));
                }
            }
        }
        if self.enabled()
            && matches!(
                self.kind,
                ProbeKind::Sample | ProbeKind::Artifact | ProbeKind::Tail
            )
            && self.tune.every.is_none()
            && !self.at_phase_start()
            && !self.on_trigger()
        {
            return Err(bad(
                "never runs: set `every`, `at_phase_start` or `on_trigger`".into(),
            ));
        }
        if self
            .tune
            .every
            .is_some_and(|d| d < Duration::from_millis(100))
        {
            return Err(bad("`every` below 100ms".into()));
        }
        if self.extension.is_empty() || !self.extension.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(bad("`extension` must be letters and digits".into()));
        }
        Ok(())
    }
}

/// A `{name}` at the start of `s` where name is lowercase letters and `_`:
/// returns (name, length including braces). Anything else with braces
/// (`{ print }`, `${HOME}`, `a[$4]++}`) is literal text.
fn placeholder_at(s: &str) -> Option<(&str, usize)> {
    let inner = s.strip_prefix('{')?;
    let end = inner.find('}')?;
    let name = &inner[..end];
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .then_some((name, end + 2))
}

fn check_template(t: &str) -> Result<(), String> {
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        let tail = &rest[i..];
        match placeholder_at(tail) {
            Some((name, len)) => {
                if !PLACEHOLDERS.contains(&name) {
                    return Err(format!(
                        "unknown placeholder `{{{name}}}` (known: {}; for a literal brace block write `{{ {name} }}`)",
                        PLACEHOLDERS.join(", ")
                    ));
                }
                rest = &tail[len..];
            }
            None => rest = &tail[1..],
        }
    }
    Ok(())
}

/// Fill a template: each placeholder becomes its value, shell-quoted.
/// A placeholder without a value becomes `''`.
pub fn render(t: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(t.len() + 32);
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        match placeholder_at(tail) {
            Some((name, len)) if PLACEHOLDERS.contains(&name) => {
                out.push_str(&sh_quote(&lookup(name).unwrap_or_default()));
                rest = &tail[len..];
            }
            _ => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parse one definition's YAML text.
pub fn parse(text: &str, source_name: &str) -> Result<Definition, CollectorError> {
    let def: Definition = serde_saphyr::from_str(text).map_err(|e| CollectorError::Definition {
        source_name: source_name.to_string(),
        msg: e.to_string(),
    })?;
    for p in &def.probes {
        p.validate(source_name)?;
    }
    Ok(def)
}

/// Resolve a `collect:` entry (built-in name or path relative to `base_dir`)
/// and apply its overrides.
pub fn load(entry: &CollectEntry, base_dir: Option<&Path>) -> Result<Definition, CollectorError> {
    let is_path =
        entry.use_.contains('/') || entry.use_.ends_with(".yaml") || entry.use_.ends_with(".yml");
    let (text, src) = if is_path {
        let mut p = PathBuf::from(&entry.use_);
        if p.is_relative() {
            if let Some(b) = base_dir {
                p = b.join(p);
            }
        }
        let text = std::fs::read_to_string(&p).map_err(|e| CollectorError::Definition {
            source_name: p.display().to_string(),
            msg: format!("cannot read it: {e}"),
        })?;
        (text, p.display().to_string())
    } else {
        let (_, text) =
            BUILTIN
                .iter()
                .find(|(n, _)| *n == entry.use_)
                .ok_or_else(|| {
                    CollectorError::Config(format!(
                    "unknown collector `{}` (built-in: {}; or give a path to a .yaml definition)",
                    entry.use_,
                    BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ))
                })?;
        (text.to_string(), format!("built-in {}", entry.use_))
    };
    let mut def = parse(&text, &src)?;
    for (name, o) in &entry.probes {
        let names = def
            .probes
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let p = def
            .probes
            .iter_mut()
            .find(|p| &p.name == name)
            .ok_or_else(|| {
                CollectorError::Config(format!(
                    "collector `{}` has no probe `{name}` (probes: {names})",
                    entry.use_
                ))
            })?;
        p.tune.overlay(o);
        p.validate(&src)?;
    }
    Ok(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (name, text) in BUILTIN {
            let d = parse(text, name).unwrap();
            assert_eq!(&d.name, name);
        }
    }

    #[test]
    fn settings_read_beside_the_probe_and_typos_are_errors() {
        let def = |extra: &str| {
            format!(
                "name: t\nprobes:\n  - name: p\n    parser: lines\n    command: date\n    every: 2s\n    max: 3\n{extra}"
            )
        };
        let d = parse(&def(""), "t").expect("a definition");
        let p = &d.probes[0];
        assert_eq!(p.tune.every, Some(Duration::from_secs(2)));
        assert_eq!(p.tune.max, Some(3));
        assert!(p.enabled() && !p.at_phase_start() && !p.on_trigger());
        let e = parse(&def("    evrey: 1s\n"), "t").expect_err("a typo");
        assert!(e.to_string().contains("unknown field `evrey`"), "{e}");
        let mut p = p.clone();
        p.tune.overlay(&ProbeOverride {
            enabled: Some(false),
            on_trigger: Some(true),
            ..Default::default()
        });
        assert!(!p.enabled() && p.on_trigger());
        assert_eq!(p.tune.every, Some(Duration::from_secs(2)), "kept");
    }

    #[test]
    fn render_quotes_values() {
        let look = |k: &str| match k {
            "pid" => Some("12".to_string()),
            "file" => Some("/tmp/a b'; rm -rf /".to_string()),
            _ => None,
        };
        assert_eq!(
            render("x {pid} {file} ${HOME} { print } {jcmd}", &look),
            "x 12 '/tmp/a b'\\''; rm -rf /' ${HOME} { print } ''"
        );
    }

    #[test]
    fn windows_are_checked() {
        let jvm = parse(BUILTIN[1].1, "jvm").unwrap();
        let mut jfr = jvm.probes.into_iter().find(|p| p.name == "jfr").unwrap();
        jfr.tune.window = Some(Duration::from_secs(600));
        assert!(jfr.validate("t").is_ok());
        jfr.tune.window = Some(Duration::from_secs(2));
        let e = jfr.validate("t").unwrap_err().to_string();
        assert!(e.contains("below 5s"), "{e}");
        jfr.tune.window = Some(Duration::from_secs(60));
        jfr.tune.keep_windows = Some(0);
        assert!(jfr.validate("t").is_err());
        jfr.tune.keep_windows = None;
        jfr.windows = None;
        let e = jfr.validate("t").unwrap_err().to_string();
        assert!(e.contains("windows:"), "{e}");
        let heap = parse(BUILTIN[1].1, "jvm")
            .unwrap()
            .probes
            .into_iter()
            .find(|p| p.name == "heap");
        let mut heap = heap.unwrap();
        heap.tune.window = Some(Duration::from_secs(60));
        assert!(heap.validate("t").is_err());
    }

    #[test]
    fn unknown_placeholder_is_refused() {
        assert!(check_template("cat {nope}").is_err());
        assert!(check_template("awk '{print}' {file}").is_err());
        assert!(check_template("awk '{ print }' {file} ${HOME} {pid").is_ok());
    }
}
