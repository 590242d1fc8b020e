//! A notice: what an operation found and did besides its result — an interrupted operation
//! finished, a loaf.yml change waiting for the user, the user's own edits left alone — which
//! the command line prints as `note:` lines on stderr and `git loaf mcp` returns before the
//! report (docs/mcp.md). Each says what it is about ([`NoticeKind`]), so a program built on
//! git-loaf can tell them apart without reading the text; the text is what the user reads.
//!
//! At the bottom of the crate: the configuration, the transaction engine and the operations
//! all give notices, so this imports none of them.

use std::fmt;

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// An earlier git-loaf operation was interrupted: finished, cleaned up, or its stale git
    /// lock files removed.
    Recovered,
    /// A loaf.yml setting that no longer does anything.
    Config,
    /// A change to loaf.yml waits for the user to accept it (or whether one does is unknown).
    ConfigWaiting,
    /// The user's own uncommitted changes: left alone, kept, merged with the reply's, or
    /// carried along in the commit.
    YourWork,
    /// HEAD stayed detached because the branch moved meanwhile.
    Head,
    /// A recorded agent turn that never ended was committed or forgotten.
    Turn,
    /// What the repository's post-commit hook said, or that it failed.
    Hook,
    /// notes.rewriteRef set (or not) so that the git-loaf notes follow a rebase.
    Notes,
    /// Code ran without the sandbox's namespaces.
    Sandbox,
    /// The operation log's automatic pruning (loaf.yml `gc`) ran or failed.
    Gc,
    /// An apply's stored record: only partly here (outputs as hashes, the trailer alone), or
    /// not stored.
    Record,
    /// The operation found nothing to show.
    Empty,
}

/// One notice: its kind and the text the user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What it is about.
    pub kind: NoticeKind,
    /// The sentence printed after `note: `.
    pub text: String,
}

impl Notice {
    /// A notice of `kind` saying `text`.
    pub fn new(kind: NoticeKind, text: impl Into<String>) -> Self {
        Notice {
            kind,
            text: text.into(),
        }
    }
}

/// The text alone, exactly as the user reads it.
impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_displays_as_its_text_alone() {
        let notice = Notice::new(NoticeKind::Gc, "automatic gc did not run: disk full");
        assert_eq!(notice.to_string(), "automatic gc did not run: disk full");
        assert_eq!(notice.kind, NoticeKind::Gc);
    }
}
