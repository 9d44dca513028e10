//! The profile's `collectors:` section: which transport reaches the target,
//! how to find the target process, which collector definitions run and with
//! which overrides, and the generator-health thresholds.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `collectors:` section of a profile. Absent = generator health only.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectorsConfig {
    /// How commands reach the target host (default: `local`).
    #[serde(default)]
    pub transport: TransportConfig,
    /// How to find the target process and its service port.
    #[serde(default)]
    pub target: TargetConfig,
    /// Collector definitions to run: a built-in name (`linux-host`, `jvm`)
    /// or a path to a definition file, with per-probe overrides.
    #[serde(default)]
    pub collect: Vec<CollectEntry>,
    /// brunt's own health (CPU, RSS, scheduler lag).
    #[serde(default)]
    pub generator: GeneratorConfig,
    /// 1-s p99 above which `on_trigger` probes fire. Default: the budgets' p99.
    #[serde(default, with = "humantime_serde::option")]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub trigger_p99: Option<Duration>,
    /// Minimum time between two trigger firings.
    #[serde(default = "d_trigger_cooldown", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub trigger_cooldown: Duration,
    /// Directory on the target for files that are downloaded then removed.
    #[serde(default = "d_remote_dir")]
    pub remote_dir: String,
    /// PromQL queries against a Prometheus server during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusSource>,
    /// The database the `postgres` collector samples (its `{db_*}` placeholders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseConfig>,
}

/// `collectors.database`: how `psql` reaches the database, as seen from
/// where the collectors' commands run (the target host, or inside the
/// container a `prefix` enters).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// Host or socket directory for `psql -h` (default `127.0.0.1`).
    #[serde(default = "d_db_host")]
    pub host: String,
    #[serde(default = "d_db_port")]
    pub port: u16,
    /// Role to connect as (default `postgres`). Needs `pg_monitor` (or
    /// superuser) to see every backend's statement.
    #[serde(default = "d_db_user")]
    pub user: String,
    /// Database to connect to (default `postgres`); the activity of every
    /// database is seen from any of them.
    #[serde(default = "d_db_user")]
    pub dbname: String,
    /// NAME of the environment variable holding the password (never the
    /// password itself); unset: no password (trust, peer, `~/.pgpass`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// The `psql` binary on the target (default `psql` on its PATH).
    #[serde(default = "d_psql")]
    pub psql: String,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            host: d_db_host(),
            port: d_db_port(),
            user: d_db_user(),
            dbname: d_db_user(),
            password_env: None,
            psql: d_psql(),
        }
    }
}

fn d_db_host() -> String {
    "127.0.0.1".into()
}
fn d_db_port() -> u16 {
    5432
}
fn d_db_user() -> String {
    "postgres".into()
}
fn d_psql() -> String {
    "psql".into()
}

/// `collectors.prometheus`: named PromQL instant queries every `every`,
/// each landing in `evidence.json` as a series.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSource {
    /// Base URL of the Prometheus server, e.g. `http://prometheus:9090`.
    pub url: String,
    /// Environment variable holding a bearer token (sent as `Authorization: Bearer …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// `instant` (default): every query every `every` during the run;
    /// `range`: one range query per query when the load has ended, at `every` steps.
    #[serde(default)]
    pub mode: PromMode,
    /// How often every query runs (the step of a range query).
    #[serde(default = "d_prom_every", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub every: Duration,
    /// Value of `{instance}` in queries (a regex on the `instance` label).
    #[serde(default = "d_prom_instance")]
    pub instance: String,
    /// Value of `{window}` in queries (the range of `rate(…[{window}])`).
    #[serde(default = "d_prom_window")]
    pub window: String,
    /// Query sets: built-in names (`prometheus-node`, `prometheus-jvm`) or paths.
    #[serde(default, rename = "use")]
    pub use_: Vec<String>,
    /// Queries of the profile itself.
    #[serde(default)]
    pub queries: Vec<PromQuery>,
}

/// When the Prometheus source asks.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PromMode {
    #[default]
    Instant,
    Range,
}

/// One named PromQL query: it must give one number (a scalar, or a vector
/// of one element: aggregate with `sum`, `avg`, `max`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromQuery {
    /// Letters, digits, `-`, `_`.
    pub name: String,
    pub query: String,
    /// The evidence series it feeds, e.g. `target.host_cpu_pct` (the knee's
    /// cause reads it) or `target.pool_waiters` (pool evidence); default `prometheus.<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
}

fn d_prom_every() -> Duration {
    Duration::from_secs(5)
}
fn d_prom_instance() -> String {
    ".+".into()
}
fn d_prom_window() -> String {
    "30s".into()
}

impl Default for CollectorsConfig {
    fn default() -> Self {
        CollectorsConfig {
            transport: TransportConfig::default(),
            target: TargetConfig::default(),
            collect: Vec::new(),
            generator: GeneratorConfig::default(),
            trigger_p99: None,
            trigger_cooldown: d_trigger_cooldown(),
            remote_dir: d_remote_dir(),
            prometheus: None,
            database: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// Commands run on the generator's machine.
    #[default]
    Local,
    /// libssh2 via the `ssh2` crate: one session for the run, SFTP downloads.
    Ssh,
    /// The system `ssh` binary (for `~/.ssh/config`, ProxyJump, bastions).
    Openssh,
}

/// What to do with the server's host key.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyPolicy {
    /// Key must be in known_hosts; unknown or changed = refuse.
    #[default]
    Strict,
    /// Unknown hosts are added to known_hosts; a changed key is still refused.
    AcceptNew,
    /// No check at all (explicit opt-in for throwaway targets).
    Insecure,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransportConfig {
    #[serde(default)]
    pub kind: TransportKind,
    pub host: Option<String>,
    pub port: Option<u16>,
    /// Login user (default: `$USER`).
    pub user: Option<String>,
    /// Private key file (`~/` expanded). Without it (or with `agent: true`) the SSH agent is used.
    pub key: Option<PathBuf>,
    #[serde(default)]
    pub agent: bool,
    /// Name of the environment variable holding the key's passphrase (never the passphrase itself).
    pub passphrase_env: Option<String>,
    /// Default `~/.ssh/known_hosts`.
    pub known_hosts: Option<PathBuf>,
    #[serde(default)]
    pub host_key: HostKeyPolicy,
    #[serde(default = "d_keepalive", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub keepalive: Duration,
    #[serde(default = "d_connect_timeout", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub connect_timeout: Duration,
    /// Upper bound for one remote command (and each blocking SSH call).
    #[serde(default = "d_command_timeout", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub command_timeout: Duration,
    /// Longest wait between two reconnect attempts (back-off doubles up to it).
    #[serde(default = "d_max_backoff", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub max_backoff: Duration,
    /// Argv put before every command, e.g. `[docker, exec, app]` or
    /// `[kubectl, exec, pod-0, --]`; each word is quoted.
    #[serde(default)]
    pub prefix: Vec<String>,
    /// `openssh` only: extra `-o` options, e.g. `ProxyJump=bastion`.
    #[serde(default)]
    pub ssh_options: Vec<String>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            kind: TransportKind::Local,
            host: None,
            port: None,
            user: None,
            key: None,
            agent: false,
            passphrase_env: None,
            known_hosts: None,
            host_key: HostKeyPolicy::Strict,
            keepalive: d_keepalive(),
            connect_timeout: d_connect_timeout(),
            command_timeout: d_command_timeout(),
            max_backoff: d_max_backoff(),
            prefix: Vec::new(),
            ssh_options: Vec::new(),
        }
    }
}

/// How to find the target process.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// A fixed PID (not re-found after a restart).
    pub pid: Option<u32>,
    /// `pgrep -f` pattern matched against the full command line.
    pub pgrep: Option<String>,
    /// Regex matched against `jcmd -l` lines (main class and arguments).
    pub jcmd_match: Option<String>,
    /// The service's TCP port: connection states are also counted for it.
    pub port: Option<u16>,
    /// `jcmd` on the target (a path when it is not on the remote PATH).
    #[serde(default = "d_jcmd")]
    pub jcmd: String,
    /// A Go service's `net/http/pprof` base URL as the target host reaches
    /// it (`{pprof}` in the `go` collector); default `http://127.0.0.1:6060`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pprof: Option<String>,
}

/// Where a Go service serves `net/http/pprof` unless `target.pprof` says.
pub const DEFAULT_PPROF: &str = "http://127.0.0.1:6060";

impl TargetConfig {
    /// `target.pprof` without a trailing `/`, or [`DEFAULT_PPROF`].
    pub fn pprof_url(&self) -> String {
        self.pprof
            .as_deref()
            .unwrap_or(DEFAULT_PPROF)
            .trim_end_matches('/')
            .to_string()
    }
}

impl Default for TargetConfig {
    fn default() -> Self {
        TargetConfig {
            pid: None,
            pgrep: None,
            jcmd_match: None,
            port: None,
            jcmd: d_jcmd(),
            pprof: None,
        }
    }
}

/// One `collect:` entry: a definition and overrides for its probes.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectEntry {
    /// Built-in name (`linux-host`, `jvm`) or a path to a YAML definition.
    #[serde(rename = "use")]
    pub use_: String,
    /// Probe name → overrides.
    #[serde(default)]
    pub probes: BTreeMap<String, ProbeOverride>,
}

/// When and how a probe runs: in a definition (`collectors/*.yaml`) its
/// settings, in a profile's `collect:` entry overrides of them; unset fields
/// keep the definition's value.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeOverride {
    /// Default: on.
    pub enabled: Option<bool>,
    /// Run this often.
    #[serde(default, with = "humantime_serde::option")]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub every: Option<Duration>,
    /// Run when a phase starts; when a 1-s p99 crosses the threshold (default: no).
    pub at_phase_start: Option<bool>,
    pub on_trigger: Option<bool>,
    /// At most this many runs in the whole run.
    pub max: Option<u32>,
    /// `jfr`: phase name to record, or `run` for the whole run.
    pub phase: Option<String>,
    /// `jfr`: settings name (`default`, `profile`) or a .jfc path on the target.
    pub settings: Option<String>,
    /// `tail`: file on the target to follow.
    pub file: Option<String>,
    /// `jfr`: dump and analyse the recording every this long (`10m`), the
    /// recording bounded in the JVM; unset = one recording, downloaded at its end.
    #[serde(default, with = "humantime_serde::option")]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub window: Option<Duration>,
    /// `jfr` windows: window files kept on the local disk (default 12).
    pub keep_windows: Option<u32>,
}

impl ProbeOverride {
    /// Take every setting `o` sets.
    pub fn overlay(&mut self, o: &ProbeOverride) {
        fn take<T: Clone>(to: &mut Option<T>, from: &Option<T>) {
            if from.is_some() {
                to.clone_from(from);
            }
        }
        take(&mut self.enabled, &o.enabled);
        take(&mut self.every, &o.every);
        take(&mut self.at_phase_start, &o.at_phase_start);
        take(&mut self.on_trigger, &o.on_trigger);
        take(&mut self.max, &o.max);
        take(&mut self.phase, &o.phase);
        take(&mut self.settings, &o.settings);
        take(&mut self.file, &o.file);
        take(&mut self.window, &o.window);
        take(&mut self.keep_windows, &o.keep_windows);
    }
}

/// Thresholds for calling the generator saturated.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    #[serde(default = "d_true")]
    pub enabled: bool,
    #[serde(default = "d_every", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub every: Duration,
    /// brunt's CPU, in % of all cores, at or above which a second counts as saturated.
    #[serde(default = "d_cpu_saturation")]
    pub cpu_saturation_pct: f64,
    /// p99 oversleep of the lag-probe thread at or above which a second counts as saturated.
    #[serde(default = "d_lag_saturation", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub lag_saturation: Duration,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            enabled: true,
            every: d_every(),
            cpu_saturation_pct: d_cpu_saturation(),
            lag_saturation: d_lag_saturation(),
        }
    }
}

fn d_true() -> bool {
    true
}
fn d_every() -> Duration {
    Duration::from_secs(1)
}
fn d_cpu_saturation() -> f64 {
    90.0
}
fn d_lag_saturation() -> Duration {
    Duration::from_millis(20)
}
fn d_trigger_cooldown() -> Duration {
    Duration::from_secs(5)
}
fn d_remote_dir() -> String {
    "/tmp".to_string()
}
fn d_keepalive() -> Duration {
    Duration::from_secs(15)
}
fn d_connect_timeout() -> Duration {
    Duration::from_secs(10)
}
fn d_command_timeout() -> Duration {
    Duration::from_secs(60)
}
fn d_max_backoff() -> Duration {
    Duration::from_secs(30)
}
fn d_jcmd() -> String {
    "jcmd".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example given to the profile's documentation.
    const EXAMPLE: &str = r#"
transport:
  kind: ssh
  host: 10.0.0.5
  port: 22
  user: app
  key: ~/.ssh/id_ed25519
  passphrase_env: BRUNT_SSH_PASSPHRASE
  known_hosts: ~/.ssh/known_hosts
  host_key: strict
  keepalive: 15s
  command_timeout: 30s
  prefix: [docker, exec, shop-api]
target:
  pgrep: "java .*com.example.ShopApplication"
  port: 8080
  jcmd: /opt/java/openjdk/bin/jcmd
collect:
  - use: linux-host
    probes:
      host: { every: 2s }
  - use: jvm
    probes:
      thread-dump: { every: 10s, max: 30 }
      jfr: { phase: step-3, settings: profile }
      pinning-log: { enabled: true, file: /var/log/shop/app.log }
  - use: ./collectors/my-extra.yaml
generator:
  cpu_saturation_pct: 85
  lag_saturation: 25ms
trigger_p99: 400ms
trigger_cooldown: 10s
"#;

    #[test]
    fn profile_section_parses() {
        let c: CollectorsConfig = serde_saphyr::from_str(EXAMPLE).unwrap();
        assert_eq!(c.transport.kind, TransportKind::Ssh);
        assert_eq!(c.transport.prefix, ["docker", "exec", "shop-api"]);
        assert_eq!(c.transport.command_timeout, Duration::from_secs(30));
        assert_eq!(c.target.port, Some(8080));
        assert_eq!(c.collect.len(), 3);
        assert_eq!(
            c.collect[1].probes["thread-dump"].every,
            Some(Duration::from_secs(10))
        );
        assert_eq!(c.generator.lag_saturation, Duration::from_millis(25));
        assert!(c.generator.enabled);
        assert_eq!(c.trigger_p99, Some(Duration::from_millis(400)));
        assert_eq!(c.remote_dir, "/tmp");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let bad = "transport:\n  kind: ssh\n  hots: x\n";
        let e = serde_saphyr::from_str::<CollectorsConfig>(bad).unwrap_err();
        assert!(e.to_string().contains("hots"), "{e}");
        assert!(serde_saphyr::from_str::<CollectorsConfig>(
            "collect:\n  - use: jvm\n    probes:\n      heap: { evry: 1s }\n"
        )
        .is_err());
        assert!(
            serde_saphyr::from_str::<CollectorsConfig>("transport:\n  host_key: yolo\n").is_err()
        );
    }

    #[test]
    fn empty_section_is_generator_only() {
        let c: CollectorsConfig = serde_saphyr::from_str("{}").unwrap();
        assert!(c.collect.is_empty());
        assert!(c.generator.enabled);
        assert_eq!(c.transport.kind, TransportKind::Local);
    }
}
