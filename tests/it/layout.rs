//! The shape of the source tree (docs/ARCHITECTURE.md, "Layering"): no import cycle between
//! the library's modules, no file over the size a reader can hold before its tests, no
//! comment that cites a document the repository does not have, and no source file missing
//! from the architecture map.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lines a source file may have before its inline test module (issue 42).
const MAX_LINES: usize = 600;

/// The import cycles the source has today, which docs/ARCHITECTURE.md ("Layering") does not
/// allow: each one strongly connected set of modules, as the check prints it. Listed so the
/// check sees every other cycle while these are taken apart.
/// A known cycle that is gone, or changes its modules, fails the check until its line here
/// is removed or updated: the list only shrinks.
///
/// All eight are the same shape: a parent's `mod.rs` names its children bare (`fetch::get`,
/// `handlers::digest::Digests`) while the children use what the parent defines
/// (`super::AgentsError`, `crate::router::Router`). The check did not see bare child paths
/// before issue 42, so it passed them.
const KNOWN_CYCLES: &[&str] = &[
    "agents <-> agents::fetch <-> agents::install",
    "bridge <-> bridge::event_loop <-> bridge::services",
    "control <-> control::gate <-> control::v1",
    "inbox::nats <-> inbox::nats::follower <-> inbox::nats::publisher",
    "policy <-> policy::decide <-> policy::guard <-> policy::moves <-> policy::named \
     <-> policy::prefixed <-> policy::tier <-> policy::tool_call",
    "policy::file <-> policy::file::rules",
    "policy::args <-> policy::args::build <-> policy::args::files <-> policy::args::git \
     <-> policy::args::jq <-> policy::args::script <-> policy::args::search <-> policy::args::text \
     <-> policy::args::tools",
    "policy::shell <-> policy::shell::words",
    "policy::wrappers <-> policy::wrappers::given <-> policy::wrappers::options \
     <-> policy::wrappers::special <-> policy::wrappers::table",
    "questions::sources <-> questions::sources::cursor <-> questions::sources::gemini \
     <-> questions::sources::grok <-> questions::sources::opencode",
    "router <-> router::client <-> router::dispatch <-> router::gone \
     <-> router::handlers::cancel <-> router::handlers::client_tools <-> router::handlers::elicitation \
     <-> router::handlers::initialize <-> router::handlers::permission \
     <-> router::handlers::prompt <-> router::handlers::question <-> router::handlers::session \
     <-> router::handlers::tool_call <-> router::handlers::vendor <-> router::input <-> router::lifecycle \
     <-> router::lifecycle::answers <-> router::lifecycle::ask <-> router::lifecycle::decide \
     <-> router::lifecycle::render <-> router::stores::clients \
     <-> router::stores::requests",
    "scan <-> scan::json <-> scan::memo",
];

/// A module path (`["router", "questions"]`).
type Module = Vec<String>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `.rs` file under `src/`.
struct Source {
    /// Its module path; `["lib"]`, `["main"]` and `["bin", NAME]` for the crate roots.
    module: Module,
    path: PathBuf,
    text: String,
}

impl Source {
    /// The file's text before its inline test module.
    fn before_tests(&self) -> &str {
        before_tests(&self.text)
    }

    /// Whether this is one of the crate roots' files (`lib.rs`, `main.rs`, `bin/*.rs`).
    fn is_root(&self) -> bool {
        matches!(
            self.module.first().map(String::as_str),
            Some("lib" | "main" | "bin")
        ) && (self.module.len() == 1 || self.module[0] == "bin")
    }

    /// The module path of its children (the crate roots' children are the top-level modules).
    fn inner(&self) -> Module {
        if self.is_root() {
            Vec::new()
        } else {
            self.module.clone()
        }
    }
}

/// Every `.rs` file under `src/`.
fn sources() -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = root().join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            Source { module, path, text }
        })
        .collect()
}

/// Whether `line` (trimmed) declares a module: `mod NAME` with any visibility, followed by
/// what `rest` accepts (`;` for a module in a file of its own, `{` for an inline one).
fn declares_mod(line: &str, rest: impl Fn(&str) -> bool) -> Option<&str> {
    let mut l = line.trim();
    if let Some(r) = l.strip_prefix("pub") {
        l = r.trim_start();
        if let Some(r) = l.strip_prefix('(') {
            l = r.split_once(')')?.1.trim_start();
        }
    }
    let l = l.strip_prefix("mod ")?.trim_start();
    let end = l
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(l.len());
    let (name, after) = l.split_at(end);
    (!name.is_empty() && rest(after.trim_start())).then_some(name)
}

/// The module items that `#[cfg(test)]` puts under the tests: for each, the byte offset of
/// its `#[cfg(test)]` line and the item's line (other attributes, comments and blank lines
/// may stand between them, and the item may be on the attribute's own line).
fn test_items(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let at = offset;
        offset += line.len();
        let Some(after) = line.trim().strip_prefix("#[cfg(test)]") else {
            continue;
        };
        let item = std::iter::once(after)
            .chain(lines[i + 1..].iter().copied())
            .map(str::trim)
            .find(|l| !(l.is_empty() || l.starts_with("//") || l.starts_with("#[")));
        if let Some(item) = item {
            out.push((at, item));
        }
    }
    out
}

/// The text before the file's inline test module: `#[cfg(test)]` on `mod NAME {`. A
/// `#[cfg(test)] mod NAME;` names a file of tests and does not end the code.
fn before_tests(text: &str) -> &str {
    let inline = test_items(text)
        .into_iter()
        .find(|(_, item)| declares_mod(item, |r| r.starts_with('{')).is_some());
    &text[..inline.map_or(text.len(), |(at, _)| at)]
}

/// The modules that are tests as a whole: declared `#[cfg(test)] mod NAME;` in their parent
/// (`router/sources_tests.rs`, `policy/tests.rs`), and everything under them.
fn test_modules(files: &[Source]) -> BTreeSet<Module> {
    let mut tests = BTreeSet::new();
    for f in files {
        for (_, item) in test_items(f.before_tests()) {
            if let Some(name) = declares_mod(item, |r| r.starts_with(';')) {
                let mut m = f.inner();
                m.push(name.to_owned());
                tests.insert(m);
            }
        }
    }
    let under = |m: &Module| (1..=m.len()).any(|n| tests.contains(&m[..n]));
    files
        .iter()
        .map(|f| f.module.clone())
        .filter(|m| under(m))
        .collect()
}

/// Rust code as the tokens a path is made of: comments dropped, and string and character
/// literals as [`Token::Other`], so that neither can look like a path.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other,
}

fn tokens(code: &str) -> Vec<Token> {
    let c: Vec<char> = code.chars().collect();
    let at = |i: usize| c.get(i).copied();
    // The end of a quoted literal whose opening quote is at `from`.
    let quoted = |from: usize, quote: char| {
        let mut j = from + 1;
        while j < c.len() && c[j] != quote {
            j += if c[j] == '\\' { 2 } else { 1 };
        }
        j + 1
    };
    // The end of a raw string whose opening quote, after `hashes` `#`, is at `from`.
    let raw = |from: usize, hashes: usize| {
        let mut j = from + 1;
        while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|k| at(j + k) == Some('#'))) {
            j += 1;
        }
        j + 1 + hashes
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
            continue;
        }
        if ch == '/' && at(i + 1) == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if ch == '/' && at(i + 1) == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        // String and character literals, with their prefixes (`b"..."`, `r#"..."#`, `b'x'`);
        // a lifetime (`'a`) has no closing quote.
        let byte = usize::from(ch == 'b');
        let is_raw = at(i + byte) == Some('r');
        let hashes = if is_raw {
            c[i + byte + 1..].iter().take_while(|&&h| h == '#').count()
        } else {
            0
        };
        let open = i + byte + usize::from(is_raw) + hashes;
        if (byte == 1 || is_raw) && at(open) == Some('"') {
            i = if is_raw {
                raw(open, hashes)
            } else {
                quoted(open, '"')
            };
            out.push(Token::Other);
            continue;
        }
        if ch == '"' {
            i = quoted(i, '"');
            out.push(Token::Other);
            continue;
        }
        let quote = i + byte;
        if at(quote) == Some('\'') && (at(quote + 1) == Some('\\') || at(quote + 2) == Some('\'')) {
            i = quoted(quote, '\'');
            out.push(Token::Other);
            continue;
        }
        if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(c[start..i].iter().collect()));
            continue;
        }
        if ch == ':' && at(i + 1) == Some(':') {
            out.push(Token::Sep);
            i += 2;
            continue;
        }
        out.push(match ch {
            '{' => Token::Open,
            '}' => Token::Close,
            ',' => Token::Comma,
            ';' => Token::Semi,
            '*' => Token::Star,
            _ => Token::Other,
        });
        i += 1;
    }
    out
}

/// Every path of a `use` tree from `t[*i]`, each after `prefix`: `a::{b, c::{self, d}}`
/// is `a::b`, `a::c::self`, `a::c::d`.
fn use_tree(t: &[Token], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    while let Some(tok) = t.get(*i) {
        match tok {
            Token::Sep => *i += 1,
            Token::Ident(s) => {
                path.push(s.clone());
                *i += 1;
                if t.get(*i) != Some(&Token::Sep) {
                    // `as NAME`
                    if t.get(*i) == Some(&Token::Ident("as".into())) {
                        *i += 2;
                    }
                    out.push(path);
                    return;
                }
            }
            Token::Open => {
                *i += 1;
                loop {
                    use_tree(t, i, &path, out);
                    match t.get(*i) {
                        Some(Token::Comma) => *i += 1,
                        Some(Token::Close) => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    if t.get(*i) == Some(&Token::Close) {
                        *i += 1;
                        return;
                    }
                }
            }
            Token::Star => {
                *i += 1;
                out.push(path);
                return;
            }
            _ => return,
        }
    }
}

/// The paths `code` names, as written: every `use` tree's, and every other path of two
/// segments or more (`a::b`; a lone name is no module's). A visibility's path
/// (`pub(in crate::router)`) says who may use an item, not what it uses: left out.
fn paths(code: &str) -> Vec<Vec<String>> {
    let t = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let after_sep = i > 0 && t[i - 1] == Token::Sep;
        match &t[i] {
            Token::Ident(s) if s == "use" && !after_sep => {
                i += 1;
                use_tree(&t, &mut i, &[], &mut out);
            }
            Token::Ident(_)
                if i >= 3
                    && t[i - 1] == Token::Ident("in".into())
                    && t[i - 3] == Token::Ident("pub".into()) =>
            {
                while matches!(t.get(i), Some(Token::Ident(_) | Token::Sep)) {
                    i += 1;
                }
            }
            Token::Ident(first) if !after_sep && t.get(i + 1) == Some(&Token::Sep) => {
                let mut path = vec![first.clone()];
                i += 1;
                while t.get(i) == Some(&Token::Sep) {
                    match t.get(i + 1) {
                        Some(Token::Ident(s)) => {
                            path.push(s.clone());
                            i += 2;
                        }
                        Some(Token::Open) => {
                            i += 1;
                            use_tree(&t, &mut i, &path, &mut out);
                            path.clear();
                            break;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push(path);
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The module path `path` names, written in `module` whose child modules are `children`:
/// through `crate::`, `super::` or `self::`, or bare when its first segment is a child of
/// `module` (`handlers::digest::Digests` in `router`). Other paths (other crates, local
/// items) name no module of the crate.
fn absolute(module: &[String], children: &BTreeSet<String>, path: &[String]) -> Option<Module> {
    let (first, rest) = path.split_first()?;
    let mut out: Module = match first.as_str() {
        "crate" => Vec::new(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        "self" => module.to_vec(),
        _ if children.contains(first) => {
            let mut m = module.to_vec();
            m.push(first.clone());
            m
        }
        _ => return None,
    };
    for seg in rest {
        match seg.as_str() {
            "super" => {
                out.pop()?;
            }
            "self" => {}
            _ => out.push(seg.clone()),
        }
    }
    Some(out)
}

/// The library's import graph: for each module, the modules its code (before its tests)
/// names. Test-only modules and the binaries' side are left out.
fn import_graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let files = sources();
    let tests = test_modules(&files);
    // The binaries' side (main, the mock agent's bin, the tools) is not the library.
    let library: Vec<&Source> = files
        .iter()
        .filter(|f| !f.is_root() && f.module[0] != "tools" && !tests.contains(&f.module))
        .collect();
    let known: BTreeSet<Module> = library.iter().map(|f| f.module.clone()).collect();
    let resolve = |path: &[String]| -> Option<Module> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| known.contains(p))
    };
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for f in library {
        let children: BTreeSet<String> = known
            .iter()
            .filter(|k| k.len() == f.module.len() + 1 && k.starts_with(&f.module))
            .map(|k| k[f.module.len()].clone())
            .collect();
        let to = edges.entry(f.module.clone()).or_default();
        for named in paths(f.before_tests()) {
            let target = absolute(&f.module, &children, &named).and_then(|p| resolve(&p));
            if let Some(target) = target.filter(|t| *t != f.module) {
                to.insert(target);
            }
        }
    }
    edges
}

#[test]
fn no_import_cycle_between_the_librarys_modules() {
    let edges = import_graph();
    let mut cycles = cycles_in(&edges);
    // And between the top-level modules as wholes (`events` -> `questions::model` and
    // `questions::chat` -> `events` is a cycle of `events` and `questions`).
    let mut tops: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, to) in &edges {
        let entry = tops.entry(from[..1].to_vec()).or_default();
        entry.extend(
            to.iter()
                .map(|t| t[..1].to_vec())
                .filter(|t| *t != from[..1]),
        );
    }
    cycles.extend(cycles_in(&tops));
    let new: Vec<String> = cycles
        .iter()
        .filter(|c| !KNOWN_CYCLES.contains(&c.as_str()))
        .map(|c| format!("{c}\n{}", edges_within(&edges, c)))
        .collect();
    assert!(
        new.is_empty(),
        "import cycles (move what both need down into a module of its own; a known cycle \
         whose modules changed is updated in KNOWN_CYCLES):\n{}",
        new.join("\n")
    );
    let gone: Vec<&&str> = KNOWN_CYCLES
        .iter()
        .filter(|k| !cycles.iter().any(|c| c == *k))
        .collect();
    assert!(
        gone.is_empty(),
        "no longer cycles as listed: take them off KNOWN_CYCLES (or update them): {gone:?}"
    );
    // The check sees imports at all: the router uses the question model, and names its own
    // child modules bare.
    let router = vec!["router".to_owned()];
    assert!(edges[&vec![
        "router".to_owned(),
        "stores".to_owned(),
        "requests".to_owned()
    ]]
        .iter()
        .chain(&edges[&router])
        .any(|m| m.first().is_some_and(|f| f == "questions")));
    assert!(edges[&router]
        .iter()
        .any(|m| m.len() > 1 && m.starts_with(&router)));
}

/// The imports between the modules of `cycle` (as [`cycles_in`] prints it), a line each.
fn edges_within(edges: &BTreeMap<Module, BTreeSet<Module>>, cycle: &str) -> String {
    let members: BTreeSet<&str> = cycle.split(" <-> ").collect();
    let mut lines = Vec::new();
    for (from, to) in edges {
        let from = from.join("::");
        if members.contains(from.as_str()) {
            let to: Vec<String> = to
                .iter()
                .map(|t| t.join("::"))
                .filter(|t| members.contains(t.as_str()))
                .collect();
            if !to.is_empty() {
                lines.push(format!("  {from} -> {}", to.join(", ")));
            }
        }
    }
    lines.join("\n")
}

/// The cycles of the graph: each strongly connected set of more than one module, as its
/// modules (sorted) joined by ` <-> `.
fn cycles_in(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let reaches = |from: &Module| {
        let mut seen: BTreeSet<&Module> = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(at) = todo.pop() {
            for next in edges.get(at).into_iter().flatten() {
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&Module, BTreeSet<&Module>> =
        edges.keys().map(|m| (m, reaches(m))).collect();
    let mut cycles = BTreeSet::new();
    for (m, r) in &reach {
        let part: Vec<String> = r
            .iter()
            .filter(|o| *o != m && reach.get(*o).is_some_and(|back| back.contains(m)))
            .chain([m])
            .map(|o| o.join("::"))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if part.len() > 1 {
            cycles.insert(part.join(" <-> "));
        }
    }
    cycles.into_iter().collect()
}

#[test]
fn no_source_file_is_over_about_600_lines_before_its_tests() {
    let files = sources();
    let tests = test_modules(&files);
    let long: Vec<String> = files
        .iter()
        .filter(|f| !tests.contains(&f.module))
        .filter_map(|f| {
            let n = f.before_tests().lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n}", f.path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by concern: {long:?}");
}

/// What the line count and the graph take as tests and code, on the source as it is.
#[test]
fn files_of_tests_are_known_and_a_test_declaration_does_not_end_the_code() {
    let files = sources();
    let tests = test_modules(&files);
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<Module>();
    for t in [
        "router::sources_tests",
        "policy::tests",
        "policy::path_tests",
    ] {
        assert!(tests.contains(&m(t)), "{t} is a file of tests: {tests:?}");
    }
    assert!(!tests.contains(&m("router")) && !tests.contains(&m("policy")));
    // `router/mod.rs` declares `#[cfg(test)] mod sources_tests;` near its top: its code goes
    // on past it.
    let router = files.iter().find(|f| f.module == m("router")).unwrap();
    let declared = router.text.find("mod sources_tests;").unwrap();
    assert!(router.before_tests().len() > declared);
}

#[test]
fn the_cut_before_tests_and_the_paths_a_file_names() {
    let text = "use a::b;\n#[cfg(test)]\nmod x_tests;\nfn f() {}\n#[cfg(test)]\n#[allow(dead_code)]\n// note\npub(crate) mod tests {\n    use super::*;\n}\n";
    assert_eq!(
        before_tests(text),
        "use a::b;\n#[cfg(test)]\nmod x_tests;\nfn f() {}\n"
    );
    assert_eq!(before_tests("fn f() {}\n"), "fn f() {}\n");
    assert_eq!(before_tests("#[cfg(test)] mod tests {}\n"), "");

    let code = r##"
        use crate::{events::Event, questions::{model::Item, self}};
        use dispatch::Msg;
        use self::outbox as out;
        pub use handlers::*;
        // crate::commented::Out
        let s = "crate::quoted::Out"; let r = r#"crate::raw::Out"#; let c = '"';
        let d = handlers::digest::Digests::new(); let x = std::mem::take(&mut y);
        let v = super::super::up::Thing; let lone = questions;
        fn f<'a>(x: &'a str) -> crate::lifetimes::Ok {}
        pub(in crate::router) fn g() { for x in crate::loops::all() {} }
    "##;
    let got: Vec<String> = paths(code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "crate::events::Event",
            "crate::questions::model::Item",
            "crate::questions::self",
            "dispatch::Msg",
            "self::outbox",
            "handlers",
            "handlers::digest::Digests::new",
            "std::mem::take",
            "super::super::up::Thing",
            "crate::lifetimes::Ok",
            "crate::loops::all",
        ]
    );
    let module = ["router".to_owned(), "x".to_owned()];
    let children: BTreeSet<String> = ["handlers", "dispatch", "outbox", "questions"]
        .map(str::to_owned)
        .into();
    let abs = |p: &str| {
        let p: Vec<String> = p.split("::").map(str::to_owned).collect();
        absolute(&module, &children, &p).map(|m| m.join("::"))
    };
    // A child named bare is the child; through `crate::` it is the top-level module.
    assert_eq!(
        abs("questions::x").as_deref(),
        Some("router::x::questions::x")
    );
    assert_eq!(abs("crate::questions::self").as_deref(), Some("questions"));
    assert_eq!(abs("self::outbox").as_deref(), Some("router::x::outbox"));
    assert_eq!(abs("super::up").as_deref(), Some("router::up"));
    assert_eq!(abs("super::super::up").as_deref(), Some("up"));
    assert_eq!(abs("std::mem::take"), None);
}

#[test]
fn comments_cite_only_documents_the_repository_has() {
    let mut missing = Vec::new();
    for f in sources() {
        for (n, line) in f.text.lines().enumerate() {
            for word in line.split(|c: char| c.is_whitespace() || "`()[],;:\"'".contains(c)) {
                if !word.ends_with(".md") {
                    continue;
                }
                let doc = word.trim_start_matches("../");
                let found = [root().join(doc), root().join("docs").join(doc)]
                    .iter()
                    .any(|p| p.is_file());
                if !found {
                    missing.push(format!("{}:{}: {doc}", f.path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documents not in the repository: {missing:?}"
    );
}

/// The names in backquotes under docs/ARCHITECTURE.md's heading `heading`, up to the next
/// heading of its level, that start with `src/`.
fn named_under(doc: &str, heading: &str) -> BTreeSet<String> {
    let level = heading.split(' ').next().unwrap_or("");
    let section = doc
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading:?} in docs/ARCHITECTURE.md"))
        .1;
    let section = section
        .split(&format!("\n{level} "))
        .next()
        .unwrap_or_default();
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.starts_with("src/"))
        .map(str::to_owned)
        .collect()
}

/// Whether `names` name the file `rel` (`src/a/b.rs`): by its path, by its folder's files
/// (`src/a/*.rs`), or by a folder above it (`src/a/`).
fn on_map(names: &BTreeSet<String>, rel: &str) -> bool {
    let path = Path::new(rel);
    names.contains(rel)
        || path
            .parent()
            .is_some_and(|d| names.contains(&format!("{}/*.rs", d.display())))
        || path
            .ancestors()
            .skip(1)
            .any(|d| names.contains(&format!("{}/", d.display())))
}

/// Every source file is named in docs/ARCHITECTURE.md's module map (the section "Module
/// map": a name elsewhere in the document is no row of it): by its path, by its folder's
/// files, or by a folder above it, in backquotes. A file added without its row fails here,
/// so the map cannot drift. A file of tests may be named in the section "Tests" instead.
#[test]
fn every_source_file_is_on_the_architecture_map() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let map = named_under(&doc, "## Module map");
    let tests_section = named_under(&doc, "## Tests");
    let files = sources();
    let tests = test_modules(&files);
    let missing: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.path.strip_prefix(root()).unwrap().to_string_lossy();
            let named =
                on_map(&map, &rel) || (tests.contains(&f.module) && on_map(&tests_section, &rel));
            (!named).then(|| rel.into_owned())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "name these in docs/ARCHITECTURE.md's module map (a row each, or their folder): {missing:?}"
    );
    // A folder row covers what is under it; a `*.rs` row only its own folder's files.
    let rows: BTreeSet<String> = ["src/router/handlers/*.rs", "src/tools/setup/"]
        .map(str::to_owned)
        .into();
    assert!(on_map(&rows, "src/router/handlers/digest.rs"));
    assert!(!on_map(&rows, "src/router/handlers/deeper/x.rs"));
    assert!(!on_map(&rows, "src/router/mod.rs"));
    assert!(on_map(&rows, "src/tools/setup/zed.rs"));
    assert!(on_map(&rows, "src/tools/setup/deeper/x.rs"));
}

/// `impl Router` is the one way into the router's state: a handler (`src/router/handlers/`)
/// calls the router's methods and never names one of its fields (`r.digests`, `r.client`).
#[test]
fn handlers_reach_the_routers_state_only_through_its_methods() {
    let router = std::fs::read_to_string(root().join("src/router/mod.rs")).unwrap();
    let body = router
        .split_once("pub struct Router {")
        .and_then(|(_, rest)| rest.split_once("\n}"))
        .map(|(body, _)| body)
        .expect("src/router/mod.rs defines `pub struct Router`");
    let fields: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter_map(|l| {
            l.trim_start_matches("pub ")
                .split_once(':')
                .map(|(f, _)| f.trim())
        })
        .collect();
    assert!(fields.contains(&"digests"), "read the fields: {fields:?}");
    let mut reached = Vec::new();
    for entry in std::fs::read_dir(root().join("src/router/handlers")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for field in &fields {
            for (at, _) in before_tests(&text).match_indices(&format!("r.{field}")) {
                let next = before_tests(&text)[at + 2 + field.len()..].chars().next();
                if !next.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '(') {
                    reached.push(format!("{}: r.{field}", path.display()));
                }
            }
        }
    }
    assert!(
        reached.is_empty(),
        "go through a method of Router: {reached:?}"
    );
}

/// The router does no I/O (docs/ARCHITECTURE.md): nothing under `src/router/` but its tests
/// and the test fixture names the file system, processes, sockets, the runtime, or the
/// policy's files; what it needs of them it asks the shell for (`Effect`). The compiler's
/// check is clippy's (`clippy.toml`, denied in `src/router/mod.rs`): it sees every call and
/// type, however imported; this cheaper look at the text also catches a `use` of a module.
#[test]
fn the_router_names_no_file_process_or_socket() {
    const IO: [&str; 12] = [
        "std::fs",
        "fs::",
        "std::process",
        "std::net",
        "std::env",
        "tokio::",
        "nix::",
        "rustix::",
        "policy::live",
        "Desk",
        "File::",
        "std::io::Read",
    ];
    let mut found = Vec::new();
    for source in sources() {
        let rel = source
            .path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !rel.starts_with("src/router/")
            || rel.ends_with("fixture.rs")
            || rel.ends_with("tests.rs")
        {
            continue;
        }
        for (n, line) in before_tests(&source.text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for io in IO {
                if code.contains(io) {
                    found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "ask the shell for it with an Effect: {found:#?}"
    );
}
