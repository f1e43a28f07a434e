//! The four `*/list` results and their pagination: a cursor is the Base64 (URL-safe, no padding)
//! of the last key of the previous page, so pages stay stable while the catalog is sorted.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::catalog::Catalog;
use crate::error::ProtocolError;
use crate::model::{Prompt, Resource, ResourceTemplate, Tool};

/// One page of a list: its items and, when more remain, the key to continue after.
type Page<T> = (Vec<Arc<T>>, Option<String>);

/// One of the catalog's lists: the key its result puts the items under, and how to take a page.
#[derive(Debug, Clone, Copy)]
pub(super) struct Listing<T: 'static> {
    key: &'static str,
    page: fn(&Catalog, Option<&str>, usize) -> Page<T>,
}

/// `tools/list`.
pub(super) const TOOLS: Listing<Tool> = Listing { key: "tools", page: Catalog::tool_page };
/// `prompts/list`.
pub(super) const PROMPTS: Listing<Prompt> = Listing { key: "prompts", page: Catalog::prompt_page };
/// `resources/list`.
pub(super) const RESOURCES: Listing<Resource> = Listing { key: "resources", page: Catalog::resource_page };
/// `resources/templates/list`.
pub(super) const TEMPLATES: Listing<ResourceTemplate> =
    Listing { key: "resourceTemplates", page: Catalog::template_page };

impl<T: Serialize> Listing<T> {
    /// The page `params.cursor` asks for, at most `size` items, with `nextCursor` when more
    /// remain.
    pub(super) fn result(
        &self,
        catalog: &Catalog,
        params: &Map<String, Value>,
        size: usize,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let after = decode_cursor(params)?;
        let (items, next) = (self.page)(catalog, after.as_deref(), size);
        let mut result = Map::new();
        result.insert(self.key.into(), json!(items));
        if let Some(next) = next {
            result.insert("nextCursor".into(), json!(URL_SAFE_NO_PAD.encode(next.as_bytes())));
        }
        Ok(result)
    }
}

/// `tools/list` as one caller sees it: only the tools `visible` keeps (its per-tool scopes).
pub(super) fn visible_tools(
    catalog: &Catalog,
    params: &Map<String, Value>,
    size: usize,
    visible: &dyn Fn(&str) -> bool,
) -> Result<Map<String, Value>, ProtocolError> {
    visible_page(TOOLS.key, params, |after| catalog.visible_tool_page(after, size, visible))
}

/// `prompts/list` as one caller sees it: only the prompts `visible` keeps (its access file
/// client's globs).
pub(super) fn visible_prompts(
    catalog: &Catalog,
    params: &Map<String, Value>,
    size: usize,
    visible: &dyn Fn(&str) -> bool,
) -> Result<Map<String, Value>, ProtocolError> {
    visible_page(PROMPTS.key, params, |after| catalog.visible_prompt_page(after, size, visible))
}

/// One page of a caller's own view of a list, under `key`, with the cursor of the next.
fn visible_page<T: Serialize>(
    key: &str,
    params: &Map<String, Value>,
    page: impl FnOnce(Option<&str>) -> (Vec<T>, Option<String>),
) -> Result<Map<String, Value>, ProtocolError> {
    let after = decode_cursor(params)?;
    let (items, next) = page(after.as_deref());
    let mut result = Map::new();
    result.insert(key.into(), json!(items));
    if let Some(next) = next {
        result.insert("nextCursor".into(), json!(URL_SAFE_NO_PAD.encode(next.as_bytes())));
    }
    Ok(result)
}

fn decode_cursor(params: &Map<String, Value>) -> Result<Option<String>, ProtocolError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map(Some)
            .ok_or_else(|| ProtocolError::InvalidParams(format!("invalid cursor {cursor:?}"))),
        Some(_) => Err(ProtocolError::InvalidParams("cursor must be a string".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CallToolResult;

    #[test]
    fn pages_continue_after_the_cursor_and_reject_garbage() {
        let mut catalog = Catalog::new();
        for name in ["a", "b", "c"] {
            catalog.add_tool(Tool::new(name, name, json!({"type": "object"})), |_a, _c| async {
                Ok(CallToolResult::text("x"))
            });
        }
        let first = TOOLS.result(&catalog, &Map::new(), 2).unwrap();
        assert_eq!(first["tools"].as_array().map(Vec::len), Some(2));
        let mut params = Map::new();
        params.insert("cursor".into(), first["nextCursor"].clone());
        let second = TOOLS.result(&catalog, &params, 2).unwrap();
        assert_eq!(second["tools"][0]["name"], "c");
        assert!(second.get("nextCursor").is_none());
        params.insert("cursor".into(), json!("%%%"));
        assert!(matches!(TOOLS.result(&catalog, &params, 2), Err(ProtocolError::InvalidParams(_))));
    }
}
