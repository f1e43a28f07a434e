//! What a read answers: a MIME type guessed from the file name, and the bytes as `text` when they
//! are text, else as a base64 `blob` (see the module documentation of [`super`]).

use std::path::Path;

use mcpd::model::{ReadResourceResult, ResourceContents};

/// The MIME type of a file name by its extension (a small table of what projects hold; a
/// crate's database of hundreds of types would add nothing a client uses here).
pub fn mime_type(name: &str) -> Option<&'static str> {
    let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "txt" | "text" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "c" | "h" => "text/x-c",
        "cc" | "cpp" | "hpp" | "cxx" => "text/x-c++",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "kt" => "text/x-kotlin",
        "rb" => "text/x-ruby",
        "sh" | "bash" => "text/x-shellscript",
        "js" | "mjs" | "cjs" => "text/javascript",
        "ts" | "tsx" => "text/x-typescript",
        "css" => "text/css",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "tar" => "application/x-tar",
        "wasm" => "application/wasm",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "woff2" => "font/woff2",
        _ => return None,
    })
}

/// Whether contents of this MIME type are always sent as a blob.
fn binary_kind(mime: &str) -> bool {
    !mime.ends_with("+xml")
        && (["image/", "audio/", "video/", "font/"].iter().any(|p| mime.starts_with(p))
            || matches!(
                mime,
                "application/pdf"
                    | "application/zip"
                    | "application/gzip"
                    | "application/x-tar"
                    | "application/wasm"
                    | "application/octet-stream"
            ))
}

/// The contents of `bytes` read at `uri`: text when it is text (see the module documentation),
/// else a base64 blob. `mime` is the declared or guessed type.
pub(crate) fn contents(uri: &str, mime: Option<&str>, bytes: Vec<u8>) -> ReadResourceResult {
    use base64::Engine as _;
    let binary = mime.is_some_and(binary_kind) || bytes.contains(&0);
    let content = match (binary, String::from_utf8(bytes)) {
        (false, Ok(text)) => ResourceContents::text(uri, mime.unwrap_or("text/plain"), text),
        (_, Ok(text)) => ResourceContents::blob(
            uri,
            mime.unwrap_or("application/octet-stream"),
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes()),
        ),
        (_, Err(e)) => ResourceContents::blob(
            uri,
            mime.unwrap_or("application/octet-stream"),
            base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
        ),
    };
    ReadResourceResult { contents: vec![content] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_text_and_the_rest_a_blob() {
        let text = contents("file:///a.md", mime_type("a.md"), b"# hi".to_vec());
        assert!(
            matches!(&text.contents[0], ResourceContents::Text { mime_type: Some(m), text, .. } if m == "text/markdown" && text == "# hi")
        );
        let png = contents("file:///a.png", mime_type("a.PNG"), b"abc".to_vec());
        assert!(
            matches!(&png.contents[0], ResourceContents::Blob { mime_type: Some(m), blob, .. } if m == "image/png" && blob == "YWJj")
        );
        let nul = contents("file:///x", None, vec![b'a', 0]);
        assert!(
            matches!(&nul.contents[0], ResourceContents::Blob { mime_type: Some(m), .. } if m == "application/octet-stream")
        );
        let svg = contents("file:///a.svg", mime_type("a.svg"), b"<svg/>".to_vec());
        assert!(matches!(&svg.contents[0], ResourceContents::Text { .. }));
    }
}
