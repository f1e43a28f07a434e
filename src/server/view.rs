//! Virtual servers: named views of the catalog, each served at an endpoint of its own
//! (`/mcp/<name>`). A [`View`] selects tools, prompts and resources by patterns (the access
//! file's matcher, [`Globs`]) and may give tools another name or description; the servers file
//! declares views under `virtualServers` ([`parse_views`], exact errors).
//!
//! A view is no policy of its own and no way around one: a request on a view's endpoint carries
//! the view in its [`crate::auth::scopes::Access`], so the one screen ([`super::screen`]) hides
//! what the view does not select exactly as it hides what the caller may not see, and judges
//! the caller's own rules (access-file patterns, per-tool scopes) on a renamed tool's original
//! name. What the view names otherwise is naming only: [`View::project`] is the catalog with the
//! renamed tools under their new names (handlers, lanes and schemas unchanged), so a call of a
//! new name reaches the original and lists and cursors work as on any catalog.
//!
//! ```json
//! {"virtualServers": {"docs": {
//!   "tools": ["github__search*", "echo"], "prompts": ["github__*"], "resources": ["ui://github__*"],
//!   "rename": {"github__search_code": {"name": "search", "description": "Searches the docs' code."}}
//! }}}
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Map, Value};

use crate::auth::access::Globs;
use crate::auth::globs::patterns;
use crate::catalog::Catalog;

/// Most virtual servers a servers file may declare.
pub const MAX_VIEWS: usize = 100;
/// Longest virtual server name.
pub const MAX_VIEW_NAME: usize = 64;
/// Longest description a rename may give.
pub const MAX_DESCRIPTION: usize = 4096;
/// The fields of a virtual server.
const VIEW_FIELDS: [&str; 4] = ["tools", "prompts", "resources", "rename"];

/// A tool's new name and description in a view (either may be kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// Its name on the view's endpoint (`None`: its own).
    pub name: Option<String>,
    /// Its description there (`None`: its own).
    pub description: Option<String>,
}

/// One virtual server: what it selects, how it renames, and the catalog as it shows it.
#[derive(Debug)]
pub struct View {
    name: Arc<str>,
    tools: Globs,
    prompts: Globs,
    resources: Globs,
    /// Original tool name → its rename.
    renames: BTreeMap<String, Rename>,
    /// New tool name → original.
    aliases: BTreeMap<String, String>,
    /// The last catalog projected and its projection.
    projection: Mutex<Option<(Arc<Catalog>, Arc<Catalog>)>>,
}

impl PartialEq for View {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.tools == other.tools
            && self.prompts == other.prompts
            && self.resources == other.resources
            && self.renames == other.renames
    }
}

/// Checks a virtual server's name: 1 to 64 ASCII letters, digits, `_` and `-` (it is a path
/// segment of its endpoint).
///
/// # Errors
/// What is wrong with it, to follow the name in a message.
pub fn check_view_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_VIEW_NAME {
        return Err("must have 1 to 64 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')) {
        return Err("may hold only ASCII letters, digits, '_' and '-'");
    }
    Ok(())
}

impl View {
    /// A view named `name` selecting by the given patterns, renaming by `renames` (original →
    /// rename). [`parse_views`] checks what a file declares; this builds without checking.
    pub fn new(
        name: &str,
        (tools, prompts, resources): (Vec<String>, Vec<String>, Vec<String>),
        renames: BTreeMap<String, Rename>,
    ) -> Self {
        let aliases = renames
            .iter()
            .filter_map(|(original, rename)| rename.name.as_ref().map(|name| (name.clone(), original.clone())))
            .collect();
        View {
            name: name.into(),
            tools: Globs::new(tools),
            prompts: Globs::new(prompts),
            resources: Globs::new(resources),
            renames,
            aliases,
            projection: Mutex::new(None),
        }
    }

    /// Its name (its endpoint is `/mcp/<name>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The original of the tool the view shows as `name`: a new name's original, else `name`
    /// itself when the patterns select it and no rename took its name away; `None` when the
    /// view shows no tool of that name.
    pub fn tool_original<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if let Some(original) = self.aliases.get(name) {
            return Some(original);
        }
        if self.renames.get(name).is_some_and(|rename| rename.name.is_some()) {
            return None;
        }
        self.tools.matches(name).then_some(name)
    }

    /// Whether the view shows the prompt `name`.
    pub fn shows_prompt(&self, name: &str) -> bool {
        self.prompts.matches(name)
    }

    /// Whether the view shows the resource at `uri`.
    pub fn shows_resource(&self, uri: &str) -> bool {
        self.resources.matches(uri)
    }

    /// Whether the view shows the resource template `uri_template` (as the access file judges
    /// templates: [`Globs::may_see_template`]).
    pub fn shows_template(&self, uri_template: &str) -> bool {
        self.resources.may_see_template(uri_template)
    }

    /// Whether the view shows tools at all.
    pub fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }

    /// Whether the view shows prompts at all.
    pub fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// Whether the view shows resources (and templates) at all.
    pub fn has_resources(&self) -> bool {
        !self.resources.is_empty()
    }

    /// `catalog` as the view names it: every renamed tool under its new name and description
    /// (its handler, lane and schemas its own), the rest as it is. Without renames it is
    /// `catalog` itself; the last projection is kept, so requests between two catalog changes
    /// share one.
    pub fn project(&self, catalog: &Arc<Catalog>) -> Arc<Catalog> {
        if self.renames.is_empty() {
            return catalog.clone();
        }
        let mut last = self.projection.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((source, projected)) = last.as_ref() {
            if Arc::ptr_eq(source, catalog) {
                return projected.clone();
            }
        }
        let mut projected = (**catalog).clone();
        // Every original out first, then every new name in: a new name may be another's original.
        let taken: Vec<_> = self
            .renames
            .iter()
            .filter_map(|(original, rename)| projected.take_tool(original).map(|entry| (original, rename, entry)))
            .collect();
        for (original, rename, entry) in taken {
            let name = rename.name.as_ref().unwrap_or(original);
            if self.aliases.get(name).is_some_and(|other| other != original) {
                // Hidden by another tool's new name (the file's reader refuses such a rename).
                continue;
            }
            let mut definition = (*entry.definition).clone();
            definition.name.clone_from(name);
            if let Some(description) = &rename.description {
                definition.description = Some(description.clone());
            }
            projected.put_tool(crate::catalog::ToolEntry { definition: Arc::new(definition), ..entry });
        }
        let projected = Arc::new(projected);
        *last = Some((catalog.clone(), projected.clone()));
        projected
    }

    /// The view as the status shows it.
    pub fn to_json(&self) -> Value {
        let renames: Map<String, Value> = self
            .renames
            .iter()
            .map(|(original, r)| (original.clone(), json!({"name": r.name, "description": r.description})))
            .collect();
        json!({
            "name": &*self.name,
            "endpoint": format!("/mcp/{}", self.name),
            "tools": self.tools.patterns(),
            "prompts": self.prompts.patterns(),
            "resources": self.resources.patterns(),
            "rename": renames,
        })
    }
}

/// Reads a servers file's `virtualServers` (absent or `null`: none) into views, in file order.
///
/// # Errors
/// The first problem, naming the virtual server and the field: not an object, a bad name, an
/// unknown field, a pattern list of the wrong shape, a view that selects nothing, a rename that
/// is not `{"name"?, "description"?}`, names a tool the view's patterns do not select, gives an
/// invalid tool name, or a new name another rename gives too.
pub fn parse_views(value: Option<&Value>) -> Result<Vec<View>, String> {
    let views = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(views)) => views,
        Some(_) => return Err("\"virtualServers\" must be an object of virtual servers by name".into()),
    };
    if views.len() > MAX_VIEWS {
        return Err(format!("\"virtualServers\" has {} virtual servers; at most {MAX_VIEWS} are allowed", views.len()));
    }
    views.iter().map(|(name, view)| parse_view(name, view)).collect()
}

fn parse_view(name: &str, view: &Value) -> Result<View, String> {
    check_view_name(name).map_err(|problem| format!("virtual server name {name:?} {problem}"))?;
    let at = |problem: String| format!("virtual server {name:?}: {problem}");
    let Value::Object(view) = view else { return Err(at("must be an object".into())) };
    if let Some(unknown) = view.keys().find(|k| !VIEW_FIELDS.contains(&k.as_str())) {
        return Err(at(format!("unknown field {unknown:?} (expected one of {})", VIEW_FIELDS.join(", "))));
    }
    let tools = patterns(view, "tools").map_err(at)?;
    let prompts = patterns(view, "prompts").map_err(at)?;
    let resources = patterns(view, "resources").map_err(at)?;
    if tools.is_empty() && prompts.is_empty() && resources.is_empty() {
        return Err(at("selects nothing: give \"tools\", \"prompts\" or \"resources\" patterns".into()));
    }
    let selected = Globs::new(tools.clone());
    let renames = match view.get("rename") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(renames)) => renames
            .iter()
            .map(|(original, rename)| {
                if !selected.matches(original) {
                    return Err(at(format!(
                        "\"rename\" names {original:?}, which its \"tools\" patterns do not select"
                    )));
                }
                parse_rename(rename)
                    .map(|r| (original.clone(), r))
                    .map_err(|e| at(format!("rename of {original:?}: {e}")))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(at("\"rename\" must be an object of renames by tool name".into())),
    };
    let mut given: BTreeMap<&str, &str> = BTreeMap::new();
    for (original, rename) in &renames {
        if let Some(new) = rename.name.as_deref() {
            if let Some(other) = given.insert(new, original) {
                return Err(at(format!("{other:?} and {original:?} are both renamed to {new:?}")));
            }
        }
    }
    for (original, rename) in &renames {
        let kept = rename.name.as_deref().unwrap_or(original);
        if let Some(other) = given.get(kept).filter(|other| **other != original) {
            return Err(at(format!("the rename of {original:?} is of a tool that {other:?}'s new name hides")));
        }
    }
    Ok(View::new(name, (tools, prompts, resources), renames))
}

fn parse_rename(value: &Value) -> Result<Rename, String> {
    const SHAPE: &str = "must be an object with \"name\" and/or \"description\"";
    let Value::Object(rename) = value else { return Err(SHAPE.into()) };
    if let Some(unknown) = rename.keys().find(|k| !matches!(k.as_str(), "name" | "description")) {
        return Err(format!("unknown field {unknown:?} (expected name, description)"));
    }
    let name = match rename.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => {
            crate::client::list::check_tool_name(name).map_err(|reason| format!("\"name\" {name:?}: {reason}"))?;
            Some(name.clone())
        }
        Some(_) => return Err("\"name\" must be a string".into()),
    };
    let description = match rename.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.len() <= MAX_DESCRIPTION => Some(text.clone()),
        Some(_) => return Err(format!("\"description\" must be a string of at most {MAX_DESCRIPTION} bytes")),
    };
    if name.is_none() && description.is_none() {
        return Err(SHAPE.into());
    }
    Ok(Rename { name, description })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CallToolResult, Tool};

    fn view(document: Value) -> View {
        parse_views(Some(&json!({ "docs": document }))).unwrap().remove(0)
    }

    fn error(document: Value) -> String {
        match parse_views(Some(&document)) {
            Ok(_) => panic!("{document} was accepted"),
            Err(message) => message,
        }
    }

    #[test]
    fn a_view_shows_what_it_selects_under_its_names() {
        let docs = view(json!({
            "tools": ["github__search*", "echo", "*__read"],
            "prompts": ["github__*"],
            "resources": ["ui://github__*", "file:///docs/*"],
            "rename": {
                "github__search_code": {"name": "search", "description": "Searches code."},
                "github__search_issues": {"description": "Finds issues."},
                "wiki__read": {"name": "echo"}
            }
        }));
        assert_eq!(docs.name(), "docs");
        assert_eq!(docs.tool_original("search"), Some("github__search_code"));
        assert_eq!(docs.tool_original("github__search_code"), None, "renamed away");
        assert_eq!(docs.tool_original("github__search_issues"), Some("github__search_issues"));
        assert_eq!(docs.tool_original("echo"), Some("wiki__read"), "a new name hides a tool of that name");
        assert_eq!(docs.tool_original("wiki__read"), None);
        assert_eq!(docs.tool_original("docs__read"), Some("docs__read"));
        assert_eq!(docs.tool_original("github__write"), None);
        assert!(docs.shows_prompt("github__review") && !docs.shows_prompt("wiki__review"));
        assert!(docs.shows_resource("ui://github__app/view.html") && !docs.shows_resource("ui://wiki__x"));
        assert!(docs.shows_template("file:///{+path}") && !docs.shows_template("wiki://{id}"));
        assert!(docs.has_tools() && docs.has_prompts() && docs.has_resources());
    }

    #[test]
    fn the_projection_renames_tools_and_keeps_their_handlers() {
        let docs = view(json!({
            "tools": ["a", "b", "c", "d"],
            "rename": {"a": {"name": "b", "description": "A as b."}, "b": {"name": "c"}, "d": {"description": "D."}}
        }));
        let mut catalog = Catalog::new();
        for name in ["a", "b", "c", "d", "e"] {
            let text = format!("{name} ran");
            catalog.add_tool(Tool::new(name, format!("{name}'s own"), json!({"type": "object"})), move |_a, _c| {
                let text = text.clone();
                async move { Ok(CallToolResult::text(text)) }
            });
        }
        let catalog = Arc::new(catalog);
        let projected = docs.project(&catalog);
        let shown: Vec<(String, Option<String>)> =
            projected.tools().map(|t| (t.definition.name.clone(), t.definition.description.clone())).collect();
        assert_eq!(
            shown,
            [
                ("b".to_owned(), Some("A as b.".to_owned())),
                ("c".to_owned(), Some("b's own".to_owned())),
                ("d".to_owned(), Some("D.".to_owned())),
                ("e".to_owned(), Some("e's own".to_owned()))
            ],
            "a went to b, b to c (c's own entry hidden), d's description overridden"
        );
        let ran = |name: &str| {
            let entry = projected.tool(name).unwrap();
            let future = entry
                .handler
                .call(Map::new(), crate::context::ToolContext::new(crate::version::ProtocolVersion::STATELESS));
            let result = futures_util::FutureExt::now_or_never(future).unwrap().unwrap();
            serde_json::to_value(result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
        };
        assert_eq!(ran("b"), "a ran", "a new name reaches the original");
        assert_eq!(ran("c"), "b ran");
        assert!(Arc::ptr_eq(&docs.project(&catalog), &projected), "one projection per catalog");
        let plain = view(json!({"tools": ["*"]}));
        assert!(Arc::ptr_eq(&plain.project(&catalog), &catalog), "no rename, no copy");
    }

    #[test]
    fn every_malformation_has_its_exact_error() {
        let cases: [(Value, &str); 17] = [
            (json!([]), "\"virtualServers\" must be an object of virtual servers by name"),
            (json!({"a b": {"tools": ["*"]}}), "virtual server name \"a b\" may hold only ASCII letters, digits, '_' and '-'"),
            (json!({"": {"tools": ["*"]}}), "virtual server name \"\" must have 1 to 64 characters"),
            (json!({"docs": []}), "virtual server \"docs\": must be an object"),
            (json!({"docs": {"tool": []}}), "virtual server \"docs\": unknown field \"tool\" (expected one of tools, prompts, resources, rename)"),
            (json!({"docs": {"tools": "echo"}}), "virtual server \"docs\": \"tools\" must be an array of name patterns"),
            (json!({"docs": {"prompts": [""]}}), "virtual server \"docs\": \"prompts\" must hold only non-empty strings"),
            (json!({"docs": {}}), "virtual server \"docs\": selects nothing: give \"tools\", \"prompts\" or \"resources\" patterns"),
            (json!({"docs": {"tools": ["*"], "rename": []}}), "virtual server \"docs\": \"rename\" must be an object of renames by tool name"),
            (json!({"docs": {"tools": ["a*"], "rename": {"b": {"name": "c"}}}}), "virtual server \"docs\": \"rename\" names \"b\", which its \"tools\" patterns do not select"),
            (json!({"docs": {"tools": ["*"], "rename": {"a": "b"}}}), "virtual server \"docs\": rename of \"a\": must be an object with \"name\" and/or \"description\""),
            (json!({"docs": {"tools": ["*"], "rename": {"a": {}}}}), "virtual server \"docs\": rename of \"a\": must be an object with \"name\" and/or \"description\""),
            (json!({"docs": {"tools": ["*"], "rename": {"a": {"title": "A"}}}}), "virtual server \"docs\": rename of \"a\": unknown field \"title\" (expected name, description)"),
            (json!({"docs": {"tools": ["*"], "rename": {"a": {"name": "a b"}}}}), "virtual server \"docs\": rename of \"a\": \"name\" \"a b\": the name has a character other than A-Z a-z 0-9 _ - . (' ')"),
            (json!({"docs": {"tools": ["*"], "rename": {"a": {"description": 7}}}}), "virtual server \"docs\": rename of \"a\": \"description\" must be a string of at most 4096 bytes"),
            (json!({"docs": {"tools": ["*"], "rename": {"a": {"name": "s"}, "b": {"name": "s"}}}}), "virtual server \"docs\": \"a\" and \"b\" are both renamed to \"s\""),
            (json!({"docs": {"tools": ["*"], "rename": {"a": {"name": "b"}, "b": {"description": "B."}}}}), "virtual server \"docs\": the rename of \"b\" is of a tool that \"a\"'s new name hides"),
        ];
        for (document, expected) in cases {
            assert_eq!(error(document.clone()), expected, "{document}");
        }
        assert!(parse_views(None).unwrap().is_empty());
        assert!(parse_views(Some(&Value::Null)).unwrap().is_empty());
        let json = view(json!({"tools": ["a"], "rename": {"a": {"name": "b"}}})).to_json();
        assert_eq!(json["endpoint"], "/mcp/docs");
        assert_eq!(json["rename"]["a"]["name"], "b");
    }
}
