//! The model of `jq` (docs/POLICY.md, "Programs read by their arguments"): a filter, then
//! JSON files read.
//!
//! Left out on purpose (asked under a prefix): `jq -f`/`-L` and a filter that imports or
//! includes a module.

use super::{paths, stop, Access, Effects, Stop};

/// `jq`'s options that take nothing, short ones clustered as jq reads them.
const JQ_BARE: &[&str] = &[
    "-n|--null-input",
    "-R|--raw-input",
    "-s|--slurp",
    "-r|--raw-output",
    "--raw-output0",
    "-j|--join-output",
    "-a|--ascii-output",
    "-c|--compact-output",
    "-C|--color-output",
    "-M|--monochrome-output",
    "-S|--sort-keys",
    "-e|--exit-status",
    "--tab",
    "--unbuffered",
    "--stream",
    "--stream-errors",
    "--seq",
    "-h|--help",
    "-V|--version",
];

/// `jq`: a filter (with no `import` or `include`), then JSON files read; `--rawfile` and
/// `--slurpfile` read theirs.
pub(super) fn jq(w: &[String], e: &mut Effects) -> Result<(), Stop> {
    let mut i = 1;
    let mut filter = None;
    let mut args_only = false;
    let mut files = Vec::new();
    while i < w.len() {
        let a = w[i].as_str();
        if !a.starts_with('-') || a == "-" {
            if filter.is_none() {
                filter = Some(i);
            } else if !args_only {
                files.push(i);
            }
            i += 1;
            continue;
        }
        match a {
            "--arg" | "--argjson" => i += 3,
            "--slurpfile" | "--rawfile" => {
                let f = w
                    .get(i + 2)
                    .ok_or_else(|| stop(i, format!("`{a}` without its file")))?;
                e.paths.push((Access::Read, f.clone()));
                i += 3;
            }
            "--indent" => i += 2,
            "--args" | "--jsonargs" => {
                args_only = true;
                i += 1;
            }
            _ if super::lookup(JQ_BARE, a).is_some() => i += 1,
            _ if !a.starts_with("--")
                && a[1..]
                    .chars()
                    .all(|c| super::lookup(JQ_BARE, &format!("-{c}")).is_some()) =>
            {
                i += 1
            }
            _ => {
                return Err(stop(
                    i,
                    format!("`{a}` is not an option of jq known as harmless"),
                ))
            }
        }
    }
    if i > w.len() {
        return Err(stop(w.len() - 1, "an option of jq without its values"));
    }
    if let Some(f) = filter {
        if [
            "import",
            "include",
            "modulemeta",
            "get_search_list",
            "$__loc__",
        ]
        .iter()
        .any(|k| w[f].contains(k))
        {
            return Err(stop(f, "a jq filter that loads a module"));
        }
    }
    paths(w, &files, Access::Read, e);
    Ok(())
}
