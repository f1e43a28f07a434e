//! The MCP request methods mcpd knows, as one enum: dispatch ([`super::McpServer::execute`]),
//! the stateless wire's method table and the metrics labels all read it, so a method is named in
//! one place.

use serde_json::Value;

use crate::jsonrpc::{Notification, RequestId};

/// A client-to-server request method (parsed once from the request's `method` string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `initialize` (handshake era; answered by the transport).
    Initialize,
    /// `ping` (handshake era).
    Ping,
    /// `server/discover` (stateless wire).
    Discover,
    /// `subscriptions/listen` (stateless wire; answered by the transport as a stream).
    Listen,
    /// `logging/setLevel` (handshake era).
    SetLogLevel,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    TemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe` (a session's or stdio connection's own state).
    Subscribe,
    /// `resources/unsubscribe`.
    Unsubscribe,
    /// `completion/complete`.
    Complete,
    /// `tasks/get` (the tasks extension, stateless wire).
    TasksGet,
    /// `tasks/update`.
    TasksUpdate,
    /// `tasks/cancel`.
    TasksCancel,
    /// Any other method (`-32601` wherever it arrives).
    Unknown,
}

impl Method {
    /// Every known method (not [`Method::Unknown`]).
    pub const KNOWN: [Method; 18] = [
        Method::Initialize,
        Method::Ping,
        Method::Discover,
        Method::Listen,
        Method::SetLogLevel,
        Method::ToolsList,
        Method::ToolsCall,
        Method::PromptsList,
        Method::PromptsGet,
        Method::ResourcesList,
        Method::TemplatesList,
        Method::ResourcesRead,
        Method::Subscribe,
        Method::Unsubscribe,
        Method::Complete,
        Method::TasksGet,
        Method::TasksUpdate,
        Method::TasksCancel,
    ];

    /// The method a request names.
    pub fn parse(name: &str) -> Method {
        match name {
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "server/discover" => Method::Discover,
            "subscriptions/listen" => Method::Listen,
            "logging/setLevel" => Method::SetLogLevel,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            "prompts/list" => Method::PromptsList,
            "prompts/get" => Method::PromptsGet,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::TemplatesList,
            "resources/read" => Method::ResourcesRead,
            "resources/subscribe" => Method::Subscribe,
            "resources/unsubscribe" => Method::Unsubscribe,
            "completion/complete" => Method::Complete,
            "tasks/get" => Method::TasksGet,
            "tasks/update" => Method::TasksUpdate,
            "tasks/cancel" => Method::TasksCancel,
            _ => Method::Unknown,
        }
    }

    /// The method's name on the wire; `None` for an unknown method (whose name is the client's
    /// to choose, so it never becomes a metrics label).
    pub const fn wire_name(self) -> Option<&'static str> {
        Some(match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::Discover => "server/discover",
            Method::Listen => "subscriptions/listen",
            Method::SetLogLevel => "logging/setLevel",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::ResourcesList => "resources/list",
            Method::TemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::Subscribe => "resources/subscribe",
            Method::Unsubscribe => "resources/unsubscribe",
            Method::Complete => "completion/complete",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
            Method::Unknown => return None,
        })
    }

    /// Whether the 2026-07-28 stateless wire has this method (it dropped the handshake, `ping`,
    /// `logging/setLevel` and the per-connection subscriptions).
    pub const fn is_stateless(self) -> bool {
        matches!(
            self,
            Method::Discover
                | Method::Listen
                | Method::ToolsList
                | Method::ToolsCall
                | Method::PromptsList
                | Method::PromptsGet
                | Method::ResourcesList
                | Method::TemplatesList
                | Method::ResourcesRead
                | Method::Complete
                | Method::TasksGet
                | Method::TasksUpdate
                | Method::TasksCancel
        )
    }

    /// Whether this is one of the tasks extension's methods.
    pub const fn is_tasks(self) -> bool {
        matches!(self, Method::TasksGet | Method::TasksUpdate | Method::TasksCancel)
    }

    /// The `params` field an `Mcp-Name` header must repeat on the stateless wire, if any.
    pub const fn name_param(self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::ResourcesRead => Some("uri"),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
            _ => None,
        }
    }
}

/// The method of the notification that cancels an in-flight request.
pub const CANCELLED: &str = "notifications/cancelled";

/// The request a `notifications/cancelled` names (`None` for any other notification, or one
/// without a readable `requestId`).
pub fn cancelled_request(notification: &Notification) -> Option<RequestId> {
    if notification.method != CANCELLED {
        return None;
    }
    notification.params.as_ref().and_then(|p| p.get("requestId")).and_then(RequestId::from_value)
}

/// Reads the `uri` string param that `resources/read`, `resources/subscribe` and
/// `resources/unsubscribe` carry.
pub(crate) fn uri_param(params: Option<&serde_json::Map<String, Value>>) -> Option<&str> {
    params.and_then(|p| p.get("uri")).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_method_parses_back_from_its_wire_name() {
        for method in Method::KNOWN {
            let name = method.wire_name().expect("known methods have names");
            assert_eq!(Method::parse(name), method, "{name}");
        }
        assert_eq!(Method::parse("tools/cal"), Method::Unknown);
        assert_eq!(Method::Unknown.wire_name(), None);
    }

    #[test]
    fn the_stateless_wire_has_no_handshake_ping_or_connection_state() {
        let stateless: Vec<_> = Method::KNOWN.into_iter().filter(|m| m.is_stateless()).collect();
        assert_eq!(stateless.len(), 13);
        for method in [Method::Initialize, Method::Ping, Method::SetLogLevel, Method::Subscribe, Method::Unsubscribe] {
            assert!(!method.is_stateless(), "{method:?}");
        }
    }

    #[test]
    fn only_cancelled_notifications_name_a_request_to_cancel() {
        let cancel = |method: &str| Notification {
            method: method.into(),
            params: serde_json::json!({"requestId": 7}).as_object().cloned(),
        };
        assert_eq!(cancelled_request(&cancel(CANCELLED)), Some(RequestId::Number(7)));
        assert_eq!(cancelled_request(&cancel("notifications/progress")), None);
    }
}
