//! What a walled folder of the bridge's holds through links. A policy file or the trust list
//! that is a link (a dotfiles manager's `policy.toml -> ~/dotfiles/acpqb/policy.toml`) is
//! read through it, so the folder it really lies in is walled too; one with other names
//! (hard links) could be rewritten through a name the wall does not know, so the wall is
//! refused, with what to do.
//!
//! Invariants: every file or folder the bridge reads from a walled folder is, when the
//! wall stands, read-only by every name the agent could reach it by, or the agent does not
//! start; a link that leads nowhere is refused (the agent could make what it names).

use std::path::Path;

use super::{links_on_the_way, real, Files, Plan};

/// How deep, and how many entries, a walled folder is looked through.
const MAX_DEPTH: usize = 4;
const MAX_ENTRIES: usize = 4096;

impl Files {
    /// Walls what `folder` (walled read-only, canonical) holds through links: the real
    /// folder of each link's target, read-only, and the links on the way to it pinned.
    pub(super) fn through_links(&self, folder: &Path, plan: &mut Plan) -> Result<(), String> {
        let mut seen = 0;
        self.look_through(folder, 0, &mut seen, plan)
    }

    /// `Err` when file `f` has other names (a `--policy` file).
    pub(super) fn has_one_name(&self, f: &Path) -> Result<(), String> {
        match std::fs::metadata(f) {
            Ok(m) => one_name(f, &m),
            Err(_) => Ok(()),
        }
    }

    fn look_through(
        &self,
        dir: &Path,
        depth: usize,
        seen: &mut usize,
        plan: &mut Plan,
    ) -> Result<(), String> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for e in entries.flatten() {
            *seen += 1;
            if *seen > MAX_ENTRIES || depth > MAX_DEPTH {
                return Err(format!(
                    "{}: more than {MAX_ENTRIES} entries, or folders {MAX_DEPTH} deep, to look through for links; keep the bridge's config folders small",
                    dir.display()
                ));
            }
            let path = e.path();
            let Ok(m) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if m.file_type().is_symlink() {
                self.wall_target(&path, depth, seen, plan)?;
            } else if m.is_dir() {
                self.look_through(&path, depth + 1, seen, plan)?;
            } else {
                one_name(&path, &m)?;
            }
        }
        Ok(())
    }

    /// Walls the real place of link `link`: its folder (a file's) or itself (a folder's).
    fn wall_target(
        &self,
        link: &Path,
        depth: usize,
        seen: &mut usize,
        plan: &mut Plan,
    ) -> Result<(), String> {
        let target = real(link).map_err(|_| {
            format!(
                "{} is a link to {}, which is not there: the agent could make it, and the bridge would read it; remove the link, or make what it names",
                link.display(),
                std::fs::read_link(link).unwrap_or_default().display()
            )
        })?;
        let m = std::fs::metadata(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        let folder = if m.is_dir() {
            target.clone()
        } else {
            one_name(&target, &m)?;
            target.parent().unwrap_or(Path::new("/")).to_path_buf()
        };
        if let Some(why) = self.worked_in(&folder) {
            return Err(format!(
                "{} is a link to {}, in {} which is {why}: the wall cannot make that read-only, and the agent could rewrite the file there; keep it in a folder of its own (a dotfiles manager's package folder) and link to that",
                link.display(),
                target.display(),
                folder.display()
            ));
        }
        links_on_the_way(link, &mut plan.links);
        if !plan.read_only.contains(&folder) {
            plan.read_only.push(folder.clone());
            if m.is_dir() {
                self.look_through(&folder, depth + 1, seen, plan)?;
            }
        }
        Ok(())
    }
}

/// `Err` when file `f` has other names (hard links) the wall cannot know.
fn one_name(f: &Path, m: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;
    if m.is_file() && m.nlink() > 1 {
        return Err(format!(
            "{} has {} names (hard links): the agent could rewrite it through one the wall does not know; keep one name (`cp --remove-destination` it onto itself)",
            f.display(),
            m.nlink()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(home: &Path) -> Files {
        Files {
            cwd: Some(home.join("project")),
            ..Files::default()
        }
    }

    /// A policy file that is a link walls its real folder; one with two names, a link
    /// that leads nowhere, or one into a folder the agent works in, is refused.
    #[test]
    fn a_walled_folder_walls_what_its_links_lead_to() {
        let d = std::env::temp_dir().join(format!("acp-qb-wall-linked-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for f in ["cfg", "dotfiles/acpqb", "project", "shared/rules"] {
            std::fs::create_dir_all(d.join(f)).unwrap();
        }
        let d = d.canonicalize().unwrap();
        std::fs::write(d.join("dotfiles/acpqb/policy.toml"), "").unwrap();
        std::os::unix::fs::symlink(
            d.join("dotfiles/acpqb/policy.toml"),
            d.join("cfg/policy.toml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(d.join("shared/rules"), d.join("cfg/rules")).unwrap();
        let f = files(&d);
        let mut plan = Plan::default();
        f.through_links(&d.join("cfg"), &mut plan).unwrap();
        plan.read_only.sort();
        assert_eq!(
            plan.read_only,
            [d.join("dotfiles/acpqb"), d.join("shared/rules")]
        );
        assert!(plan.links.contains(&d.join("cfg/policy.toml")), "{plan:?}");

        // Two names.
        std::fs::hard_link(
            d.join("dotfiles/acpqb/policy.toml"),
            d.join("dotfiles/other.toml"),
        )
        .unwrap();
        let e = f
            .through_links(&d.join("cfg"), &mut Plan::default())
            .unwrap_err();
        assert!(e.contains("2 names"), "{e}");
        std::fs::remove_file(d.join("dotfiles/other.toml")).unwrap();

        // A link that leads nowhere.
        std::os::unix::fs::symlink(d.join("nowhere.toml"), d.join("cfg/trusted-folders")).unwrap();
        let e = f
            .through_links(&d.join("cfg"), &mut Plan::default())
            .unwrap_err();
        assert!(e.contains("not there"), "{e}");
        std::fs::remove_file(d.join("cfg/trusted-folders")).unwrap();

        // A link into the session's folder.
        std::fs::write(d.join("project/p.toml"), "").unwrap();
        std::os::unix::fs::symlink(d.join("project/p.toml"), d.join("cfg/p.toml")).unwrap();
        let e = f
            .through_links(&d.join("cfg"), &mut Plan::default())
            .unwrap_err();
        assert!(e.contains("session's folder"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
