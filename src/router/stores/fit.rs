//! A JSON value fitted into a budget of text, for showing: a tool call beside its question
//! (`context.toolCall`), and the tool calls the bridge remembers for that.
//!
//! Invariants: every string keeps its start; the text (keys, strings, 8 bytes per other
//! scalar, 2 per string) stays within the budget; and what was left out is said, by JSON
//! Pointer (RFC 6901): the bytes and lines of each cut string, the members or elements of a
//! container past the budget. The long strings share the room (the short ones are kept
//! whole, the rest cut to one length), so a 10 MiB `oldText` leaves room for the `newText`
//! and the title after it. A cut string ends at a line's end where one is in the last half
//! of what it keeps, and then `…`.

use serde_json::{json, Map, Value};

/// Text counted for a string besides its bytes (its quotes), and for any other scalar.
const STRING: usize = 2;
const SCALAR: usize = 8;

/// What was left out of one place of a fitted value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::router) struct LeftOut {
    /// A JSON Pointer into the value fitted.
    pub at: String,
    /// Of a cut string: its bytes and lines not shown (a line shown in part counts).
    pub bytes: usize,
    pub lines: usize,
    /// Of an object or array: its members or elements past the budget, dropped.
    pub items: usize,
}

impl LeftOut {
    /// As `leftOut` shows it, its pointer under `prefix` (a pointer, or "").
    pub fn to_json(&self, prefix: &str) -> Value {
        let at = format!("{prefix}{}", self.at);
        if self.items > 0 {
            json!({"at": at, "items": self.items})
        } else {
            json!({"at": at, "bytes": self.bytes, "lines": self.lines})
        }
    }

    /// In words, for `cut`: "toolCall.content[0].newText: 10485760 bytes, 1310720 lines".
    pub fn say(&self, prefix: &str) -> String {
        let mut path = String::new();
        for seg in format!("{prefix}{}", self.at).split('/').skip(1) {
            let seg = seg.replace("~1", "/").replace("~0", "~");
            if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                path += &format!("[{seg}]");
            } else {
                if !path.is_empty() {
                    path.push('.');
                }
                path += &seg;
            }
        }
        if self.items > 0 {
            format!("{path}: {} more items", self.items)
        } else {
            format!("{path}: {} bytes, {} lines", self.bytes, self.lines)
        }
    }

    /// The top-level member it is under (`content` for `/content/0/newText`).
    pub fn member(&self) -> &str {
        // `at` is empty where what was left out is the whole object's rest.
        self.at
            .get(1..)
            .unwrap_or("")
            .split('/')
            .next()
            .unwrap_or("")
    }
}

/// Adds `more` to `into`; a place in both (a string cut again) counts what both left out.
pub(in crate::router) fn merge(into: &mut Vec<LeftOut>, more: Vec<LeftOut>) {
    for l in more {
        match into.iter_mut().find(|k| k.at == l.at) {
            Some(k) => {
                k.bytes += l.bytes;
                k.lines += l.lines;
                k.items += l.items;
            }
            None => into.push(l),
        }
    }
}

/// `v` within `room` bytes of text, and what was left out (nothing when it fits whole, and
/// then `v` itself, not a copy: this runs for every tool call update the bridge keeps).
pub(in crate::router) fn fit(v: Value, room: usize) -> (Value, Vec<LeftOut>) {
    let mut fixed = 0;
    let mut strings = Vec::new();
    measure(&v, &mut fixed, &mut strings, room);
    let whole: usize = fixed.saturating_add(strings.iter().sum());
    if whole <= room {
        return (v, Vec::new());
    }
    // The structure alone past the room: the strings get what is left, first come.
    let cap = if fixed > room {
        room
    } else {
        share(room - fixed, &mut strings)
    };
    let mut left = Vec::new();
    let mut at = String::new();
    let mut room = room;
    let fitted = build(&v, cap, &mut room, &mut at, &mut left);
    (fitted, left)
}

/// Adds `v`'s text besides its strings to `fixed`, and its strings' lengths to `strings`;
/// stops counting strings once `fixed` is past `room` (they are then not shared).
fn measure(v: &Value, fixed: &mut usize, strings: &mut Vec<usize>, room: usize) {
    match v {
        Value::String(s) => {
            *fixed += STRING;
            if *fixed <= room {
                strings.push(s.len());
            }
        }
        Value::Array(items) => items.iter().for_each(|i| measure(i, fixed, strings, room)),
        Value::Object(members) => {
            for (k, i) in members {
                *fixed += k.len();
                measure(i, fixed, strings, room);
            }
        }
        _ => *fixed += SCALAR,
    }
}

/// The length each string is cut to so that they all fit in `room`: the short ones whole,
/// the long ones sharing what is left equally.
fn share(mut room: usize, strings: &mut [usize]) -> usize {
    strings.sort_unstable();
    let n = strings.len();
    for (i, &len) in strings.iter().enumerate() {
        let each = room / (n - i);
        if len > each {
            return each;
        }
        room -= len;
    }
    usize::MAX
}

fn build(
    v: &Value,
    cap: usize,
    room: &mut usize,
    at: &mut String,
    left: &mut Vec<LeftOut>,
) -> Value {
    match v {
        Value::String(s) => {
            *room = room.saturating_sub(STRING);
            let (shown, out) = cut(s, cap.min(*room));
            *room = room.saturating_sub(shown.len());
            if let Some((bytes, lines)) = out {
                left.push(LeftOut {
                    at: at.clone(),
                    bytes,
                    lines,
                    items: 0,
                });
            }
            Value::String(shown)
        }
        Value::Array(items) => {
            let mut kept = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if *room == 0 {
                    dropped(at, items.len() - i, left);
                    break;
                }
                let len = at.len();
                at.push_str(&format!("/{i}"));
                kept.push(build(item, cap, room, at, left));
                at.truncate(len);
            }
            Value::Array(kept)
        }
        Value::Object(members) => {
            let mut kept = Map::new();
            for (i, (k, item)) in members.iter().enumerate() {
                if *room == 0 {
                    dropped(at, members.len() - i, left);
                    break;
                }
                *room = room.saturating_sub(k.len());
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                kept.insert(k.clone(), build(item, cap, room, at, left));
                at.truncate(len);
            }
            Value::Object(kept)
        }
        other => {
            *room = room.saturating_sub(SCALAR);
            other.clone()
        }
    }
}

fn dropped(at: &str, items: usize, left: &mut Vec<LeftOut>) {
    left.push(LeftOut {
        at: at.to_owned(),
        bytes: 0,
        lines: 0,
        items,
    });
}

/// `s` within `max` bytes, `…` included, and, when cut, the bytes and lines left out.
fn cut(s: &str, max: usize) -> (String, Option<(usize, usize)>) {
    if s.len() <= max {
        return (s.to_owned(), None);
    }
    let mut keep = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(keep) {
        keep -= 1;
    }
    // At a line's end, where one is not far back: lines shown whole.
    if let Some(nl) = memchr::memrchr(b'\n', &s.as_bytes()[..keep]) {
        if nl + 1 >= keep / 2 {
            keep = nl + 1;
        }
    }
    let rest = &s.as_bytes()[keep..];
    let lines = memchr::memchr_iter(b'\n', rest).count() + usize::from(rest.last() != Some(&b'\n'));
    (format!("{}…", &s[..keep]), Some((rest.len(), lines)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by review: what is left out of the whole object is at `""`, under no member.
    #[test]
    fn the_whole_objects_rest_is_under_no_member() {
        let l = LeftOut {
            at: String::new(),
            bytes: 0,
            lines: 0,
            items: 2,
        };
        assert_eq!(l.member(), "");
    }

    /// The text [`fit`] counts.
    fn text(v: &Value) -> usize {
        match v {
            Value::String(s) => s.len() + STRING,
            Value::Array(a) => a.iter().map(text).sum(),
            Value::Object(o) => o.iter().map(|(k, v)| k.len() + text(v)).sum(),
            _ => SCALAR,
        }
    }

    #[test]
    fn a_value_that_fits_is_whole() {
        let v = json!({"title": "Write a.rs", "content": [{"oldText": null, "newText": "x\n"}]});
        assert_eq!(fit(v.clone(), 1000), (v, vec![]));
    }

    #[test]
    fn long_strings_share_the_room_and_say_what_was_left_out() {
        let old = "- old line\n".repeat(100_000);
        let new = "+ new line\n".repeat(200_000);
        let v = json!({"toolCallId": "t", "rawInput": {"file_path": "/p/a.rs", "content": new},
            "title": "Write a.rs", "kind": "edit",
            "content": [{"type": "diff", "path": "/p/a.rs", "oldText": old, "newText": new}],
            "locations": [{"path": "/p/a.rs"}]});
        let (f, left) = fit(v.clone(), 16 << 10);
        assert!(text(&f) <= 16 << 10, "{}", text(&f));
        // Everything short is whole, after the long strings as before them.
        assert_eq!(f["title"], "Write a.rs");
        assert_eq!(f["kind"], "edit");
        assert_eq!(f["locations"], json!([{"path": "/p/a.rs"}]));
        assert_eq!(f["rawInput"]["file_path"], "/p/a.rs");
        // The three long ones get a share each, cut at a line's end.
        let diff = &f["content"][0];
        for shown in [
            &diff["oldText"],
            &diff["newText"],
            &f["rawInput"]["content"],
        ] {
            let shown = shown.as_str().unwrap();
            assert!(shown.len() > 5000, "{}", shown.len());
            assert!(shown.ends_with("line\n…"), "{shown:?}");
        }
        assert!(diff["newText"]
            .as_str()
            .unwrap()
            .starts_with("+ new line\n+ new line\n"));
        let new_shown = diff["newText"].as_str().unwrap().len() - '…'.len_utf8();
        let at = |p: &str| {
            left.iter()
                .find(|l| l.at == p)
                .unwrap_or_else(|| panic!("{p} in {left:?}"))
        };
        let cut = at("/content/0/newText");
        assert_eq!(cut.bytes, new.len() - new_shown);
        assert_eq!(cut.lines, 200_000 - new_shown / 11);
        assert_eq!(left.len(), 3);
        assert_eq!(
            cut.say("/toolCall"),
            format!(
                "toolCall.content[0].newText: {} bytes, {} lines",
                cut.bytes, cut.lines
            )
        );
        assert_eq!(
            cut.to_json("/toolCall"),
            json!({"at": "/toolCall/content/0/newText", "bytes": cut.bytes, "lines": cut.lines})
        );
        assert_eq!(cut.member(), "content");
    }

    #[test]
    fn one_long_line_is_cut_inside_and_counts_as_a_line_left_out() {
        let v = json!({"newText": "x".repeat(100_000)});
        let (f, left) = fit(v.clone(), 1000);
        let shown = f["newText"].as_str().unwrap();
        assert!(shown.ends_with("x…") && shown.len() <= 1000);
        assert_eq!(left[0].lines, 1);
        assert_eq!(left[0].bytes, 100_000 - (shown.len() - '…'.len_utf8()));
    }

    #[test]
    fn a_structure_past_the_room_keeps_its_start_and_counts_the_rest() {
        let v = json!({"title": "Many", "content": vec![json!({"path": "/p"}); 100_000]});
        let (f, left) = fit(v.clone(), 4096);
        assert!(text(&f) <= 4096 + 64, "{}", text(&f));
        assert_eq!(f["title"], "Many");
        let kept = f["content"].as_array().unwrap().len();
        assert!(kept > 100, "{kept}");
        let last = left.last().unwrap();
        assert_eq!(
            *last,
            LeftOut {
                at: "/content".into(),
                bytes: 0,
                lines: 0,
                items: 100_000 - kept
            }
        );
        assert_eq!(
            last.say(""),
            format!("content: {} more items", 100_000 - kept)
        );
    }

    #[test]
    fn a_cut_keeps_characters_whole_and_pointers_are_escaped() {
        let v = json!({"a/b~": "ééééé"});
        let (f, left) = fit(v.clone(), 4 + STRING + 7);
        assert_eq!(f, json!({"a/b~": "éé…"}));
        assert_eq!(left[0].at, "/a~1b~0");
        assert_eq!(left[0].say(""), "a/b~: 6 bytes, 1 lines");
    }
}
