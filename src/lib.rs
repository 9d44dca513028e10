//! brunt as a library: the CLI (`cli`) is a thin shell over these modules, and
//! tests and `examples/` drive them directly.
//!
//! Data flows one way:
//! `profile` → `engine` → `metrics` (the recorder) → `budgets` → `report`,
//! and `collectors` → `diagnosis` → `report`. `run` wires one run together.
//!
//! | module | owns |
//! |---|---|
//! | [`profile`] | the YAML profile: types, parsing with file/line/column errors, compiling a shape into phases |
//! | [`engine`] | sending the load: open-model scheduler, closed-model virtual users, the HTTP client hot path |
//! | [`metrics`] | recording outcomes: HdrHistograms per phase × outcome, 1-s windows, interval log, time series |
//! | [`budgets`] | the budget language (`p99 < 500ms`) and its PASS/FAIL evaluation |
//! | [`collectors`] | server-side sampling over a transport (local, SSH): host `/proc`, JVM dumps, JFR, heap |
//! | [`diagnosis`] | reading thread dumps, JFR recordings and pinning traces into findings |
//! | [`report`] | the run directory's files, the terminal summary, `summary.json`, the verdicts, `report.html`, `brunt compare` |
//! | [`run`] | one run end to end: profile → engine + recorder + collectors → report |
//! | [`shard`] | beyond one machine: `brunt merge` of shard run directories, `brunt k8s` manifests |
//! | [`demo`] | the built-in demo target (`brunt demo-target`, `target: builtin`) |
//! | [`cli`] | argument parsing and exit codes |

pub mod budgets;
pub mod cli;
pub mod collectors;
pub mod demo;
pub mod diagnosis;
pub mod engine;
pub mod metrics;
pub mod profile;
pub mod report;
pub mod run;
pub mod shard;
