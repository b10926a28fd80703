//! The head of a `session/update` too long to parse whole (over 256 KiB: a new file of
//! megabytes in a diff): what a person needs to judge its tool call (id, title, kind,
//! locations, its command, and each diff's path and first lines), read with bounded memory.
//!
//! Invariants:
//! - The line is scanned, not built into a tree: members, items and long strings are taken
//!   as slices of it ([`RawValue`]); only a member of at most [`WHOLE`] bytes is parsed
//!   whole, a longer string gives its first [`TEXT_HEAD`] bytes (cut at a line's end), a
//!   longer object or array its first [`ITEMS`] members, each read the same way.
//! - What is made is at most about `ITEMS * (WHOLE + TEXT_HEAD)` per level, whatever the
//!   line's length; the tool call store then fits it to its digest as any other.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A member parsed whole when its JSON text is at most this long.
const WHOLE: usize = 16 << 10;
/// The first bytes of a longer string that are read.
const TEXT_HEAD: usize = 8 << 10;
/// The first members of a longer object, or items of a longer array, that are read.
const ITEMS: usize = 16;
/// How deep a long value is read into.
const DEPTH: usize = 4;

/// What is read of a long `session/update`.
pub(super) struct Head {
    pub session: Option<String>,
    /// The update, its long members cut.
    pub update: Value,
    /// Whether its `rawInput` (a command, where the shell went) was read whole.
    pub input_whole: bool,
}

/// The `sessionId` and the `update` of a `session/update`'s params, read as above; `None`
/// when they are not JSON of that shape.
pub(super) fn head(params: &str) -> Option<Head> {
    let members: First = serde_json::from_str(params).ok()?;
    let mut session = None;
    let mut update = None;
    for (k, v) in members.0 {
        match k.as_ref() {
            "sessionId" => session = serde_json::from_str::<String>(v.get()).ok(),
            "update" => update = Some(v),
            _ => {}
        }
    }
    let raw = update?;
    let input_whole = serde_json::from_str::<First>(raw.get()).is_ok_and(|m| {
        m.0.iter()
            .all(|(k, v)| k != "rawInput" || v.get().len() <= WHOLE)
    });
    Some(Head {
        session,
        update: read(raw, 0),
        input_whole,
    })
}

/// `raw` as a value: whole when short, else its head.
fn read(raw: &RawValue, depth: usize) -> Value {
    let text = raw.get();
    if text.len() <= WHOLE {
        return serde_json::from_str(text).unwrap_or(Value::Null);
    }
    match text.as_bytes().first() {
        Some(b'"') => Value::String(string_head(text)),
        Some(b'{') if depth < DEPTH => match serde_json::from_str::<First>(text) {
            Ok(First(members)) => Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), read(v, depth + 1)))
                    .collect::<Map<_, _>>(),
            ),
            Err(_) => Value::Null,
        },
        Some(b'[') if depth < DEPTH => match serde_json::from_str::<FirstItems>(text) {
            Ok(FirstItems(items)) => {
                Value::Array(items.into_iter().map(|v| read(v, depth + 1)).collect())
            }
            Err(_) => Value::Null,
        },
        _ => Value::Null,
    }
}

/// The first lines of the JSON string `text` (with its quotes) within [`TEXT_HEAD`] bytes,
/// with `…` where it was cut.
fn string_head(text: &str) -> String {
    let b = text.as_bytes();
    // The last place before TEXT_HEAD that is not inside an escape or a character.
    let (mut i, mut cut) = (1, 1);
    while i < b.len() && i <= TEXT_HEAD {
        cut = i;
        i += match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            b'"' => break,
            _ => 1,
        };
    }
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut s: String = serde_json::from_str(&format!("{}\"", &text[..cut])).unwrap_or_default();
    if let Some(end) = s.rfind('\n') {
        s.truncate(end + 1);
    }
    s.push('…');
    s
}

/// The first [`ITEMS`] members of an object, as slices of its text; the rest skipped.
struct First<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for First<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = First<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<First<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                    if out.len() < ITEMS {
                        out.push((k, m.next_value::<&'de RawValue>()?));
                    } else {
                        m.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(First(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// The first [`ITEMS`] items of an array, as slices of its text; the rest skipped.
struct FirstItems<'a>(Vec<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstItems<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstItems<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<FirstItems<'a>, S::Error> {
                let mut out = Vec::new();
                while out.len() < ITEMS {
                    match s.next_element::<&'de RawValue>()? {
                        Some(v) => out.push(v),
                        None => return Ok(FirstItems(out)),
                    }
                }
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstItems(out))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new file of 1 MiB and one of 10 MiB: the tool call's members and the diff's path
    /// and first lines are read; what is made stays small.
    #[test]
    fn a_long_diff_gives_its_tool_call_and_first_lines() {
        for size in [1 << 20, 10 << 20] {
            let body: String = (0..)
                .map(|i| format!("line {i} \"quoted\" \\ tab\t é\n"))
                .take_while({
                    let mut n = 0;
                    move |l: &String| {
                        n += l.len();
                        n <= size
                    }
                })
                .collect();
            let params = serde_json::json!({
                "sessionId": "s1",
                "update": {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "t1",
                    "title": "Write big.txt",
                    "kind": "edit",
                    "locations": [{"path": "/p/big.txt"}],
                    "rawInput": {"file_path": "/p/big.txt", "content": body},
                    "content": [{"type": "diff", "path": "/p/big.txt", "oldText": null, "newText": body}],
                }
            })
            .to_string();
            assert!(params.len() > size);
            let h = head(&params).expect("read");
            assert_eq!(h.session.as_deref(), Some("s1"));
            assert!(!h.input_whole, "its rawInput holds the file");
            let u = h.update;
            assert_eq!(u["toolCallId"], "t1");
            assert_eq!(u["title"], "Write big.txt");
            assert_eq!(u["kind"], "edit");
            assert_eq!(u["locations"][0]["path"], "/p/big.txt");
            let diff = &u["content"][0];
            assert_eq!(diff["path"], "/p/big.txt");
            let text = diff["newText"].as_str().unwrap();
            assert!(
                text.starts_with("line 0 \"quoted\" \\ tab\t é\nline 1 "),
                "{text:.80}"
            );
            assert!(text.ends_with("\n…"), "cut at a line's end");
            assert!(u.to_string().len() < 64 << 10, "{}", u.to_string().len());
        }
    }

    /// Escapes and characters are never cut in two.
    #[test]
    fn a_string_is_cut_between_escapes_and_characters() {
        for pad in 0..8 {
            let s = format!(
                "{}{}",
                "x".repeat(TEXT_HEAD - 4 + pad),
                "\u{1F600}\n\\\"é".repeat(10_000)
            );
            let json = serde_json::to_string(&s).unwrap();
            let h = string_head(&json);
            assert!(h.ends_with('…'));
            assert!(s.starts_with(h.trim_end_matches('…')), "pad {pad}");
        }
    }
}
