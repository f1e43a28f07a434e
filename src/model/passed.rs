//! A tool result passed on as the JSON text another MCP server sent ([`PassedResult`]): what a
//! gateway answers a plain 2026-07-28 call with when its remote answered it the usual way, so
//! that the result is neither built as values nor written out again.

use std::fmt;

use serde::de::{Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::CallToolResult;

/// A `tools/call` result of the 2026-07-28 wire, kept as the JSON text it arrived as, checked
/// when it was made ([`PassedResult::check`]).
///
/// What the check guarantees: the text is one JSON object, none of its members is there
/// twice, `resultType` is `"complete"`, `content` is an array of objects each with a `type` this
/// server knows (`text`, `image`, `audio`, `resource_link`, `resource`) and that type's
/// required members as strings (a `resource`'s `resource` an object), `structuredContent` and
/// `_meta` are objects, `isError` a boolean. Anything inside those (a block's annotations, the
/// structured content, members this server does not know) is passed on as it came. The text
/// has no line break (a pretty-printed result is not kept as text: it is read and written out
/// again, on one line).
#[derive(Debug, Clone)]
pub struct PassedResult {
    text: Box<RawValue>,
    is_error: bool,
}

impl PassedResult {
    /// The result in `text` (a JSON value's text, as [`RawValue`] keeps it), when it is a
    /// complete tool result of the shape described on [`PassedResult`]; `None` otherwise.
    pub fn check(text: Box<RawValue>) -> Option<PassedResult> {
        // A line break can only be white space between tokens (a string escapes its own): the
        // text is kept on one line, so that it is a valid SSE `data:` line wherever it is written.
        if text.get().bytes().any(|b| b == b'\n' || b == b'\r') {
            return None;
        }
        let Shape { is_error } = serde_json::from_str(text.get()).ok()?;
        Some(PassedResult { text, is_error })
    }

    /// Whether the tool reported a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The result's JSON text.
    pub fn text(&self) -> &str {
        self.text.get()
    }

    /// The result read as a [`CallToolResult`] (members it does not have are left out).
    ///
    /// # Errors
    /// When a content block is not one a [`CallToolResult`] can hold.
    pub fn to_call_result(&self) -> Result<CallToolResult, serde_json::Error> {
        serde_json::from_str(self.text.get())
    }
}

impl PartialEq for PassedResult {
    fn eq(&self, other: &Self) -> bool {
        self.text.get() == other.text.get()
    }
}

impl Serialize for PassedResult {
    /// The text as it came (through serde_json's serializer, byte for byte).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(serializer)
    }
}

/// What [`PassedResult::check`] reads of a result: whether it is a failure.
struct Shape {
    is_error: bool,
}

/// The members of a result the check looks at.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Member {
    Content,
    StructuredContent,
    IsError,
    #[serde(rename = "_meta")]
    Meta,
    ResultType,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a complete tools/call result")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Shape, A::Error> {
                let (mut is_error, mut complete) = (false, false);
                // content, structuredContent, isError, _meta, resultType: each once at most.
                let mut seen = [false; 5];
                while let Some(member) = members.next_key::<Member>()? {
                    let index = match member {
                        Member::Content => 0,
                        Member::StructuredContent => 1,
                        Member::IsError => 2,
                        Member::Meta => 3,
                        Member::ResultType => 4,
                        Member::Other => {
                            members.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[index], true) {
                        return Err(A::Error::custom("a member is there twice"));
                    }
                    match member {
                        Member::Content => members.next_value::<Blocks>().map(drop)?,
                        Member::StructuredContent | Member::Meta => members.next_value::<Object>().map(drop)?,
                        Member::IsError => is_error = members.next_value::<bool>()?,
                        Member::ResultType => complete = members.next_value::<Kind>()?.0 == Some(KindName::Complete),
                        Member::Other => {}
                    }
                }
                if !seen[0] || !complete {
                    return Err(A::Error::custom("not a complete result with content"));
                }
                Ok(Shape { is_error })
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// A JSON object, read and dropped.
struct Object;

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Object)
            }
        }
        deserializer.deserialize_map(Any)
    }
}

/// The names the check knows: block types, members a block type requires, `complete`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KindName {
    Text,
    Image,
    Audio,
    ResourceLink,
    Resource,
    Complete,
}

/// A string read without keeping it: the name it is, if the check knows it; a value of
/// another type is refused.
struct Kind(Option<KindName>);

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, name: &str) -> Result<Kind, E> {
                Ok(Kind(match name {
                    "text" => Some(KindName::Text),
                    "image" => Some(KindName::Image),
                    "audio" => Some(KindName::Audio),
                    "resource_link" => Some(KindName::ResourceLink),
                    "resource" => Some(KindName::Resource),
                    "complete" => Some(KindName::Complete),
                    _ => None,
                }))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// `content`: an array of blocks, each checked.
struct Blocks;

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Blocks;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut blocks: A) -> Result<Blocks, A::Error> {
                while blocks.next_element::<Block>()?.is_some() {}
                Ok(Blocks)
            }
        }
        deserializer.deserialize_seq(Each)
    }
}

/// The members of a content block the check looks at.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum BlockMember {
    Type,
    Text,
    Data,
    MimeType,
    Uri,
    Name,
    Resource,
    #[serde(other)]
    Other,
}

/// One content block: an object with a known `type` and that type's required members.
struct Block;

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Block;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Block, A::Error> {
                let mut kind = None;
                // Which of text, data, mimeType, uri, name (strings) and resource (an object)
                // the block has; `type` and each of those once at most.
                let (mut seen_type, mut has) = (false, [false; 6]);
                while let Some(member) = members.next_key::<BlockMember>()? {
                    let slot = match member {
                        BlockMember::Type => {
                            if std::mem::replace(&mut seen_type, true) {
                                return Err(A::Error::custom("a block's type is there twice"));
                            }
                            kind = members.next_value::<Kind>()?.0;
                            continue;
                        }
                        BlockMember::Other => {
                            members.next_value::<IgnoredAny>()?;
                            continue;
                        }
                        BlockMember::Text => 0,
                        BlockMember::Data => 1,
                        BlockMember::MimeType => 2,
                        BlockMember::Uri => 3,
                        BlockMember::Name => 4,
                        BlockMember::Resource => 5,
                    };
                    if std::mem::replace(&mut has[slot], true) {
                        return Err(A::Error::custom("a block's member is there twice"));
                    }
                    if slot == 5 {
                        members.next_value::<Object>()?;
                    } else {
                        members.next_value::<Kind>()?;
                    }
                }
                let required: &[usize] = match kind {
                    Some(KindName::Text) => &[0],
                    Some(KindName::Image | KindName::Audio) => &[1, 2],
                    Some(KindName::ResourceLink) => &[3, 4],
                    Some(KindName::Resource) => &[5],
                    Some(KindName::Complete) | None => return Err(A::Error::custom("a block of a type not known")),
                };
                if required.iter().all(|&slot| has[slot]) {
                    Ok(Block)
                } else {
                    Err(A::Error::custom("a block without a member its type requires"))
                }
            }
        }
        deserializer.deserialize_map(Members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Option<PassedResult> {
        PassedResult::check(RawValue::from_string(text.to_owned()).expect("JSON"))
    }

    #[test]
    fn a_complete_result_is_kept_as_its_text() {
        let results = [
            r#"{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":[],"isError":true,"_meta":{"k":[1]},"x":{"y":null}}"#,
            concat!(
                r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"priority":0.5}},"#,
                r#"{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///a","name":"a"},"#,
                r#"{"type":"resource","resource":{"uri":"file:///a","text":"t"}},{"text":"type last","type":"text","new":1}],"#,
                r#""structuredContent":{"a":1e3},"resultType":"complete"}"#
            ),
            r#"{"content":[{"type":"t\u0065xt","text":"escaped"}],"resultType":"c\u006fmplete"}"#,
            r#"{"content":[{"type":"text","text":"a line\nbreak, escaped"}], "resultType" : "complete"}"#,
        ];
        for text in results {
            let passed = check(text).unwrap_or_else(|| panic!("passed: {text}"));
            assert_eq!(passed.text(), text, "byte for byte");
            assert_eq!(String::from_utf8(serde_json::to_vec(&passed).unwrap()).unwrap(), text);
        }
        assert!(check(results[1]).unwrap().is_error());
        assert!(!check(results[0]).unwrap().is_error());
        assert_eq!(check(results[0]).unwrap().to_call_result().unwrap(), CallToolResult::text("hello"));
    }

    #[test]
    fn anything_else_is_not_passed_as_text() {
        let others = [
            // Not complete: a round, a task, no resultType (an earlier revision's result).
            r#"{"content":[],"resultType":"input_required","inputRequests":{}}"#,
            r#"{"content":[],"resultType":"task"}"#,
            r#"{"content":[{"type":"text","text":"x"}]}"#,
            r#"{"content":[],"resultType":7}"#,
            // No content, or content of the wrong shape.
            r#"{"resultType":"complete"}"#,
            r#"{"content":null,"resultType":"complete"}"#,
            r#"{"content":"text","resultType":"complete"}"#,
            r#"{"content":[1],"resultType":"complete"}"#,
            // A block of a type not known, without what its type requires, of the wrong types.
            r#"{"content":[{"type":"video","url":"x"}],"resultType":"complete"}"#,
            r#"{"content":[{"text":"no type"}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"text"}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"image","data":"AA=="}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"text","text":5}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"resource","resource":"file:///a"}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"complete","text":"x"}],"resultType":"complete"}"#,
            // A member twice.
            r#"{"content":[],"content":[],"resultType":"complete"}"#,
            r#"{"content":[],"resultType":"complete","resultType":"complete"}"#,
            r#"{"content":[{"type":"text","text":"a","text":"b"}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"text","type":"image","text":"a"}],"resultType":"complete"}"#,
            // Members of the wrong types.
            r#"{"content":[],"isError":"yes","resultType":"complete"}"#,
            r#"{"content":[],"structuredContent":[1],"resultType":"complete"}"#,
            r#"{"content":[],"_meta":5,"resultType":"complete"}"#,
            // Pretty-printed: a line break between tokens.
            "{\"content\":[],\n\"resultType\":\"complete\"}",
            "{\"content\":[],\r\"resultType\":\"complete\"}",
            // Not an object.
            r#"[]"#,
            r#"null"#,
        ];
        for text in others {
            assert!(check(text).is_none(), "{text}");
        }
    }
}
