//! The launcher (`acp-question-bridge __wall PLAN -- AGENT...`): builds the wall of a
//! [`Plan`] around itself, then becomes the agent. Runs before anything else of the binary,
//! on its one thread (a user namespace cannot be entered by a process with more).
//!
//! The order matters:
//! 1. a user, a mount and a PID namespace, the caller's ids mapped to themselves, at most
//!    [`NESTED_NAMESPACES`] more made inside; the parent-death signal set again; the
//!    launcher splits into the watcher and init, pid 1 of the new namespace
//!    ([`super::init`]), which goes on:
//! 2. no mount event shared with the rest of the system, a `/proc` of the new namespace;
//! 3. every folder above a walled path (`/` aside) bound onto itself, shallowest first, so
//!    that no rename moves one (a mount point cannot be renamed or removed), then each
//!    path of the plan: read-only, or hidden behind an empty read-only folder or
//!    `/dev/null`, and each link on the way to one bound onto itself, unfollowed;
//! 4. the plan's folder entered again (the one inherited lies under the new mounts);
//! 5. every capability dropped, none to be gained again (securebits locked for root);
//! 6. the agent's process forked (pid 2): a Landlock domain (no tracing, no `/proc` files
//!    of, no signal to, any process outside), a seccomp filter (no limit, priority or
//!    affinity of another process set), and `execvp` of the agent.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statvfs::{statvfs, FsFlags};

use super::Plan;

/// How many user (and mount) namespaces everything inside the wall may make.
const NESTED_NAMESPACES: u32 = 64;

/// What the launcher does at one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    /// Bound onto itself, as it is: it cannot be renamed or removed.
    Pin,
    /// A link bound onto itself, not followed: it cannot be removed, replaced or renamed.
    PinLink,
    /// Bound onto itself, read-only.
    ReadOnly,
    /// An empty read-only folder, or `/dev/null`, in its place.
    Hide,
}

/// Runs the launcher with its arguments (after [`super::LAUNCHER_ARG`]); returns only when
/// the agent could not be started.
pub fn main(args: &[OsString]) -> ExitCode {
    let fail = |msg: &str| crate::logging::fail("acp-question-bridge", 126, msg);
    let (plan, agent) = match args {
        [plan, dashes, agent @ ..] if dashes == "--" && !agent.is_empty() => {
            match serde_json::from_str::<Plan>(&plan.to_string_lossy()) {
                Ok(p) => (p, agent),
                Err(e) => return fail(&format!("the wall's plan: {e}")),
            }
        }
        _ => return fail("usage: acp-question-bridge __wall PLAN -- AGENT [ARGS]..."),
    };
    let parent = nix::unistd::getppid();
    let cannot = |e: String| {
        fail(&format!(
            "cannot build the wall around the agent: {e} (`--sandbox off` runs it without)"
        ))
    };
    if let Err(e) = namespaces() {
        return cannot(e);
    }
    // The namespaces changed this process's credentials, which clears the parent-death
    // signal: set again, for the watcher.
    if rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
        .is_err()
        || nix::unistd::getppid() != parent
    {
        return fail("the bridge ended before its agent started");
    }
    // The watcher stays here; init (pid 1 of the new PID namespace) goes on.
    // A plan without one (the probe's) takes the bridge's default `--shutdown-grace`.
    let grace = std::time::Duration::from_millis(plan.grace_ms.unwrap_or(3_000));
    let init = match super::init::split(parent, grace) {
        Ok(init) => init,
        Err(e) => return cannot(e),
    };
    if let Err(e) = build(&plan) {
        return cannot(e);
    }
    if let Err(e) = super::init::start(init) {
        return cannot(e);
    }
    // The agent's process, pid 2: its own Landlock domain (`/proc/self` is its own, for
    // `workspace`) and seccomp filter, init outside both.
    if let Err(e) = landlock(plan.writable.as_deref()).and_then(|()| no_reaching_out()) {
        return cannot(e);
    }
    let program = &agent[0];
    let err = std::process::Command::new(program).args(&agent[1..]).exec();
    let code = match err.kind() {
        std::io::ErrorKind::NotFound => 127,
        _ => 126,
    };
    crate::logging::fail(
        "acp-question-bridge",
        code,
        &crate::child::SpawnError {
            command: program.to_string_lossy().into_owned(),
            source: err,
        }
        .to_string(),
    )
}

/// A user, mount and PID namespace of the launcher's own, the caller's ids mapped to
/// themselves, at most [`NESTED_NAMESPACES`] more to be made inside. The PID namespace is
/// that of the launcher's next child ([`super::init`]).
fn namespaces() -> Result<(), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
        .map_err(|e| {
        format!(
            "no user namespace ({e}): allow them (`sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu `sysctl kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile for this binary)"
        )
    })?;
    let write =
        |file: &str, text: String| std::fs::write(file, text).map_err(|e| format!("{file}: {e}"));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))?;
    // Namespaces are counted per user up to the top: everything inside may make a few (a
    // sandbox of the agent's own), never so many that the next bridge cannot make its wall.
    // Where a kernel does not let a namespace set its own limit, it goes without: a bridge
    // whose probe then finds none left does not start its agent (fail closed).
    for limit in ["user/max_user_namespaces", "user/max_mnt_namespaces"] {
        let _ = write(
            &format!("/proc/sys/{limit}"),
            format!("{NESTED_NAMESPACES}\n"),
        );
    }
    Ok(())
}

/// Builds the wall of `plan` around this process, init of the new PID namespace: the
/// mounts (a `/proc` of the namespace first), the folder, no capability.
fn build(plan: &Plan) -> Result<(), String> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    own_proc();
    let planned = ops(plan);
    // The same folders where their file system is mounted again (a bind of `/`, Fedora
    // Atomic's `/sysroot`): read before the wall's own mounts are made.
    let mounts = super::mounts::mountinfo();
    let hidden: Vec<PathBuf> = planned
        .iter()
        .filter(|(_, op)| *op == Op::Hide)
        .map(|(p, _)| p.clone())
        .collect();
    let again: Vec<(PathBuf, Op)> = planned
        .iter()
        .filter(|(_, op)| *op != Op::Pin)
        .flat_map(|(p, op)| {
            super::mounts::aliases(p, &mounts)
                .into_iter()
                .map(move |a| (a, *op))
        })
        .filter(|(a, _)| std::fs::symlink_metadata(a).is_ok())
        .filter(|(a, _)| !hidden.iter().any(|h| a.starts_with(h)))
        .collect();
    for (path, op) in planned.into_iter().chain(again) {
        apply(&path, op).map_err(|e| format!("{} ({op:?}): {e}", path.display()))?;
    }
    if let Some(cwd) = &plan.cwd {
        std::env::set_current_dir(cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
    } else if let Ok(cwd) = std::env::current_dir() {
        // The folder inherited is the one beneath the new mounts: enter it again.
        let _ = std::env::set_current_dir(cwd);
    }
    drop_capabilities()
}

/// A `/proc` of the new PID namespace over the system's: inside, no process of the
/// bridge's is there to read or write (`oom_score_adj`, `autogroup`, `fd/`). Where the
/// kernel refuses it (a container whose `/proc` has parts masked by mounts: a user
/// namespace may not mount one that would show them), the system's stays, and the
/// launcher says so.
fn own_proc() {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    if let Err(e) = mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>) {
        crate::logging::say(
            "acp-question-bridge",
            &format!("the wall keeps the system's /proc ({e}): the agent can see the bridge's processes, though not read or trace them"),
        );
    }
}

/// A seccomp filter on the calls that change another process's limits or priority, which
/// need only the same user (no Landlock scope covers them): `prlimit64` setting another's
/// limits (a CPU limit the kernel then kills the bridge by), `setpriority` of another or of
/// every process of the user, `sched_setaffinity`, `sched_setscheduler`, `sched_setparam`,
/// `sched_setattr` and `ioprio_set` of another: refused with `EPERM`; so is a `chmod` that
/// sets the setuid or setgid bit. The agent's own process and group are left to it
/// (`nice`, `ulimit`). A call of another architecture
/// (a 32-bit program) ends the process, as its numbers would pass the filter.
fn no_reaching_out() -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op,
        SeccompCondition as Cond, SeccompFilter, SeccompRule,
    };
    let fail = |e: &dyn std::fmt::Display| format!("seccomp: {e}");
    let arg = |i: u8, op: Op, v: u64| Cond::new(i, Len::Qword, op, v).map_err(|e| fail(&e));
    let rule = |c: Vec<Cond>| SeccompRule::new(c).map_err(|e| fail(&e));
    // `which` of setpriority: PRIO_USER; of ioprio_set: IOPRIO_WHO_USER.
    const PRIO_USER: u64 = 2;
    const IOPRIO_WHO_USER: u64 = 3;
    let another =
        |i: u8| -> Result<Vec<SeccompRule>, String> { Ok(vec![rule(vec![arg(i, Op::Ne, 0)?])?]) };
    // A mode with the setuid or setgid bit: a root agent could make any root-owned program
    // setuid (`chmod 4755`), which Landlock does not see, for every user to run as root.
    let setid = |i: u8| -> Result<Vec<SeccompRule>, String> {
        Ok(vec![
            rule(vec![arg(i, Op::MaskedEq(0o4000), 0o4000)?])?,
            rule(vec![arg(i, Op::MaskedEq(0o2000), 0o2000)?])?,
        ])
    };
    const SYS_FCHMODAT2: i64 = 452;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = [
        // Reading another's limits is harmless; setting them is not.
        (
            libc::SYS_prlimit64,
            vec![rule(vec![arg(0, Op::Ne, 0)?, arg(2, Op::Ne, 0)?])?],
        ),
        (
            libc::SYS_setpriority,
            vec![
                rule(vec![arg(1, Op::Ne, 0)?])?,
                rule(vec![arg(0, Op::Eq, PRIO_USER)?])?,
            ],
        ),
        (
            libc::SYS_ioprio_set,
            vec![
                rule(vec![arg(1, Op::Ne, 0)?])?,
                rule(vec![arg(0, Op::Eq, IOPRIO_WHO_USER)?])?,
            ],
        ),
        (libc::SYS_sched_setaffinity, another(0)?),
        (libc::SYS_sched_setscheduler, another(0)?),
        (libc::SYS_sched_setparam, another(0)?),
        (libc::SYS_sched_setattr, another(0)?),
        (libc::SYS_fchmod, setid(1)?),
        (libc::SYS_fchmodat, setid(2)?),
        (SYS_FCHMODAT2, setid(2)?),
    ]
    .into_iter()
    .collect();
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_chmod, setid(1)?);
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| fail(&format!("{e:?}")))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| fail(&e))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| fail(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| fail(&e))
}

/// Every mount of `plan`, shallowest first: the folders above each path pinned, each path
/// read-only or hidden; nothing beneath a hidden path.
fn ops(plan: &Plan) -> Vec<(PathBuf, Op)> {
    let mut ops: std::collections::BTreeMap<PathBuf, Op> = Default::default();
    let planned = plan
        .read_only
        .iter()
        .map(|p| (p, Op::ReadOnly))
        .chain(plan.hidden.iter().map(|p| (p, Op::Hide)))
        .chain(plan.links.iter().map(|p| (p, Op::PinLink)));
    for (p, op) in planned {
        for a in p.ancestors().skip(1) {
            if a.parent().is_some() {
                ops.entry(a.to_path_buf()).or_insert(Op::Pin);
            }
        }
        let e = ops.entry(p.clone()).or_insert(op);
        *e = (*e).max(op);
    }
    let hidden: Vec<PathBuf> = ops
        .iter()
        .filter(|(_, op)| **op == Op::Hide)
        .map(|(p, _)| p.clone())
        .collect();
    let mut out: Vec<(PathBuf, Op)> = ops
        .into_iter()
        .filter(|(p, _)| !hidden.iter().any(|h| p != h && p.starts_with(h)))
        .collect();
    out.sort_by_key(|(p, _)| p.components().count());
    out
}

/// One mount of the wall.
fn apply(path: &Path, op: Op) -> Result<(), String> {
    let bind = |from: &Path| {
        mount(
            Some(from),
            path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("bind: {e}"))
    };
    match op {
        Op::Pin => bind(path),
        Op::PinLink => pin_link(path),
        Op::ReadOnly => {
            bind(path)?;
            read_only(path)
        }
        Op::Hide if path.is_dir() => mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("mode=0500,size=4k"),
        )
        .map_err(|e| format!("tmpfs: {e}")),
        Op::Hide => {
            bind(Path::new("/dev/null"))?;
            read_only(path)
        }
    }
}

/// Binds the link at `path` onto itself, not following it (`open_tree` and `move_mount`:
/// `mount(2)` follows links). A link that is a mount point cannot be removed, replaced or
/// renamed (`EBUSY`). A link gone since the plan was made is nothing to pin.
fn pin_link(path: &Path) -> Result<(), String> {
    use rustix::mount::{move_mount, open_tree, MoveMountFlags, OpenTreeFlags};
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    // The plan's paths are whole: the folder they are taken from is never looked at.
    let root = std::fs::File::open("/").map_err(|e| format!("/: {e}"))?;
    let tree = open_tree(
        &root,
        path,
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(|e| format!("open_tree: {e}"))?;
    move_mount(
        &tree,
        "",
        &root,
        path,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| format!("move_mount: {e}"))
}

/// Makes the bind mount at `path` read-only, and every mount beneath it: a remount reaches
/// the top mount only, and a mount beneath a read-only folder (`binfmt_misc` beneath
/// `/proc/sys`, whose `register` names a program the kernel runs outside every namespace)
/// would stay writable. `mount_setattr` with `AT_RECURSIVE` (Linux 5.12; Landlock's ABI 2
/// needs 5.19) sets the flag alone; where it is missing, a remount of the top one.
#[allow(unsafe_code)]
fn read_only(path: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| format!("read-only: {e}"))?;
    let attr = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a path that lives through the call, a `mount_attr` of the size given.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    match done {
        0 => Ok(()),
        _ if nix::errno::Errno::last() == nix::errno::Errno::ENOSYS => remount_read_only(path),
        _ => Err(format!(
            "read-only: mount_setattr: {}",
            nix::errno::Errno::last()
        )),
    }
}

/// Remounts the bind mount at `path` read-only, keeping the flags the mount beneath had
/// (a user namespace may not clear them).
fn remount_read_only(path: &Path) -> Result<(), String> {
    let st = statvfs(path).map_err(|e| format!("statvfs: {e}"))?;
    let f = st.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (has, keep) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if f.contains(has) {
            flags |= keep;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
        .map_err(|e| format!("read-only: {e}"))
}

/// No capability left, in any set, and none to gain by `execve`: root's special treatment
/// off and locked, the bounding set empty, `no_new_privs`.
fn drop_capabilities() -> Result<(), String> {
    use rustix::thread::{self, CapabilitiesSecureBits as S, CapabilitySet, CapabilitySets};
    thread::set_capabilities_secure_bits(
        S::NO_ROOT
            | S::NO_ROOT_LOCKED
            | S::NO_SETUID_FIXUP
            | S::NO_SETUID_FIXUP_LOCKED
            | S::KEEP_CAPS_LOCKED,
    )
    .map_err(|e| format!("securebits: {e}"))?;
    for bit in 0..64 {
        let cap = CapabilitySet::from_bits_retain(1 << bit);
        match thread::remove_capability_from_bounding_set(cap) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(format!("bounding set: {e}")),
        }
    }
    thread::clear_ambient_capability_set().map_err(|e| format!("ambient set: {e}"))?;
    thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|e| format!("capabilities: {e}"))?;
    thread::set_no_new_privs(true).map_err(|e| format!("no_new_privs: {e}"))
}

/// A Landlock domain of this process and all it starts: no process outside can be traced
/// or have its `/proc` files read, or be signalled (ABI 6 and later). Without `writable` it
/// handles two file rights only for a domain to exist: making block devices (never
/// granted; it needs a capability anyway), and moving a file to another folder, granted
/// everywhere (a domain that does not handle it denies every such move: ABI 2 and later).
/// With `writable` (`workspace`), every right that changes a file is handled, and granted
/// beneath those paths only.
fn landlock(writable: Option<&[PathBuf]>) -> Result<(), String> {
    use landlock::Access as _;
    use landlock::{
        AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, ABI,
    };
    let no = |e: landlock::RulesetError| {
        format!("no Landlock of ABI 2 or later ({e}): a kernel of 5.19 or later with `landlock` in its `lsm=`")
    };
    let root = PathFd::new("/").map_err(|e| format!("/: {e}"))?;
    // The rights of ABI 2 are required; truncating and device ioctls (ABI 3, 5) are handled
    // where the kernel has them.
    let write = AccessFs::from_write(ABI::V5);
    let (required, more) = match writable {
        Some(_) => (AccessFs::from_write(ABI::V2), write),
        None => (
            AccessFs::MakeBlock | AccessFs::Refer,
            AccessFs::Refer.into(),
        ),
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(required)
        .map_err(no)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(more)
        .map_err(no)?
        .scope(Scope::from_all(ABI::V6))
        .map_err(no)?
        .create()
        .map_err(no)?
        .set_compatibility(CompatLevel::HardRequirement)
        .add_rule(PathBeneath::new(root, AccessFs::Refer))
        .map_err(no)?;
    for p in writable.unwrap_or_default() {
        let fd = PathFd::new(p).map_err(|e| format!("{}: {e}", p.display()))?;
        // A file takes the rights a file can have; a folder all of them.
        let rights = if p.is_dir() {
            write
        } else {
            write & AccessFs::from_file(ABI::V5)
        };
        ruleset = ruleset
            .set_compatibility(CompatLevel::BestEffort)
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(no)?;
    }
    let status = ruleset.restrict_self().map_err(no)?;
    if status.ruleset == landlock::RulesetStatus::NotEnforced {
        return Err(
            "Landlock is not enforced: a kernel of 5.19 or later with `landlock` in its `lsm=`"
                .into(),
        );
    }
    Ok(())
}
