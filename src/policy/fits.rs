//! Whether one rule fits a call: its agent, tool, kind, host, folder, title and paths, and
//! whether its command pattern covers a command's words (a modelled program's further words
//! only as its model reads them: [`super::args`]).

use std::path::{Path, PathBuf};

use super::{args, escape_words, never, tool_call, wrapped, Call, Decision, Rule};

impl Rule {
    /// Whether what the rule says of everything but the command fits `call`
    /// (`paths_decide`: the paths, resolved).
    pub(super) fn fits(&self, call: &Call, paths: &[PathBuf]) -> bool {
        let own = |p: &Path| {
            self.paths
                .as_ref()
                .is_some_and(|g| g.covers(p, &call.cwd, true))
        };
        self.fits_by(call, paths, own)
    }

    /// [`Rule::fits`], with `covers` saying whether the rule's paths, a deny's or an ask's,
    /// cover a path (its tier's index: [`super::tier::Cover`]).
    pub(super) fn fits_by<'p>(
        &self,
        call: &Call,
        paths: &'p [PathBuf],
        covers: impl Fn(&'p Path) -> bool,
    ) -> bool {
        self.fits_but_paths(call) && self.fits_paths(call, paths, covers)
    }

    /// Whether what the rule says of everything but the command and the paths fits `call`.
    pub(super) fn fits_but_paths(&self, call: &Call) -> bool {
        self.fits_as(call, call.kind.as_deref())
    }

    /// [`Rule::fits_but_paths`], `call` taken as of `kind` (a command's read or write: [`named`]).
    pub(super) fn fits_as(&self, call: &Call, kind: Option<&str>) -> bool {
        self.of_kind(kind) && self.fits_but_kind(call)
    }

    /// Whether the rule's `kind` (none: any) has `kind`.
    pub(super) fn of_kind(&self, kind: Option<&str>) -> bool {
        self.kind.is_empty() || kind.is_some_and(|k| self.kind.iter().any(|s| s == k))
    }

    /// [`Rule::fits_as`] but for the kind.
    pub(super) fn fits_but_kind(&self, call: &Call) -> bool {
        if let Some(agents) = &self.agent {
            let program = call.agent.rsplit('/').next().unwrap_or(&call.agent);
            let by_command = call.program.as_ref().is_some_and(|p| agents.is_match(p));
            if !agents.is_match(&call.agent) && !agents.is_match(program) && !by_command {
                return false;
            }
        }
        if let Some(tools) = &self.tool {
            if !call.tool.as_ref().is_some_and(|t| tools.is_match(t)) {
                return false;
            }
        }
        if !self.domain.is_empty() {
            let on = match call.url.as_deref().map(tool_call::host_of) {
                Some(Ok(host)) => self
                    .domain
                    .iter()
                    .any(|d| host == *d || host.ends_with(&format!(".{d}"))),
                // A URL that cannot be read safely: only a deny or ask covers it.
                Some(Err(())) => self.decision != Decision::Allow,
                None => false,
            };
            if !on {
                return false;
            }
        }
        if let Some(folders) = &self.cwd {
            if !folders.is_match(&call.cwd) {
                return false;
            }
        }
        if let Some(re) = &self.title {
            if !re.is_match(&call.title) {
                return false;
            }
        }
        true
    }

    /// Whether the rule's `paths` fit the resolved `paths` (any one for a deny or ask, whose
    /// `dir/**` also covers `dir`; all of them, and at least one, for an allow). An absolute
    /// pattern is matched against the absolute path; a relative one only inside the session's
    /// folder, against the path relative to it. `covers`: [`Rule::fits_by`].
    pub(super) fn fits_paths<'p>(
        &self,
        call: &Call,
        paths: &'p [PathBuf],
        covers: impl Fn(&'p Path) -> bool,
    ) -> bool {
        let Some(globs) = &self.paths else {
            return true;
        };
        match self.decision {
            Decision::Allow => {
                !paths.is_empty() && paths.iter().all(|p| globs.covers(p, &call.cwd, false))
            }
            Decision::Deny | Decision::Ask => paths.iter().any(|p| covers(p)),
        }
    }

    /// Whether the rule's command prefix covers `words`.
    pub fn covers(&self, words: &[String]) -> bool {
        self.prefix_fits(words) && self.admits(words).is_ok()
    }

    /// Whether the rule's command pattern fits `words` word by word (and, for an exact rule,
    /// has as many), whatever the words after it.
    pub(super) fn prefix_fits(&self, words: &[String]) -> bool {
        let Some(pattern) = &self.command else {
            return true;
        };
        let deny = self.decision != Decision::Allow;
        pattern.len() <= words.len()
            && (!self.exact || pattern.len() == words.len())
            && pattern.iter().zip(words).enumerate().all(|(i, (alts, w))| {
                alts.iter()
                    .any(|a| a == w || (i == 0 && program_is(a, w, deny)))
            })
    }

    /// Whether this rule, an allow that is a prefix, admits the words after its pattern: a
    /// modelled program's (a wrapper's: [`wrapped`]) only if its model knows them as harmless,
    /// another's only without an argument of `NEVER_UNDER_A_PREFIX`. `Ok(true)`: no model, more words.
    pub(super) fn admits(&self, words: &[String]) -> Result<bool, String> {
        let Some(pattern) = &self.command else {
            return Ok(false);
        };
        if self.decision != Decision::Allow || self.exact {
            return Ok(false);
        }
        let (words, prefix) = match wrapped::inner(words, pattern.len()) {
            wrapped::Inner::Itself => (words, pattern.len()),
            wrapped::Inner::Runs { words, prefix } => (words, prefix),
            wrapped::Inner::Unread(why) => return Err(why),
        };
        match args::under_prefix(words, prefix) {
            args::Reading::Understood(_) => Ok(false),
            args::Reading::Unknown { at, why } => Err(format!(
                "its model of `{}` does not know {} as harmless: {why}",
                args::base(&words[0]),
                words
                    .get(at)
                    .map(|w| format!("`{}`", escape_words(std::slice::from_ref(w))))
                    .unwrap_or_else(|| "the end".into())
            )),
            args::Reading::NoModel if never::names_more(words, prefix) => Err(format!(
                "`{}` takes an argument that names a program, a file or another place",
                args::base(&words[0])
            )),
            args::Reading::NoModel => Ok(words.len() > prefix),
        }
    }
}

/// The folders whose programs a pattern's bare name stands for in an allow rule: the
/// system's, never one the agent could have written to (`./git`, `/tmp/x/git`).
const SYSTEM_BIN: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
    "/opt/homebrew/bin/",
];

/// Whether the first word `word` is program `pattern` given with a folder: for a deny or
/// ask rule, in any folder (`./rm`, `/bin/rm`); for an allow rule, only in a system folder
/// (`/usr/bin/git`).
fn program_is(pattern: &str, word: &str, deny: bool) -> bool {
    if pattern.contains('/') || !word.contains('/') || word.rsplit('/').next() != Some(pattern) {
        return false;
    }
    deny || SYSTEM_BIN
        .iter()
        .any(|d| word.strip_prefix(d) == Some(pattern))
}
