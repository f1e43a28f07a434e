//! What a reload changes: a servers file read again is compared with the remotes in force by
//! server name ([`diff_servers`]) into a [`ServersDiff`], which `Gateway::apply` then puts in
//! force.
//!
//! The comparison is a pure function of two lists of records, apart from the gateway's state so
//! that it is judged (and tested) on its own.

use crate::client::ServerRecord;

/// How a servers file read again differs from the remotes in force, by server name.
#[derive(Debug, Default)]
pub struct ServersDiff {
    /// Servers no longer in the file.
    pub removed: Vec<String>,
    /// New servers, in file order.
    pub added: Vec<ServerRecord>,
    /// Servers whose configuration changed (any field), in file order.
    pub changed: Vec<ServerRecord>,
    /// Servers configured exactly as before.
    pub unchanged: Vec<String>,
    /// Every server of the new file, in file order.
    pub order: Vec<String>,
}

impl ServersDiff {
    /// Whether nothing changed (the order aside).
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty() && self.changed.is_empty()
    }
}

impl std::fmt::Display for ServersDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |records: &[ServerRecord]| records.iter().map(|r| r.id.clone()).collect::<Vec<_>>().join(", ");
        write!(
            f,
            "added [{}], removed [{}], changed [{}], unchanged [{}]",
            names(&self.added),
            self.removed.join(", "),
            names(&self.changed),
            self.unchanged.join(", ")
        )
    }
}

/// Compares the records in force (`old`) with those of the file read again (`new`), by id.
pub fn diff_servers(old: &[ServerRecord], new: Vec<ServerRecord>) -> ServersDiff {
    let mut diff = ServersDiff {
        removed: old.iter().filter(|o| !new.iter().any(|n| n.id == o.id)).map(|o| o.id.clone()).collect(),
        order: new.iter().map(|n| n.id.clone()).collect(),
        ..ServersDiff::default()
    };
    for record in new {
        match old.iter().find(|o| o.id == record.id) {
            None => diff.added.push(record),
            Some(before) if before.same_configuration(&record) => diff.unchanged.push(record.id),
            Some(_) => diff.changed.push(record),
        }
    }
    diff
}

#[cfg(test)]
mod tests {
    use mcpd::model::Tool;
    use serde_json::{json, Value};

    use super::*;

    fn http(id: &str, document: Value) -> ServerRecord {
        ServerRecord::new(id, mcpd::client::config::ConfigDocument::from_value(document).unwrap())
    }

    #[test]
    fn a_reloaded_servers_file_is_compared_by_name_and_every_field() {
        let stdio = |id: &str, arg: &str| {
            let command = mcpd::client::config::StdioCommand::from_node(
                json!({"command": "node", "args": [arg]}).as_object().unwrap(),
            )
            .unwrap();
            ServerRecord::stdio(id, command)
        };
        let old = vec![
            http("kept", json!({"url": "http://127.0.0.1:1/mcp", "headers": {"A": "1"}})),
            http("url", json!({"url": "http://127.0.0.1:2/mcp"})),
            http("gone", json!({"url": "http://127.0.0.1:3/mcp"})),
            stdio("child", "a.js"),
            stdio("same child", "a.js"),
            http("timeout", json!({"url": "http://127.0.0.1:4/mcp"})),
        ];
        let mut longer = http("timeout", json!({"url": "http://127.0.0.1:4/mcp"}));
        longer.timeout_secs = 99;
        let mut listed = stdio("same child", "a.js");
        listed.tools = vec![Tool::new("t", "", json!({"type": "object"}))];
        let new = vec![
            http("new", json!({"url": "http://127.0.0.1:5/mcp"})),
            // Key order is not a change.
            http("kept", json!({"headers": {"A": "1"}, "url": "http://127.0.0.1:1/mcp"})),
            http("url", json!({"url": "http://127.0.0.1:22/mcp"})),
            stdio("child", "b.js"),
            listed,
            longer,
        ];
        let diff = diff_servers(&old, new);
        let ids = |records: &[ServerRecord]| records.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&diff.added), ["new"]);
        assert_eq!(diff.removed, ["gone"]);
        assert_eq!(ids(&diff.changed), ["url", "child", "timeout"]);
        assert_eq!(diff.unchanged, ["kept", "same child"], "the tools last fetched are no configuration");
        assert_eq!(diff.order, ["new", "kept", "url", "child", "same child", "timeout"]);
        assert!(!diff.is_empty());
        assert_eq!(
            diff.to_string(),
            "added [new], removed [gone], changed [url, child, timeout], unchanged [kept, same child]"
        );
        let again = diff_servers(&old, old.clone());
        assert!(again.is_empty() && again.unchanged.len() == old.len());
    }
}
