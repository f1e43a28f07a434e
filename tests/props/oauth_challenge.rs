//! `WWW-Authenticate` values (from any server the client talks to): any bytes are read without
//! a panic, and a Bearer challenge written by the rules — any case of the scheme and names,
//! quoted values with escapes, other challenges before it — gives back exactly its parameters.

use mcpd::client::oauth::challenge::{bearer_challenge, MAX_CHALLENGE_BYTES};
use proptest::prelude::*;

use crate::support::config;

/// A parameter value: printable ASCII, quotes and backslashes included.
fn value() -> impl Strategy<Value = String> {
    "[ -~]{0,40}"
}

/// `name` in a random case.
fn any_case(name: &'static str) -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<bool>(), name.len()).prop_map(move |upper| {
        name.chars().zip(upper).map(|(c, up)| if up { c.to_ascii_uppercase() } else { c }).collect()
    })
}

fn quoted(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_are_read_without_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = bearer_challenge(&bytes);
    }

    #[test]
    fn a_written_bearer_challenge_reads_back(
        scheme in any_case("bearer"),
        scope_name in any_case("scope"),
        scope in value(),
        metadata in value(),
        error in "[a-z_]{1,20}",
        before in proptest::option::of(Just(r#"Basic realm="x, y=z", "#)),
    ) {
        let text = format!(
            "{}{scheme} {scope_name}={}, resource_metadata={} ,error={error}",
            before.unwrap_or_default(),
            quoted(&scope),
            quoted(&metadata)
        );
        prop_assume!(text.len() <= MAX_CHALLENGE_BYTES);
        let challenge = bearer_challenge(text.as_bytes()).expect("a Bearer challenge");
        prop_assert_eq!(challenge.scope, Some(scope));
        prop_assert_eq!(challenge.resource_metadata, Some(metadata));
        prop_assert_eq!(challenge.error, Some(error));
    }
}
