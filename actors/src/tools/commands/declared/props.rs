//! Property tests of argv template expansion: a substituted value is never split, joined or
//! read again — whatever it holds (white space, quotes, `;`, `$(…)`, newlines, text shaped like
//! another `{placeholder}`), every template element gives at most one argv element (an exact
//! `{prop}` one element per array item), the value appears verbatim where its placeholder was,
//! and an element whose argument is absent is left out whole. Parsing an element and writing
//! its pieces back gives the element.

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value};

use super::{expand, parse_element, Piece};

/// `MCPD_PROPTEST_CASES` cases (the core's property crate documents it), 256 by default.
fn config() -> ProptestConfig {
    let cases = std::env::var("MCPD_PROPTEST_CASES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(256);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

const NAMES: [&str; 4] = ["name", "n-2", "x_y", "Z9"];

/// One piece of a template element as the test writes it: literal text (with braces that do not
/// form a placeholder) or a placeholder.
#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Arg(&'static str),
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        3 => "[-a-z0-9=./ %$;'\"]{1,6}".prop_map(Part::Text),
        1 => select(vec!["{}", "{ x }", "{a b}", "{-", "{é}"]).prop_map(|t| Part::Text(t.to_owned())),
        3 => select(NAMES.to_vec()).prop_map(Part::Arg),
    ]
}

fn write(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.clone(),
            Part::Arg(name) => format!("{{{name}}}"),
        })
        .collect()
}

/// Values an argument may hold: text of any kind (never NUL), numbers, booleans; sometimes an
/// array of them, sometimes absent or null.
fn value() -> impl Strategy<Value = Option<Value>> {
    let text = prop_oneof![
        "[ -~]{0,10}",
        select(vec!["a b", " ", "", "{name}", "{x_y}", "$(rm -rf x)", "a;b", "'\"", "line\nbreak", "--flag"])
            .prop_map(str::to_owned),
        prop::collection::vec(any::<char>().prop_map(|c| if c == '\0' { ' ' } else { c }), 0..6)
            .prop_map(String::from_iter),
    ];
    let scalar = prop_oneof![4 => text.prop_map(Value::String), 1 => any::<i64>().prop_map(Value::from), 1 => any::<bool>().prop_map(Value::Bool)];
    prop_oneof![
        6 => scalar.clone().prop_map(Some),
        1 => prop::collection::vec(scalar, 0..3).prop_map(|items| Some(Value::Array(items))),
        1 => Just(Some(Value::Null)),
        1 => Just(None),
    ]
}

/// The argv text of a scalar.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The argv the template must give, or `None` when a value cannot be argv text.
fn expected(template: &[Vec<Part>], arguments: &Map<String, Value>) -> Option<Vec<String>> {
    let mut argv = Vec::new();
    for element in template {
        if let [Part::Arg(name)] = element.as_slice() {
            match arguments.get(*name) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        argv.push(text_of(item)?);
                    }
                }
                Some(value) => argv.push(text_of(value)?),
            }
            continue;
        }
        let mut text = String::new();
        let mut absent = false;
        for part in element {
            match part {
                Part::Text(t) => text.push_str(t),
                Part::Arg(name) => match arguments.get(*name) {
                    None | Some(Value::Null) => absent = true,
                    Some(value) => text.push_str(&text_of(value)?),
                },
            }
        }
        if !absent {
            argv.push(text);
        }
    }
    Some(argv)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_element_parses_into_pieces_that_write_it_back(element in prop_oneof![
        prop::collection::vec(part(), 0..6).prop_map(|parts| write(&parts)),
        any::<String>(),
        "[{}a-z_ -]{0,12}",
    ]) {
        let pieces = parse_element(&element);
        let written: String = pieces.iter().map(|p| match p {
            Piece::Text(t) => t.clone(),
            Piece::Arg(name) => format!("{{{name}}}"),
        }).collect();
        prop_assert_eq!(&written, &element);
        for pair in pieces.windows(2) {
            prop_assert!(!matches!(pair, [Piece::Text(_), Piece::Text(_)]), "texts are merged: {:?}", pieces);
        }
        for piece in &pieces {
            match piece {
                Piece::Text(t) => prop_assert!(!t.is_empty() || pieces.len() == 1),
                Piece::Arg(name) => prop_assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
            }
        }
    }

    #[test]
    fn a_value_is_never_split_or_read_again(
        template in prop::collection::vec(prop::collection::vec(part(), 1..4), 1..6),
        values in prop::collection::vec(value(), NAMES.len()),
    ) {
        let mut template = template;
        template.insert(0, vec![Part::Text("prog".into())]);
        let arguments: Map<String, Value> =
            NAMES.iter().zip(values).filter_map(|(name, v)| v.map(|v| ((*name).to_owned(), v))).collect();
        let parsed: Vec<Vec<Piece>> = template.iter().map(|e| parse_element(&write(e))).collect();
        let argv = expand(&parsed, &arguments);
        match expected(&template, &arguments) {
            Some(expected) => prop_assert_eq!(argv.unwrap(), expected),
            None => prop_assert!(argv.is_err(), "a value that cannot be argv text is refused"),
        }
        let scalars_present = NAMES.iter().all(|n| arguments.get(*n).is_some_and(|v| !v.is_null() && !v.is_array()));
        if scalars_present {
            prop_assert_eq!(expand(&parsed, &arguments).unwrap().len(), template.len(), "one argv element per template element");
        }
    }

    #[test]
    fn a_nul_byte_is_refused(value in "[a-z]{0,3}\0[a-z]{0,3}", exact in any::<bool>()) {
        let element = if exact { "{name}" } else { "--name={name}" };
        let template = vec![parse_element("prog"), parse_element(element)];
        let mut arguments = Map::new();
        arguments.insert("name".into(), Value::String(value));
        prop_assert!(expand(&template, &arguments).is_err());
    }
}
