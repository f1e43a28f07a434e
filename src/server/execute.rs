//! Serving one request: dispatch on its [`Method`] against one catalog snapshot, shape the
//! result for its era (`resultType` and caching hints on the stateless wire), and apply the
//! server's time limit — a timed-out `tools/call` is a tool failure (`isError`) naming the
//! limit, any other request `-32603`.
//!
//! The core has no timer: the runtime passes the deadline as a future ([`TimeLimit`]).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{select, Either};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::call_params::CallParams;
use super::list::{PROMPTS, RESOURCES, TEMPLATES, TOOLS};
use super::log_level::parse_level;
use super::method::Method;
use super::operation::{complete, named_tool};
use super::options::CacheHint;
use super::reply::Reply;
use super::screen::{Kind, Screen};
use super::{McpServer, Scope};
use crate::catalog::{Catalog, ToolEntry};
use crate::error::ProtocolError;
use crate::jsonrpc::{self, Outgoing, Request, RequestId};
use crate::model::{CallToolResult, Tool};
use crate::version::Era;

/// How long a request may run: the limit (named in the answer when it is hit) and the runtime's
/// timer that resolves when it is over.
#[derive(Debug)]
pub struct TimeLimit<D> {
    duration: Duration,
    expired: D,
}

impl<D: Future<Output = ()>> TimeLimit<D> {
    /// A limit of `duration`, over with `expired`.
    pub fn new(duration: Duration, expired: D) -> Self {
        TimeLimit { duration, expired }
    }
}

/// How a tool call ended, as the metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolOutcome {
    /// A result.
    Ok,
    /// A result with `isError: true` (the tool failed, or ran out of time).
    IsError,
    /// A JSON-RPC error.
    Error,
}

/// One served request.
#[derive(Debug)]
pub struct Execution {
    /// Its method.
    pub method: Method,
    /// Its result (shaped for its era; a tool call's still typed) or error.
    pub outcome: Result<Reply, ProtocolError>,
    /// For a `tools/call`: the tool, when the catalog has it (only such tools are labelled in
    /// the metrics: other names are the client's to choose).
    pub tool: Option<Arc<Tool>>,
}

impl Execution {
    /// The tool a `tools/call` ran and how it ended.
    pub fn tool_outcome(&self) -> Option<(&str, ToolOutcome)> {
        let tool = self.tool.as_ref()?;
        let outcome = match &self.outcome {
            Ok(result) if result.is_tool_error() => ToolOutcome::IsError,
            Ok(_) => ToolOutcome::Ok,
            Err(_) => ToolOutcome::Error,
        };
        Some((&tool.name, outcome))
    }
}

impl McpServer {
    /// Serves one request within `limit` and returns its result shaped for the scope's era.
    ///
    /// `initialize` must be handled by the transport through [`McpServer::initialize`], because
    /// the transport owns what it agrees on; here it is an error. Session-only methods
    /// (`resources/subscribe`, …) and `subscriptions/listen` are the transport's too.
    pub async fn execute<D: Future<Output = ()>>(
        &self,
        request: Request,
        scope: &Scope,
        limit: TimeLimit<D>,
    ) -> Execution {
        let method = Method::parse(&request.method);
        let catalog = match &scope.catalog {
            Some(catalog) => catalog.clone(),
            None => self.catalog_for(scope.access.as_deref()),
        };
        // The screen first: a primitive the caller may not see is served from an empty catalog,
        // so that it answers as one that does not exist (the metrics still know the tool).
        let screen = Screen::new(scope.access.as_deref());
        let hidden = screen.hides(method, request.params.as_ref()).is_some();
        let tool = if method == Method::ToolsCall { named_tool(request.params.as_ref(), &catalog) } else { None };
        let empty;
        let (served, served_tool) = match hidden {
            true => {
                empty = Catalog::new();
                (&empty, None)
            }
            false => (&*catalog, tool),
        };
        let work = pin!(self.dispatch(method, request, scope, screen, served, served_tool));
        let outcome = match select(work, pin!(limit.expired)).await {
            Either::Left((outcome, _)) => outcome,
            Either::Right(((), _)) => timed_out(method, scope.version.era(), limit.duration),
        };
        Execution { method, outcome, tool: tool.map(|entry| entry.definition.clone()) }
    }

    async fn dispatch(
        &self,
        method: Method,
        request: Request,
        scope: &Scope,
        screen: Screen<'_>,
        catalog: &Catalog,
        tool: Option<&ToolEntry>,
    ) -> Result<Reply, ProtocolError> {
        let era = scope.version.era();
        let (params, meta) = (request.params.unwrap_or_default(), request.meta);
        let cache = &self.options.cache;
        let size = self.options.page_size;
        let (result, hint) = match (method, era) {
            (Method::Ping, Era::Stateful) => (Map::new(), None),
            (Method::Discover, Era::Stateless) => (self.discover(), Some(cache.discover)),
            (Method::SetLogLevel, Era::Stateful) => {
                parse_level(&params)?;
                (Map::new(), None)
            }
            (Method::ToolsList, _) => {
                let visible = |name: &str| screen.sees(Kind::Tool, name);
                let mut result = TOOLS.result(catalog, &params, size, &visible)?;
                // `execution.taskSupport` belongs to the tasks extension of the 2026-07-28 wire.
                if era == Era::Stateful {
                    if let Some(Value::Array(tools)) = result.get_mut("tools") {
                        for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
                            tool.remove("execution");
                        }
                    }
                }
                (result, Some(screen.list_hint(Kind::Tool, cache.tools)))
            }
            (Method::ToolsCall, _) => return self.call_tool(CallParams::take(params, meta, "name"), scope, tool).await,
            (Method::PromptsList, _) => {
                let visible = |name: &str| screen.sees(Kind::Prompt, name);
                (PROMPTS.result(catalog, &params, size, &visible)?, Some(screen.list_hint(Kind::Prompt, cache.prompts)))
            }
            (Method::PromptsGet, _) => {
                (self.get_prompt(CallParams::take(params, meta, "name"), scope, catalog).await?, None)
            }
            (Method::ResourcesList, _) => {
                let visible = |uri: &str| screen.sees(Kind::Resource, uri);
                let hint = screen.list_hint(Kind::Resource, cache.resources);
                (RESOURCES.result(catalog, &params, size, &visible)?, Some(hint))
            }
            (Method::TemplatesList, _) => {
                let visible = |template: &str| screen.sees(Kind::Template, template);
                let hint = screen.list_hint(Kind::Template, cache.templates);
                (TEMPLATES.result(catalog, &params, size, &visible)?, Some(hint))
            }
            (Method::ResourcesRead, _) => {
                (self.read_resource(CallParams::take(params, meta, "uri"), scope, catalog).await?, Some(cache.read))
            }
            (Method::Complete, _) => match catalog.completion_delegate().and_then(|d| d.complete(&params)) {
                Some(delegated) => (delegated.await.map_err(delegated_error)?, None),
                None => (complete(&params, catalog)?, None),
            },
            (method, Era::Stateless) if method.is_tasks() => {
                let Some(service) = self.task_service() else {
                    return Err(ProtocolError::MethodNotFound { method: request.method });
                };
                if !scope.client_capabilities.as_ref().is_some_and(crate::jsonrpc::ClientCapabilities::declares_tasks) {
                    return Err(crate::tasks::missing_extension());
                }
                return Ok(Reply::Value(Value::Object(service.serve(method, Some(params), scope.task_owner()).await?)));
            }
            _ => return Err(ProtocolError::MethodNotFound { method: request.method }),
        };
        Ok(Reply::Value(Value::Object(shape(result, era, hint))))
    }
}

/// Shapes a result for its era: on the stateless wire every result has a `resultType`, and a
/// cacheable one its hints (unless it asks for input, which is never cached).
fn shape(mut result: Map<String, Value>, era: Era, hint: Option<CacheHint>) -> Map<String, Value> {
    if era == Era::Stateless {
        let input_required = result.get("resultType").is_some_and(|t| t == "input_required");
        result.entry("resultType").or_insert_with(|| json!("complete"));
        if let Some(hint) = hint.filter(|_| !input_required) {
            result.insert("ttlMs".into(), json!(hint.ttl_ms));
            result.insert("cacheScope".into(), json!(hint.scope));
        }
    }
    result
}

/// A completion delegate's failure as a JSON-RPC error.
fn delegated_error(error: crate::catalog::ToolError) -> ProtocolError {
    match error {
        crate::catalog::ToolError::Protocol(e) => e,
        other => ProtocolError::Internal(other.to_string()),
    }
}

/// The answer of a request that ran out of time.
fn timed_out(method: Method, era: Era, limit: Duration) -> Result<Reply, ProtocolError> {
    if method != Method::ToolsCall {
        return Err(ProtocolError::Internal(format!(
            "request exceeded the server's time limit of {} s",
            limit.as_secs_f64()
        )));
    }
    let message =
        format!("The tool call exceeded the server's time limit of {} s and was stopped.", limit.as_secs_f64());
    Ok(Reply::tool(CallToolResult::error(message), era))
}

/// The JSON-RPC answer to request `id`: its result (a [`Reply`], or any other serializable
/// result), or its error as `era` numbers it.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
pub fn encode_answer<R: Serialize>(id: &RequestId, era: Era, outcome: &Result<R, ProtocolError>) -> Vec<u8> {
    match outcome {
        Ok(result) => jsonrpc::result_bytes(id, result),
        Err(error) => {
            let object = error.to_error_object(era);
            Outgoing::Error { id: Some(id), error: &object }.to_vec()
        }
    }
}

/// The answer to a batch: its members' answers as one JSON array; `None` when no member gets an
/// answer (a batch of notifications and responses).
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
pub fn encode_batch(answers: &[Vec<u8>]) -> Option<Vec<u8>> {
    if answers.is_empty() {
        return None;
    }
    let mut body = Vec::with_capacity(answers.iter().map(Vec::len).sum::<usize>() + answers.len() + 2);
    body.push(b'[');
    for (i, answer) in answers.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(answer);
    }
    body.push(b']');
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::model::{GetPromptResult, Prompt};
    use crate::version::ProtocolVersion;
    use serde_json::json;

    fn server() -> McpServer {
        let mut catalog = Catalog::new();
        catalog.add_tool(Tool::new("slow", "Slow", json!({"type": "object"})), |_a, _c| async {
            std::future::pending::<()>().await;
            Ok(CallToolResult::text("never"))
        });
        catalog.add_tool(Tool::new("fast", "Fast", json!({"type": "object"})), |_a, _c| async {
            Ok(CallToolResult::text("done"))
        });
        catalog.add_prompt(Prompt::new("slow", "Slow", Vec::new()), |_a, _c| async {
            std::future::pending::<()>().await;
            Ok(GetPromptResult { description: None, messages: Vec::new() })
        });
        McpServer::new(Default::default(), catalog)
    }

    fn call(name: &str) -> Request {
        Request::new(RequestId::Number(1), "tools/call", json!({"name": name}).as_object().cloned())
    }

    fn run(server: &McpServer, request: Request, version: ProtocolVersion, expired: bool) -> Execution {
        let deadline = async move {
            if !expired {
                std::future::pending::<()>().await;
            }
        };
        let limit = TimeLimit::new(Duration::from_millis(1500), deadline);
        futures_util::FutureExt::now_or_never(server.execute(request, &Scope::new(version), limit))
            .expect("nothing here waits on I/O")
    }

    /// A result as the JSON it is written as.
    fn value(outcome: &Result<Reply, ProtocolError>) -> Value {
        outcome.clone().expect("a result, not an error").into_value().expect("results are objects")
    }

    #[test]
    fn a_timed_out_tool_call_is_an_is_error_result_naming_the_limit() {
        let server = server();
        let execution = run(&server, call("slow"), ProtocolVersion::STATELESS, true);
        let result = &value(&execution.outcome);
        assert_eq!(result["isError"], true);
        assert!(result["content"][0]["text"].as_str().unwrap().contains("time limit of 1.5 s"));
        assert_eq!(result["resultType"], "complete");
        assert_eq!(execution.tool_outcome(), Some(("slow", ToolOutcome::IsError)));
        let stateful = run(&server, call("slow"), ProtocolVersion::V2025_11_25, true);
        assert!(value(&stateful.outcome).get("resultType").is_none());
    }

    #[test]
    fn other_timed_out_requests_are_internal_errors() {
        let params = json!({"name": "slow"}).as_object().cloned();
        let request = Request::new(RequestId::Number(2), "prompts/get", params);
        let execution = run(&server(), request, ProtocolVersion::V2025_11_25, true);
        let Err(ProtocolError::Internal(message)) = &execution.outcome else { panic!("{:?}", execution.outcome) };
        assert_eq!(message, "request exceeded the server's time limit of 1.5 s");
        assert_eq!(execution.method, Method::PromptsGet);
        assert_eq!(execution.tool_outcome(), None);
    }

    #[test]
    fn a_batch_answer_is_a_json_array_and_none_when_empty() {
        assert_eq!(encode_batch(&[b"1".to_vec(), b"2".to_vec()]), Some(b"[1,2]".to_vec()));
        assert_eq!(encode_batch(&[]), None);
    }

    #[test]
    fn a_caller_sees_and_calls_only_the_tools_its_scopes_allow() {
        use crate::auth::oauth::Granted;
        use crate::auth::scopes::{Access, ToolScopes};
        let server = server();
        let rules = Arc::new(ToolScopes::new(vec![("slow".into(), vec!["slow:run".into()])]));
        let access = |scopes: &[&str]| {
            let granted =
                Granted { scopes: scopes.iter().map(|s| s.to_string()).collect(), subject: None, issuer: None };
            Some(Arc::new(Access { granted, rules: rules.clone(), client: None, view: None }))
        };
        let list = |access| {
            let request = Request::new(RequestId::Number(3), "tools/list", None);
            let scope = Scope { access, ..Scope::new(ProtocolVersion::STATELESS) };
            let limit = TimeLimit::new(Duration::from_secs(1), std::future::pending::<()>());
            let execution = futures_util::FutureExt::now_or_never(server.execute(request, &scope, limit)).unwrap();
            value(&execution.outcome)
        };
        let names = |v: &Value| v["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect::<Vec<_>>();
        assert_eq!(names(&list(access(&[]))), [json!("fast")]);
        assert_eq!(list(access(&[]))["cacheScope"], "private");
        assert_eq!(names(&list(access(&["slow:run"]))), [json!("fast"), json!("slow")]);
        assert_eq!(names(&list(None)), [json!("fast"), json!("slow")]);
        let scope = Scope { access: access(&[]), ..Scope::new(ProtocolVersion::V2025_11_25) };
        let limit = TimeLimit::new(Duration::from_secs(1), std::future::pending::<()>());
        let hidden = futures_util::FutureExt::now_or_never(server.execute(call("slow"), &scope, limit)).unwrap();
        assert!(matches!(hidden.outcome, Err(ProtocolError::InvalidParams(ref m)) if m == "Unknown tool: slow"));
    }

    #[test]
    fn a_tools_lane_runs_its_plain_stateless_calls_and_its_handler_every_other() {
        use crate::catalog::{BoxFuture, LaneCall, LaneResult, ToolError, ToolLane};
        use crate::jsonrpc::ClientCapabilities;
        use crate::model::PassedResult;
        use crate::mrtr::InputRequired;
        use std::sync::atomic::{AtomicUsize, Ordering};
        const TEXT: &str = r#"{"content":[{"type":"text","text":"lane"}],"x":{"kept":[1,2]},"resultType":"complete"}"#;
        /// What a test lane answers (`None`: not its call).
        type Answer = fn() -> Option<Result<LaneResult, ToolError>>;
        /// Counts its calls and answers as its [`Answer`] says.
        struct Lane(Arc<AtomicUsize>, Answer);
        impl ToolLane for Lane {
            fn start(
                &self,
                arguments: &Map<String, Value>,
                call: &LaneCall<'_>,
            ) -> Option<BoxFuture<Result<LaneResult, ToolError>>> {
                assert_eq!(arguments.get("a"), Some(&json!(1)));
                assert!(call.client_capabilities.is_some_and(|c| c.value()["elicitation"].is_object()));
                self.0.fetch_add(1, Ordering::SeqCst);
                let answer = (self.1)()?;
                Some(Box::pin(async move { answer }))
            }
        }
        let passed = || {
            let text = serde_json::value::RawValue::from_string(TEXT.to_owned()).ok()?;
            Some(Ok(LaneResult::Passed(PassedResult::check(text)?)))
        };
        let answers: [(&str, Answer); 7] = [
            ("passed", passed),
            ("typed", || Some(Ok(LaneResult::Result(CallToolResult::text("typed"))))),
            ("failed", || Some(Err(ToolError::failed("remote down")))),
            ("asks", || {
                Some(Err(ToolError::InputRequired(InputRequired::new().elicit("k", "ok?", json!({})).state(json!(7)))))
            }),
            ("panics", || panic!("lane broke")),
            ("declines", || None),
            ("gives back", || Some(Ok(LaneResult::Declined))),
        ];
        let calls = Arc::new(AtomicUsize::new(0));
        let mut catalog = Catalog::new();
        for (name, answer) in answers {
            let handler = |_a, _c| async { Ok(CallToolResult::text("handler")) };
            catalog.add_tool_with_lane(
                Tool::new(name, "T", json!({"type": "object"})),
                handler,
                Lane(calls.clone(), answer),
            );
        }
        let server = McpServer::new(Default::default(), catalog);
        let scope = |version| Scope {
            client_capabilities: Some(ClientCapabilities::from(json!({"elicitation": {}}))),
            ..Scope::new(version)
        };
        let call = |name: &str, params: Value, version| {
            let mut params = params.as_object().cloned().unwrap_or_default();
            params.insert("name".into(), json!(name));
            params.insert("arguments".into(), json!({"a": 1}));
            let request = Request::new(RequestId::Number(1), "tools/call", Some(params));
            let limit = TimeLimit::new(Duration::from_secs(1), std::future::pending::<()>());
            futures_util::FutureExt::now_or_never(server.execute(request, &scope(version), limit)).unwrap()
        };
        let stateless = ProtocolVersion::STATELESS;
        // The usual answer, written as the text it came as, members unknown here included.
        let execution = call("passed", json!({}), stateless);
        let written = encode_answer(&RequestId::Number(1), Era::Stateless, &execution.outcome);
        assert_eq!(String::from_utf8(written).unwrap(), format!(r#"{{"jsonrpc":"2.0","id":1,"result":{TEXT}}}"#));
        assert_eq!(execution.tool_outcome(), Some(("passed", ToolOutcome::Ok)));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(value(&call("typed", json!({}), stateless).outcome)["content"][0]["text"], "typed");
        let failed = value(&call("failed", json!({}), stateless).outcome);
        assert_eq!((failed["isError"].clone(), failed["resultType"].clone()), (json!(true), json!("complete")));
        // A request for input is this call's own round, its state sealed as the handler's is.
        let round = value(&call("asks", json!({}), stateless).outcome);
        assert_eq!(round["resultType"], "input_required");
        assert_eq!(round["inputRequests"]["k"]["method"], "elicitation/create");
        let state = round["requestState"].as_str().expect("a sealed state");
        let panicked = value(&call("panics", json!({}), stateless).outcome);
        assert!(panicked["content"][0]["text"].as_str().unwrap().contains("lane broke"));
        assert_eq!(value(&call("declines", json!({}), stateless).outcome)["content"][0]["text"], "handler");
        assert_eq!(value(&call("gives back", json!({}), stateless).outcome)["content"][0]["text"], "handler");
        assert_eq!(calls.load(Ordering::SeqCst), 7);
        // Not plain: an earlier era, answers to a round (the handler's rounds check the state).
        assert_eq!(
            value(&call("passed", json!({}), ProtocolVersion::V2025_11_25).outcome)["content"][0]["text"],
            "handler"
        );
        let retry = json!({"inputResponses": {"k": {"action": "accept"}}, "requestState": state});
        assert_eq!(value(&call("asks", retry, stateless).outcome)["content"][0]["text"], "handler");
        let forged = call("asks", json!({"requestState": "forged"}), stateless);
        assert!(matches!(forged.outcome, Err(ProtocolError::InvalidParams(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 7, "the lane ran none of those");
    }

    #[test]
    fn only_tools_in_the_catalog_are_labelled() {
        let server = server();
        let fast = run(&server, call("fast"), ProtocolVersion::V2025_11_25, false);
        assert_eq!(fast.tool_outcome(), Some(("fast", ToolOutcome::Ok)));
        let unknown = run(&server, call("nope"), ProtocolVersion::V2025_11_25, false);
        assert!(matches!(unknown.outcome, Err(ProtocolError::InvalidParams(_))));
        assert_eq!(unknown.tool_outcome(), None);
    }
}
