//! Per-tool scopes: which scopes a tool needs besides the ones every request needs. A rule is a
//! tool-name pattern (`*` and `?`, as `enabledTools`) and its scopes; a tool needs the scopes of
//! every rule that matches it. The same rules decide `tools/call` (403 `insufficient_scope`
//! naming what is missing) and `tools/list` (a caller sees only the tools it may call).

use super::granted::Granted;

/// The per-tool scope rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolScopes {
    rules: Vec<(Vec<char>, Vec<String>)>,
    patterns: Vec<String>,
}

impl ToolScopes {
    /// Rules from (pattern, scopes) pairs.
    pub fn new(rules: Vec<(String, Vec<String>)>) -> Self {
        let mut out = ToolScopes::default();
        for (pattern, scopes) in rules {
            out.add(&pattern, scopes);
        }
        out
    }

    /// Adds a rule.
    pub fn add(&mut self, pattern: &str, scopes: Vec<String>) {
        let scopes: Vec<String> = scopes.into_iter().filter(|s| !s.is_empty()).collect();
        if !scopes.is_empty() {
            self.rules.push((pattern.chars().collect(), scopes));
            self.patterns.push(pattern.to_owned());
        }
    }

    /// Whether no tool needs a scope of its own.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules as (pattern, scopes), for the status JSON.
    pub fn rules(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.patterns.iter().map(String::as_str).zip(self.rules.iter().map(|(_, s)| s.as_slice()))
    }

    /// Every scope some rule names.
    pub fn all_scopes(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().flat_map(|(_, scopes)| scopes.iter().map(String::as_str))
    }

    /// The scopes `tool` needs, rule by rule (repeats possible).
    pub fn needed<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let matches = |pattern: &[char]| {
            let name: Vec<char> = tool.chars().collect();
            crate::config::glob_match(pattern, &name)
        };
        self.rules.iter().filter(move |(p, _)| matches(p)).flat_map(|(_, scopes)| scopes.iter().map(String::as_str))
    }

    /// The scopes `tool` needs that `granted` lacks (each once); empty: it may be called.
    pub fn missing<'a>(&'a self, tool: &'a str, granted: &Granted) -> Vec<&'a str> {
        let mut missing: Vec<&str> = Vec::new();
        if self.is_empty() {
            return missing;
        }
        for scope in self.needed(tool) {
            if !granted.scopes.iter().any(|s| s == scope) && !missing.contains(&scope) {
                missing.push(scope);
            }
        }
        missing
    }
}

/// What one caller may do in one request: its grant and the rules (the `tools/list` filter and
/// the `tools/call` check a transport carries in its request's [`crate::server::Scope`]), for a
/// client of the access file its allow-lists, and on a virtual server's endpoint the view it
/// sees through. [`crate::server::screen`] applies it to every method.
#[derive(Debug, Clone)]
pub struct Access {
    /// What the token granted (nothing for an API key).
    pub granted: Granted,
    /// The per-tool rules.
    pub rules: std::sync::Arc<ToolScopes>,
    /// The access file's client this caller is (its key, or its token's subject or scopes):
    /// it sees and may use only the tools and prompts its globs allow. `None`: no such limit.
    pub client: Option<std::sync::Arc<super::access::AccessClient>>,
    /// The virtual server the request came to (its endpoint `/mcp/<name>`): only what it
    /// selects is there, under its names; the rules above judge a renamed tool by its original
    /// name. `None`: the whole server.
    pub view: Option<std::sync::Arc<crate::server::view::View>>,
}

impl Access {
    /// The access of an access-file client recognised by its API key (no token, no scope rule).
    pub fn of_client(client: std::sync::Arc<super::access::AccessClient>) -> Self {
        Access { granted: Granted::default(), rules: std::sync::Arc::default(), client: Some(client), view: None }
    }

    /// No limit of its own, seeing through `view` (a caller of a virtual server's endpoint
    /// whom nothing else limits).
    pub fn of_view(view: std::sync::Arc<crate::server::view::View>) -> Self {
        Access { granted: Granted::default(), rules: std::sync::Arc::default(), client: None, view: Some(view) }
    }

    /// This access seeing through `view`.
    pub fn through(&self, view: std::sync::Arc<crate::server::view::View>) -> Self {
        Access { view: Some(view), ..self.clone() }
    }

    /// The name the caller's rules judge the tool it calls `tool` by: on a virtual server the
    /// original of a renamed tool (`None` when the view shows no such tool), else `tool`.
    pub fn tool_original<'a>(&'a self, tool: &'a str) -> Option<&'a str> {
        match &self.view {
            Some(view) => view.tool_original(tool),
            None => Some(tool),
        }
    }

    /// Whether the caller may call (and so see) `tool`.
    pub fn may_call(&self, tool: &str) -> bool {
        let Some(tool) = self.tool_original(tool) else { return false };
        self.client.as_ref().is_none_or(|c| c.tools.matches(tool))
            && (self.rules.is_empty() || self.rules.missing(tool, &self.granted).is_empty())
    }

    /// Whether the caller may get (and so see) `prompt`.
    pub fn may_get_prompt(&self, prompt: &str) -> bool {
        self.view.as_ref().is_none_or(|v| v.shows_prompt(prompt))
            && self.client.as_ref().is_none_or(|c| c.prompts.matches(prompt))
    }

    /// Whether the caller may read (and so see, and subscribe to) the resource at `uri`.
    pub fn may_read(&self, uri: &str) -> bool {
        self.view.as_ref().is_none_or(|v| v.shows_resource(uri))
            && self.client.as_ref().is_none_or(|c| c.resources.matches(uri))
    }

    /// Whether the caller sees the resource template `uri_template`: its text itself is
    /// allowed, or some pattern may match a URI it produces (see
    /// [`super::access::Globs::may_see_template`]); reads through it are judged URI by URI.
    pub fn may_see_template(&self, uri_template: &str) -> bool {
        self.view.as_ref().is_none_or(|v| v.shows_template(uri_template))
            && self.client.as_ref().is_none_or(|c| c.resources.may_see_template(uri_template))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_tool_needs_the_scopes_of_every_matching_rule() {
        let rules = ToolScopes::new(vec![
            ("write_*".into(), vec!["files:write".into()]),
            ("*".into(), vec![]),
            ("write_file".into(), vec!["admin".into(), "files:write".into()]),
            ("remote__*".into(), vec!["remote".into()]),
        ]);
        let granted = |scopes: &[&str]| Granted {
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            subject: None,
            issuer: None,
        };
        assert_eq!(rules.missing("write_file", &granted(&[])), ["files:write", "admin"]);
        assert_eq!(rules.missing("write_file", &granted(&["admin"])), ["files:write"]);
        assert!(rules.missing("echo", &granted(&[])).is_empty());
        assert_eq!(rules.missing("remote__echo", &granted(&["files:write"])), ["remote"]);
        let access = Access { granted: granted(&["remote"]), rules: Arc::new(rules), client: None, view: None };
        assert!(access.may_call("remote__echo") && access.may_call("echo") && !access.may_call("write_x"));
        assert_eq!(access.rules.rules().count(), 3, "a rule without scopes is dropped");
    }
}
