//! Symbolic links a command makes (docs/POLICY.md, "Paths"): the policy resolves a
//! command's words as the OS would, and a link the command makes does not exist yet when
//! it is decided, so a command that makes one and does more is asked
//! (`super::guard`).

/// Whether `words` make a symbolic link: `ln` with `-s` or `--symbolic`, `cp` with `-s` or
/// `--symbolic-link` (a long option by any prefix of it GNU accepts, a short one in a
/// cluster: `-sf`).
pub fn makes_link(words: &[String]) -> bool {
    let program = words
        .first()
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .unwrap_or("");
    let long = match program {
        "ln" => "symbolic",
        "cp" => "symbolic-link",
        _ => return false,
    };
    words.iter().skip(1).any(|w| match w.strip_prefix("--") {
        Some(name) => {
            let name = name.split('=').next().unwrap_or(name);
            name.len() >= 2 && long.starts_with(name)
        }
        None => w.starts_with('-') && w[1..].contains('s'),
    })
}

/// Why command `cmd` is asked for making a symbolic link: one of its commands makes one
/// ([`makes_link`]) and it has another part, or another command in that part than the
/// wrappers it stands in (`env ln -s a b` alone is one command). Its links do not exist
/// when it is decided, so a later word cannot be resolved through them.
pub(super) fn links_then_more(cmd: &super::command::Command) -> Option<String> {
    let parts = cmd.parts().map_or(1, <[_]>::len);
    for (i, c) in cmd.seen.iter().enumerate() {
        if !makes_link(c) {
            continue;
        }
        let range = cmd.by_part.iter().find(|r| r.contains(&i));
        let more = parts > 1
            || range.is_none_or(|r| r.clone().any(|j| j != i && !cmd.seen[j].ends_with(c)));
        if more {
            return Some(format!(
                "{} makes a symbolic link, and the command does more: a later word may go through the link, which does not exist yet",
                c.join(" ")
            ));
        }
    }
    None
}
