//! brunt as a library: the CLI (`cli`) is a thin shell over these modules, and
//! tests and `examples/` drive them directly.
//!
//! Data flows one way, and so do the imports (each module may import only
//! those below it; `python3 ../shared/tools/module-cycles.py src` checks):
//! profile → engine → metrics (the recorder) → judge → report (and
//! metrics → export, the live Prometheus view), and
//! collectors → diagnosis → evidence → judge → report. `run` wires one run
//! together; `rundir` owns the files a run leaves and every read of them:
//! a run directory is read once into a `rundir::RunData`, which the judge
//! judges and the renderers draw (neither opens a file).
//!
//! | module | owns | may import |
//! |---|---|---|
//! | [`cli`] | argument parsing, one function per subcommand, exit codes, all printing (the library's notices through [`vocab::Say`]), `brunt watch`'s polling loop | everything |
//! | [`run`] | one run end to end (the setup before the load and the teardown after it, once across shards through shard 1's control endpoint; its files written, then read back through `rundir` and judged, as `brunt report` does); the compiled run spec (`RunSpec`: the one compile `brunt validate` also runs); `brunt report`; the live view's server figures; the live dashboard's server (`run::dashboard`, following the run directory) | all below |
//! | [`shard`] | `brunt merge` of shard run directories (read through `rundir`, judged by `judge::judge`), `brunt k8s` manifests | judge, rundir, profile, metrics, budgets, vocab |
//! | [`report`] | rendering only, from the summary and the data its caller read (`rundir::RunData`), opening no file: terminal, `report.html`, `brunt compare` (and its `--fail-if` gate), `brunt analyze` output, JUnit XML, the live view (`brunt run`, `brunt watch`) and the live dashboard's page and data | judge, rundir, evidence, diagnosis, metrics, budgets, vocab |
//! | [`export`] | live export to Prometheus while a run runs: `/metrics` pull endpoint, remote-write push; the small read-only HTTP endpoint (`export::http`) the dashboard answers through too | metrics, vocab |
//! | [`judge`] | the verdicts: budgets per scope, knee and cause, overload, spike, soak; `summary.json`'s content and the one finishing sequence (`judge::judge`) a run, `brunt report` and `brunt merge` share; it reads no file, only the `rundir::RunData` it is given | rundir, evidence, profile, metrics, budgets, vocab |
//! | [`rundir`] | the run directory's files and every read of them: names, `run.json`, atomic writes, events, `RunData` (a directory read once for the judge and the renderers), streaming readers (the latency log and series mapped onto phases in one loop), `evidence.json`, reading a directory as it grows | evidence, metrics, vocab |
//! | [`evidence`] | server-side evidence as the judge reads it (series and findings on the run clock) | diagnosis, vocab |
//! | [`engine`] | sending the load: its compile (`engine::compile`: target and TLS, requests, mix, templates, feeders), open-model scheduler, closed-model virtual users, scenarios (steps, `repeat` loops, cookie jars, token refresh), the HTTP client hot path, W3C trace context on a share of the sends; `setup:`/`teardown:` sent once outside the load (`engine::setup`); WebSocket steps (`engine::ws`: connect, correlated round trips, close codes, each an outcome under its own name); gRPC calls on its HTTP/2 path (`engine::grpc`: `.proto` files, messages, `grpc-status`) | profile, metrics, vocab |
//! | [`collectors`] | server-side sampling over a transport (local, SSH, a `docker`/`kubectl exec` prefix): host `/proc`, JVM dumps, JFR (its windows read by the reader `run` hands in), heap, Go's pprof (goroutine dumps, mutex/block profiles), py-spy dumps, PostgreSQL through `psql`; the compile of the `collectors:` section the run spec holds | profile, vocab |
//! | [`profile`] | the YAML profile: every section's types, parsing with file/line/column errors (`{{ }}` templates included), `--set` overrides, compiling a shape into phases | budgets, demo, vocab |
//! | [`budgets`] | the budget language (`p99 < 500ms`) and its PASS/FAIL evaluation | metrics, vocab |
//! | [`metrics`] | recording outcomes: HdrHistograms per phase × outcome, 1-s windows, interval log, time series and the one per-second merge of its rows; the slowest traced requests per scope | vocab |
//! | [`diagnosis`] | reading thread dumps (JVM, Go goroutines, py-spy), JFR recordings, Go pprof profiles, PostgreSQL samples and pinning traces into findings, thread activity per phase; class histograms, NMT summaries, direct buffers, Metaspace and thread-name groups lined up as the parts a soak watches grow | vocab (the thread-activity types the report shows) |
//! | [`demo`] | the built-in demo target (`brunt demo-target`, `target: builtin`) | nothing |
//! | [`vocab`] | the shared vocabulary: run clock, phases, observer, window stats, units, series names, file and artifact names, the collectors' index and sample rows (`diagnostics/*.jsonl`), thread activity, what grows in a soak (parts over time, judged items), exit codes, the gates' PASS/FAIL/NO DATA, server-streaming tallies, notices for the caller to show, what a setup or teardown did | nothing |

pub mod budgets;
pub mod cli;
pub mod collectors;
pub mod demo;
pub mod diagnosis;
pub mod engine;
pub mod evidence;
pub mod export;
pub mod judge;
pub mod metrics;
pub mod profile;
pub mod report;
pub mod run;
pub mod rundir;
pub mod shard;
pub mod vocab;
