//! Name patterns (`*` any run of characters, `?` one) as the access file and the servers
//! file's virtual servers write them: the matcher ([`Globs`], `enabledTools`' rule) and the
//! reading of a pattern list ([`patterns`]). A file of its own because both files' readers
//! take it and neither imports the other.

use serde_json::{Map, Value};

/// Most patterns in one list (`tools`, `prompts`, `resources`).
pub const MAX_PATTERNS: usize = 256;

/// A list of name patterns (`*` any run of characters, `?` one), matched against whole names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Globs {
    patterns: Vec<String>,
    compiled: Vec<Vec<char>>,
}

impl Globs {
    /// The list of `patterns`.
    pub fn new(patterns: Vec<String>) -> Self {
        let compiled = patterns.iter().map(|p| p.chars().collect()).collect();
        Globs { patterns, compiled }
    }

    /// Whether some pattern matches all of `name`.
    pub fn matches(&self, name: &str) -> bool {
        if self.compiled.is_empty() {
            return false;
        }
        let name: Vec<char> = name.chars().collect();
        self.compiled.iter().any(|p| crate::config::glob_match(p, &name))
    }

    /// Whether some pattern may match a name that starts with `prefix` (a resource template's
    /// text before its first expression): the pattern's text before its first wildcard and
    /// `prefix` agree as far as both go.
    pub fn may_match_prefix(&self, prefix: &str) -> bool {
        self.patterns.iter().any(|pattern| {
            let literal = &pattern[..pattern.find(['*', '?']).unwrap_or(pattern.len())];
            literal.starts_with(prefix) || prefix.starts_with(literal)
        })
    }

    /// Whether the resource template `uri_template` may produce a URI some pattern matches: its
    /// text itself is allowed, or a pattern may match a URI it produces
    /// ([`Globs::may_match_prefix`] of its text before the first expression).
    pub fn may_see_template(&self, uri_template: &str) -> bool {
        let literal = &uri_template[..uri_template.find('{').unwrap_or(uri_template.len())];
        self.matches(uri_template) || self.may_match_prefix(literal)
    }

    /// Whether the list has no pattern (then it matches nothing).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// The name patterns of `entry`'s `field` (absent: none), at most [`MAX_PATTERNS`], each a
/// non-empty string (trimmed).
pub(crate) fn patterns(entry: &Map<String, Value>, field: &str) -> Result<Vec<String>, String> {
    let items = match entry.get(field) {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("{field:?} must be an array of name patterns")),
    };
    if items.len() > MAX_PATTERNS {
        return Err(format!("{field:?} has {} patterns; at most {MAX_PATTERNS} are allowed", items.len()));
    }
    items
        .iter()
        .map(|item| match item {
            Value::String(p) if !p.trim().is_empty() => Ok(p.trim().to_owned()),
            _ => Err(format!("{field:?} must hold only non-empty strings")),
        })
        .collect()
}
