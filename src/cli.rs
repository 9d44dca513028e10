//! Command-line parsing and exit codes (placeholder).
pub fn main() -> i32 {
    0
}
