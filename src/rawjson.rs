//! Merging keys into a JSON message without re-serializing the rest of it, and reading an
//! object's members without parsing the others: the low-level JSON the capability merges,
//! the question model and the `expiresAt` stamp share.
//!
//! Only the objects on the path to a new key are rebuilt; every other member keeps its exact
//! original text (numbers, escapes, order), so a rewritten message differs from the original
//! only by the merge.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::envelope::json_string;

/// A JSON object's members in their original order, values kept as raw text. Keys borrow
/// from the input unless they contain escapes.
pub struct RawObject<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

/// A key that borrows from the input when it can.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawObject<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    members.push((k.0, v));
                }
                Ok(RawObject(members))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

impl<'a> RawObject<'a> {
    /// Parses `text` as an object (`None` when it is not one).
    pub fn parse(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// The raw value of member `key` (the first, if repeated).
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The members named in `keys`, each parsed to a `Value`. Other members are not parsed
    /// at all, so e.g. a huge number elsewhere does no harm. `Err` is `"key: why"`.
    pub fn known(&self, keys: &[&str]) -> Result<Members<'a>, String> {
        let mut out = Members::default();
        for (k, v) in &self.0 {
            if keys.contains(&k.as_ref()) {
                let value = serde_json::from_str(v.get()).map_err(|e| format!("{k}: {e}"))?;
                out.insert(k.clone(), value);
            }
        }
        Ok(out)
    }
}

/// A few members parsed to values, in order. Like `serde_json::Map::insert`, a repeated
/// key's last value wins. A plain list: these objects have a handful of members, where a
/// hashed map (serde_json's, with SipHash and an owned key each) costs more than it saves.
#[derive(Debug, Default, Clone)]
pub struct Members<'a>(pub Vec<(Cow<'a, str>, Value)>);

impl<'a> Members<'a> {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    pub fn insert(&mut self, key: Cow<'a, str>, value: Value) {
        self.0.push((key, value));
    }
}

/// What to do with a key that already exists at the end of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Keep,
    Replace,
}

/// Sets `key = value` in the object found at `path` inside the JSON object `text`,
/// creating missing objects on the way. Returns `None` (leave the message as it is) when
/// `text` or an existing member on the path is not an object.
///
/// ```
/// use acp_question_bridge::rawjson::{merge, Existing};
/// use serde_json::json;
///
/// let line = r#"{"id":1,"params":{"big":1e400,"s":"é"}}"#;
/// let merged = merge(line, &["params"], "expiresAt", &json!("2026-01-01T00:00:00Z"), Existing::Replace);
/// assert_eq!(
///     merged.as_deref(),
///     Some(r#"{"id":1,"params":{"big":1e400,"s":"é","expiresAt":"2026-01-01T00:00:00Z"}}"#)
/// );
/// ```
pub fn merge(
    text: &str,
    path: &[&str],
    key: &str,
    value: &Value,
    existing: Existing,
) -> Option<String> {
    let obj: RawObject<'_> = serde_json::from_str(text).ok()?;
    let mut members: Vec<(String, String)> = Vec::with_capacity(obj.0.len() + 1);
    let mut done = false;
    for (k, v) in obj.0 {
        let raw = v.get();
        let new = match path.split_first() {
            Some((head, rest)) if k == **head && !done => {
                done = true;
                merge(raw, rest, key, value, existing)?
            }
            None if k == key && !done => {
                done = true;
                match existing {
                    Existing::Keep => raw.to_owned(),
                    Existing::Replace => value.to_string(),
                }
            }
            _ => raw.to_owned(),
        };
        members.push((k.into_owned(), new));
    }
    if !done {
        // Build the missing part of the path from the inside out.
        let mut v = value.clone();
        let mut name = key;
        for seg in path.iter().rev() {
            v = json!({ name: v });
            name = seg;
        }
        members.push((name.to_owned(), v.to_string()));
    }
    let mut out = String::with_capacity(text.len() + 64);
    out.push('{');
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&json_string(k));
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
    Some(out)
}
