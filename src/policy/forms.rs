//! The paths a word may name as a program with no model takes it (`super::named`): curl's
//! own file syntax (`@FILE`, `<FILE`, `file:` URLs), `%XX` escapes, and curl's globs.

/// `word` and the paths it may name as a program without a model takes it: a file named
/// with `@` or `<` (curl's `-d @.env`, `-F a=@.env;type=x`), a `file:` URL's path, and
/// each of those with `%XX` decoded (`file:///p/%2eenv`, which curl reads as `.env`).
pub(super) fn file_forms(word: &str) -> Vec<String> {
    let mut out = vec![word.to_owned()];
    let bare = word.trim_start_matches(['@', '<']);
    if bare != word {
        out.push(bare.split(';').next().unwrap_or(bare).to_owned());
    }
    if let Some(rest) = word
        .get(..5)
        .filter(|s| s.eq_ignore_ascii_case("file:"))
        .map(|_| &word[5..])
    {
        // `file:///p`, `file://localhost/p`, `file:/p`: the path from its first `/` past
        // the host, without a query or fragment.
        let path = match rest.strip_prefix("//") {
            Some(r) => r.find('/').map_or("", |i| &r[i..]),
            None => rest,
        };
        out.push(path.split(['?', '#']).next().unwrap_or(path).to_owned());
    }
    let decoded: Vec<String> = out
        .iter()
        .filter(|w| w.contains('%'))
        .filter_map(|w| percent_decoded(w))
        .collect();
    out.extend(decoded);
    // curl's globs: `{a,b}` and `[d-f]` in a URL are each name they make.
    let globbed: Vec<String> = out
        .iter()
        .filter(|w| w.contains(['{', '[']))
        .flat_map(|w| curl_globs(w, MAX_GLOBS).unwrap_or_default())
        .collect();
    out.extend(globbed);
    out
}

/// The most names one word's curl globs are expanded to; a word of a program with no model
/// that makes more is asked (`Named::of`).
pub(super) const MAX_GLOBS: usize = 64;

/// The names `word`'s curl globs (`{a,b,c}`, `[a-z]`, `[0-9]`) make, at most `left`;
/// `None` past that. A word with no glob, or one curl would not read as one, is itself.
pub(super) fn curl_globs(word: &str, left: usize) -> Option<Vec<String>> {
    let open = word.find(['{', '[']);
    let Some(i) = open else {
        return Some(vec![word.to_owned()]);
    };
    let close = if word.as_bytes()[i] == b'{' { '}' } else { ']' };
    let Some(j) = word[i..].find(close).map(|j| i + j) else {
        return Some(vec![word.to_owned()]);
    };
    let inner = &word[i + 1..j];
    let parts: Vec<String> = if close == '}' {
        inner.split(',').map(str::to_owned).collect()
    } else {
        let range = inner.split(':').next().unwrap_or(inner);
        match range.split_once('-') {
            Some((a, b)) if a.chars().count() == 1 && b.chars().count() == 1 => {
                let (a, b) = (
                    a.chars().next().unwrap_or('a'),
                    b.chars().next().unwrap_or('a'),
                );
                (a..=b).take(left + 1).map(String::from).collect()
            }
            // Numbers (`[1-100]`) name digits only: no name of a rule's kind.
            Some((a, b)) if a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok() => {
                vec!["0".to_owned()]
            }
            _ => vec![inner.to_owned()],
        }
    };
    let mut out = Vec::new();
    for p in &parts {
        let more = curl_globs(
            &format!("{}{p}{}", &word[..i], &word[j + 1..]),
            left - out.len(),
        )?;
        out.extend(more);
        if out.len() > left {
            return None;
        }
    }
    Some(out)
}

/// `word` with each `%XX` decoded; `None` when that is not UTF-8.
pub(super) fn percent_decoded(word: &str) -> Option<String> {
    let b = word.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}
