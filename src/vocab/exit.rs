//! brunt's exit codes, one place for the CLI, `run`, `shard` and the docs.

/// Every gate met: budgets, the knee against `expect_capacity`, the shape's verdicts.
pub const PASS: i32 = 0;
/// Anything else went wrong (I/O, a panic, a target that vanished).
pub const FAILURE: i32 = 1;
/// Bad input: a profile, a flag, a file that cannot be read as what it claims.
pub const BAD_INPUT: i32 = 2;
/// The run directory could not be written (a full disk, a read-only
/// mount): the load was stopped at once. `EX_IOERR` of BSD's sysexits.h.
pub const WRITE_FAILED: i32 = 74;
/// A gate failed or had no data: a budget, the knee, a verdict (the convention k6 users know).
pub const BUDGET_FAILED: i32 = 99;
/// The run was interrupted (Ctrl-C, a signal) before its plan ended: never a
/// pass, whatever was measured up to the stop (k6 uses the same code).
pub const INTERRUPTED: i32 = 105;
