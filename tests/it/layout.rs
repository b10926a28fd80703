//! The shape of the source tree (docs/ARCHITECTURE.md, "Layering"): no import cycle between
//! the library's modules, no file over the size a reader can hold before its tests, no
//! comment that cites a document the repository does not have, and no source file missing
//! from the architecture map.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lines a source file may have before its `#[cfg(test)]` ("about 600"; the margin keeps a
/// doc comment from failing the build).
const MAX_LINES: usize = 650;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `src/`, as (module path, file).
fn sources() -> Vec<(Vec<String>, PathBuf)> {
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
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            (module, p)
        })
        .collect()
}

/// A file's text before its tests, without comment lines.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let before = text.split("#[cfg(test)]").next().unwrap_or("");
    before
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file's code names through `crate::` or `super::`.
fn named_paths(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for (head, skip) in [("crate::", 0usize), ("super::", 1)] {
        let mut from = 0;
        while let Some(at) = code[from..].find(head) {
            let start = from + at;
            from = start + head.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue; // `$crate::` or a longer name
            }
            let mut path: Vec<String> = if skip == 0 {
                Vec::new()
            } else {
                // `super` is the parent module (of `a/mod.rs`, module `a`, too).
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let mut rest = &code[from..];
            loop {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let seg = &rest[..end];
                if seg.is_empty() {
                    break;
                }
                if seg == "super" {
                    path.pop();
                } else {
                    path.push(seg.to_owned());
                }
                rest = &rest[end..];
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            out.push(path);
        }
    }
    out
}

#[test]
fn no_import_cycle_between_the_librarys_modules() {
    let files = sources();
    // The binaries' side (main, the mock agent's bin, the tools) is not the library.
    let library: Vec<_> = files
        .iter()
        .filter(|(m, _)| {
            !matches!(
                m.first().map(String::as_str),
                Some("main" | "lib" | "bin" | "tools")
            )
        })
        .collect();
    let known: BTreeSet<Vec<String>> = library.iter().map(|(m, _)| m.clone()).collect();
    let resolve = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| known.contains(p))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, path) in &library {
        let to = edges.entry(module.clone()).or_default();
        for named in named_paths(module, &code(path)) {
            if let Some(target) = resolve(&named) {
                if &target != module {
                    to.insert(target);
                }
            }
        }
    }
    let mut cycles = cycles_in(&edges);
    // And between the top-level modules as wholes (`events` -> `questions::model` and
    // `questions::chat` -> `events` is a cycle of `events` and `questions`).
    let mut tops: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, to) in &edges {
        let entry = tops.entry(from[..1].to_vec()).or_default();
        entry.extend(
            to.iter()
                .map(|t| t[..1].to_vec())
                .filter(|t| *t != from[..1]),
        );
    }
    cycles.extend(cycles_in(&tops));
    assert!(
        cycles.is_empty(),
        "import cycles (move what both need down into a module of its own):\n{}",
        cycles.join("\n")
    );
    // The check sees imports at all: the router uses the question model.
    assert!(edges[&vec!["router".to_owned(), "requests".to_owned()]]
        .iter()
        .chain(&edges[&vec!["router".to_owned()]])
        .any(|m| m.first().is_some_and(|f| f == "questions")));
}

/// Every module that reaches itself, with the way round.
fn cycles_in(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let mut cycles = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(&Vec<String>, Vec<&Vec<String>>)> = vec![(start, vec![])];
        while let Some((at, trail)) = stack.pop() {
            for next in edges.get(at).into_iter().flatten() {
                let mut trail = trail.clone();
                trail.push(at);
                if next == start {
                    let names: Vec<String> =
                        trail.iter().chain([&start]).map(|m| m.join("::")).collect();
                    cycles.push(names.join(" -> "));
                } else if seen.insert(next) {
                    stack.push((next, trail));
                }
            }
        }
    }
    cycles
}

#[test]
fn no_source_file_is_over_about_600_lines_before_its_tests() {
    let long: Vec<String> = sources()
        .into_iter()
        .filter_map(|(_, path)| {
            let text = std::fs::read_to_string(&path).unwrap();
            let before = text.split("#[cfg(test)]").next().unwrap_or("");
            let n = before.lines().count();
            // A file of tests only (`sources_tests.rs`, `questions/tests.rs`) is all tests.
            let tests_only = path
                .file_stem()
                .is_some_and(|s| s.to_string_lossy().ends_with("tests"));
            (n > MAX_LINES && !tests_only).then(|| format!("{}: {n}", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by concern: {long:?}");
}

#[test]
fn comments_cite_only_documents_the_repository_has() {
    let mut missing = Vec::new();
    for (_, path) in sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for word in line.split(|c: char| c.is_whitespace() || "`()[],;:\"'".contains(c)) {
                if !word.ends_with(".md") {
                    continue;
                }
                let doc = word.trim_start_matches("../");
                let found = [root().join(doc), root().join("docs").join(doc)]
                    .iter()
                    .any(|p| p.is_file());
                if !found {
                    missing.push(format!("{}:{}: {doc}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documents not in the repository: {missing:?}"
    );
}

/// Every source file is named in docs/ARCHITECTURE.md's map: by its path (`src/a/b.rs`), by
/// its folder's files (`src/a/*.rs`), or by a folder above it (`src/a/`), in backquotes. A
/// file added without its row fails here, so the map cannot drift.
#[test]
fn every_source_file_is_on_the_architecture_map() {
    let map = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let named: BTreeSet<&str> = map
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.starts_with("src/"))
        .collect();
    let src = root();
    let missing: Vec<String> = sources()
        .into_iter()
        .filter_map(|(_, path)| {
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let mut dirs = Path::new(&rel).ancestors().skip(1);
            let on_map = named.contains(rel.as_str())
                || Path::new(&rel)
                    .parent()
                    .is_some_and(|d| named.contains(format!("{}/*.rs", d.display()).as_str()))
                || dirs.any(|d| named.contains(format!("{}/", d.display()).as_str()));
            (!on_map).then_some(rel)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "name these in docs/ARCHITECTURE.md's map (a row each, or their folder): {missing:?}"
    );
}
