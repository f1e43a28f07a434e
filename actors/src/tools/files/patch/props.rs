//! Property tests of `apply_patch`'s unified-diff reading: a multi-file diff as `diff -u` or
//! `git diff` print it — file contents that look like headers (`--- x`, `+++ y`, `@@ …`),
//! files without a final newline — splits into exactly its files, each of which parses and
//! applies to its original to give the new text; and any text at all (cut, corrupted) is split,
//! parsed and applied without a panic.

use proptest::prelude::*;
use proptest::sample::{select, Index};

use super::{hunk_counts, split};

/// `MCPD_PROPTEST_CASES` cases (the core's property crate documents it), 256 by default.
fn config() -> ProptestConfig {
    let cases = std::env::var("MCPD_PROPTEST_CASES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(256);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// A file's text: lines that include every shape a diff line can take.
fn text() -> impl Strategy<Value = String> {
    let line = select(vec![
        "a",
        "b",
        "c",
        "",
        " lead",
        "--- a/x",
        "+++ b/x",
        "-- x",
        "++ y",
        "@@ -1,2 +1,2 @@",
        "\\ No newline",
        "diff --git a/x b/x",
        "\t",
        "é",
    ]);
    (prop::collection::vec(line, 0..12), any::<bool>()).prop_map(|(lines, final_newline)| {
        let mut text = lines.join("\n");
        if final_newline && !text.is_empty() {
            text.push('\n');
        }
        text
    })
}

/// The section of one file, as `git diff` prints it: its extended header, then the diff with
/// `a/` and `b/` paths.
fn file_diff(name: &str, original: &str, modified: &str) -> String {
    let diff = diffy::create_patch(original, modified).to_string();
    let body = diff.strip_prefix("--- original\n+++ modified\n").expect("diffy's header");
    format!("diff --git a/{name} b/{name}\nindex 0000000..1111111 100644\n--- a/{name}\n+++ b/{name}\n{body}")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_multi_file_diff_splits_into_its_files_which_apply(files in prop::collection::vec((text(), text()), 1..5)) {
        let names: Vec<String> = (0..files.len()).map(|i| format!("dir/f{i}.txt")).collect();
        let patch: String = files.iter().zip(&names).map(|((old, new), name)| file_diff(name, old, new)).collect();
        let sections = split(&patch).unwrap();
        prop_assert_eq!(sections.len(), files.len(), "{}", patch);
        for ((section, (old, new)), name) in sections.iter().zip(&files).zip(&names) {
            let parsed = diffy::Patch::from_str(section).unwrap();
            let (a, b) = (format!("a/{name}"), format!("b/{name}"));
            prop_assert_eq!(parsed.original(), Some(a.as_str()));
            prop_assert_eq!(parsed.modified(), Some(b.as_str()));
            prop_assert_eq!(&diffy::apply(old, &parsed).unwrap(), new);
        }
    }

    #[test]
    fn any_patch_text_is_read_without_panicking(
        text in prop_oneof![
            (prop::collection::vec((text(), text()), 1..3), any::<Index>(), any::<Index>(), any::<u8>()).prop_map(
                |(files, cut, at, byte)| {
                    let mut patch: Vec<u8> = files.iter().enumerate()
                        .flat_map(|(i, (old, new))| file_diff(&format!("f{i}"), old, new).into_bytes())
                        .collect();
                    patch.truncate(cut.index(patch.len() + 1));
                    if !patch.is_empty() {
                        let at = at.index(patch.len());
                        patch[at] = byte;
                    }
                    String::from_utf8_lossy(&patch).into_owned()
                }
            ),
            any::<String>(),
            "((--- |\\+\\+\\+ |@@ -|[ +\\\\-])[0-9a-z ,+@-]{0,12}\n){0,10}",
        ],
        base in text(),
    ) {
        for line in text.lines() {
            let _ = hunk_counts(line);
        }
        if let Ok(sections) = split(&text) {
            prop_assert!(!sections.is_empty());
            for section in sections {
                if let Ok(parsed) = diffy::Patch::from_str(&section) {
                    let _ = diffy::apply(&base, &parsed);
                }
            }
        }
    }
}
