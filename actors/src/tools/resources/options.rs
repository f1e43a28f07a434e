//! [`ResourceOptions`]: the limits and switches of the resources (the project files offered or
//! not, read and listing caps, how many files are watched, the debounce of changes).

use std::time::Duration;

/// Limits and switches of the resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceOptions {
    /// Offer the project's files (the template, the listing, subscriptions).
    pub files: bool,
    /// The largest file (or command output) a read returns.
    pub max_read_bytes: u64,
    /// How many project files `resources/list` shows at most.
    pub max_listed: usize,
    /// How many directories deep the listing goes.
    pub max_walk_depth: usize,
    /// How many resources are watched at once for subscribers (further ones are not watched).
    pub max_watched: usize,
    /// Changes to one file within this time are announced once, at its end.
    pub debounce: Duration,
}

impl Default for ResourceOptions {
    fn default() -> Self {
        ResourceOptions {
            files: true,
            max_read_bytes: 1024 * 1024,
            max_listed: 1000,
            max_walk_depth: 16,
            max_watched: 256,
            debounce: Duration::from_millis(200),
        }
    }
}
