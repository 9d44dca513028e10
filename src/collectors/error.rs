//! Typed errors of the collectors subsystem. [`CollectorError::is_link`]
//! separates a broken transport (reconnect, record a gap) from a command
//! that ran and failed (log, retry on the next schedule).

use std::io;
use std::path::PathBuf;

use crate::vocab::collectors::CollectorErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    #[error("collectors config: {0}")]
    Config(String),
    #[error("collector definition {source_name}: {msg}")]
    Definition { source_name: String, msg: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("connecting to {addr}: {msg}")]
    Connect { addr: String, msg: String },
    #[error(
        "host key of {host} is not in {known_hosts}: refusing to connect \
         (add it with `ssh-keyscan -p PORT HOST >> FILE`, or set `host_key: accept-new`)"
    )]
    UnknownHostKey { host: String, known_hosts: String },
    #[error(
        "host key of {host} does NOT match the one in {known_hosts}: refusing to connect \
         (possible man-in-the-middle; if the server was rebuilt, remove the old entry)"
    )]
    HostKeyChanged { host: String, known_hosts: String },
    #[error("authentication as {user}@{host} failed: {msg}")]
    Auth {
        user: String,
        host: String,
        msg: String,
    },
    #[error("ssh link to {addr}: {msg}")]
    Link { addr: String, msg: String },
    #[error("command timed out after {secs:.1}s: {cmd}")]
    Timeout { secs: f64, cmd: String },
    #[error("command exited with {status}: {cmd}: {stderr}")]
    Command {
        status: i32,
        cmd: String,
        stderr: String,
    },
    #[error("target process not found")]
    TargetNotFound,
    #[error("parser {parser}: {msg}")]
    Parse { parser: String, msg: String },
    /// The database a probe samples refused it (bad password, unknown
    /// role or database, nothing listening) before the load.
    #[error("database: {0}")]
    Database(String),
    #[error("{0}")]
    Other(String),
}

impl CollectorError {
    /// True when the transport itself is broken: drop it and reconnect.
    pub fn is_link(&self) -> bool {
        matches!(
            self,
            CollectorError::Link { .. } | CollectorError::Connect { .. }
        )
    }

    /// True when retrying cannot help (security refusals, bad config).
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            CollectorError::UnknownHostKey { .. }
                | CollectorError::HostKeyChanged { .. }
                | CollectorError::Auth { .. }
                | CollectorError::Config(_)
                | CollectorError::Definition { .. }
        )
    }

    /// True for mistakes in the profile or a definition file (exit code 2).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            CollectorError::Config(_)
                | CollectorError::Definition { .. }
                | CollectorError::Database(_)
        )
    }

    /// The kind the collectors' index files this error under.
    pub fn kind(&self) -> CollectorErrorKind {
        use CollectorErrorKind as K;
        match self {
            CollectorError::Config(_) | CollectorError::Definition { .. } => K::Config,
            CollectorError::Io { .. } => K::Io,
            CollectorError::Connect { .. }
            | CollectorError::UnknownHostKey { .. }
            | CollectorError::HostKeyChanged { .. }
            | CollectorError::Auth { .. }
            | CollectorError::Link { .. } => K::Transport,
            CollectorError::Timeout { .. } => K::Timeout,
            CollectorError::Command { .. } => K::ProbeFailed,
            CollectorError::TargetNotFound => K::TargetNotFound,
            CollectorError::Parse { .. } => K::Parse,
            CollectorError::Database(_) => K::ProbeFailed,
            CollectorError::Other(_) => K::Other,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        CollectorError::Io {
            path: path.into(),
            source,
        }
    }
}
