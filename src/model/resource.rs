//! Resources, resource templates and the contents `resources/read` answers with (also what an
//! embedded resource block carries).

use serde::{Deserialize, Serialize};

use super::{Annotations, Meta};

/// A resource, as `resources/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Resource {
    /// A resource with a URI and a name.
    pub fn named(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            meta: None,
        }
    }

    /// A resource with a URI, a name and a MIME type.
    pub fn new(uri: impl Into<String>, name: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Resource { mime_type: Some(mime_type.into()), ..Resource::named(uri, name) }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A resource template (RFC 6570 URI template).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The template, e.g. `test://template/{id}/data`.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it yields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it yields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl ResourceTemplate {
    /// A template with a name and MIME type.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: Some(mime_type.into()),
            annotations: None,
        }
    }

    /// Matches a URI against a template of literal text and `{var}` segments (each variable
    /// matches one or more characters other than `/`; a reserved expansion `{+var}` may also
    /// match `/`, and is returned under the name `var`); returns the variables when it matches.
    pub fn match_uri(&self, uri: &str) -> Option<Vec<(String, String)>> {
        match_template(&self.uri_template, uri)
    }
}

fn match_template(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    let mut vars = Vec::new();
    let mut rest = uri;
    let mut t = template;
    while !t.is_empty() {
        if let Some(after_brace) = t.strip_prefix('{') {
            let close = after_brace.find('}')?;
            let name = &after_brace[..close];
            let (name, reserved) = match name.strip_prefix('+') {
                Some(name) => (name, true),
                None => (name, false),
            };
            t = &after_brace[close + 1..];
            let literal_end = t.find('{').unwrap_or(t.len());
            let next_literal = &t[..literal_end];
            let end = match (next_literal.is_empty(), reserved) {
                (true, true) => rest.len(),
                (true, false) => rest.find('/').unwrap_or(rest.len()),
                (false, _) => rest.find(next_literal)?,
            };
            let value = &rest[..end];
            if value.is_empty() || (!reserved && value.contains('/')) {
                return None;
            }
            vars.push((name.to_owned(), value.to_owned()));
            rest = &rest[end..];
        } else {
            let literal_end = t.find('{').unwrap_or(t.len());
            rest = rest.strip_prefix(&t[..literal_end])?;
            t = &t[literal_end..];
        }
    }
    rest.is_empty().then_some(vars)
}

/// The body of an embedded resource: text or Base64 binary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The resource URI.
        uri: String,
        /// The MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// Binary contents.
    Blob {
        /// The resource URI.
        uri: String,
        /// The MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 of the bytes.
        blob: String,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
}

impl ResourceContents {
    /// Text contents with a MIME type.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text { uri: uri.into(), mime_type: Some(mime_type.into()), text: text.into(), meta: None }
    }

    /// Binary contents (already Base64) with a MIME type.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, blob_base64: impl Into<String>) -> Self {
        ResourceContents::Blob {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            blob: blob_base64.into(),
            meta: None,
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => uri,
        }
    }

    /// The URI, to change it (a gateway shows a remote's URI under its own name).
    pub fn uri_mut(&mut self) -> &mut String {
        match self {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => uri,
        }
    }
}

/// The result of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// The contents (never empty for a resource that exists).
    pub contents: Vec<ResourceContents>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_and_extract_variables() {
        let t = ResourceTemplate::new("test://template/{id}/data", "t", "application/json");
        assert_eq!(t.match_uri("test://template/123/data"), Some(vec![("id".into(), "123".into())]));
        assert_eq!(t.match_uri("test://template//data"), None);
        assert_eq!(t.match_uri("test://template/1/2/data"), None);
        assert_eq!(t.match_uri("test://template/123/datax"), None);
        let tail = ResourceTemplate::new("file:///{name}", "f", "text/plain");
        assert_eq!(tail.match_uri("file:///a.txt"), Some(vec![("name".into(), "a.txt".into())]));
        let reserved = ResourceTemplate::new("file:///{+path}", "f", "text/plain");
        assert_eq!(reserved.match_uri("file:///src/a.rs"), Some(vec![("path".into(), "src/a.rs".into())]));
        assert_eq!(reserved.match_uri("file:///"), None);
        assert_eq!(tail.match_uri("file:///src/a.rs"), None);
    }
}
