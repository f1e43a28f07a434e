//! What a caller may see and use: the one screen between routing and dispatch.
//!
//! Every method of the [`Method`] table has a [`Rule`] ([`rule`] is an exhaustive match, so a
//! new method does not compile without one), and every path that serves a method crosses the
//! screen before anything else reads the request: [`super::McpServer::execute`] for what the
//! core dispatches, and the transports for what they answer themselves (`resources/subscribe`,
//! `subscriptions/listen`). The caller's [`Access`] decides — its access-file client, its token's
//! per-tool scopes, and on a virtual server's endpoint the view ([`super::view`]), whose renamed
//! tools the caller's rules judge by their original names; without one (no access file, no
//! OAuth, the whole server, stdio) everything is visible and the screen costs one branch.
//!
//! What a caller may not see answers exactly as if it did not exist: a hidden tool, prompt or
//! resource is dispatched against an empty catalog (so it is unknown in the very words of one
//! that is not there), lists leave it out (with a private cache scope), a completion of it is
//! the completion of an unknown reference, a subscription to it is accepted and hears nothing,
//! and a listener (or session) hears no list change of a kind it sees none of.

use serde_json::{Map, Value};

use super::interest::Interest;
use super::method::Method;
use super::options::{CacheHint, CacheScope};
use crate::auth::scopes::Access;

/// A kind of primitive a caller may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool, by name.
    Tool,
    /// A prompt, by name.
    Prompt,
    /// A resource, by URI.
    Resource,
    /// A resource template, by its URI template (or a URI it covers, in a completion).
    Template,
}

/// How the screen applies to one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Names no primitive (the handshake, `ping`, the log level, discovery, an unknown method,
    /// and `resources/unsubscribe`, which only ever removes the caller's own subscription).
    Open,
    /// Lists a kind: only what the caller sees.
    List(Kind),
    /// Names one primitive of a kind in a string param.
    Named(Kind, &'static str),
    /// `completion/complete`: its `ref` (a prompt, or a resource template or URI).
    Reference,
    /// `subscriptions/listen`: its filter, cut to what the caller sees ([`Screen::interest`]).
    Listen,
    /// The tasks extension: a task is its owner's alone (the task store checks the owner).
    Owned,
}

/// The screen's rule for `method`.
pub const fn rule(method: Method) -> Rule {
    match method {
        Method::Initialize
        | Method::Ping
        | Method::Discover
        | Method::SetLogLevel
        | Method::Unsubscribe
        | Method::Unknown => Rule::Open,
        Method::ToolsList => Rule::List(Kind::Tool),
        Method::PromptsList => Rule::List(Kind::Prompt),
        Method::ResourcesList => Rule::List(Kind::Resource),
        Method::TemplatesList => Rule::List(Kind::Template),
        Method::ToolsCall => Rule::Named(Kind::Tool, "name"),
        Method::PromptsGet => Rule::Named(Kind::Prompt, "name"),
        Method::ResourcesRead | Method::Subscribe => Rule::Named(Kind::Resource, "uri"),
        Method::Complete => Rule::Reference,
        Method::Listen => Rule::Listen,
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Rule::Owned,
    }
}

/// A primitive a request names that its caller may not see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hidden<'p> {
    /// Its kind.
    pub kind: Kind,
    /// Its name, URI or URI template, as the request gave it.
    pub name: &'p str,
}

/// One caller's view.
#[derive(Debug, Clone, Copy)]
pub struct Screen<'a> {
    access: Option<&'a Access>,
}

impl<'a> Screen<'a> {
    /// The view of a caller with `access` (`None`: everything is visible).
    pub const fn new(access: Option<&'a Access>) -> Self {
        Screen { access }
    }

    /// Whether the caller sees the primitive `name` of `kind`.
    pub fn sees(&self, kind: Kind, name: &str) -> bool {
        let Some(access) = self.access else { return true };
        match kind {
            Kind::Tool => access.may_call(name),
            Kind::Prompt => access.may_get_prompt(name),
            Kind::Resource => access.may_read(name),
            Kind::Template => access.may_see_template(name) || access.may_read(name),
        }
    }

    /// Whether the caller may see anything at all of `kind` (an access-file client without
    /// patterns for it sees nothing of it, nor does a caller of a virtual server selecting none).
    pub fn sees_any(&self, kind: Kind) -> bool {
        let Some(access) = self.access else { return true };
        let viewed = access.view.as_ref().is_none_or(|view| match kind {
            Kind::Tool => view.has_tools(),
            Kind::Prompt => view.has_prompts(),
            Kind::Resource | Kind::Template => view.has_resources(),
        });
        viewed
            && access.client.as_ref().is_none_or(|client| match kind {
                Kind::Tool => !client.tools.is_empty(),
                Kind::Prompt => !client.prompts.is_empty(),
                Kind::Resource | Kind::Template => !client.resources.is_empty(),
            })
    }

    /// Whether this caller's view of `kind` may differ from another's (then its lists are never
    /// cached in a shared cache).
    pub fn filters(&self, kind: Kind) -> bool {
        match self.access {
            None => false,
            Some(access) => kind == Kind::Tool || access.client.is_some(),
        }
    }

    /// The caching hint of a list of `kind` for this caller: `hint`, made private when the
    /// caller's view is its own.
    pub fn list_hint(&self, kind: Kind, hint: CacheHint) -> CacheHint {
        match self.filters(kind) {
            true => CacheHint { scope: CacheScope::Private, ..hint },
            false => hint,
        }
    }

    /// The primitive a request of `method` names that the caller may not see; `None` when it
    /// names none or the caller sees it.
    pub fn hides<'p>(&self, method: Method, params: Option<&'p Map<String, Value>>) -> Option<Hidden<'p>> {
        self.access?;
        let (kind, name) = match rule(method) {
            Rule::Named(kind, param) => (kind, params?.get(param)?.as_str()?),
            Rule::Reference => {
                let reference = params?.get("ref")?.as_object()?;
                match reference.get("type")?.as_str()? {
                    "ref/prompt" => (Kind::Prompt, reference.get("name")?.as_str()?),
                    "ref/resource" => (Kind::Template, reference.get("uri")?.as_str()?),
                    _ => return None,
                }
            }
            Rule::Open | Rule::List(_) | Rule::Listen | Rule::Owned => return None,
        };
        (!self.sees(kind, name)).then_some(Hidden { kind, name })
    }

    /// `interest` as this caller may have it: no resource URI it may not read, no list change
    /// of a kind it sees none of.
    pub fn interest(&self, interest: Interest) -> Interest {
        if self.access.is_none() {
            return interest;
        }
        interest.narrowed([Kind::Tool, Kind::Prompt, Kind::Resource].map(|kind| self.sees_any(kind)), |uri| {
            self.sees(Kind::Resource, uri)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::auth::access::{AccessClient, ClientSpec, Credential};
    use crate::catalog::{Catalog, UriVariables};
    use crate::context::ToolContext;
    use crate::jsonrpc::{Request, RequestId};
    use crate::model::{
        CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
    };
    use crate::server::{McpServer, Scope, TimeLimit};
    use crate::version::ProtocolVersion;

    /// Every method with the rule the screen must give it: a method added to [`Method`] fails
    /// this test until someone decides here how callers are screened from it.
    const EXPECTED: [(Method, Rule); 18] = [
        (Method::Initialize, Rule::Open),
        (Method::Ping, Rule::Open),
        (Method::Discover, Rule::Open),
        (Method::Listen, Rule::Listen),
        (Method::SetLogLevel, Rule::Open),
        (Method::ToolsList, Rule::List(Kind::Tool)),
        (Method::ToolsCall, Rule::Named(Kind::Tool, "name")),
        (Method::PromptsList, Rule::List(Kind::Prompt)),
        (Method::PromptsGet, Rule::Named(Kind::Prompt, "name")),
        (Method::ResourcesList, Rule::List(Kind::Resource)),
        (Method::TemplatesList, Rule::List(Kind::Template)),
        (Method::ResourcesRead, Rule::Named(Kind::Resource, "uri")),
        (Method::Subscribe, Rule::Named(Kind::Resource, "uri")),
        (Method::Unsubscribe, Rule::Open),
        (Method::Complete, Rule::Reference),
        (Method::TasksGet, Rule::Owned),
        (Method::TasksUpdate, Rule::Owned),
        (Method::TasksCancel, Rule::Owned),
    ];

    fn catalog() -> Catalog {
        let mut catalog = Catalog::new();
        for name in ["docs__read", "docs__write", "echo"] {
            catalog.add_tool(Tool::new(name, "T", json!({"type": "object"})), |_a, _c| async {
                Ok(CallToolResult::text("done"))
            });
        }
        for name in ["docs__intro", "secret"] {
            let argument = crate::model::PromptArgument::optional("a", "A");
            catalog.add_prompt(Prompt::new(name, "P", vec![argument]), |_a, _c| async {
                Ok(GetPromptResult { description: None, messages: Vec::new() })
            });
        }
        let read = |uri: String, _v: UriVariables, _c: ToolContext| async move {
            Ok(ReadResourceResult { contents: vec![ResourceContents::text(&uri, "text/plain", "content")] })
        };
        for uri in ["file:///docs/a.md", "file:///access.json"] {
            catalog.add_resource(Resource::named(uri, uri), read);
        }
        for template in ["file:///docs/{+path}", "secret://{id}"] {
            let definition = ResourceTemplate {
                uri_template: template.into(),
                name: template.into(),
                title: None,
                description: None,
                mime_type: None,
                annotations: None,
            };
            catalog.add_template(definition, read);
        }
        // A completer that knows the templates it completes (as the runtime's do).
        catalog.set_completer(|reference, _argument, prefix| match reference.get("uri").and_then(Value::as_str) {
            Some("file:///docs/{+path}" | "secret://{id}") => vec![format!("{prefix}x")],
            _ => Vec::new(),
        });
        catalog
    }

    fn client(tools: &[&str], prompts: &[&str], resources: &[&str]) -> Arc<Access> {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        let spec = ClientSpec {
            name: "ci".into(),
            credential: Credential::Key("k".into()),
            tools: strings(tools),
            prompts: strings(prompts),
            resources: strings(resources),
            rate_limit: None,
            limits: Default::default(),
            operator: false,
            servers: None,
        };
        Arc::new(Access::of_client(Arc::new(AccessClient::new(&spec, Arc::default(), std::time::Instant::now()))))
    }

    fn run(server: &McpServer, access: Option<&Arc<Access>>, method: Method, params: Value) -> Value {
        let request = Request::new(RequestId::Number(1), method.wire_name().unwrap(), params.as_object().cloned());
        let scope = Scope { access: access.cloned(), ..Scope::new(ProtocolVersion::STATELESS) };
        let limit = TimeLimit::new(Duration::from_secs(1), std::future::pending::<()>());
        let execution = futures_util::FutureExt::now_or_never(server.execute(request, &scope, limit)).unwrap();
        match execution.outcome {
            Ok(reply) => reply.into_value().unwrap(),
            Err(error) => json!({"error": error.to_error_object(crate::version::Era::Stateless)}),
        }
    }

    /// The params naming `name` the way `method`'s rule reads it.
    fn naming(method: Method, kind: Kind, name: &str) -> Value {
        match (rule(method), kind) {
            (Rule::Named(_, param), _) => json!({ param: name, "arguments": {} }),
            (Rule::Reference, Kind::Prompt) => {
                json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "a", "value": "v"}})
            }
            (Rule::Reference, _) => {
                json!({"ref": {"type": "ref/resource", "uri": name}, "argument": {"name": "id", "value": "v"}})
            }
            (other, _) => panic!("{method:?} names nothing ({other:?})"),
        }
    }

    /// Each method's answer for a hidden primitive, with its name swapped for a missing one's,
    /// equals its answer for the missing one.
    fn answers_as_missing(server: &McpServer, access: &Arc<Access>, method: Method, kind: Kind, hidden: &str) {
        let missing = format!("{hidden}-missing");
        let screen = Screen::new(Some(access));
        let params = naming(method, kind, hidden);
        assert_eq!(screen.hides(method, params.as_object()), Some(Hidden { kind, name: hidden }), "{method:?}");
        let seen = run(server, Some(access), method, params).to_string().replace(hidden, "NAME");
        let absent = run(server, Some(access), method, naming(method, kind, &missing)).to_string();
        assert_eq!(seen, absent.replace(&missing, "NAME"), "{method:?} of hidden {hidden:?}");
        let open = run(server, None, method, naming(method, kind, hidden)).to_string().replace(hidden, "NAME");
        assert_ne!(seen, open, "{method:?}: {hidden:?} exists for a caller that may see it");
    }

    /// Walks the whole [`Method`] table: every method has the rule it is expected to have, and
    /// each rule does what it says for a restricted client — lists show only what it may see,
    /// a named primitive it may not see answers as a missing one (and a visible one does not),
    /// a listen filter loses what it may not hear; open and owned methods name nothing.
    #[test]
    fn every_method_of_the_table_is_screened() {
        assert_eq!(EXPECTED.map(|(m, _)| m), Method::KNOWN, "EXPECTED lists every known method, in order");
        let server = McpServer::new(Default::default(), catalog());
        let access = client(&["docs__r*", "echo"], &["docs__*"], &["file:///docs/*"]);
        let screen = Screen::new(Some(&access));
        for (method, expected) in EXPECTED.into_iter().chain([(Method::Unknown, Rule::Open)]) {
            assert_eq!(rule(method), expected, "{method:?}");
            match expected {
                Rule::List(kind) => {
                    let (key, field, shown): (&str, &str, &[&str]) = match kind {
                        Kind::Tool => ("tools", "name", &["docs__read", "echo"]),
                        Kind::Prompt => ("prompts", "name", &["docs__intro"]),
                        Kind::Resource => ("resources", "uri", &["file:///docs/a.md"]),
                        Kind::Template => ("resourceTemplates", "uriTemplate", &["file:///docs/{+path}"]),
                    };
                    let list = run(&server, Some(&access), method, json!({}));
                    let names: Vec<&str> =
                        list[key].as_array().unwrap().iter().map(|e| e[field].as_str().unwrap()).collect();
                    assert_eq!(names, shown, "{method:?}");
                    assert_eq!(list["cacheScope"], "private", "{method:?}: a caller's own view is never shared");
                    let everything = run(&server, None, method, json!({}));
                    assert!(everything[key].as_array().unwrap().len() > shown.len(), "{method:?}");
                }
                Rule::Named(Kind::Tool, _) => {
                    answers_as_missing(&server, &access, method, Kind::Tool, "docs__write");
                    assert_eq!(
                        run(&server, Some(&access), method, naming(method, Kind::Tool, "echo"))["content"][0]["text"],
                        "done"
                    );
                }
                Rule::Named(Kind::Prompt, _) => {
                    answers_as_missing(&server, &access, method, Kind::Prompt, "secret");
                    assert!(run(&server, Some(&access), method, naming(method, Kind::Prompt, "docs__intro"))
                        ["messages"]
                        .is_array());
                }
                Rule::Named(kind, _) if method == Method::ResourcesRead => {
                    answers_as_missing(&server, &access, method, kind, "file:///access.json");
                    answers_as_missing(&server, &access, method, kind, "secret://1");
                    let read = run(&server, Some(&access), method, naming(method, kind, "file:///docs/b.md"));
                    assert_eq!(read["contents"][0]["text"], "content", "read through a visible template");
                }
                Rule::Named(kind, param) => {
                    // Answered by the transport (sessions, stdio), which asks the screen first.
                    let hidden = json!({ param: "file:///access.json" });
                    let hidden = screen.hides(method, hidden.as_object());
                    assert_eq!(hidden, Some(Hidden { kind, name: "file:///access.json" }), "{method:?}");
                    let visible = json!({ param: "file:///docs/a.md" });
                    assert_eq!(screen.hides(method, visible.as_object()), None, "{method:?}");
                }
                Rule::Reference => {
                    answers_as_missing(&server, &access, method, Kind::Prompt, "secret");
                    answers_as_missing(&server, &access, method, Kind::Template, "secret://{id}");
                    let visible =
                        run(&server, Some(&access), method, naming(method, Kind::Template, "file:///docs/{+path}"));
                    assert_eq!(visible["completion"]["values"], json!(["vx"]));
                }
                Rule::Listen => {
                    let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true,
                        "resourceSubscriptions": ["file:///docs/a.md", "file:///access.json"]}});
                    let none = client(&["echo"], &[], &["file:///docs/*"]);
                    let heard = Screen::new(Some(&none)).interest(Interest::listen(params.as_object()));
                    let changed = crate::catalog::CatalogEvent::ResourceUpdated("file:///access.json".into());
                    assert_eq!(heard.announcement(&changed), None, "a hidden resource's updates are not heard");
                    assert_eq!(heard.uris(), ["file:///docs/a.md".to_owned()]);
                    let prompts = crate::catalog::CatalogEvent::PromptsChanged;
                    assert_eq!(heard.announcement(&prompts), None, "no prompt list change for a caller with no prompt");
                    assert!(heard.announcement(&crate::catalog::CatalogEvent::ToolsChanged).is_some());
                }
                Rule::Open | Rule::Owned => {
                    for params in
                        [json!({"name": "docs__write", "uri": "file:///access.json", "taskId": "t"}), json!({})]
                    {
                        assert_eq!(screen.hides(method, params.as_object()), None, "{method:?}");
                    }
                }
            }
        }
    }

    /// A virtual server's view meets a client's patterns in the one screen: the view selects and
    /// renames, the client's patterns judge a renamed tool by its original name, and whatever
    /// either hides answers as a tool that does not exist.
    #[test]
    fn a_view_is_screened_with_the_callers_own_rules() {
        let server = McpServer::new(Default::default(), catalog());
        let views = serde_json::json!({"docs": {"tools": ["docs__*"], "prompts": ["docs__*"],
            "rename": {"docs__read": {"name": "read", "description": "Reads."}}}});
        let view = Arc::new(crate::server::view::parse_views(Some(&views)).unwrap().remove(0));
        let client = client(&["docs__read", "echo"], &["*"], &[]);
        let viewed = Arc::new(client.through(view.clone()));
        let list = run(&server, Some(&viewed), Method::ToolsList, json!({}));
        assert_eq!(
            list["tools"],
            json!([{"name": "read", "description": "Reads.", "inputSchema": {"type": "object"}}])
        );
        assert_eq!(
            run(&server, Some(&viewed), Method::ToolsCall, json!({"name": "read"}))["content"][0]["text"],
            "done"
        );
        for hidden in ["docs__read", "docs__write", "echo"] {
            answers_as_missing(&server, &viewed, Method::ToolsCall, Kind::Tool, hidden);
        }
        answers_as_missing(&server, &viewed, Method::Complete, Kind::Prompt, "secret");
        let prompts = run(&server, Some(&viewed), Method::PromptsList, json!({}));
        assert_eq!(prompts["prompts"][0]["name"], "docs__intro");
        assert_eq!(prompts["prompts"].as_array().map(Vec::len), Some(1), "secret is not selected");
        let screen = Screen::new(Some(&viewed));
        assert!(!screen.sees_any(Kind::Resource), "the view selects no resource");
        let alone = Arc::new(Access::of_view(view));
        let list = run(&server, Some(&alone), Method::ToolsList, json!({}));
        let names: Vec<&str> = list["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["docs__write", "read"], "the view alone: its selection, renamed");
    }

    #[test]
    fn a_caller_without_access_sees_everything_and_one_without_patterns_nothing_of_a_kind() {
        let open = Screen::new(None);
        for kind in [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::Template] {
            assert!(open.sees(kind, "anything") && open.sees_any(kind) && !open.filters(kind));
        }
        let bare = client(&[], &[], &[]);
        let bare = Screen::new(Some(&bare));
        for kind in [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::Template] {
            assert!(!bare.sees(kind, "file:///x") && !bare.sees_any(kind) && bare.filters(kind));
        }
        let server = McpServer::new(Default::default(), catalog());
        let nothing = client(&["echo"], &[], &[]);
        let list = run(&server, Some(&nothing), Method::ResourcesList, json!({}));
        assert_eq!(list["resources"], json!([]), "absent resources mean none");
        let error = run(&server, Some(&nothing), Method::ResourcesRead, json!({"uri": "file:///docs/a.md"}));
        assert_eq!(error["error"]["message"], "Resource not found: file:///docs/a.md", "{error}");
    }

    #[test]
    fn templates_are_seen_when_a_pattern_may_match_what_they_produce() {
        let access = client(&[], &[], &["file:///docs/*", "test://exact"]);
        let screen = Screen::new(Some(&access));
        for seen in ["file:///{+path}", "file:///docs/{+path}", "file:///docs/{a}/{b}", "test://{x}", "test://exact"] {
            assert!(screen.sees(Kind::Template, seen), "{seen}");
        }
        for hidden in ["secret://{id}", "file:///src/{+path}", "test://other/{x}"] {
            assert!(!screen.sees(Kind::Template, hidden), "{hidden}");
        }
        assert!(screen.sees(Kind::Resource, "file:///docs/a/b.md"));
        assert!(!screen.sees(Kind::Resource, "file:///src/main.rs"));
    }
}
