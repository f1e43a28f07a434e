//! Content blocks: what tools return and prompts contain.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Annotations, Meta, Resource, ResourceContents};

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
/// Read by its own `Deserialize` (below), which takes the usual block (its `type` first)
/// without buffering it.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// A content block's `type`.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Text,
    Image,
    Audio,
    ResourceLink,
    Resource,
}

/// A text block's members but its `type`.
#[derive(Deserialize)]
struct TextMembers {
    text: String,
    #[serde(default)]
    annotations: Option<Annotations>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

/// An embedded resource block's members but its `type`.
#[derive(Deserialize)]
struct EmbeddedMembers {
    resource: ResourceContents,
    #[serde(default)]
    annotations: Option<Annotations>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

/// The block of kind `kind` from its other members.
fn block<'de, D: Deserializer<'de>>(kind: Kind, members: D) -> Result<ContentBlock, D::Error> {
    Ok(match kind {
        Kind::Text => {
            let TextMembers { text, annotations, meta } = TextMembers::deserialize(members)?;
            ContentBlock::Text { text, annotations, meta }
        }
        Kind::Image => ContentBlock::Image(Media::deserialize(members)?),
        Kind::Audio => ContentBlock::Audio(Media::deserialize(members)?),
        Kind::ResourceLink => ContentBlock::ResourceLink(Resource::deserialize(members)?),
        Kind::Resource => {
            let EmbeddedMembers { resource, annotations, meta } = EmbeddedMembers::deserialize(members)?;
            ContentBlock::Resource { resource, annotations, meta }
        }
    })
}

/// The first member name of a block: `type`, or another.
#[derive(Deserialize)]
#[serde(field_identifier)]
enum FirstKey {
    #[serde(rename = "type")]
    Type,
    Other(String),
}

/// Every SDK writes a block's `type` first: then the rest is read straight into that kind's
/// members. A block in any other order is read as a JSON object first, then the same way. (The
/// derived reading of an internally tagged enum would buffer every block, strings copied, before
/// looking at its `type`.) A block without `type` is refused with ``missing field `type` ``; a
/// second `type` member is ignored, as any member a kind does not have.
impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Block;
        impl<'de> Visitor<'de> for Block {
            type Value = ContentBlock;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block (an object with a `type`)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<ContentBlock, A::Error> {
                match members.next_key::<FirstKey>()? {
                    Some(FirstKey::Type) => {
                        let kind = members.next_value::<Kind>()?;
                        block(kind, de::value::MapAccessDeserializer::new(members))
                    }
                    Some(FirstKey::Other(first)) => {
                        let mut object = Map::new();
                        object.insert(first, members.next_value()?);
                        while let Some((name, value)) = members.next_entry::<String, Value>()? {
                            object.insert(name, value);
                        }
                        let kind = object.remove("type").ok_or_else(|| de::Error::missing_field("type"))?;
                        let kind = Kind::deserialize(kind).map_err(de::Error::custom)?;
                        block(kind, Value::Object(object)).map_err(de::Error::custom)
                    }
                    None => Err(de::Error::missing_field("type")),
                }
            }
        }
        deserializer.deserialize_map(Block)
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
        let back: Vec<ContentBlock> = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, blocks);
        let back: Vec<ContentBlock> = serde_json::from_slice(&serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(back, blocks);
    }

    #[test]
    fn a_block_reads_the_same_whatever_its_member_order() {
        let annotated = ContentBlock::Text {
            text: "hi".into(),
            annotations: Some(Annotations { priority: Some(0.5), ..Default::default() }),
            meta: None,
        };
        for body in [
            r#"{"type":"text","text":"hi","annotations":{"priority":0.5}}"#,
            r#"{"text":"hi","annotations":{"priority":0.5},"type":"text"}"#,
            r#"{"annotations":{"priority":0.5},"type":"text","text":"hi","extra":[1]}"#,
        ] {
            assert_eq!(serde_json::from_str::<ContentBlock>(body).unwrap(), annotated, "{body}");
        }
        let embedded = r#"{"resource":{"uri":"test://x","text":"body"},"type":"resource"}"#;
        assert!(matches!(serde_json::from_str::<ContentBlock>(embedded).unwrap(), ContentBlock::Resource { .. }));
        let image = r#"{"mimeType":"image/png","type":"image","data":"AAA="}"#;
        assert_eq!(serde_json::from_str::<ContentBlock>(image).unwrap(), ContentBlock::image("AAA=", "image/png"));
    }

    #[test]
    fn a_block_without_a_known_type_or_its_members_is_refused_with_the_reason() {
        let error = |body: &str| serde_json::from_str::<ContentBlock>(body).unwrap_err().to_string();
        assert!(error(r#"{"text":"hi"}"#).starts_with("missing field `type`"), "{}", error(r#"{"text":"hi"}"#));
        assert!(error("{}").starts_with("missing field `type`"));
        assert!(error(r#"{"type":"video","text":"hi"}"#).starts_with("unknown variant `video`"));
        assert!(error(r#"{"text":"hi","type":"video"}"#).starts_with("unknown variant `video`"));
        assert!(error(r#"{"type":"text"}"#).starts_with("missing field `text`"));
        assert!(error(r#"{"type":"image","data":"AAA="}"#).starts_with("missing field `mimeType`"));
        assert!(error(r#"{"type":"text","text":7}"#).starts_with("invalid type: integer `7`"));
        assert!(error(r#""text""#).starts_with("invalid type: string"));
    }
}
