//! The scratch folders a real program runs in, and the run under `strace`.
//!
//! One scratch per worker thread, in a new folder under the system's temporary folder:
//!
//! - `j/box`: the session's folder, where the command runs: files (`a.txt`, `sub/c.txt`,
//!   `data.json`, `a.tar`, a hidden `.env`, ...), a git repository of three commits (the last one carries a
//!   `gpgsig` header, so `%G?` asks gpg), a `Makefile` whose recipes only write `made-*`, a
//!   pytest test, links out of it (`link -> ../outside`, `sec -> ../outside/secret`, `abs`
//!   the same by its absolute path, `sub/up -> ../../outside`), and files that name the
//!   secret inside them (`list0` for `--files0-from`, `list` for `tar -T`, `inc.cfg` a git
//!   configuration that includes it);
//! - `j/outside`: what is not the session's: `secret`, a folder, a git repository, a pytest
//!   test that runs `id` when imported;
//! - `j/home`: `HOME` (a `.gitconfig` with a name and no automatic gc);
//! - `bin` (under the temporary folder, which may allow running programs where /dev/shm
//!   does not): stand-ins (`#!/bin/sh` that exit 0) for programs a run must not start
//!   (`sh`, `id`, `ssh`, `gpg`, `vi`, `man`, `curl`, ...), first on `PATH`.
//!
//! Before each run `j` is made again from a template, so every run sees the same files.
//! The run is `strace -f` of the program by its absolute path, with stdin /dev/null, an
//! environment of `HOME`, `PATH`, `LANG` and `TERM` only, in `j/box`, killed (its process group)
//! after a timeout. As root (CI) the program runs as `nobody` (`strace -u`) and the
//! scratch is `nobody`'s: a write a model missed fails outside the scratch, and is still
//! seen in the log, which records every attempt.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::trace::{self, Event};

/// `nobody`'s user and group, who runs the programs when the tests run as root.
const NOBODY: u32 = 65534;

/// Programs no modelled command may start: each a stand-in on `PATH` that does nothing.
pub const STAND_INS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "id",
    "touch",
    "curl",
    "wget",
    "nc",
    "ssh",
    "scp",
    "rsh",
    "rmt",
    "python",
    "python3",
    "perl",
    "node",
    "env",
    "sudo",
    "vi",
    "vim",
    "nano",
    "ed",
    "emacs",
    "editor",
    "sensible-editor",
    "less",
    "more",
    "pager",
    "sensible-pager",
    "man",
    "gpg",
    "gpg2",
    "gpgsm",
    "ssh-keygen",
    "xdg-open",
    "www-browser",
    "sendmail",
    "rm",
    "cp",
    "mv",
    "chmod",
    "cat",
    "tee",
    "xargs",
    "uname",
    "pwned",
];

/// The real programs the scratch needs to build itself, and how runs are made.
#[derive(Debug, Clone)]
pub struct Tools {
    pub strace: PathBuf,
    pub git: PathBuf,
    pub tar: PathBuf,
    /// Runs as `nobody` (the tests run as root).
    pub as_nobody: bool,
}

/// What one run did.
#[derive(Debug)]
pub struct Run {
    pub events: Vec<Event>,
    pub status: Option<ExitStatus>,
    pub hung: bool,
    pub stderr: String,
}

/// A scratch: its folders, made once; [`Scratch::reset`] makes `j` again before a run.
pub struct Scratch {
    pub base: PathBuf,
    /// `j`: holds `box`, `outside` and `home`.
    pub root: PathBuf,
    tpl: PathBuf,
    pub bin: PathBuf,
    log: PathBuf,
    pub out: PathBuf,
    pub err: PathBuf,
    tools: Tools,
    timeout: Duration,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove(&self.base);
        if let Some(dir) = self.bin.parent() {
            remove(dir);
        }
    }
}

impl Scratch {
    /// A new scratch under the system's temporary folder; each run killed after `timeout`.
    /// Without `links`, the session's folder has no link out of it (an everyday project).
    pub fn new(name: &str, tools: &Tools, timeout: Duration, links: bool) -> Scratch {
        // tmpfs when there is one: a run's folder is made again before every run.
        let shm = Path::new("/dev/shm");
        let parent = if shm.is_dir() && !fs::metadata(shm).is_ok_and(|m| m.permissions().readonly())
        {
            shm.to_owned()
        } else {
            std::env::temp_dir()
        };
        let unique = format!(
            "acp-qb-policy-args-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let base = parent.join(&unique);
        // The stand-ins where programs may be run: /dev/shm may be mounted `noexec`.
        let bin = std::env::temp_dir().join(unique).join("bin");
        let s = Scratch {
            root: base.join("j"),
            tpl: base.join("tpl"),
            bin,
            log: base.join("strace.log"),
            out: base.join("stdout"),
            err: base.join("stderr"),
            base,
            tools: tools.clone(),
            timeout,
        };
        for d in [&s.root, &s.tpl, &s.bin] {
            fs::create_dir_all(d).expect("a scratch folder");
        }
        let bin_parent = s.bin.parent().map(Path::to_owned).unwrap_or_default();
        for d in [&s.base, &s.root, &s.bin, &bin_parent] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o755)).expect("its mode");
        }
        for name in STAND_INS {
            crate::policy_shell::write_executable(
                &s.bin.join(name),
                "#!/bin/sh\n# A stand-in: a modelled program must not start it.\nexit 0\n",
            );
        }
        s.build_template(links);
        s
    }

    pub fn box_dir(&self) -> PathBuf {
        self.root.join("box")
    }

    pub fn outside(&self) -> PathBuf {
        self.root.join("outside")
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// `word` with `{OUT}` (the outside folder), `{BOX}` and `{HOME}` filled in.
    pub fn expand(&self, word: &str) -> String {
        word.replace("{OUT}", &self.outside().to_string_lossy())
            .replace("{BOX}", &self.box_dir().to_string_lossy())
            .replace("{HOME}", &self.home().to_string_lossy())
    }

    fn build_template(&self, with_links: bool) {
        let (b, o, h) = (
            self.tpl.join("box"),
            self.tpl.join("outside"),
            self.tpl.join("home"),
        );
        let out = self.outside();
        let out_s = out.to_string_lossy();
        for d in [&b, &o, &h, &b.join("sub"), &o.join("dir"), &o.join("repo")] {
            fs::create_dir_all(d).expect("a template folder");
        }
        let files: &[(&Path, &str, String)] = &[
            (&h, ".gitconfig", GITCONFIG.into()),
            (&o, "secret", "TOP SECRET: the outside file\n".into()),
            (&o, "dir/f.txt", "outside f\n".into()),
            (&o, "test_outside.py", TEST_OUTSIDE.into()),
            (&o, "repo/r.txt", "r\n".into()),
            (&b, "a.txt", "alpha\nid\nbeta\n".into()),
            (&b, "b.txt", "bravo\n".into()),
            (&b, ".env", "TOKEN=the session's own secret\n".into()),
            (&b, "sub/c.txt", "charlie\n".into()),
            (
                &b,
                "data.json",
                "{\"a\": 1, \"b\": [1, 2], \"s\": \"x\"}\n".into(),
            ),
            (&b, "Makefile", MAKEFILE.into()),
            (&b, "test_a.py", "def test_ok():\n    assert True\n".into()),
            (&b, "list0", format!("{out_s}/secret\0a.txt\0")),
            (&b, "list", format!("{out_s}/secret\na.txt\n")),
            (&b, "opts.list", format!("--directory={out_s}\nsecret\n")),
            (
                &b,
                "inc.cfg",
                format!("[include]\n\tpath = {out_s}/secret\n[x]\n\ty = z\n"),
            ),
        ];
        for (dir, name, content) in files {
            fs::write(dir.join(name), content).expect("a template file");
        }
        let links: &[(&Path, &str, String)] = &[
            (&b, "link", "../outside".into()),
            (&b, "sec", "../outside/secret".into()),
            (&b, "abs", format!("{out_s}/secret")),
            (&b, "sub/up", "../../outside".into()),
        ];
        for (dir, name, target) in links.iter().filter(|_| with_links) {
            std::os::unix::fs::symlink(target, dir.join(name)).expect("a template link");
        }
        let git = |dir: &Path, args: &[&str]| {
            let st = Command::new(&self.tools.git)
                .args(args)
                .current_dir(dir)
                .env_clear()
                .env("HOME", &h)
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(Stdio::null())
                .output()
                .expect("git runs");
            assert!(st.status.success(), "git {args:?}: {st:?}");
            String::from_utf8_lossy(&st.stdout).trim().to_owned()
        };
        git(&o.join("repo"), &["init", "-q"]);
        git(&o.join("repo"), &["add", "r.txt"]);
        git(&o.join("repo"), &["commit", "-q", "-m", "r"]);
        git(&b, &["init", "-q"]);
        git(
            &b,
            &[
                "add",
                "a.txt",
                "b.txt",
                "sub/c.txt",
                "Makefile",
                "test_a.py",
                "data.json",
            ],
        );
        git(&b, &["commit", "-q", "-m", "one"]);
        fs::write(b.join("b.txt"), "bravo\nmore\n").expect("b.txt");
        git(&b, &["commit", "-q", "-a", "-m", "two"]);
        fs::write(b.join("a.txt"), "alpha\nid\nbeta\ngamma\n").expect("a.txt");
        git(&b, &["commit", "-q", "-a", "-m", "three"]);
        fs::write(b.join("a.txt"), "alpha\nid\nbeta\n").expect("a.txt again");
        git(&b, &["tag", "v1", "HEAD~1"]);
        // HEAD with a signature header: `%G?` and its kin run gpg to check it.
        let raw = git(&b, &["cat-file", "commit", "HEAD"]);
        let mut lines: Vec<String> = raw.lines().map(str::to_owned).collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("committer "))
            .expect("a committer line");
        lines.insert(
            at + 1,
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEAAAA\n -----END PGP SIGNATURE-----"
                .into(),
        );
        let signed = b.join(".signed");
        fs::write(&signed, lines.join("\n") + "\n").expect("the signed commit");
        let id = git(
            &b,
            &[
                "hash-object",
                "-t",
                "commit",
                "-w",
                &signed.to_string_lossy(),
            ],
        );
        fs::remove_file(&signed).expect("the signed commit's file");
        git(&b, &["update-ref", "HEAD", &id]);
        // Fewer files to copy before each run: objects packed, samples and logs gone.
        for repo in [b.clone(), o.join("repo")] {
            git(&repo, &["repack", "-a", "-d", "-q"]);
            git(&repo, &["prune-packed"]);
            for extra in ["hooks", "logs", "description", "COMMIT_EDITMSG", "info"] {
                remove(&repo.join(".git").join(extra));
            }
        }
        for (name, args) in [
            ("a.tar", &["-cf", "a.tar", "a.txt", "b.txt"][..]),
            ("a.tar.gz", &["-czf", "a.tar.gz", "a.txt"][..]),
        ] {
            let st = Command::new(&self.tools.tar)
                .args(args)
                .current_dir(&b)
                .stdin(Stdio::null())
                .status()
                .expect("tar runs");
            assert!(st.success(), "tar makes {name}");
        }
        if self.tools.as_nobody {
            chown_tree(&self.tpl);
        }
    }

    /// Makes `j` again from the template.
    pub fn reset(&self) {
        if let Ok(entries) = fs::read_dir(&self.root) {
            for e in entries.flatten() {
                remove(&e.path());
            }
        }
        for name in ["box", "outside", "home"] {
            copy_tree(
                &self.tpl.join(name),
                &self.root.join(name),
                self.tools.as_nobody,
            );
        }
    }

    /// Runs `exe` with `args` under strace in `j/box` (made afresh by [`Scratch::reset`]).
    pub fn run(&self, exe: &Path, args: &[String]) -> Run {
        let _ = fs::remove_file(&self.log);
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display());
        let mut cmd = Command::new(&self.tools.strace);
        cmd.args(["-f", "-qq", "-y", "-xx", "-s", "4096", "--seccomp-bpf"])
            .args(["-e", "signal=none", "-e"])
            .arg(format!("trace={}", trace::TRACED));
        if self.tools.as_nobody {
            cmd.args(["-u", "nobody"]);
        }
        cmd.arg("-o")
            .arg(&self.log)
            .arg("--")
            .arg(exe)
            .args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", path)
            .env("LANG", "C.UTF-8")
            // As in a terminal's session: git starts no editor on a dumb terminal.
            .env("TERM", "xterm-256color")
            .current_dir(self.box_dir())
            .stdin(Stdio::null())
            .stdout(fs::File::create(&self.out).expect("stdout file"))
            .stderr(fs::File::create(&self.err).expect("stderr file"))
            .process_group(0);
        let (status, hung) = match cmd.spawn() {
            Ok(mut child) => wait(&mut child, Instant::now() + self.timeout),
            Err(e) => panic!("strace does not start: {e}"),
        };
        let log = fs::read(&self.log).unwrap_or_default();
        let stderr = fs::read(&self.err).unwrap_or_default();
        Run {
            events: trace::parse(&String::from_utf8_lossy(&log), &self.box_dir()),
            status,
            hung,
            stderr: String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(600)..])
                .into_owned(),
        }
    }
}

const GITCONFIG: &str = "[user]\n\tname = Test\n\temail = test@example.invalid\n\
[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n\
[advice]\n\tdetachedHead = false\n[safe]\n\tdirectory = *\n";

/// The project's own recipes: each writes only its `made-*` file, through the shell (a
/// redirection), so make runs `/bin/sh -c RECIPE`. [`MAKE_RECIPES`] lists them.
const MAKEFILE: &str = ".PHONY: all test build check\n\
all: build test\n\
test:\n\techo test > made-test\n\
build:\n\techo build > made-build\n\
check:\n\techo check > made-check\n";

/// What `make` may run: the Makefile's recipes, each by `/bin/sh -c`.
pub const MAKE_RECIPES: &[&str] = &[
    "echo test > made-test",
    "echo build > made-build",
    "echo check > made-check",
];

/// The Makefile's targets (and what `make -t` may touch).
pub const MAKE_TARGETS: &[&str] = &["all", "test", "build", "check"];

/// A test outside the session's folder that starts a program when pytest imports it.
const TEST_OUTSIDE: &str =
    "import subprocess\nsubprocess.run(['id'])\n\n\ndef test_outside():\n    pass\n";

fn chown_tree(p: &Path) {
    let _ = std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY));
    if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
        for e in fs::read_dir(p).into_iter().flatten().flatten() {
            chown_tree(&e.path());
        }
    }
}

/// Copies the tree `from` to `to`: folders, files (mode kept) and links as they are.
fn copy_tree(from: &Path, to: &Path, nobody: bool) {
    let m = fs::symlink_metadata(from).expect("a template entry");
    let ft = m.file_type();
    if ft.is_symlink() {
        let target = fs::read_link(from).expect("a template link");
        std::os::unix::fs::symlink(target, to).expect("a copied link");
    } else if ft.is_dir() {
        fs::create_dir(to).expect("a copied folder");
        for e in fs::read_dir(from).expect("a template folder").flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()), nobody);
        }
        fs::set_permissions(to, fs::Permissions::from_mode(m.mode() & 0o7777))
            .expect("a folder's mode");
    } else {
        fs::copy(from, to).expect("a copied file");
    }
    if nobody {
        let _ = std::os::unix::fs::lchown(to, Some(NOBODY), Some(NOBODY));
    }
}

/// Waits for strace (and what it left in its process group) until `deadline`, then kills
/// the group. Returns its status and whether it was killed.
fn wait(child: &mut Child, deadline: Instant) -> (Option<ExitStatus>, bool) {
    let group = Pid::from_raw(child.id() as i32);
    let mut pause = Duration::from_micros(200);
    let mut status = None;
    while Instant::now() < deadline {
        if status.is_none() {
            match child.try_wait() {
                Ok(Some(s)) => status = Some(s),
                Ok(None) => {}
                Err(e) => panic!("waiting for strace: {e}"),
            }
        }
        // Done when strace has ended and nothing is left in its group.
        if status.is_some() && killpg(group, None).is_err() {
            return (status, false);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
    let _ = killpg(group, Signal::SIGKILL);
    if status.is_none() {
        // SIGKILL cannot be ignored: this wait ends.
        status = child.wait().ok();
    }
    (status, true)
}

/// Removes `p` (a file, link or tree), making what a run left unreadable removable first.
pub fn remove(p: &Path) {
    let Ok(m) = fs::symlink_metadata(p) else {
        return;
    };
    if !m.is_dir() {
        let _ = fs::remove_file(p);
        return;
    }
    if fs::remove_dir_all(p).is_ok() {
        return;
    }
    fn open_up(p: &Path) {
        if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
            for e in fs::read_dir(p).into_iter().flatten().flatten() {
                open_up(&e.path());
            }
        }
    }
    open_up(p);
    let _ = fs::remove_dir_all(p);
}
