//! [`ResourceCounts`]: what was registered, per kind, for the status and the metrics.

/// The resources registered, per kind (after the filter), for the status and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceCounts {
    /// Project files listed by `resources/list`.
    pub files: usize,
    /// Resource templates (the project files' one).
    pub templates: usize,
    /// Declared resources.
    pub declared: usize,
}
