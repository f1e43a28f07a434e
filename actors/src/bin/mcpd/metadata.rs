//! The server's implementation metadata beyond its name and version: `--title` / `title`,
//! `--website-url` / `websiteUrl` and `--icon` / `icons`, checked here and reported in
//! `initialize`, `server/discover` and the status JSON.
//!
//! An icon is `SRC [mime=TYPE] [sizes=WxH,WxH…] [theme=light|dark]`: the source first (an
//! `http:`, `https:` or `data:` URI — never containing white space or `|`), then attributes
//! separated by white space. `--icon` is repeatable; the `icons` property holds several icons
//! separated by `|`. Icons given as flags replace the property's.

use mcpd::config::Properties;
use mcpd::model::{Icon, Implementation};

/// The longest icon source accepted (a `data:` URI is sent in every `initialize` answer).
pub(crate) const MAX_ICON_SRC_BYTES: usize = 64 * 1024;

/// Sets `title`, `website_url` and `icons` of `info` from the flags, else the properties.
///
/// # Errors
/// A message naming the setting and what is wrong with it.
pub(crate) fn apply(
    info: &mut Implementation,
    title: Option<&str>,
    website_url: Option<&str>,
    icons: &[String],
    props: &Properties,
) -> Result<(), String> {
    if let Some(title) = title.or_else(|| props.get("title")).map(str::trim) {
        if title.is_empty() {
            return Err("--title (title) is empty".into());
        }
        info.title = Some(title.to_owned());
    }
    if let Some(url) = website_url.or_else(|| props.get("websiteUrl")).map(str::trim) {
        let parsed = url::Url::parse(url).map_err(|e| format!("--website-url (websiteUrl) {url:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
            return Err(format!("--website-url (websiteUrl) {url:?} is not an http(s) URL"));
        }
        info.website_url = Some(url.to_owned());
    }
    let specs: Vec<String> = if icons.is_empty() {
        props.get("icons").map(|v| v.split('|').map(str::to_owned).collect()).unwrap_or_default()
    } else {
        icons.to_vec()
    };
    let icons = specs
        .iter()
        .flat_map(|spec| spec.split('|'))
        .filter(|spec| !spec.trim().is_empty())
        .map(parse_icon)
        .collect::<Result<Vec<Icon>, String>>()?;
    if !icons.is_empty() {
        info.icons = Some(icons);
    }
    Ok(())
}

/// Reads one icon: `SRC [mime=TYPE] [sizes=…] [theme=…]`.
///
/// # Errors
/// What is wrong with it, quoting it.
pub(crate) fn parse_icon(spec: &str) -> Result<Icon, String> {
    let bad = |why: String| format!("--icon (icons) {:?}: {why}", spec.trim());
    let mut words = spec.split_whitespace();
    let src = words.next().ok_or_else(|| bad("empty".into()))?;
    check_src(src).map_err(bad)?;
    let mut icon = Icon::new(src);
    for word in words {
        let (key, value) = word.split_once('=').ok_or_else(|| bad(format!("{word:?} is not key=value")))?;
        match key {
            "mime" => {
                let valid = value.split_once('/').is_some_and(|(kind, sub)| {
                    let token = |t: &str| {
                        !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
                    };
                    token(kind) && token(sub)
                });
                if !valid {
                    return Err(bad(format!("mime {value:?} is not a MIME type such as image/png")));
                }
                icon.mime_type = Some(value.to_owned());
            }
            "sizes" => {
                let sizes: Vec<String> = value.split(',').map(str::to_owned).collect();
                let valid = |size: &str| {
                    size == "any"
                        || size.split_once('x').is_some_and(|(w, h)| {
                            let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
                            number(w) && number(h)
                        })
                };
                if let Some(size) = sizes.iter().find(|s| !valid(s)) {
                    return Err(bad(format!("size {size:?} is neither WxH (e.g. 48x48) nor any")));
                }
                icon.sizes = Some(sizes);
            }
            "theme" => {
                if !matches!(value, "light" | "dark") {
                    return Err(bad(format!("theme {value:?} is neither light nor dark")));
                }
                icon.theme = Some(value.to_owned());
            }
            other => return Err(bad(format!("unknown attribute {other:?} (expected mime, sizes, theme)"))),
        }
    }
    Ok(icon)
}

/// An icon source must be an `http(s)` URL with a host, or a `data:` URI with a `,`.
fn check_src(src: &str) -> Result<(), String> {
    if src.len() > MAX_ICON_SRC_BYTES {
        return Err(format!("the source is {} bytes, over the limit of {MAX_ICON_SRC_BYTES}", src.len()));
    }
    let parsed = url::Url::parse(src).map_err(|e| format!("not a URL: {e}"))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "http" | "https" => Err("the URL has no host".into()),
        "data" if src["data:".len()..].contains(',') => Ok(()),
        "data" => Err("a data: URI needs data:[MIME][;base64],DATA".into()),
        other => Err(format!("the scheme {other:?} is not allowed for icons (http, https or data)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icons_read_their_attributes_and_refuse_other_schemes() {
        let icon = parse_icon("https://example.com/i.png mime=image/png sizes=48x48,96x96 theme=dark").unwrap();
        assert_eq!(icon.src, "https://example.com/i.png");
        assert_eq!(icon.mime_type.as_deref(), Some("image/png"));
        assert_eq!(icon.sizes, Some(vec!["48x48".to_owned(), "96x96".to_owned()]));
        assert_eq!(icon.theme.as_deref(), Some("dark"));
        assert_eq!(parse_icon("data:image/svg+xml;base64,PHN2Zy8+").unwrap().mime_type, None);
        for (spec, expected) in [
            ("file:///etc/icon.png", "not allowed for icons"),
            ("javascript:alert(1)", "not allowed for icons"),
            ("http://", "not a URL"),
            ("data:image/png", "data:[MIME]"),
            ("https://e.com/i.png sizes=big", "neither WxH"),
            ("https://e.com/i.png theme=blue", "neither light nor dark"),
            ("https://e.com/i.png color=red", "unknown attribute"),
            ("https://e.com/i.png mime=png", "not a MIME type"),
            ("not a url", "not a URL"),
        ] {
            let error = parse_icon(spec).expect_err(spec);
            assert!(error.contains(expected), "{spec}: {error}");
        }
    }

    #[test]
    fn flags_replace_the_properties_and_urls_are_checked() {
        let props = Properties::parse(
            "title=From props\nwebsiteUrl=https://a.example\nicons=https://a.example/1.png | https://a.example/2.png sizes=any\n",
        );
        let mut info = Implementation::new("mcpd", "1");
        apply(&mut info, None, None, &[], &props).unwrap();
        assert_eq!(info.title.as_deref(), Some("From props"));
        assert_eq!(info.icons.as_ref().map(Vec::len), Some(2));
        apply(&mut info, Some("Flag"), None, &["https://b.example/x.png".to_owned()], &props).unwrap();
        assert_eq!(info.title.as_deref(), Some("Flag"));
        assert_eq!(info.icons.as_ref().map(|i| i[0].src.as_str()), Some("https://b.example/x.png"));
        let error = apply(&mut info, None, Some("ftp://x.example"), &[], &Properties::default()).unwrap_err();
        assert!(error.contains("is not an http(s) URL"), "{error}");
    }
}
