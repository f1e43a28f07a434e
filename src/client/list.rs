//! Reading what a server lists — tools, prompts, resources, resource templates — as a client:
//! every `*/list` page comes from outside the process and is judged here, one rule set for all
//! four lists. The runtime's loop (`mcpd-actors`, `client::listing`) only sends the requests and
//! keeps the deadline.
//!
//! - A page must be an object whose list member (`tools`, `prompts`, …) is an array and whose
//!   `nextCursor`, when present and not `null`, is a string; anything else is a [`ListError::Shape`]
//!   (the client reports it as a protocol error).
//! - Each entry that cannot be used — not an object, malformed for its type, a name outside the
//!   rules ([`check_tool_name`]; prompts, resources and templates: see [`Listed::check`]), a
//!   second entry with the same name — is skipped with the reason ([`Skipped`]); the rest are kept.
//! - A whole listing is bounded by [`ListLimits`]: at most `max_pages` pages and `max_items`
//!   entries received (kept or skipped), and a cursor may not come back.

use std::collections::HashSet;

use derive_more::{Display, Error};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::model::{Prompt, Resource, ResourceTemplate, Tool};

/// The longest tool name, in characters (the 2025-11-25 specification: 1 to 128).
pub const MAX_TOOL_NAME_CHARS: usize = 128;
/// The longest prompt name, in characters: the tool names' bound (a prompt is fetched by name,
/// as a tool is called by name; the specification names no other rule for it).
pub const MAX_PROMPT_NAME_CHARS: usize = 128;
/// The longest resource URI or URI template, in bytes (it travels in the `Mcp-Name` header of
/// a stateless `resources/read`, and 8 KiB is what HTTP servers commonly accept in a header).
pub const MAX_URI_BYTES: usize = 8192;
/// The default page bound of one listing.
pub const DEFAULT_MAX_PAGES: usize = 100;
/// The default entry bound of one listing.
pub const DEFAULT_MAX_ITEMS: usize = 10_000;
/// The largest page bound a configuration may set.
pub const MAX_PAGES_CEILING: usize = 10_000;
/// The largest entry bound a configuration may set.
pub const MAX_ITEMS_CEILING: usize = 1_000_000;
/// How many skipped entries a listing describes (it counts them all).
pub const MAX_SKIPPED_KEPT: usize = 100;
/// How many characters of a name or value an entry's description quotes.
const QUOTED_CHARS: usize = 40;
/// How many characters of a reason (a deserializer's message) are kept.
const REASON_CHARS: usize = 200;

/// How far one listing may go: pages requested and entries received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListLimits {
    /// Most pages (requests) per listing.
    pub max_pages: usize,
    /// Most entries received per listing, kept or skipped.
    pub max_items: usize,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits { max_pages: DEFAULT_MAX_PAGES, max_items: DEFAULT_MAX_ITEMS }
    }
}

impl ListLimits {
    /// Limits from configured values: absent gives the default, anything else is clamped to
    /// `1..=`[`MAX_PAGES_CEILING`] (pages) and `1..=`[`MAX_ITEMS_CEILING`] (entries).
    pub fn new(max_pages: Option<i64>, max_items: Option<i64>) -> Self {
        let clamp = |value: Option<i64>, default: usize, ceiling: usize| match value {
            None => default,
            Some(v) => v.clamp(1, ceiling as i64) as usize,
        };
        ListLimits {
            max_pages: clamp(max_pages, DEFAULT_MAX_PAGES, MAX_PAGES_CEILING),
            max_items: clamp(max_items, DEFAULT_MAX_ITEMS, MAX_ITEMS_CEILING),
        }
    }
}

/// What a listing of one kind reads: the method, the result's member, and the rules an entry
/// must meet beyond its type's shape.
pub trait Listed: DeserializeOwned {
    /// The request's method, `tools/list`.
    const METHOD: &'static str;
    /// The result's member holding the entries, `tools`.
    const MEMBER: &'static str;

    /// Fills in what a lenient reader defaults before the entry is read (a tool without
    /// `inputSchema` gets `{}`, as older servers omit it).
    fn prepare(_entry: &mut Map<String, Value>) {}

    /// What identifies the entry within the list (a tool's or prompt's name, a resource's URI, a
    /// template's URI template); a second entry with the same key is skipped.
    fn key(&self) -> &str;

    /// Checks the entry beyond its shape.
    ///
    /// # Errors
    /// Why the entry cannot be used.
    fn check(&self) -> Result<(), String>;
}

impl Listed for Tool {
    const METHOD: &'static str = "tools/list";
    const MEMBER: &'static str = "tools";

    fn prepare(entry: &mut Map<String, Value>) {
        entry.entry("inputSchema").or_insert_with(|| Value::Object(Map::new()));
    }

    fn key(&self) -> &str {
        &self.name
    }

    /// The name per [`check_tool_name`]; `inputSchema` (and `outputSchema`, when given) must be
    /// objects.
    fn check(&self) -> Result<(), String> {
        check_tool_name(&self.name)?;
        if !self.input_schema.is_object() {
            return Err(format!("inputSchema is not an object ({})", json_type(&self.input_schema)));
        }
        match &self.output_schema {
            Some(schema) if !schema.is_object() => {
                Err(format!("outputSchema is not an object ({})", json_type(schema)))
            }
            _ => Ok(()),
        }
    }
}

impl Listed for Prompt {
    const METHOD: &'static str = "prompts/list";
    const MEMBER: &'static str = "prompts";

    fn key(&self) -> &str {
        &self.name
    }

    /// The name: 1 to [`MAX_PROMPT_NAME_CHARS`] characters, no control characters.
    fn check(&self) -> Result<(), String> {
        check_text("name", &self.name, MAX_PROMPT_NAME_CHARS, self.name.chars().count())
    }
}

impl Listed for Resource {
    const METHOD: &'static str = "resources/list";
    const MEMBER: &'static str = "resources";

    fn key(&self) -> &str {
        &self.uri
    }

    /// The URI: 1 to [`MAX_URI_BYTES`] bytes, no control characters; a name that is not empty.
    fn check(&self) -> Result<(), String> {
        check_text("uri", &self.uri, MAX_URI_BYTES, self.uri.len())?;
        non_empty_name(&self.name)
    }
}

impl Listed for ResourceTemplate {
    const METHOD: &'static str = "resources/templates/list";
    const MEMBER: &'static str = "resourceTemplates";

    fn key(&self) -> &str {
        &self.uri_template
    }

    /// As a resource's, for the URI template.
    fn check(&self) -> Result<(), String> {
        check_text("uriTemplate", &self.uri_template, MAX_URI_BYTES, self.uri_template.len())?;
        non_empty_name(&self.name)
    }
}

/// The 2025-11-25 rule for tool names: 1 to [`MAX_TOOL_NAME_CHARS`] characters, each an ASCII
/// letter, a digit, `_`, `-` or `.`.
///
/// # Errors
/// Which part of the rule the name breaks.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(format!("the name has a character other than A-Z a-z 0-9 _ - . ({c:?})"));
    }
    // Only ASCII is left, so bytes are characters.
    if name.len() > MAX_TOOL_NAME_CHARS {
        return Err(format!("the name is {} characters long (at most {MAX_TOOL_NAME_CHARS})", name.len()));
    }
    Ok(())
}

/// A text field that must be present, bounded (`length` in the unit `max` counts) and free of
/// control characters.
fn check_text(field: &str, text: &str, max: usize, length: usize) -> Result<(), String> {
    if text.is_empty() {
        return Err(format!("the {field} is empty"));
    }
    if length > max {
        let unit = if field == "name" { "characters" } else { "bytes" };
        return Err(format!("the {field} is {length} {unit} long (at most {max})"));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!("the {field} has a control character ({c:?})"));
    }
    Ok(())
}

fn non_empty_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the name is empty".into());
    }
    Ok(())
}

/// An entry a listing left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Display)]
#[display("{entry}: {reason}")]
pub struct Skipped {
    /// Which entry: its position in the whole listing (0-based, across pages) and what it
    /// looked like — its name (quoted, shortened) or its JSON type: `entry 3 (name "x")`.
    pub entry: String,
    /// Why it was left out.
    pub reason: String,
}

impl Skipped {
    /// The entry at `index` that looked like `entry` (a JSON value), left out for `reason`.
    fn at(index: usize, entry: &Value, reason: String) -> Skipped {
        Skipped { entry: format!("entry {index} ({})", describe(entry)), reason }
    }
}

/// Why a listing stopped without a result.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
#[non_exhaustive]
pub enum ListError {
    /// A page is not what the method's result must be.
    #[display("{_0}")]
    Shape(#[error(not(source))] String),
    /// A `nextCursor` came back a second time (the server pages in a circle).
    #[display("MCP server returned a repeated {method} cursor.")]
    RepeatedCursor {
        /// The method.
        method: &'static str,
    },
    /// More pages than [`ListLimits::max_pages`].
    #[display("{method} returned more than {limit} pages; stopped there (the listing's page limit)")]
    TooManyPages {
        /// The method.
        method: &'static str,
        /// The limit.
        limit: usize,
    },
    /// More entries than [`ListLimits::max_items`].
    #[display("{method} returned more than {limit} entries; stopped there (the listing's entry limit)")]
    TooManyItems {
        /// The method.
        method: &'static str,
        /// The limit.
        limit: usize,
    },
}

/// A finished listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    /// The entries kept, in the server's order.
    pub items: Vec<T>,
    /// The first [`MAX_SKIPPED_KEPT`] entries left out.
    pub skipped: Vec<Skipped>,
    /// How many entries were left out in all.
    pub skipped_count: usize,
    /// How many pages were read.
    pub pages: usize,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing { items: Vec::new(), skipped: Vec::new(), skipped_count: 0, pages: 0 }
    }
}

impl<T> Listing<T> {
    /// Records an entry left out after the listing (e.g. a tool the stateless wire cannot call).
    pub fn skip(&mut self, skipped: Skipped) {
        self.skipped_count += 1;
        if self.skipped.len() < MAX_SKIPPED_KEPT {
            self.skipped.push(skipped);
        }
    }
}

/// A listing in progress: feed it each page's result; it says which cursor to ask for next.
#[derive(Debug)]
pub struct Lister<T> {
    limits: ListLimits,
    listing: Listing<T>,
    /// Entries received so far, kept or skipped.
    received: usize,
    /// The keys of the entries kept.
    keys: HashSet<String>,
    /// The cursors given so far.
    cursors: HashSet<String>,
}

impl<T: Listed> Lister<T> {
    /// A listing bounded by `limits` (a bound of 0 counts as 1: the first page is always read).
    pub fn new(limits: ListLimits) -> Self {
        Lister {
            limits: ListLimits { max_pages: limits.max_pages.max(1), max_items: limits.max_items.max(1) },
            listing: Listing::default(),
            received: 0,
            keys: HashSet::new(),
            cursors: HashSet::new(),
        }
    }

    /// Pages read so far.
    pub fn pages(&self) -> usize {
        self.listing.pages
    }

    /// Entries received so far (kept or skipped).
    pub fn received(&self) -> usize {
        self.received
    }

    /// Reads one page's result: the cursor of the next page, or `None` when the listing is
    /// complete.
    ///
    /// # Errors
    /// A page of the wrong shape, a repeated cursor, or a limit passed.
    pub fn absorb(&mut self, result: Value) -> Result<Option<String>, ListError> {
        let method = T::METHOD;
        self.listing.pages += 1;
        let Value::Object(mut result) = result else {
            return Err(ListError::Shape(format!("the {method} result is not an object ({})", json_type(&result))));
        };
        let entries = match result.remove(T::MEMBER) {
            Some(Value::Array(entries)) => entries,
            Some(other) => {
                return Err(ListError::Shape(format!(
                    "the {method} result's {} is not an array ({})",
                    T::MEMBER,
                    json_type(&other)
                )))
            }
            None => return Err(ListError::Shape(format!("the {method} result has no {} array", T::MEMBER))),
        };
        let next = match result.remove("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) if cursor.is_empty() => None,
            Some(Value::String(cursor)) => Some(cursor),
            Some(other) => {
                return Err(ListError::Shape(format!(
                    "the {method} result's nextCursor is not a string ({})",
                    json_type(&other)
                )))
            }
        };
        let first = self.received;
        self.received += entries.len();
        if self.received > self.limits.max_items {
            return Err(ListError::TooManyItems { method, limit: self.limits.max_items });
        }
        for (offset, entry) in entries.into_iter().enumerate() {
            self.read_entry(first + offset, entry);
        }
        let Some(next) = next else { return Ok(None) };
        if !self.cursors.insert(next.clone()) {
            return Err(ListError::RepeatedCursor { method });
        }
        if self.listing.pages >= self.limits.max_pages {
            return Err(ListError::TooManyPages { method, limit: self.limits.max_pages });
        }
        Ok(Some(next))
    }

    fn read_entry(&mut self, index: usize, entry: Value) {
        let Value::Object(mut object) = entry else {
            let reason = format!("not an object ({})", json_type(&entry));
            return self.listing.skip(Skipped::at(index, &entry, reason));
        };
        T::prepare(&mut object);
        let entry = Value::Object(object);
        // Described before it is read (reading consumes it); only its name is copied.
        let skipped = |reason: String| Skipped::at(index, &entry, reason);
        let item = match T::deserialize(&entry) {
            Ok(item) => item,
            Err(e) => return self.listing.skip(skipped(shortened(&format!("malformed: {e}"), REASON_CHARS))),
        };
        if let Err(reason) = item.check() {
            return self.listing.skip(skipped(reason));
        }
        if self.keys.contains(item.key()) {
            let reason = format!("a second entry for {}", quoted(item.key()));
            return self.listing.skip(skipped(reason));
        }
        self.keys.insert(item.key().to_owned());
        self.listing.items.push(item);
    }

    /// The listing read so far.
    pub fn finish(self) -> Listing<T> {
        self.listing
    }
}

/// The JSON type of a value, for messages ("a string").
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An entry as a message shows it: its name (or URI), quoted and shortened, else its type;
/// never the whole value (an entry may be megabytes).
fn describe(entry: &Value) -> String {
    match entry {
        Value::Object(object) => ["name", "uri", "uriTemplate"]
            .iter()
            .find_map(|field| {
                object.get(*field).and_then(Value::as_str).map(|text| format!("{field} {}", quoted(text)))
            })
            .unwrap_or_else(|| "an object without a name".into()),
        Value::String(text) => quoted(text),
        Value::Null | Value::Bool(_) | Value::Number(_) => entry.to_string(),
        Value::Array(_) => "an array".into(),
    }
}

/// `text` quoted with its control characters escaped, cut after [`QUOTED_CHARS`] characters
/// (then its length is said).
fn quoted(text: &str) -> String {
    let length = text.chars().count();
    if length <= QUOTED_CHARS {
        return format!("{text:?}");
    }
    let start: String = text.chars().take(QUOTED_CHARS).collect();
    format!("{start:?}… ({length} characters)")
}

/// `text` cut after `max` characters.
fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    #[test]
    fn tool_names_follow_the_specification() {
        for good in ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a", &"x".repeat(128)] {
            assert_eq!(check_tool_name(good), Ok(()), "{good}");
        }
        assert_eq!(check_tool_name(""), Err("the name is empty".into()));
        assert_eq!(check_tool_name(&"x".repeat(129)), Err("the name is 129 characters long (at most 128)".into()));
        for (bad, c) in [("a b", ' '), ("a,b", ','), ("a/b", '/'), ("中文", '中'), ("tab\t", '\t')] {
            assert_eq!(
                check_tool_name(bad),
                Err(format!("the name has a character other than A-Z a-z 0-9 _ - . ({c:?})")),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_entries_are_skipped_with_the_reason_and_good_ones_kept() {
        let mut lister = Lister::<Tool>::new(ListLimits::default());
        let huge = "a".repeat(1 << 20);
        let page = json!({"tools": [
            "x", tool("good"), 7, tool(&huge), tool("bad name"), {"name": "no_schema"},
            {"name": "schema", "inputSchema": "text"}, tool("good"), {"description": "nameless"}, null
        ]});
        assert_eq!(lister.absorb(page), Ok(None));
        let listing = lister.finish();
        let names: Vec<&str> = listing.items.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["good", "no_schema"]);
        let skipped: Vec<String> = listing.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "entry 0 (\"x\"): not an object (a string)".to_owned(),
                "entry 2 (7): not an object (a number)".into(),
                format!(
                    "entry 3 (name \"{}\"… (1048576 characters)): the name is 1048576 characters long (at most 128)",
                    "a".repeat(40)
                ),
                "entry 4 (name \"bad name\"): the name has a character other than A-Z a-z 0-9 _ - . (' ')".into(),
                "entry 6 (name \"schema\"): inputSchema is not an object (a string)".into(),
                "entry 7 (name \"good\"): a second entry for \"good\"".into(),
                "entry 8 (an object without a name): malformed: missing field `name`".into(),
                "entry 9 (null): not an object (null)".into(),
            ]
        );
        assert_eq!((listing.skipped_count, listing.pages), (8, 1));
    }

    #[test]
    fn a_page_of_the_wrong_shape_is_an_error() {
        let shape = |page: Value| Lister::<Tool>::new(ListLimits::default()).absorb(page).unwrap_err().to_string();
        assert_eq!(shape(json!("tools")), "the tools/list result is not an object (a string)");
        assert_eq!(shape(json!({})), "the tools/list result has no tools array");
        assert_eq!(shape(json!({"tools": "x"})), "the tools/list result's tools is not an array (a string)");
        assert_eq!(
            shape(json!({"tools": [], "nextCursor": 3})),
            "the tools/list result's nextCursor is not a string (a number)"
        );
        let prompts = Lister::<Prompt>::new(ListLimits::default()).absorb(json!({"prompts": {}})).unwrap_err();
        assert_eq!(prompts.to_string(), "the prompts/list result's prompts is not an array (an object)");
    }

    #[test]
    fn pages_entries_and_cursors_are_bounded() {
        let limits = ListLimits { max_pages: 3, max_items: 5 };
        let mut lister = Lister::<Tool>::new(limits);
        assert_eq!(lister.absorb(json!({"tools": [tool("a")], "nextCursor": "1"})), Ok(Some("1".into())));
        assert_eq!(lister.absorb(json!({"tools": [tool("b")], "nextCursor": "2"})), Ok(Some("2".into())));
        assert_eq!(
            lister.absorb(json!({"tools": [tool("c")], "nextCursor": "3"})),
            Err(ListError::TooManyPages { method: "tools/list", limit: 3 })
        );
        let mut lister = Lister::<Tool>::new(limits);
        assert_eq!(lister.absorb(json!({"tools": ["a", "b", "c"], "nextCursor": "1"})), Ok(Some("1".into())));
        let error = lister.absorb(json!({"tools": [tool("d"), tool("e"), tool("f")]})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "tools/list returned more than 5 entries; stopped there (the listing's entry limit)"
        );
        let mut lister = Lister::<Tool>::new(limits);
        assert_eq!(lister.absorb(json!({"tools": [], "nextCursor": "same"})), Ok(Some("same".into())));
        let error = lister.absorb(json!({"tools": [], "nextCursor": "same"})).unwrap_err();
        assert_eq!(error.to_string(), "MCP server returned a repeated tools/list cursor.");
        // An empty or null cursor ends the listing.
        let mut lister = Lister::<Tool>::new(limits);
        assert_eq!(lister.absorb(json!({"tools": [], "nextCursor": ""})), Ok(None));
        assert_eq!(ListLimits::new(None, None), ListLimits::default());
        assert_eq!(ListLimits::new(Some(0), Some(i64::MAX)), ListLimits { max_pages: 1, max_items: MAX_ITEMS_CEILING });
    }

    #[test]
    fn prompts_resources_and_templates_have_their_rules() {
        let mut prompts = Lister::<Prompt>::new(ListLimits::default());
        let page = json!({"prompts": [{"name": "p"}, {"name": ""}, {"name": "x".repeat(129)}, {"name": "a\u{7}"}]});
        assert_eq!(prompts.absorb(page), Ok(None));
        let prompts = prompts.finish();
        assert_eq!(prompts.items.len(), 1);
        let reasons: Vec<&str> = prompts.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "the name is empty",
                "the name is 129 characters long (at most 128)",
                "the name has a control character ('\\u{7}')"
            ]
        );
        let mut resources = Lister::<Resource>::new(ListLimits::default());
        let long = format!("file:///{}", "a".repeat(MAX_URI_BYTES));
        let page = json!({"resources": [{"uri": "file:///a", "name": "a"}, {"uri": "", "name": "b"}, {"uri": long, "name": "c"}, {"uri": "file:///d", "name": " "}]});
        assert_eq!(resources.absorb(page), Ok(None));
        let resources = resources.finish();
        assert_eq!(resources.items.len(), 1);
        assert_eq!(resources.skipped[0].reason, "the uri is empty");
        assert_eq!(resources.skipped[1].reason, format!("the uri is {} bytes long (at most 8192)", MAX_URI_BYTES + 8));
        assert_eq!(resources.skipped[2].reason, "the name is empty");
        let mut templates = Lister::<ResourceTemplate>::new(ListLimits::default());
        let page = json!({"resourceTemplates": [{"uriTemplate": "t://{id}", "name": "t"}, {"name": "u"}]});
        assert_eq!(templates.absorb(page), Ok(None));
        let templates = templates.finish();
        assert_eq!((templates.items.len(), templates.skipped_count), (1, 1));
    }
}
