//! The ignored entries of the user's tree that code sees in place ([`Sandbox::visible`]:
//! `.venv`, `node_modules`): each gets a placeholder of its kind in the stage, which the
//! isolated run mounts the user's entry over ([`super::mounts`]) and the fallback replaces by
//! a symlink for the run ([`super::fallback`]). See docs/sandbox-and-safety.md.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{Sandbox, make_parent, symlink};

impl Sandbox {
    /// The visible entries that exist in the user's tree, each with a placeholder of the
    /// same kind in the stage (created when missing). A user's entry that is a symlink is
    /// copied as a symlink and needs nothing more; an entry whose stage path holds
    /// something of another kind is left out.
    pub(super) fn prepare_visible(&self) -> Vec<Visible> {
        let mut prepared = Vec::new();
        for rel in &self.visible {
            let user = self.user_root.join(rel);
            let stage = self.stage_root.join(rel);
            let Ok(meta) = fs::symlink_metadata(&user) else {
                continue;
            };
            let here = fs::symlink_metadata(&stage).ok();
            if meta.file_type().is_symlink() {
                if here.is_none()
                    && let Ok(target) = fs::read_link(&user)
                {
                    let _ = make_parent(&stage).and_then(|()| symlink(&target, &stage));
                }
                continue;
            }
            let kind = if meta.is_dir() { Kind::Dir } else { Kind::File };
            let fits = match &here {
                None => make_parent(&stage)
                    .and_then(|()| kind.create(&stage))
                    .is_ok(),
                Some(here) => here.is_dir() == (kind == Kind::Dir) && !here.is_symlink(),
            };
            if fits {
                prepared.push(Visible { user, stage, kind });
            }
        }
        prepared
    }
}

/// An ignored entry of the user's tree shown in the stage.
#[derive(Debug, Clone)]
pub(crate) struct Visible {
    /// The user's entry.
    pub user: PathBuf,
    /// Its placeholder in the stage.
    pub stage: PathBuf,
    pub(super) kind: Kind,
}

impl Visible {
    /// Whether the entry is a folder (else a file).
    pub(crate) fn is_folder(&self) -> bool {
        self.kind == Kind::Dir
    }
}

/// What a placeholder is: the kind of the user's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Dir,
    File,
}

impl Kind {
    pub(super) fn create(self, path: &Path) -> io::Result<()> {
        match self {
            Kind::Dir => fs::create_dir(path),
            Kind::File => fs::File::create_new(path).map(drop),
        }
    }
}
