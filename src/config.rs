//! Configuration that needs no runtime: the `mcp.properties` file, the `enabledTools` filter,
//! and the persisted listener settings (`{host, port, enabled}`).
//!
//! ## `mcp.properties` keys
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `enabledTools` | tool filter, see [`ToolFilter`] | every tool |
//! | `keys` | API keys, separated by commas or white space | none (open) |
//! | `allowedOrigins` | browser origins accepted besides loopback | none |
//! | `allowedHosts` | `Host` names accepted besides loopback | none |
//! | `host`, `port` | where `mcpd serve` listens (flags win) | `127.0.0.1`, stdio |
//! | `name`, `version` | the server's reported name and version (flags win) | `mcpd`, crate version |
//! | `maxBodyBytes` | largest accepted request body | 4194304 |
//! | `toolTimeoutSeconds` | longest a tool may run | 300 |
//! | `pageSize` | items per `*/list` page | 100 |
//! | `workers` | HTTP worker threads | number of CPUs |

use std::collections::BTreeMap;
use std::path::Path;

use derive_more::{Display, Error};
use serde::{Deserialize, Serialize};

/// A parsed `.properties` file (the Java format: `key=value`, `key: value` or `key value`,
/// `#` and `!` comments, `\` line continuation and escapes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: BTreeMap<String, String>,
}

impl Properties {
    /// Parses the text of a properties file.
    pub fn parse(text: &str) -> Properties {
        let mut entries = BTreeMap::new();
        let mut logical = String::new();
        for raw in text.lines() {
            let line = raw.trim_start_matches(is_blank);
            if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
                continue;
            }
            let trailing_backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
            if trailing_backslashes % 2 == 1 {
                logical.push_str(&line[..line.len() - 1]);
                continue;
            }
            logical.push_str(line);
            let (key, value) = split_entry(&logical);
            entries.insert(unescape(&key), unescape(&value));
            logical.clear();
        }
        if !logical.is_empty() {
            let (key, value) = split_entry(&logical);
            entries.insert(unescape(&key), unescape(&value));
        }
        Properties { entries }
    }

    /// Reads and parses a file.
    ///
    /// # Errors
    /// The I/O error, when the file cannot be read.
    pub fn load(path: &Path) -> std::io::Result<Properties> {
        std::fs::read_to_string(path).map(|text| Properties::parse(&text))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Sets a value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.entries.insert(key.into(), value.into());
    }

    /// The value of `key` parsed as `T`.
    ///
    /// # Errors
    /// A [`PropertiesError`] naming the key and the bad value.
    pub fn parsed<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, PropertiesError> {
        match self.get(key).map(str::trim) {
            None | Some("") => Ok(None),
            Some(v) => {
                v.parse().map(Some).map_err(|_| PropertiesError::BadValue { key: key.to_owned(), value: v.to_owned() })
            }
        }
    }

    /// Every key and value, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value of `key` split into a list on commas, semicolons and white space.
    pub fn list(&self, key: &str) -> Vec<String> {
        self.get(key).map(split_list).unwrap_or_default()
    }
}

/// Splits a list value on commas, semicolons and white space, dropping empty items.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn split_entry(line: &str) -> (String, String) {
    let mut key = String::new();
    let mut chars = line.char_indices().peekable();
    let mut value_start = line.len();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                key.push(c);
                if let Some((_, next)) = chars.next() {
                    key.push(next);
                }
            }
            '=' | ':' => {
                value_start = i + 1;
                break;
            }
            c if is_blank(c) => {
                value_start = i;
                let rest = line[i..].trim_start_matches(is_blank);
                let offset = line.len() - rest.len();
                value_start =
                    if rest.starts_with('=') || rest.starts_with(':') { offset + 1 } else { offset.max(value_start) };
                break;
            }
            c => key.push(c),
        }
    }
    (key, line[value_start.min(line.len())..].trim_start_matches(is_blank).to_owned())
}

/// White space as the properties format defines it: space, tab and form feed (not every Unicode
/// white space: a key or value may begin with, or hold, any other character).
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => unescape_unicode(&mut chars, &mut out),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The four hex digits of a `\uXXXX` escape (its `\u` already read), consumed only when they
/// are there.
fn hex4(chars: &mut std::str::Chars<'_>) -> Option<u32> {
    let rest = chars.as_str();
    let digits = rest.get(..4).filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))?;
    let unit = u32::from_str_radix(digits, 16).ok()?;
    *chars = rest[4..].chars();
    Some(unit)
}

/// A `\uXXXX` escape (its `\u` already read): one UTF-16 unit. A Java writer escapes a character
/// outside the Basic Multilingual Plane as two, a surrogate pair, which are joined back into it;
/// a surrogate without its other half is U+FFFD. Anything else after `\u` is kept as text.
fn unescape_unicode(chars: &mut std::str::Chars<'_>, out: &mut String) {
    let Some(unit) = hex4(chars) else {
        out.push('u');
        return;
    };
    if (0xD800..0xDC00).contains(&unit) {
        let mut after = chars.as_str().strip_prefix("\\u").unwrap_or_default().chars();
        if let Some(low) = hex4(&mut after).filter(|low| (0xDC00..0xE000).contains(low)) {
            *chars = after;
            out.push(char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)).unwrap_or('\u{FFFD}'));
            return;
        }
    }
    out.push(char::from_u32(unit).unwrap_or('\u{FFFD}'));
}

/// A value in `mcp.properties` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum PropertiesError {
    /// A key's value does not parse.
    #[display("invalid value {value:?} for {key}")]
    BadValue {
        /// The key.
        key: String,
        /// Its value.
        value: String,
    },
}

/// Which tools are exposed, from `enabledTools`.
///
/// The value is a list of patterns separated by commas, semicolons or white space. Each pattern
/// is matched against the whole tool name; `*` matches any run of characters and `?` any one
/// character (`read_*`, `echo`, `*file*`). A tool is exposed when any pattern matches. A key
/// that is present but empty exposes no tool and says so loudly ([`ToolFilter::warning`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolFilter {
    /// No `enabledTools` key: every tool.
    All,
    /// Only tools matching one of the patterns (an empty list: none).
    Patterns(Vec<String>),
}

impl ToolFilter {
    /// The filter for an optional `enabledTools` value.
    pub fn from_value(value: Option<&str>) -> ToolFilter {
        match value {
            None => ToolFilter::All,
            Some(v) => ToolFilter::Patterns(split_list(v)),
        }
    }

    /// Whether `name` is exposed.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            ToolFilter::All => true,
            ToolFilter::Patterns(patterns) => {
                let name: Vec<char> = name.chars().collect();
                patterns.iter().any(|p| glob_match(&p.chars().collect::<Vec<char>>(), &name))
            }
        }
    }

    /// A warning to show when the filter exposes nothing by configuration.
    pub fn warning(&self) -> Option<String> {
        match self {
            ToolFilter::Patterns(p) if p.is_empty() => Some(
                "enabledTools is set but empty: NO tools are exposed. Remove the key to expose every tool, \
                 or list patterns such as `echo, read_*`."
                    .to_owned(),
            ),
            _ => None,
        }
    }
}

/// Glob match of the whole `text` against `pattern` with `*` and `?`.
pub(crate) fn glob_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while t < text.len() {
        // `*` first: it is a wildcard even where the text holds a `*` too.
        if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// The listener settings that survive a restart, as a small JSON file: whether the HTTP
/// listener should run, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerSettings {
    /// Bind address.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Whether the listener should be running.
    pub enabled: bool,
}

impl Default for ListenerSettings {
    fn default() -> Self {
        ListenerSettings { host: "127.0.0.1".into(), port: DEFAULT_PORT, enabled: false }
    }
}

/// The port used when settings name none.
pub const DEFAULT_PORT: u16 = 8791;

impl ListenerSettings {
    /// Reads settings; a missing file gives the defaults.
    ///
    /// # Errors
    /// I/O errors other than "not found", and malformed JSON.
    pub fn load(path: &Path) -> std::io::Result<ListenerSettings> {
        match std::fs::read(path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ListenerSettings::default()),
            Err(e) => Err(e),
        }
    }

    /// Writes settings atomically (temporary file, then rename).
    ///
    /// # Errors
    /// I/O errors.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        let body =
            serde_json::to_vec_pretty(self).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        std::fs::write(&tmp, body)?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_follow_the_java_format() {
        let p = Properties::parse(
            "# comment\n! also\nenabledTools = echo, time\nkeys:a,b\nname mcpd-x\nlong = one \\\n   two\nuni=\\u00e9\n",
        );
        assert_eq!(p.get("enabledTools"), Some("echo, time"));
        assert_eq!(p.get("keys"), Some("a,b"));
        assert_eq!(p.get("name"), Some("mcpd-x"));
        assert_eq!(p.get("long"), Some("one two"));
        assert_eq!(p.get("uni"), Some("é"));
        assert_eq!(p.list("enabledTools"), vec!["echo", "time"]);
    }

    #[test]
    fn only_space_tab_and_form_feed_separate_and_are_trimmed() {
        // Unicode white space such as a vertical tab or U+3000 is part of a key or value, as a
        // Java reader has it (and a Java writer leaves it unescaped).
        let p = Properties::parse("a\u{b}b=\u{b}v\n\u{3000}k\u{a0}x = \u{3000}w\n\u{c}\t f \u{c}=\t x\n");
        assert_eq!(p.get("a\u{b}b"), Some("\u{b}v"));
        assert_eq!(p.get("\u{3000}k\u{a0}x"), Some("\u{3000}w"));
        assert_eq!(p.get("f"), Some("x"));
    }

    #[test]
    fn unicode_escapes_join_surrogate_pairs_as_java_writes_them() {
        // java.util.Properties.store writes U+1F600 as the UTF-16 pair \uD83D\uDE00: the pair
        // is one character, and a half alone is U+FFFD.
        let p = Properties::parse("smile=\\uD83D\\uDE00!\nlone=\\uD83D.\nlow=\\uDE00\nbmp=\\u00E9\\u0041\n");
        assert_eq!(p.get("smile"), Some("\u{1F600}!"));
        assert_eq!(p.get("lone"), Some("\u{FFFD}."));
        assert_eq!(p.get("low"), Some("\u{FFFD}"));
        assert_eq!(p.get("bmp"), Some("\u{e9}A"));
        // Not four hex digits: no escape (a sign is not a digit), the text is kept.
        let p = Properties::parse("a=\\u+041\nb=\\u12\nc=\\uD83D\\u+DE0\n");
        assert_eq!(p.get("a"), Some("u+041"));
        assert_eq!(p.get("b"), Some("u12"));
        assert_eq!(p.get("c"), Some("\u{FFFD}u+DE0"));
    }

    #[test]
    fn tool_filter_globs_and_separators() {
        let f = ToolFilter::from_value(Some("echo;read_*\tt?me\n"));
        assert!(f.allows("echo"));
        assert!(f.allows("read_file"));
        assert!(f.allows("time"));
        assert!(!f.allows("echo2"));
        assert!(!f.allows("write_file"));
        assert!(ToolFilter::from_value(None).allows("anything"));
        let empty = ToolFilter::from_value(Some("  "));
        assert!(!empty.allows("echo"));
        assert!(empty.warning().is_some());
    }

    #[test]
    fn globs_match_characters_and_a_star_is_always_a_wildcard() {
        // `?` matched one byte, so it could not stand for a character of two or more bytes.
        let f = ToolFilter::from_value(Some("t?me"));
        assert!(f.allows("tíme"));
        assert!(!f.allows("tme"));
        // A `*` in the pattern was taken literally when the name had a `*` at that place, and the
        // rest of the name was then left unmatched.
        assert!(ToolFilter::from_value(Some("*")).allows("*a"));
        assert!(ToolFilter::from_value(Some("a*b")).allows("a*xb"));
    }

    #[test]
    fn settings_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/settings.json");
        assert_eq!(ListenerSettings::load(&path).unwrap(), ListenerSettings::default());
        let s = ListenerSettings { host: "127.0.0.1".into(), port: 9, enabled: true };
        s.save(&path).unwrap();
        assert_eq!(ListenerSettings::load(&path).unwrap(), s);
    }
}
