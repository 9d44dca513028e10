//! The shared vocabulary at the bottom of brunt: what every other module
//! speaks and none of them owns. It imports nothing of brunt.
//!
//! | file | owns |
//! |---|---|
//! | [`clock`] | the run clock every series is stamped on |
//! | [`collectors`] | the collectors' index: streams, artifacts, gaps, errors (with their kind), target PIDs, generator health |
//! | [`phase`] | phases with their numeric level, model and shape kinds, the observer trait, 1-s window stats |
//! | [`units`] | value types of the profile language: levels, percentages, growth per hour |
//! | [`series`] | names and units of every evidence series |
//! | [`threads`] | what the target's threads were doing, per dump and per phase |
//! | [`exit`] | exit codes |
//! | [`export`] | the remote-write push log's row (`export.jsonl`) |
//! | [`findings`] | a finding's severity and kind |
//! | [`jfr`] | a JFR recording's totals and the `jfr-windows.jsonl` row |
//! | [`samples`] | the rows of the collectors' `diagnostics/*.jsonl` files (host, heap, generator, Prometheus, the event log) |
//! | [`samples_db`] | the database collector's row (`postgres.jsonl`): backends, lock waits and their blockers, connections, statements |
//! | [`growth`] | what grows in a soak: parts over time (heap class, thread group, sockets, fd kind, native category) and the judged items |
//! | [`files`] | the names of a run directory's files |
//! | [`status`] | PASS / FAIL / NO DATA of every gate |
//! | [`setup`] | what a run's `setup:` and `teardown:` did, once (`setup.json`, the summary's `setup` and `teardown`) |
//! | [`say`] | notices (warnings, progress lines) the library hands the caller to show |

pub mod clock;
pub mod collectors;
pub mod exit;
pub mod export;
pub mod files;
pub mod findings;
pub mod growth;
pub mod jfr;
pub mod phase;
pub mod samples;
pub mod samples_db;
pub mod say;
pub mod series;
pub mod setup;
pub mod status;
pub mod streams;
pub mod threads;
pub mod units;

pub use clock::RunClock;
pub use phase::{Model, PhaseInfo, RunObserver, ShapeKind, WindowStats, WARMUP};
pub use say::{Notice, Say};
pub use status::Status;
pub use units::{ByteSize, Level, PerHour, Percent};
