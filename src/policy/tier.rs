//! One tier of the policy: its rules, and an index of them built once, when the tier is made.
//! The index holds every glob of the tier's deny and ask rules on paths in one set, so that a
//! decision matches each path a command names once against all of them, and then looks the
//! rule up, instead of matching the path once per rule (benches/policy.rs: with 200 such
//! rules that matching was most of a decision). The rules are private, so the index can never
//! disagree with the rules it indexes; an index that cannot be built leaves each rule matched
//! on its own, which decides the same. A second index holds the command rules by the program
//! their pattern starts with, so that a decision reads only the rules on the programs a
//! command may start ([`Tier::may_cover`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use globset::{Candidate, GlobSet, GlobSetBuilder};

use super::{Decision, Rule};

/// One tier: its name and rules, highest first in [`super::Policy::tiers`].
#[derive(Debug, Clone)]
pub struct Tier {
    pub name: &'static str,
    rules: Vec<Rule>,
    index: Option<PathIndex>,
    /// The command rules by each program their pattern's first word names.
    by_program: HashMap<String, Vec<usize>>,
    /// The rules with no command pattern, one bit each.
    no_command: Vec<u64>,
}

impl Tier {
    /// The tier `name` with `rules`, in the order they were written.
    pub fn new(name: &'static str, rules: Vec<Rule>) -> Tier {
        let index = PathIndex::of(&rules);
        let mut by_program: HashMap<String, Vec<usize>> = HashMap::new();
        let mut no_command = vec![0u64; rules.len().div_ceil(64)];
        for (i, r) in rules.iter().enumerate() {
            match r.command.as_deref().and_then(|c| c.first()) {
                None => no_command[i / 64] |= 1 << (i % 64),
                Some(alts) => {
                    for a in alts {
                        by_program.entry(a.clone()).or_default().push(i);
                    }
                }
            }
        }
        Tier {
            name,
            rules,
            index,
            by_program,
            no_command,
        }
    }

    /// The rules (their places, in order) that may cover a command of `programs` (the
    /// programs it starts): every rule with no command pattern, and each command rule whose
    /// pattern starts with one of them; of the deny and ask rules, also those starting with
    /// one of `inside` (words of commands no model reads). A rule left out covers none of
    /// them: its first word names none of their programs.
    pub(super) fn may_cover<'w>(
        &self,
        programs: impl IntoIterator<Item = &'w str>,
        inside: impl IntoIterator<Item = &'w str>,
    ) -> Places {
        let mut bits = self.no_command.clone();
        let mut set = |i: &usize| bits[*i / 64] |= 1 << (*i % 64);
        for p in programs {
            self.by_program
                .get(p)
                .into_iter()
                .flatten()
                .for_each(&mut set);
        }
        for w in inside {
            self.by_program
                .get(w)
                .into_iter()
                .flatten()
                .filter(|i| self.rules[**i].decision != Decision::Allow)
                .for_each(&mut set);
        }
        Places { bits, at: 0 }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The tier with its rules changed by `change`, its indexes made again.
    pub fn changed(self, change: impl FnOnce(&mut Vec<Rule>)) -> Tier {
        let mut rules = self.rules;
        change(&mut rules);
        Tier::new(self.name, rules)
    }

    /// The tier with no index: every rule read for every call, each matched on its own (as
    /// before the indexes; for the test that they decide the same).
    #[cfg(test)]
    fn unindexed(name: &'static str, rules: Vec<Rule>) -> Tier {
        let mut no_command = vec![0u64; rules.len().div_ceil(64)];
        for i in 0..rules.len() {
            no_command[i / 64] |= 1 << (i % 64);
        }
        Tier {
            name,
            rules,
            index: None,
            by_program: HashMap::new(),
            no_command,
        }
    }

    /// A matcher of paths against this tier's rules, for one decision from folder `cwd`.
    pub(super) fn cover<'p>(&'p self, cwd: &'p Path) -> Cover<'p> {
        Cover {
            tier: self,
            cwd,
            memo: RefCell::new(HashMap::new()),
            found: RefCell::new(Vec::new()),
        }
    }
}

/// Places of rules in a tier, in order ([`Tier::may_cover`]).
pub(super) struct Places {
    bits: Vec<u64>,
    /// The word of `bits` looked at.
    at: usize,
}

impl Iterator for Places {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while let Some(word) = self.bits.get_mut(self.at) {
            if *word != 0 {
                let b = word.trailing_zeros() as usize;
                *word &= *word - 1;
                return Some(self.at * 64 + b);
            }
            self.at += 1;
        }
        None
    }
}

/// The globs of every deny and ask rule on paths of a tier, in one set for each of
/// [`super::PathGlobs`]' four sets, with the rule each glob is of.
#[derive(Debug, Clone)]
struct PathIndex {
    /// `absolute`, `relative`, `dirs_absolute`, `dirs_relative`, as in [`super::PathGlobs`].
    sets: [GlobSet; 4],
    /// For each set, the rule (its place in the tier) of each of its globs.
    owners: [Vec<u32>; 4],
    /// The rules with a relative `**`: the session's folder itself is theirs.
    session_folder: Vec<u32>,
}

impl PathIndex {
    /// The index of `rules`' deny and ask rules on paths; `None` when a set cannot be built
    /// (each rule is then matched on its own).
    fn of(rules: &[Rule]) -> Option<PathIndex> {
        let mut builders: [GlobSetBuilder; 4] = std::array::from_fn(|_| GlobSetBuilder::new());
        let mut owners: [Vec<u32>; 4] = Default::default();
        let mut session_folder = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let Some(globs) = &r.paths else { continue };
            if r.decision == Decision::Allow {
                continue;
            }
            let i32 = u32::try_from(i).ok()?;
            for (k, each) in globs.each.iter().enumerate() {
                for g in each {
                    builders[k].add(g.clone());
                    owners[k].push(i32);
                }
            }
            if globs.session_folder {
                session_folder.push(i32);
            }
        }
        let [a, b, c, d] = builders;
        Some(PathIndex {
            sets: [
                a.build().ok()?,
                b.build().ok()?,
                c.build().ok()?,
                d.build().ok()?,
            ],
            owners,
            session_folder,
        })
    }

    /// The indexed rules (sorted) whose paths cover resolved path `p`, as
    /// [`super::PathGlobs::covers`] with `dirs` says for each; `found` is scratch space.
    fn covering(&self, p: &Path, cwd: &Path, found: &mut Vec<usize>) -> Vec<u32> {
        let mut rules = Vec::new();
        let rel = p.strip_prefix(cwd).ok();
        let mut add = |k: usize, c: &Candidate, found: &mut Vec<usize>| {
            self.sets[k].matches_candidate_into(c, found);
            rules.extend(found.iter().map(|&j| self.owners[k][j]));
        };
        let whole = Candidate::new(p);
        add(0, &whole, found);
        add(2, &whole, found);
        if let Some(r) = rel {
            let c = Candidate::new(r);
            add(1, &c, found);
            if !r.as_os_str().is_empty() {
                add(3, &c, found);
            }
        }
        if p == cwd {
            rules.extend(&self.session_folder);
        }
        rules.sort_unstable();
        rules.dedup();
        rules
    }
}

/// A path kept by its address: the paths of one decision stay where they are while it is
/// decided (the lifetime says so), so one address and length is one path. (The same path at
/// two places is two keys, matched twice: correct, only slower.)
#[derive(Clone, Copy)]
struct ByAddr<'p>(&'p Path);

impl PartialEq for ByAddr<'_> {
    fn eq(&self, o: &Self) -> bool {
        std::ptr::eq(self.0.as_os_str(), o.0.as_os_str())
    }
}

impl Eq for ByAddr<'_> {}

impl Hash for ByAddr<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        let s = self.0.as_os_str();
        (s as *const std::ffi::OsStr as *const u8 as usize, s.len()).hash(h)
    }
}

/// Paths matched against one tier's deny and ask rules on paths, each path once.
pub(super) struct Cover<'p> {
    tier: &'p Tier,
    cwd: &'p Path,
    memo: RefCell<HashMap<ByAddr<'p>, Vec<u32>>>,
    found: RefCell<Vec<usize>>,
}

impl<'p> Cover<'p> {
    /// Whether the paths of rule `i` of the tier (a deny or an ask: `dir/**` covers `dir`
    /// too) cover resolved path `p`, as [`super::PathGlobs::covers`] says.
    pub(super) fn covers(&self, i: usize, p: &'p Path) -> bool {
        let rule = &self.tier.rules[i];
        let Some(globs) = &rule.paths else {
            return false;
        };
        let index = match &self.tier.index {
            // Every deny and ask rule on paths is in the index; an allow's are matched alone.
            Some(ix) if rule.decision != Decision::Allow => ix,
            _ => return globs.covers(p, self.cwd, true),
        };
        let mut memo = self.memo.borrow_mut();
        let hits = memo
            .entry(ByAddr(p))
            .or_insert_with(|| index.covering(p, self.cwd, &mut self.found.borrow_mut()));
        u32::try_from(i).is_ok_and(|i| hits.binary_search(&i).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The index says of every path what each rule's own globs say, for every kind of pattern.
    #[test]
    fn the_index_covers_what_each_rule_covers_on_its_own() {
        let mut text = String::new();
        let patterns = [
            "secrets/**",
            "**/.env",
            "//etc/**",
            "*.pem",
            "src/*/key",
            "**",
            "//p/a/**",
            "./docs/[A-Z]*.txt",
            "{a,b}/c",
            "dir/**/deep",
        ];
        for (i, p) in patterns.iter().enumerate() {
            let decision = ["deny", "ask", "allow"][i % 3];
            text.push_str(&format!(
                "[[rule]]\nid = \"r{i}\"\ndecision = \"{decision}\"\npaths = [{p:?}]\n\n"
            ));
        }
        text.push_str("[[rule]]\nid = \"c\"\ndecision = \"deny\"\ncommand = [\"rm\"]\n");
        let rules = super::super::file::parse_rules(&text, Path::new("t.toml")).unwrap();
        let tier = Tier::new("user", rules);
        assert!(tier.index.is_some());
        let cwd = PathBuf::from("/p");
        let paths: Vec<PathBuf> = [
            "/p",
            "/p/secrets",
            "/p/secrets/k",
            "/p/SECRETS/k",
            "/p/x/.env",
            "/p/.ENV",
            "/etc",
            "/etc/passwd",
            "/p/a",
            "/p/a/b",
            "/p/k.pem",
            "/p/src/x/key",
            "/p/src/x/y/key",
            "/p/docs/Read.txt",
            "/p/docs/read.txt",
            "/p/a/c",
            "/p/b/c",
            "/p/dir",
            "/p/dir/x/deep",
            "/q/secrets/k",
            "/",
            "/p/",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let cover = tier.cover(&cwd);
        for (i, r) in tier.rules().iter().enumerate() {
            let Some(globs) = &r.paths else { continue };
            for p in &paths {
                let alone = globs.covers(p, &cwd, true);
                if r.decision != Decision::Allow {
                    assert_eq!(
                        cover.covers(i, p),
                        alone,
                        "rule {} on {}",
                        r.id,
                        p.display()
                    );
                }
            }
        }
    }

    /// Whole decisions with the indexes are those without them: commands of programs with
    /// rules and without, wrappers and runners no model reads, reads, edits and searches of
    /// files under deny and ask rules on paths, in both tiers.
    #[test]
    fn a_tier_decides_the_same_with_its_indexes_as_without() {
        let d = std::env::temp_dir().join(format!("acp-qb-tier-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for f in [
            "secrets/k",
            "src/a.rs",
            "dir/x",
            "docs/Read.txt",
            ".env",
            "k.pem",
        ] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), "x").unwrap();
        }
        let d = d.canonicalize().unwrap();
        let user = r#"
[[rule]]
id = "no-rm"
decision = "deny"
command = ["rm"]
[[rule]]
id = "secrets"
decision = "ask"
paths = ["secrets/**", "*.pem"]
[[rule]]
id = "env"
decision = "deny"
paths = ["**/.env"]
[[rule]]
id = "etc"
decision = "ask"
kind = ["read", "search"]
paths = ["//etc/**"]
[[rule]]
id = "no-edit-dir"
decision = "deny"
kind = ["edit"]
paths = ["dir/**"]
[[rule]]
id = "reads"
decision = "allow"
command = [["cat", "ls", "grep", "find", "head", "wc", "xyzzy"]]
[[rule]]
id = "tests"
decision = "allow"
command = ["cargo", ["test", "build"]]
[[rule]]
id = "cp"
decision = "allow"
command = [["cp", "mv"]]
[[rule]]
id = "read-src"
decision = "allow"
kind = ["read", "edit"]
paths = ["src/**", "docs/**"]
[[rule]]
id = "push"
decision = "ask"
command = ["git", "push"]
"#;
        let project = r#"
[[rule]]
id = "p-docs"
decision = "deny"
paths = ["docs/[A-Z]*.txt"]
[[rule]]
id = "p-make"
decision = "allow"
command = ["make", "build"]
[[rule]]
id = "p-curl"
decision = "deny"
command = ["curl"]
"#;
        let parse = |t: &str| super::super::file::parse_rules(t, Path::new("/u/p.toml")).unwrap();
        let policy = |indexed: bool| super::super::Policy {
            tiers: if indexed {
                vec![
                    Tier::new("user", parse(user)),
                    Tier::new("project", parse(project)),
                ]
            } else {
                vec![
                    Tier::unindexed("user", parse(user)),
                    Tier::unindexed("project", parse(project)),
                ]
            },
            broken: None,
            protected: Vec::new(),
        };
        let (with, without) = (policy(true), policy(false));
        let call = |kind: &str, cmd: Option<&str>, paths: &[&str]| super::super::Call {
            agent: "claude-agent-acp".into(),
            program: None,
            tool: None,
            url: None,
            kind: Some(kind.into()),
            title: cmd.unwrap_or("t").into(),
            command: cmd.map(super::super::command::parse),
            paths: paths.iter().map(PathBuf::from).collect(),
            cwd: d.clone(),
            shell: Default::default(),
            unsaid: None,
        };
        let mut calls = Vec::new();
        for cmd in [
            "make build",
            "cat .env",
            "cat secrets/k",
            "cat SECRETS/K",
            "head k.pem",
            "ls",
            "ls secrets",
            "grep -r x .",
            "grep -r x src",
            "find . -name x",
            "find src",
            "rm -rf /tmp/x",
            "/bin/rm x",
            "ls; rm -rf /tmp/x",
            "cargo test && git status",
            "git push",
            "cp src/a.rs dir/y",
            "mv secrets s2",
            "cp .env src/e",
            "wc -l src/*.rs",
            "setarch x86_64 rm -f v",
            "xyzzy rm -f v",
            "xyzzy -q /bin/rm v",
            "xyzzy curl x",
            "timeout 5 rm x",
            "env rm x",
            "bash -c 'rm x'",
            "curl -s x | sh",
            "diff -r secrets src",
            "cat /etc/passwd",
            "cat docs/Read.txt",
            "cat docs/read.txt",
            "echo hi > dir/x",
            "sed -n p src/a.rs",
            "make build > dir/z",
        ] {
            calls.push(call("execute", Some(cmd), &[]));
        }
        for (kind, paths) in [
            ("read", &["src/a.rs"][..]),
            ("read", &["secrets/k"]),
            ("read", &[".env", "src/a.rs"]),
            ("edit", &["dir/x"]),
            ("edit", &["src/a.rs"]),
            ("search", &["."]),
            ("search", &["src"]),
            ("read", &["/etc/passwd"]),
            ("read", &["docs/Read.txt"]),
            ("read", &["k.pem"]),
        ] {
            calls.push(call(kind, None, paths));
        }
        let mut decisions = std::collections::BTreeSet::new();
        for c in &calls {
            let (a, b) = (with.decide(c), without.decide(c));
            assert_eq!(a, b, "{:?} {:?} {:?}", c.kind, c.title, c.paths);
            decisions.insert(a.decision);
        }
        // The calls reach every decision, so the test compares something.
        assert_eq!(decisions.len(), 3, "{decisions:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
