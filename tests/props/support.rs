//! What every property shares: how many cases it runs. CI runs a bounded number
//! ([`DEFAULT_CASES`]); `MCPD_PROPTEST_CASES` sets another, for a long run:
//!
//! ```sh
//! MCPD_PROPTEST_CASES=100000 cargo test --release -p mcpd --test props
//! ```

use proptest::test_runner::Config;

/// Cases per property when `MCPD_PROPTEST_CASES` is not set: every target runs in a few
/// seconds in a debug build, so the whole crate stays well under a minute in CI.
pub(crate) const DEFAULT_CASES: u32 = 256;

/// The number of cases: `MCPD_PROPTEST_CASES`, else [`DEFAULT_CASES`].
pub(crate) fn cases() -> u32 {
    std::env::var("MCPD_PROPTEST_CASES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CASES)
}

/// The configuration of every property: [`cases`] cases, failures reported (with the smallest
/// input proptest could shrink them to) but not written to files: a failure found is fixed with
/// a regression unit test next to the code.
pub(crate) fn config() -> Config {
    Config { cases: cases(), failure_persistence: None, ..Config::default() }
}
