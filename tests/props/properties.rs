//! The `mcp.properties` parser: any text parses (never a panic), and what a writer of the Java
//! format writes reads back as the entries it wrote — mcpd has no writer of its own, so the test
//! has one, following `java.util.Properties.store`: either all-ASCII with `\uXXXX` escapes
//! (UTF-16 units, so a character outside the BMP is a surrogate pair) or UTF-8 text with only
//! the format's own characters escaped. The `enabledTools` glob matches as a plain
//! character-by-character reading of `*` and `?` does.

use std::collections::BTreeMap;

use mcpd::config::{Properties, ToolFilter};
use proptest::prelude::*;

use crate::json;
use crate::support::config;

/// Writes one key or value as `Properties.store` does: `\`, `=`, `:`, `#`, `!` and the control
/// characters `\t \n \r \f` escaped; spaces escaped everywhere in a key, only in front of a
/// value; with `ascii`, every other character outside `0x20..=0x7e` as `\uXXXX`.
fn store_text(text: &str, key: bool, ascii: bool) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        match c {
            ' ' if key || i == 0 => out.push_str("\\ "),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{c}' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if ascii && !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// A properties file holding `entries`, as `Properties.store` writes it (a comment line first).
fn store(entries: &BTreeMap<String, String>, ascii: bool) -> String {
    let mut out = String::from("#written by the test\n");
    for (key, value) in entries {
        out.push_str(&format!("{}={}\n", store_text(key, true, ascii), store_text(value, false, ascii)));
    }
    out
}

/// Whole-text glob: `*` any run of characters, `?` any one character.
fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((p, rest)) => text.split_first().is_some_and(|(t, tail)| (*p == '?' || p == t) && glob(rest, tail)),
    }
}

/// Text for keys and values: any characters, often those the format gives a meaning.
fn entry_text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => json::text(),
        2 => "[ a-z=:#!\\\\\t]{0,8}",
        1 => prop::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_parses(text in prop_oneof![any::<String>(), "([a-z ]{0,4}[=: \\\\#!]{0,2}[a-z\\\\]{0,4}(\r?\n|\r)){0,6}"]) {
        let properties = Properties::parse(&text);
        prop_assert_eq!(properties.clone(), Properties::parse(&text));
    }

    #[test]
    fn what_a_java_writer_stores_reads_back(
        entries in prop::collection::btree_map(entry_text(), entry_text(), 0..6),
        ascii in any::<bool>(),
    ) {
        let text = store(&entries, ascii);
        let mut expected = Properties::default();
        for (key, value) in &entries {
            expected.set(key.clone(), value.clone());
        }
        prop_assert_eq!(Properties::parse(&text), expected, "{}", text);
    }

    #[test]
    fn the_tool_filter_globs_characters(pattern in "[a-cé*?]{0,6}", name in "[a-cé*?]{0,6}") {
        let filter = ToolFilter::from_value(Some(&pattern));
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        let expected = !pattern.is_empty() && glob(&chars(&pattern), &chars(&name));
        prop_assert_eq!(filter.allows(&name), expected);
    }
}
