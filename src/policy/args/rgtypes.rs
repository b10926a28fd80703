//! The names of the files ripgrep searches under `-t TYPE`, for the types an agent names
//! most, so a search of one language's files is not asked for a secret file no glob of
//! that language matches (`rg -t py KEY` where a denied `.env` is).
//!
//! ripgrep's table changes between releases (its `sh` took `.env` and `*.env` after 13.0),
//! so each type here holds every glob ripgrep 13.0 and its newest table give it, and a
//! type not here (`sh`, `config`, `all`, anything `--type-add` or `--type-clear` touches)
//! narrows nothing: the folder is searched whole, hidden files too.

/// Each type's names, then every glob of the file names it selects (matched on the name
/// alone, in any case: wider than ripgrep, never narrower; markdown's is written in
/// capitals). Only names and `*`: no class.
const TYPES: &[(&[&str], &[&str])] = &[
    (&["c"], &["*.c", "*.h", "*.c.in", "*.h.in", "*.cats"]),
    (&["cmake"], &["*.cmake", "CMakeLists.txt"]),
    (
        &["cpp"],
        &[
            "*.c", "*.h", "*.cc", "*.cpp", "*.hpp", "*.cxx", "*.hxx", "*.hh", "*.inl", "*.c.in",
            "*.h.in", "*.cc.in", "*.cpp.in", "*.hpp.in", "*.cxx.in", "*.hxx.in", "*.hh.in",
        ],
    ),
    (&["cs", "csharp"], &["*.cs"]),
    (&["css"], &["*.css", "*.scss"]),
    (&["dart"], &["*.dart"]),
    (&["go"], &["*.go"]),
    (&["graphql"], &["*.graphql", "*.graphqls"]),
    (&["html"], &["*.htm", "*.html", "*.ejs"]),
    (&["java"], &["*.java", "*.jsp", "*.jspx", "*.properties"]),
    (&["js"], &["*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"]),
    (&["json"], &["*.json", "composer.lock", "*.sarif"]),
    (&["jsonl"], &["*.jsonl"]),
    (&["kotlin"], &["*.kt", "*.kts"]),
    (&["lua"], &["*.lua"]),
    (
        &["md", "markdown"],
        &[
            "*.markdown",
            "*.MD",
            "*.mdown",
            "*.mdwn",
            "*.mkd",
            "*.mkdn",
            "*.mdx",
        ],
    ),
    (&["nix"], &["*.nix"]),
    (
        &["php"],
        &[
            "*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml",
        ],
    ),
    (&["proto", "protobuf"], &["*.proto"]),
    (&["py", "python"], &["*.py", "*.pyi"]),
    (&["rst"], &["*.rst"]),
    (&["rust"], &["*.rs"]),
    (&["scala"], &["*.scala", "*.sbt"]),
    (&["sql"], &["*.sql", "*.psql"]),
    (&["svelte"], &["*.svelte", "*.svelte.ts"]),
    (&["swift"], &["*.swift"]),
    (&["toml"], &["*.toml", "Cargo.lock"]),
    (&["ts", "typescript"], &["*.ts", "*.tsx", "*.cts", "*.mts"]),
    (&["txt"], &["*.txt"]),
    (&["vue"], &["*.vue"]),
    (&["yaml"], &["*.yaml", "*.yml"]),
    (&["zig"], &["*.zig"]),
];

/// The globs of the file names the types `names` select together, or `None` when one is
/// not in this table.
pub(super) fn globs<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for name in names {
        let (_, globs) = TYPES.iter().find(|(names, _)| names.contains(&name))?;
        out.extend(globs.iter().map(|g| (*g).to_owned()));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_ripgrep_may_widen_to_hidden_files_narrows_nothing() {
        assert_eq!(
            globs(["py", "rust"]),
            Some(vec!["*.py".into(), "*.pyi".into(), "*.rs".into()])
        );
        assert_eq!(globs(["sh"]), None);
        assert_eq!(globs(["py", "config"]), None);
        assert_eq!(globs(["all"]), None);
        // Every glob is a name with `*` alone, which `Effects::only_names` matches as is.
        for (_, gs) in TYPES {
            for g in *gs {
                assert!(
                    g.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"*._-".contains(&b)),
                    "{g}"
                );
            }
        }
    }
}
