//! Where a path the model named really leads, with its symlinks followed as the user's tree
//! would follow them (docs/sandbox-and-safety.md).
//!
//! The stage lives inside the git dir (`<repo>/.git/loaf/stage`), three folders below the
//! user's root. A relative symlink that climbs out of the tree therefore means something
//! else in the stage than in the user's tree: a committed `hk1 -> ../../hooks` points
//! nowhere from `<repo>/hk1`, but at `<repo>/.git/hooks` from the stage, and
//! `up -> ../../../a.txt` points at the user's own `a.txt` instead of the stage's. The
//! namespace sandbox mounts the stage at the user's path, so code sees links as the user
//! does; fs actions, which run in git-loaf itself, must too. [`PathMap::leads_to`] follows
//! each link found in the stage from where the link is in the user's view, then maps the
//! result back into the stage while it stays inside the root.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::PathMap;

/// Links followed before giving up, as the kernel's own limit (`ELOOP` after 40).
const MAX_LINKS: usize = 40;

impl PathMap {
    /// Where the user's `path` leads: every symlink on the way followed as the user's tree
    /// would follow it, the result mapped into the real root while it is inside the user's
    /// root. Without redirection (no stage), `path` as it is: the guard resolves it.
    ///
    /// A name that does not exist ends the walk; the rest is appended as written (nothing
    /// there exists, so nothing there is a link). A loop (more than 40 links) gives the path
    /// unresolved, which the guard then refuses with the kernel's own loop error.
    pub fn leads_to(&self, path: &Path) -> PathBuf {
        if !self.redirects() {
            return path.to_path_buf();
        }
        let user = super::root_spelled_as_ours(&self.user_root, path);
        let mut todo: VecDeque<OsString> = VecDeque::new();
        // Start at the root as spelled: its own ancestors may be links (`/tmp` on macOS),
        // which are the user's business, not the reply's.
        let mut here = PathBuf::from("/");
        match user.strip_prefix(&self.user_root) {
            Ok(rest) => {
                here = self.user_root.clone();
                push_front(&mut todo, &mut here, rest);
            }
            Err(_) => push_front(&mut todo, &mut here, &user),
        }
        let mut links = 0;
        while let Some(name) = todo.pop_front() {
            if name == ".." {
                self.climb(&mut here);
                continue;
            }
            let next = here.join(&name);
            let real = self.to_real(&next);
            match real.symlink_metadata() {
                Ok(meta) if meta.file_type().is_symlink() => {
                    links += 1;
                    let Ok(target) = std::fs::read_link(&real) else {
                        return self.to_real(path);
                    };
                    if links > MAX_LINKS {
                        return self.to_real(path);
                    }
                    push_front(&mut todo, &mut here, &target);
                }
                Ok(_) => here = next,
                Err(_) => {
                    here = next;
                    for rest in todo.drain(..) {
                        if rest == ".." {
                            self.climb(&mut here);
                        } else {
                            here.push(rest);
                        }
                    }
                }
            }
        }
        if !here.starts_with(&self.user_root) {
            // Reached from outside (a link to the root's canonical spelling).
            here = super::root_spelled_as_ours(&self.user_root, &here).into_owned();
        }
        self.to_real(&here)
    }

    /// `..` from `here`: above the root is above where the root really is.
    fn climb(&self, here: &mut PathBuf) {
        if *here == self.user_root {
            let canonical = self.user_root.canonicalize();
            *here = canonical.unwrap_or_else(|_| self.user_root.clone());
        }
        here.pop();
    }

    /// Where the entry `path` names is, itself not followed (a link stays the link): its
    /// folder resolved by [`PathMap::leads_to`], then its own name.
    pub fn entry_at(&self, path: &Path) -> PathBuf {
        let user = super::root_spelled_as_ours(&self.user_root, path);
        // The root itself is the stage, wherever its parent's links go.
        let is_root = user
            .strip_prefix(&self.user_root)
            .is_ok_and(|rest| rest.components().all(|c| matches!(c, Component::CurDir)));
        match (user.parent(), user.file_name()) {
            (Some(parent), Some(name)) if self.redirects() && !is_root => {
                self.leads_to(parent).join(name)
            }
            _ => self.to_real(path),
        }
    }

    fn redirects(&self) -> bool {
        self.user_root != self.real_root
    }
}

/// Puts `path`'s names before what is left to walk; an absolute `path` restarts at `/`.
fn push_front(todo: &mut VecDeque<OsString>, here: &mut PathBuf, path: &Path) {
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {
                *here = PathBuf::from("/");
                names.clear();
            }
            Component::CurDir => {}
            Component::ParentDir => names.push(OsString::from("..")),
            Component::Normal(name) => names.push(name.to_os_string()),
        }
    }
    for name in names.into_iter().rev() {
        todo.push_front(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user's tree at `<tmp>/repo` and its stage at `<tmp>/repo/.git/loaf/stage`, as a
    /// transaction lays them out.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf, PathMap) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical").join("repo");
        let stage = root.join(".git/loaf/stage");
        std::fs::create_dir_all(stage.join("src")).expect("stage");
        std::fs::create_dir_all(root.join(".git/hooks")).expect("hooks");
        let map = PathMap::redirect(&root, &stage);
        (tmp, root, stage, map)
    }

    fn link(target: &str, at: &Path) {
        std::os::unix::fs::symlink(target, at).expect("symlink");
    }

    #[test]
    fn a_link_climbing_out_of_the_stage_leads_where_it_would_from_the_users_tree() {
        let (tmp, root, stage, map) = layout();
        link("../../hooks", &stage.join("hk1"));
        // From the user's tree, `<tmp>/repo/../../hooks`: outside the repository, not its
        // git dir.
        let outside = tmp.path().canonicalize().expect("tmp");
        let expected = outside.parent().expect("parent").join("hooks/pre-commit");
        assert_eq!(map.leads_to(&root.join("hk1/pre-commit")), expected);
        assert_eq!(map.entry_at(&root.join("hk1/pre-commit")), expected);
        assert_eq!(map.entry_at(&root.join("hk1")), stage.join("hk1"));
        assert_eq!(map.entry_at(&root), stage);
    }

    #[test]
    fn a_link_to_a_file_of_the_tree_leads_to_the_stages_copy() {
        let (_tmp, root, stage, map) = layout();
        std::fs::write(stage.join("src/a.txt"), "a").expect("write");
        link("../src/a.txt", &stage.join("src/b.txt"));
        let absolute = root.join("src/a.txt");
        link(absolute.to_str().expect("utf-8"), &stage.join("c.txt"));
        assert_eq!(
            map.leads_to(&root.join("src/b.txt")),
            stage.join("src/a.txt")
        );
        assert_eq!(map.leads_to(&root.join("c.txt")), stage.join("src/a.txt"));
        // A name that does not exist is kept as written, `..` after it resolved as text.
        assert_eq!(
            map.leads_to(&root.join("src/new/../x.txt")),
            stage.join("src/x.txt")
        );
    }

    #[test]
    fn a_link_loop_gives_the_path_unresolved() {
        let (_tmp, root, stage, map) = layout();
        link("b", &stage.join("a"));
        link("a", &stage.join("b"));
        assert_eq!(map.leads_to(&root.join("a/x")), stage.join("a/x"));
    }

    #[test]
    fn without_a_stage_the_path_is_left_to_the_guard() {
        let map = PathMap::identity(Path::new("/repo"));
        assert_eq!(
            map.leads_to(Path::new("/repo/a/../b")),
            Path::new("/repo/a/../b")
        );
    }
}
