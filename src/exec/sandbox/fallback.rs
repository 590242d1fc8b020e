//! Running code without namespaces, where they cannot be made and the user chose to
//! (`exec.sandbox: off`, `LOAF_SANDBOX=off`): the visible entries become symlinks to the
//! user's for each run, and the first such run in a process arms a notice that says what
//! this mode does not contain. See docs/sandbox-and-safety.md.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::placeholders::{Kind, Visible};
use super::symlink;

/// Fallback: replaces each (empty) placeholder by a symlink to the user's entry, the
/// placeholder moved into `aside` meanwhile (when there is one; else deleted and made again
/// after). A placeholder that is not empty is left alone rather than moved.
pub(super) fn link_visible(
    visible: &[Visible],
    aside: Option<&Path>,
) -> Vec<(Visible, Option<PathBuf>)> {
    let mut linked = Vec::new();
    for (n, entry) in visible.iter().enumerate() {
        let empty = match entry.kind {
            Kind::Dir => fs::read_dir(&entry.stage).is_ok_and(|mut d| d.next().is_none()),
            Kind::File => fs::metadata(&entry.stage).is_ok_and(|m| m.is_file() && m.len() == 0),
        };
        if !empty {
            continue;
        }
        let kept = aside.map(|dir| dir.join(n.to_string()));
        let moved = match &kept {
            Some(to) => fs::rename(&entry.stage, to).is_ok(),
            None => false,
        };
        let removed = moved
            || match entry.kind {
                Kind::Dir => fs::remove_dir(&entry.stage).is_ok(),
                Kind::File => fs::remove_file(&entry.stage).is_ok(),
            };
        if !removed {
            continue;
        }
        let kept = kept.filter(|_| moved);
        match symlink(&entry.user, &entry.stage) {
            Ok(()) => linked.push((entry.clone(), kept)),
            Err(_) => match &kept {
                Some(from) if fs::rename(from, &entry.stage).is_ok() => {}
                _ => {
                    let _ = entry.kind.create(&entry.stage);
                }
            },
        }
    }
    linked
}

impl Visible {
    /// Puts the placeholder back where the fallback put a symlink (the same file, from
    /// `aside`, so that the file actions still know it for a placeholder; a new one when it
    /// cannot), unless the code replaced the symlink by something else (then that is what
    /// the code wanted there).
    pub(super) fn unlink(&self, aside: Option<&Path>) {
        let still_ours = fs::read_link(&self.stage).is_ok_and(|target| target == self.user);
        if still_ours && fs::remove_file(&self.stage).is_ok() {
            let back = aside.is_some_and(|from| fs::rename(from, &self.stage).is_ok());
            if !back {
                let _ = self.kind.create(&self.stage);
            }
        }
    }
}

/// Whether a `LOAF_SANDBOX` value turns namespaces off.
pub(super) fn turns_off(value: &OsStr) -> bool {
    value.eq_ignore_ascii_case("off")
}

static NOTICE: Mutex<Option<String>> = Mutex::new(None);
static NOTICE_ARMED: AtomicBool = AtomicBool::new(false);

pub(super) fn arm_notice(why: String) {
    if !NOTICE_ARMED.swap(true, Ordering::SeqCst) {
        *NOTICE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
    }
}

/// The one line to print (on stderr) the first time code runs without namespaces in this
/// process; None before that and ever after.
pub fn fallback_notice() -> Option<String> {
    let why = NOTICE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()?;
    Some(format!(
        "git-loaf: exec and hooks run without isolation ({why}): what they write through the \
         repository's path is not part of the apply, and what they start in the background may \
         outlive it"
    ))
}
