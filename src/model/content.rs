//! Content blocks: what tools return and prompts contain.

use serde::{Deserialize, Serialize};

use super::{Meta, Resource};

/// Who a piece of content is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Hints on how to use a content block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The intended readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// 0 (least) to 1 (most important).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
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
}

/// The body of an image or audio block: Base64 bytes and their MIME type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Media {
    /// Base64 of the bytes.
    pub data: String,
    /// e.g. `image/png`, `audio/wav`.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Media {
    fn new(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Media { data: data_base64.into(), mime_type: mime_type.into(), annotations: None, meta: None }
    }
}

/// One block of content: text, image, audio, a link to a resource, or an embedded resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// An image, Base64.
    Image(Media),
    /// Audio, Base64 (2025-03-26 and later).
    Audio(Media),
    /// A link to a resource the client may read (2025-06-18 and later): a resource as
    /// `resources/list` shows it.
    ResourceLink(Resource),
    /// A resource embedded in full.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Usage hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into(), annotations: None, meta: None }
    }

    /// An image block from Base64 data.
    pub fn image(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(Media::new(data_base64, mime_type))
    }

    /// An audio block from Base64 data.
    pub fn audio(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(Media::new(data_base64, mime_type))
    }

    /// An embedded resource block.
    pub fn resource(contents: ResourceContents) -> Self {
        ContentBlock::Resource { resource: contents, annotations: None, meta: None }
    }

    /// A resource link block.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink(Resource::named(uri, name))
    }

    /// The text, for a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_block_kind_serializes_with_its_wire_tag() {
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::image("AAA=", "image/png"),
            ContentBlock::audio("AAA=", "audio/wav"),
            ContentBlock::resource_link("file:///a", "a"),
            ContentBlock::resource(ResourceContents::text("test://x", "text/plain", "body")),
            ContentBlock::resource(ResourceContents::blob("test://y", "image/png", "AAA=")),
        ];
        let v = serde_json::to_value(&blocks).unwrap();
        assert_eq!(
            v,
            json!([
                {"type":"text","text":"hi"},
                {"type":"image","data":"AAA=","mimeType":"image/png"},
                {"type":"audio","data":"AAA=","mimeType":"audio/wav"},
                {"type":"resource_link","uri":"file:///a","name":"a"},
                {"type":"resource","resource":{"uri":"test://x","mimeType":"text/plain","text":"body"}},
                {"type":"resource","resource":{"uri":"test://y","mimeType":"image/png","blob":"AAA="}}
            ])
        );
        let back: Vec<ContentBlock> = serde_json::from_value(v).unwrap();
        assert_eq!(back, blocks);
    }
}
