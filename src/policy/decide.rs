//! A call with a command decided part by part (docs/POLICY.md, "Commands" and "Programs
//! read by their arguments"): each part by the highest tier with a rule for it or for what
//! its wrappers run, its paths by the rules on paths ([`super::named`]), a `cd` inside the
//! session followed, and a prefix rule's writes checked.

use std::path::PathBuf;

use super::command::Command;
use super::gitindex::foreign_submodule;
use super::parts::{left_behind, Ran};
use super::prefixed;
use super::*;

impl Policy {
    /// A call with a command: denied if any command seen in it is, asked if any is or no
    /// rule covers a part, allowed only when the command is plain and every part is. With
    /// an allow, `refused` says why it must be asked all the same, if it must: a path it
    /// names could not be resolved, or a prefix rule's program writes where no prefix may
    /// ([`named`]); the caller asks after the policy's own checks ([`Policy::decide`]).
    pub(super) fn decide_command(
        &self,
        call: &Call,
        paths: &[PathBuf],
        cmd: &Command,
        refused: &mut Option<String>,
        starts: &mut Vec<PathBuf>,
    ) -> Verdict {
        // Patterns put in place by the names they match, as the shell will.
        let expanded = cmd.expanded(
            &call.cwd,
            &mut super::glob::Bound {
                names: named::MAX_NAMED,
                step: &mut path::take_step,
            },
        );
        // Patterns are matched where the shell is: from the session's folder only when an
        // earlier `cd` cannot have left it elsewhere (Claude's Bash keeps its folder).
        // Where the agent's shell may be, left by an earlier `cd`; asked where that cannot
        // be told ([`shell_folders`]). Read once, for the patterns and for every part.
        let shell = shell_folders(call);
        let moved = shell.as_ref().map_or(true, |f| *f != [call.cwd.clone()]);
        let expanded = match expanded {
            Some(_) if moved => Some(cmd.clone().not_plain(
                "it matches names by a pattern, and an earlier command may have left the agent's shell in another folder than the session's".into(),
            )),
            other => other,
        };
        let cmd = expanded.as_ref().unwrap_or(cmd);
        // The folder the agent says it runs the command in (Codex's `workdir`): only the
        // session's own is decided as such; elsewhere the command is not plain.
        let elsewhere;
        let cmd = match &cmd.runs_in {
            Some(d) if path::resolve(d, &call.cwd).map(|r| r.path).as_ref() != Some(&call.cwd) => {
                elsewhere = cmd.clone().not_plain(format!(
                    "it runs in {}, not the session's folder",
                    escape_words(&[d.display().to_string()])
                ));
                &elsewhere
            }
            _ => cmd,
        };
        let shown = escape_words;
        let verdict = |d: Decision, r: &Rule, tier: &str, words: &[String]| Verdict {
            decision: d,
            rule: Some(r.into()),
            why: format!(
                "rule {:?} in the {tier} tier covers `{}`",
                r.id,
                shown(words)
            ),
        };
        // The paths each command names, when a rule on paths may speak of them.
        let with_paths = named::any_path_rule(self.rules().map(|(_, r)| r));
        let parts = match (cmd.parts(), cmd.not_allowable()) {
            (Some(parts), None) => parts,
            (_, not_plain) => {
                // Deny and ask rules: every command seen anywhere in the line.
                let mut asked = None;
                for words in &cmd.seen {
                    let named: Vec<named::Named> = if with_paths {
                        vec![named::Named::of(words, &call.cwd)]
                    } else {
                        Vec::new()
                    };
                    match self.decide_part(call, paths, &[words], &named, None) {
                        Some((Decision::Deny, r, tier, w)) => {
                            return verdict(Decision::Deny, r, tier, &w)
                        }
                        Some(v @ (Decision::Ask, ..)) if asked.is_none() => asked = Some(v),
                        _ => {}
                    }
                }
                if let Some((d, r, tier, w)) = asked {
                    return verdict(d, r, tier, &w);
                }
                return Verdict {
                    decision: Decision::Ask,
                    rule: None,
                    why: format!(
                        "the command is not plain ({}), so no rule can allow it",
                        not_plain.unwrap_or("it cannot be read")
                    ),
                };
            }
        };
        // Each part is decided by the highest tier with a rule for it or for what its
        // wrappers run; only a rule for the part itself allows it. A `cd` into a folder of
        // the session's needs no rule: the parts after it are decided in every folder they
        // may run in, starting from where the agent's shell may be.
        let start = shell.unwrap_or_else(|why| {
            refused.get_or_insert(why);
            vec![call.cwd.clone()]
        });
        // The policy's own files are looked for from each of them too.
        starts.clone_from(&start);
        let mut flow = super::moves::Flow::new(&start);
        let mut decided = Vec::new();
        let mut named_parts = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let mut folders = flow.folders();
            let range = cmd.by_part.get(i).cloned().unwrap_or(0..0);
            let inner: Vec<&[String]> = cmd.seen[range].iter().map(Vec::as_slice).collect();
            // Followed whether a rule covers it or not ([`super::moves::unfollowed`]); a
            // `cd` followed reads nothing in the folder it moves to.
            let moved = super::moves::cd_moves(&part.words, &folders, &call.cwd);
            let named: Vec<named::Named> = match with_paths && moved.is_none() {
                true => (inner.iter())
                    .map(|w| named::Named::in_folders(w, &folders))
                    .collect(),
                false => Vec::new(),
            };
            let outcome = self.decide_part(call, paths, &inner, &named, Some(&part.words));
            if moved.is_none() && outcome.is_some() && i + 1 < parts.len() {
                if let Some(why) = super::moves::unfollowed(&part.words) {
                    refused.get_or_insert(why);
                }
            }
            let is_move = moved.is_some();
            let moves = moved.unwrap_or_default();
            flow.step(part.op, &moves);
            for (_, dir) in moves {
                if !folders.contains(&dir) {
                    folders.push(dir);
                }
            }
            named_parts.push((folders, named.into_iter().next()));
            decided.push((part, outcome, is_move));
        }
        for want in [Decision::Deny, Decision::Ask] {
            if let Some((_, Some((d, r, tier, words)), _)) = decided
                .iter()
                .find(|(_, v, _)| v.as_ref().is_some_and(|v| v.0 == want))
            {
                return verdict(*d, r, tier, words);
            }
        }
        if let Some((part, ..)) = decided.iter().find(|(_, v, moved)| v.is_none() && !moved) {
            if decided.iter().all(|(_, v, _)| v.is_none()) && parts.len() == 1 {
                return match self.prefix_refused(call, paths, &part.words) {
                    Some(why) => Verdict {
                        decision: Decision::Ask,
                        rule: None,
                        why,
                    },
                    None => no_rule(),
                };
            }
            return Verdict {
                decision: Decision::Ask,
                rule: None,
                why: match self.prefix_refused(call, paths, &part.words) {
                    Some(why) => format!("`{}`, a part of the command: {why}", shown(&part.words)),
                    None => format!(
                        "no rule allows `{}`, a part of the command",
                        shown(&part.words)
                    ),
                },
            };
        }
        // Every part allowed: what the prefix rules' writes and paths say.
        let mut notes = Vec::new();
        for (i, ((part, outcome, _), (folders, named))) in
            decided.iter().zip(&named_parts).enumerate()
        {
            let Some((_, r, ..)) = outcome else { continue };
            if refused.is_some() {
                break;
            }
            if let Some(why) = named.as_ref().and_then(|n| n.unresolved.clone()) {
                *refused = Some(why);
                break;
            }
            if let Some(why) = glob_refused(r, part) {
                *refused = Some(why);
                break;
            }
            if let Some(why) = print_only_refused(r, part) {
                *refused = Some(why);
                break;
            }
            // What a wrapper runs is checked as that program ([`super::wrapped`]).
            let pattern = r.command.as_ref().map_or(0, Vec::len);
            let words = match super::wrapped::inner(&part.words, pattern) {
                super::wrapped::Inner::Runs { words, .. } => words,
                _ => &part.words[..],
            };
            if let Some(why) = prefixed::on_path_refused(part, folders, &call.cwd)
                .or_else(|| super::rc::refused(&part.words, folders))
                .or_else(|| super::rc::refused(words, folders))
                .or_else(|| super::gitruns::refused(&call.cwd, folders, words))
                .or_else(|| foreign_submodule(&call.cwd, words, &mut path::take_step))
            {
                *refused = Some(why);
                break;
            }
            match r.admits(&part.words) {
                // A command that goes on while later ones run goes where they lead it (a
                // link made in its way): its paths were decided as they are now.
                Ok(true) if cmd.background => {
                    *refused = Some(format!(
                        "`{}` runs in the background, and a prefix rule on a program with no model decides its paths as they are now: a later command may change them while it runs",
                        shown(&part.words)
                    ));
                }
                Ok(true) => {
                    notes.push(format!(
                        "no model of `{}`: the rule allows any arguments",
                        args::base(&part.words[0])
                    ));
                    let range = cmd.by_part.get(i).cloned().unwrap_or(0..0);
                    // Each command seen, and what the part may run from a later word on
                    // that names a program with a model (`uv run git …`, `npm exec -- git …`).
                    let w = &part.words;
                    let later =
                        (1..w.len()).filter(|&k| args::has_model(&w[k]) && !w[k].starts_with('-'));
                    let ran = cmd.seen[range]
                        .iter()
                        .map(Vec::as_slice)
                        .chain(later.map(|k| &w[k..]));
                    *refused = prefixed::ran_refused(ran, w, pattern, folders, &call.cwd);
                }
                Ok(false) if r.command.is_some() && !r.exact && cmd.background => {
                    *refused = Some(format!(
                        "`{}` runs in the background: its model decides the paths it names as they are now, and a later command may change them while it runs",
                        shown(&part.words)
                    ));
                }
                Ok(false) if r.command.is_some() && !r.exact => {
                    *refused = prefixed::model_refused(words, folders, &call.cwd);
                }
                _ => {}
            }
        }
        // What an earlier part, or one beside it in a pipeline, leaves behind.
        if refused.is_none() {
            let ran: Vec<Ran> = decided
                .iter()
                .enumerate()
                .map(|(i, (p, outcome, _))| {
                    let seen = &cmd.seen[cmd.by_part.get(i).cloned().unwrap_or(0..0)];
                    Ran::of(p, seen, outcome.is_some(), &named_parts[i].0)
                })
                .collect();
            *refused = left_behind(&ran, shown, &mut path::take_step);
        }
        let first = decided.iter().find_map(|(_, v, _)| v.as_ref());
        match first {
            Some((_, r, tier, _)) => {
                let mut why = if decided.len() == 1 {
                    format!("rule {:?} in the {tier} tier covers it", r.id)
                } else {
                    format!(
                        "every part is allowed (first by rule {:?} in the {tier} tier)",
                        r.id
                    )
                };
                if !notes.is_empty() {
                    why.push_str(&format!(" ({})", notes.join("; ")));
                }
                Verdict {
                    decision: Decision::Allow,
                    rule: Some((*r).into()),
                    why,
                }
            }
            None => no_rule(),
        }
    }

    /// Why the allow rules whose pattern fits `words` do not allow them: the first one's
    /// model refuses a word ([`Rule::admits`]).
    pub(super) fn prefix_refused(
        &self,
        call: &Call,
        paths: &[PathBuf],
        words: &[String],
    ) -> Option<String> {
        self.rules().find_map(|(tier, r)| {
            if r.decision != Decision::Allow || r.command.is_none() || !r.prefix_fits(words) {
                return None;
            }
            if !r.fits(call, paths) {
                return None;
            }
            r.admits(words).err().map(|why| {
                format!(
                    "rule {:?} in the {tier} tier would allow it by its prefix, but {why}",
                    r.id
                )
            })
        })
    }
}

/// Why `rule` may not allow the names `part`'s patterns were put in place by, if it may
/// not: only a prefix rule whose program's model reads each of them as a path read (or a
/// folder searched), after the rule's own words, in a part that writes and removes
/// nothing. So a name the folder gains before the shell expands the pattern is one more
/// path read, never a value or a write.
fn glob_refused(rule: &Rule, part: &command::Part) -> Option<String> {
    if part.globs.is_empty() {
        return None;
    }
    let refuse = |why: &str| {
        Some(format!(
            "`{}` matches names by a pattern, and {why}",
            escape_words(&part.words[..1])
        ))
    };
    let prefix = match &rule.command {
        Some(pattern) if !rule.exact => pattern.len(),
        _ => return refuse("only a prefix rule on a program read by its arguments allows that"),
    };
    if part.globs.iter().any(|&i| i < prefix) {
        return refuse("the rule's own words name what the pattern matched");
    }
    let args::Reading::Understood(e) = args::under_prefix(&part.words, prefix) else {
        return refuse("no model of the program reads every name it matched as a path read");
    };
    if e.paths
        .iter()
        .any(|(a, _)| matches!(a, args::Access::Write | args::Access::Remove))
        || !e.unplaced.is_empty()
    {
        return refuse("the command writes, removes, or passes words on to another program");
    }
    let read = |w: &String| {
        e.paths
            .iter()
            .any(|(a, p)| p == w && !matches!(a, args::Access::Write | args::Access::Remove))
    };
    if !part.globs.iter().all(|&i| read(&part.words[i])) {
        return refuse("its model does not read every name it matched as a path read");
    }
    None
}

/// Why `rule` may not allow `part` when the rule's own words make its program print only
/// (`Bash(sed -n:*)`): `sed -n -i …` writes files, which is not what its rule says.
fn print_only_refused(rule: &Rule, part: &command::Part) -> Option<String> {
    let pattern = rule.command.as_ref().filter(|_| !rule.exact)?;
    let print_only = args::base(&part.words[0]) == "sed"
        && pattern
            .iter()
            .skip(1)
            .any(|alts| alts.iter().any(|w| args::sed_quiet(w)));
    if !print_only {
        return None;
    }
    match args::under_prefix(&part.words, pattern.len()) {
        args::Reading::Understood(e)
            if e.paths
                .iter()
                .all(|(a, _)| !matches!(a, args::Access::Write | args::Access::Remove)) =>
        {
            None
        }
        args::Reading::Understood(_) => {
            Some("its rule is `sed -n` (print only), and this writes files (`-i`, `w`)".into())
        }
        _ => None,
    }
}

/// At most this many folders the agent's shell may be in; past it, where it is cannot be
/// told.
const MAX_SHELL_FOLDERS: usize = 16;
/// At most this many paths resolved to follow the shell through a session's commands.
const MAX_SHELL_STEPS: usize = 4096;

/// The folders the agent's shell may be in when `call` runs ([`Shell`]): the session's, and
/// every one a `cd` of an earlier command of the session may have left it in, as
/// [`super::moves::cd_inside`] follows a `cd` (inside the session, links as bash takes them).
/// `Err`: why that cannot be told: a `cd` elsewhere, into a folder not there now (it may
/// have been renamed since), or one the policy cannot read (`cd -`, `eval`, a command named
/// by an expansion), `pushd`, `popd`, a `cd` through a symbolic link (where it points may
/// have changed since), a later command that renames or removes a folder the shell may be
/// in (or one above it) by its words, more moves than the bridge keeps.
/// What a program's own code does (a test runner's) is the user's trust in that program,
/// as everywhere in the policy.
pub(super) fn shell_folders(call: &Call) -> Result<Vec<PathBuf>, String> {
    let mut folders = vec![call.cwd.clone()];
    if call.shell.lost {
        return Err(
            "more commands ran earlier in this session than the bridge keeps, so where the agent's shell is cannot be told".into(),
        );
    }
    let mut steps = MAX_SHELL_STEPS;
    for text in &call.shell.moved_by {
        let lost = || {
            Err(format!(
                "an earlier command of this session, `{}`, may have left the agent's shell in a folder the policy cannot follow (its shell keeps its folder between calls)",
                text.escape_debug()
            ))
        };
        let cmd = super::command::parse(text);
        let mover = |w: &Vec<String>| {
            w.first()
                .is_some_and(|p| matches!(args::base(p), "cd" | "pushd" | "popd"))
        };
        // Not plain: a `cd` in it cannot be followed, nor a builtin that runs other words
        // as a command, nor a command an expansion names (`$x gd`, `eval "c$x gd"`); its
        // other commands moved nothing (an expansion in an argument moves no shell).
        let unfollowed = |w: &Vec<String>| {
            w.first().is_none_or(|p| {
                p.contains(['$', '`']) || super::moves::moves_a_shell(args::base(p))
            })
        };
        let parts = match (cmd.parts(), cmd.not_allowable()) {
            (Some(parts), None) => parts,
            _ if cmd.seen.is_empty() || cmd.seen.iter().any(unfollowed) => return lost(),
            _ => &[],
        };
        if cmd.seen.iter().any(|w| {
            w.first()
                .is_some_and(|p| matches!(args::base(p), "pushd" | "popd"))
        }) {
            return lost();
        }
        // Each part where the `&&`, `||` and `;` before it lead ([`super::moves::Flow`]).
        let mut flow = super::moves::Flow::new(&folders);
        for part in parts {
            let here = flow.folders();
            if !mover(&part.words) {
                flow.step(part.op, &[]);
                continue;
            }
            // Through a link, the folder it reached is where the link pointed then, which a
            // later command may have changed: the words replayed would follow it now.
            if here.iter().any(|from| {
                super::moves::cd_operand(&part.words)
                    .is_some_and(|d| super::moves::through_a_link(from, d))
            }) {
                return lost();
            }
            match super::moves::cd_moves(&part.words, &here, &call.cwd) {
                Some(moves) => flow.step(part.op, &moves),
                None => return lost(),
            }
        }
        for dir in flow.all() {
            if !folders.contains(&dir) {
                folders.push(dir);
            }
        }
        if folders.len() > MAX_SHELL_FOLDERS {
            return Err(format!(
                "earlier commands of this session may have left the agent's shell in more than {MAX_SHELL_FOLDERS} folders"
            ));
        }
        // Once it may be away from the session's folder: a command that renames or removes
        // where it may be takes the shell along where the policy cannot follow.
        if folders.len() > 1 {
            let moved = cmd
                .seen
                .iter()
                .filter(|w| !mover(w))
                .any(|w| moves_a_folder(w, &folders, &call.cwd, &mut steps));
            if moved {
                return lost();
            }
        }
    }
    Ok(folders)
}

/// Whether `words`, run in any of `folders`, may rename or remove one of them other than
/// `session` (or a folder above one, inside the session) by its words: a path its model
/// writes or removes, or any word of a program no model reads. `steps`: the resolutions
/// left; none left, or a word that cannot be resolved, counts as a move.
fn moves_a_folder(
    words: &[String],
    folders: &[PathBuf],
    session: &std::path::Path,
    steps: &mut usize,
) -> bool {
    let written: Vec<String> = match args::read(words) {
        args::Reading::Understood(e) => e
            .paths
            .into_iter()
            .filter(|(a, _)| matches!(a, args::Access::Write | args::Access::Remove))
            .map(|(_, w)| w)
            .chain(e.unplaced)
            .collect(),
        _ => words
            .iter()
            .skip(1)
            .flat_map(|w| super::named::candidates(w).map(str::to_owned))
            .collect(),
    };
    let away: Vec<&PathBuf> = folders.iter().filter(|f| *f != session).collect();
    for word in &written {
        for from in folders {
            if *steps == 0 {
                return true;
            }
            *steps -= 1;
            let Some(r) = path::resolve(std::path::Path::new(word), from) else {
                return true;
            };
            if r.path != session
                && r.path.starts_with(session)
                && away.iter().any(|a| a.starts_with(&r.path))
            {
                return true;
            }
        }
    }
    false
}
