//! brunt's exit codes, one place for the CLI, `run`, `shard` and the docs.

/// Every budget and verdict met.
pub const PASS: i32 = 0;
/// Anything else went wrong (I/O, a panic, a target that vanished).
pub const FAILURE: i32 = 1;
/// Bad input: a profile, a flag, a file that cannot be read as what it claims.
pub const BAD_INPUT: i32 = 2;
/// A budget or a verdict failed (the convention k6 users know).
pub const BUDGET_FAILED: i32 = 99;
