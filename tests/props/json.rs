//! Generators of JSON and of text: values of every JSON type (numbers at the edges of `i64`,
//! `u64` and `f64`, strings with control characters, quotes, escapes and non-BMP characters),
//! nested a few levels deep, and objects whose members come in any order.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Text as peers send it: mostly short and plain, sometimes any characters at all.
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9_./:-]{0,12}",
        2 => prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        1 => "[ \t\"\\\\{}\\[\\]=?]{0,6}",
        1 => Just(String::new()),
    ]
}

/// An object member name: plain, or any text.
pub(crate) fn key() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-z_]{1,8}", 1 => text()]
}

/// A JSON number, including the edges serde_json represents differently (`u64` beyond `i64`,
/// floats with and without a fraction).
pub(crate) fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (-1000i64..1000).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        // Finite floats only (JSON has no NaN or infinity); mapped, not filtered, so that long runs
        // never stop on too many rejected cases.
        1 => any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        1 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0)].prop_map(Value::from),
        1 => Just(Value::from(u64::MAX)),
    ]
}

/// A scalar JSON value.
pub(crate) fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), number(), text().prop_map(Value::String),]
}

/// Any JSON value, nested up to four levels.
pub(crate) fn value() -> BoxedStrategy<Value> {
    scalar()
        .prop_recursive(4, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..5).prop_map(|members| Value::Object(object(members))),
            ]
        })
        .boxed()
}

/// Any JSON object.
pub(crate) fn object_value() -> BoxedStrategy<Value> {
    prop::collection::vec((key(), value()), 0..5).prop_map(|members| Value::Object(object(members))).boxed()
}

/// An object from members in the given order (a repeated name keeps its first position and its
/// last value, as parsing does).
pub(crate) fn object(members: Vec<(String, Value)>) -> Map<String, Value> {
    members.into_iter().collect()
}
