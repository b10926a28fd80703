//! Test support shared by the scan modules' tests: the differential check against
//! [`crate::envelope::classify`], and the proptest strategies that make lines.

use proptest::collection::vec;
use proptest::prelude::*;

use super::{assert_agrees, Shape};
use crate::envelope::classify;

/// Cases per property test: 1000 by default, so that the test suite stays quick in debug
/// builds on a small machine; `PROPTEST_CASES` for longer runs (as `tests/it/router_props.rs`).
pub(super) fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

/// The differential check: when `scan` decides, `classify` decides the same.
pub(super) fn agrees(line: &[u8]) -> Option<Shape> {
    assert_agrees(line, &classify(line))
}

fn string_lit() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"2.0\"".to_owned()),
        Just("\"session/update\"".to_owned()),
        "\"([a-z /é🙂✓]|\\\\[\"\\\\/bfnrtx]|\\\\u[0-9a-fA-F]{4}|\\\\ud83d|\\\\ude00|\t)*\"",
    ]
}

fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        "-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
        "-?0[0-9]|1e400|-|\\.5",
        string_lit(),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            vec((string_lit(), inner), 0..4).prop_map(|v| {
                let members: Vec<String> = v.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

fn member() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("\"jsonrpc\""),
        Just("\"id\""),
        Just("\"method\""),
        Just("\"params\""),
        Just("\"result\""),
        Just("\"error\""),
        Just("\"x\""),
        Just("\"i\\u0064\""),
    ];
    let value = prop_oneof![
        json_value(),
        Just("\"2.0\"".to_owned()),
        Just("7".to_owned()),
        Just("\"s/m\"".to_owned()),
        Just("{\"sessionId\":\"s1\"}".to_owned()),
    ];
    (name, value, "[ \t\r\n]{0,2}").prop_map(|(n, v, ws)| format!("{ws}{n}{ws}:{ws}{v}{ws}"))
}

/// A message with a string value somewhere inside a container, members in any
/// order (the string is not always the longest, nor always valid).
pub(super) fn skeleton() -> impl Strategy<Value = String> {
    let inner = (json_value(), string_lit(), json_value())
        .prop_map(|(a, s, b)| format!(r#"{{"a":{a},"t":[1,{s}],"b":{b}}}"#));
    let head = prop_oneof![
        Just(r#""jsonrpc":"2.0","method":"session/update","params""#),
        Just(r#""method":"m","jsonrpc":"2.0","id":7,"params""#),
        Just(r#""jsonrpc":"2.0","id":"x","result""#),
        Just(r#""jsonrpc":"2.0","id":null,"error""#),
        Just(r#""jsonrpc":"2.0","x""#),
    ];
    let tail = prop_oneof![Just(""), Just(r#","id":-1"#), Just(r#","z":"zz""#)];
    (head, inner, tail).prop_map(|(h, i, t)| format!("{{{h}:{i}{t}}}"))
}

/// An envelope of random members, then (sometimes) a random edit of its bytes.
pub(super) fn line() -> impl Strategy<Value = Vec<u8>> {
    let envelope = vec(member(), 0..7).prop_map(|m| format!("{{{}}}", m.join(",")));
    let edit = prop_oneof![
        4 => Just(None),
        1 => (any::<prop::sample::Index>(), prop::sample::select(
            &[b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'1', b'n', 0x01, 0x0c, 0xFF, 0xC3, 0xE2, 0x80, b' '][..]
        )).prop_map(|(i, b)| Some((i, Some(b)))),
        1 => any::<prop::sample::Index>().prop_map(|i| Some((i, None))),
    ];
    (envelope, edit).prop_map(|(e, edit)| {
        let mut bytes = e.into_bytes();
        match edit {
            Some((i, Some(b))) if !bytes.is_empty() => {
                let i = i.index(bytes.len());
                bytes[i] = b;
            }
            Some((i, None)) => bytes.truncate(i.index(bytes.len() + 1)),
            _ => {}
        }
        bytes
    })
}
