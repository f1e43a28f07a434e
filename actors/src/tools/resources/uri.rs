//! Project file URIs: `file:///` and the path relative to the project root, percent-encoded
//! (see the module documentation of [`super`]), and the template that matches them.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// The template of project files.
pub const FILE_TEMPLATE: &str = "file:///{+path}";
/// What a project file's URI starts with.
pub const FILE_PREFIX: &str = "file:///";

/// What stays as it is in a project file URI's path: `A-Z a-z 0-9 - . _ ~ /`.
const PATH_KEEP: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// The URI of a project-relative path (see the module documentation).
pub fn file_uri(relative: &str) -> String {
    format!("{FILE_PREFIX}{}", utf8_percent_encode(relative, PATH_KEEP))
}

/// The project-relative path a `file:///` URI's path part names, percent-decoded.
///
/// # Errors
/// When it is not UTF-8 once decoded.
pub fn decode_path(encoded: &str) -> Result<String, String> {
    percent_decode_str(encoded)
        .decode_utf8()
        .map(|p| p.into_owned())
        .map_err(|_| format!("{encoded:?} is not a valid path: it is not UTF-8 once percent-decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uris_and_back() {
        assert_eq!(file_uri("src/main.rs"), "file:///src/main.rs");
        assert_eq!(file_uri("docs/a b%.md"), "file:///docs/a%20b%25.md");
        assert_eq!(file_uri("ü/x~y"), "file:///%C3%BC/x~y");
        assert_eq!(decode_path("docs/a%20b%25.md").unwrap(), "docs/a b%.md");
        assert_eq!(decode_path("%2e%2e/x").unwrap(), "../x");
        assert!(decode_path("%ff").is_err());
    }
}
