//! Names a task hands out: its own id (unguessable, a bearer handle to the result) and the keys
//! of its input requests (never reused over the task's lifetime).

use serde_json::{json, Map, Value};

/// Input-request keys of one task: a handler names its requests (`"confirm"`), and a task must
/// never reuse a key on the wire. A key's first use is kept as it is; a later request under the
/// same handler key gets `KEY#2`, `KEY#3`, … The map translates answers back.
#[derive(Debug, Clone, Default)]
pub struct KeyMap {
    /// Wire key → handler key, every key issued so far.
    issued: Map<String, Value>,
}

impl KeyMap {
    /// A map with nothing issued.
    pub fn new() -> Self {
        KeyMap::default()
    }

    /// The wire key for a new request under `handler_key` (never one issued before).
    pub fn issue(&mut self, handler_key: &str) -> String {
        let mut wire = handler_key.to_owned();
        let mut n = 1;
        while self.issued.contains_key(&wire) {
            n += 1;
            wire = format!("{handler_key}#{n}");
        }
        self.issued.insert(wire.clone(), json!(handler_key));
        wire
    }

    /// The handler key a wire key was issued for.
    pub fn handler_key<'a>(&'a self, wire: &str) -> Option<&'a str> {
        self.issued.get(wire).and_then(Value::as_str)
    }

    /// Renames a handler's requests to fresh wire keys.
    pub fn issue_all(&mut self, requests: Map<String, Value>) -> Map<String, Value> {
        requests.into_iter().map(|(key, request)| (self.issue(&key), request)).collect()
    }

    /// Renames answers by wire key back to the handler's keys (unknown wire keys are dropped).
    pub fn to_handler_keys(&self, answers: Map<String, Value>) -> Map<String, Value> {
        answers
            .into_iter()
            .filter_map(|(wire, answer)| self.handler_key(&wire).map(|key| (key.to_owned(), answer)))
            .collect()
    }
}

/// A fresh task id: 128 random bits, hex (unguessable: ids are bearer handles to results).
///
/// # Errors
/// When the operating system has no randomness to give.
pub fn new_task_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
