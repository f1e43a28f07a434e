//! The four `*/list` results and their pagination: a cursor is the Base64 (URL-safe, no padding)
//! of the last key of the previous page, so pages stay stable while the catalog is sorted.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::catalog::{Catalog, Keep, Page};
use crate::error::ProtocolError;
use crate::model::{Prompt, Resource, ResourceTemplate, Tool};

/// One of the catalog's lists: the key its result puts the items under, and how to take a page.
#[derive(Debug, Clone, Copy)]
pub(super) struct CatalogList<T: 'static> {
    key: &'static str,
    page: fn(&Catalog, Option<&str>, usize, Keep<'_>) -> Page<T>,
}

/// `tools/list`.
pub(super) const TOOLS: CatalogList<Tool> = CatalogList { key: "tools", page: Catalog::tool_page };
/// `prompts/list`.
pub(super) const PROMPTS: CatalogList<Prompt> = CatalogList { key: "prompts", page: Catalog::prompt_page };
/// `resources/list`.
pub(super) const RESOURCES: CatalogList<Resource> = CatalogList { key: "resources", page: Catalog::resource_page };
/// `resources/templates/list`.
pub(super) const TEMPLATES: CatalogList<ResourceTemplate> =
    CatalogList { key: "resourceTemplates", page: Catalog::template_page };

impl<T: Serialize> CatalogList<T> {
    /// The page `params.cursor` asks for of the entries `visible` keeps (a caller's view, see
    /// [`super::screen`]), at most `size` items, with `nextCursor` when more remain.
    pub(super) fn result(
        &self,
        catalog: &Catalog,
        params: &Map<String, Value>,
        size: usize,
        visible: Keep<'_>,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let after = decode_cursor(params)?;
        let (items, next) = (self.page)(catalog, after.as_deref(), size, visible);
        let mut result = Map::new();
        result.insert(self.key.into(), json!(items));
        if let Some(next) = next {
            result.insert("nextCursor".into(), json!(URL_SAFE_NO_PAD.encode(next.as_bytes())));
        }
        Ok(result)
    }
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
        let first = TOOLS.result(&catalog, &Map::new(), 2, &|_| true).unwrap();
        assert_eq!(first["tools"].as_array().map(Vec::len), Some(2));
        let mut params = Map::new();
        params.insert("cursor".into(), first["nextCursor"].clone());
        let second = TOOLS.result(&catalog, &params, 2, &|_| true).unwrap();
        assert_eq!(second["tools"][0]["name"], "c");
        assert!(second.get("nextCursor").is_none());
        params.insert("cursor".into(), json!("%%%"));
        assert!(matches!(TOOLS.result(&catalog, &params, 2, &|_| true), Err(ProtocolError::InvalidParams(_))));
    }
}
