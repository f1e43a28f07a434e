//! Completions of federated entries: a `completion/complete` whose reference is a federated
//! prompt (by its exported name, sent to the remote under its own) or a federated resource or
//! template goes to the entry's owner ([`target`]), and the owner's answer is checked and
//! bounded before it is passed on ([`completion_result`]).
//!
//! The rules alone, over the federation's state; the gateway's completion delegate sends the
//! request.

use serde_json::{json, Map, Value};

use super::claims::Federation;

/// The most completion values passed on from a remote (the protocol's own limit).
const COMPLETION_VALUES: usize = 100;

/// The remote that completes `reference` (a `completion/complete`'s `ref`) and the reference as
/// that remote knows it; `None` when it is no federated prompt, resource or template.
pub(super) fn target(federation: &Federation, reference: &Map<String, Value>) -> Option<(String, Map<String, Value>)> {
    match reference.get("type").and_then(Value::as_str)? {
        "ref/prompt" => {
            let name = reference.get("name").and_then(Value::as_str)?;
            let export = federation.prompts.get(name)?;
            let mut remote_reference = reference.clone();
            remote_reference.insert("name".into(), json!(export.remote));
            Some((export.owner.clone(), remote_reference))
        }
        "ref/resource" => {
            let uri = reference.get("uri").and_then(Value::as_str)?;
            let export = federation.templates.get(uri).or_else(|| federation.resources.get(uri))?;
            let mut remote_reference = reference.clone();
            remote_reference.insert("uri".into(), json!(export.remote));
            Some((export.owner.clone(), remote_reference))
        }
        _ => None,
    }
}

/// The remote's completion answer, checked and bounded (at most [`COMPLETION_VALUES`] values,
/// strings of at most 4096 bytes); `None` when it is not a completion.
pub(super) fn completion_result(answer: &Value) -> Option<Map<String, Value>> {
    let completion = answer.get("completion").and_then(Value::as_object)?;
    let values = completion.get("values").and_then(Value::as_array)?;
    let kept: Vec<Value> = values
        .iter()
        .filter(|v| v.as_str().is_some_and(|s| s.len() <= 4096))
        .take(COMPLETION_VALUES)
        .cloned()
        .collect();
    let total = completion.get("total").and_then(Value::as_u64).unwrap_or(values.len() as u64);
    let has_more = completion.get("hasMore").and_then(Value::as_bool).unwrap_or(false) || values.len() > kept.len();
    let mut result = Map::new();
    result.insert("completion".into(), json!({ "values": kept, "total": total, "hasMore": has_more }));
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_completions_are_bounded_and_checked() {
        let values: Vec<Value> = (0..150).map(|i| json!(format!("v{i}"))).chain([json!(7)]).collect();
        let answer = json!({"completion": {"values": values, "total": 151}});
        let result = completion_result(&answer).unwrap();
        assert_eq!(result["completion"]["values"].as_array().unwrap().len(), 100);
        assert_eq!(result["completion"]["total"], 151);
        assert_eq!(result["completion"]["hasMore"], true);
        assert!(completion_result(&json!({"values": []})).is_none());
    }
}
