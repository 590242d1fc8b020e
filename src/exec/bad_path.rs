//! Paths no file can have, or that git-loaf refuses (docs/sandbox-and-safety.md, "What is refused
//! rather than risked"): a NUL byte, a line break, a name past the filesystem's limit, a path past
//! `PATH_MAX`.
//!
//! They are refused before anything is touched, with a message for the model, so that the
//! block fails on its own and the other blocks run. Without this check the operating system
//! refuses them halfway through the transaction (while the stage is recorded), and its error
//! names the stage's own path instead of the model's.
//!
//! A line break is refused although git can store one: every list of paths a reply gives
//! (`files_read`'s `paths`) is one path per line, a path that spans lines is almost always a
//! value that swallowed the next line, and such a file is awkward for every line-based tool
//! the user has.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The longest name (one path component) the usual filesystems take, in bytes (`NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// The longest path the system takes, in bytes, its final NUL included (`PATH_MAX`).
pub const PATH_MAX: usize = libc::PATH_MAX as usize;

/// Why a path was refused; its message is written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadPath {
    /// A NUL byte, which no file name can hold.
    #[error(
        "the path contains a NUL character (\\u0000), which no file name can hold: write the path without it"
    )]
    Nul,
    /// A line break inside the path.
    #[error(
        "the path contains a line break after '{before}': a path is one line; if the value ran on into the next line, end it on the path's own line"
    )]
    LineBreak {
        /// The path up to the line break.
        before: String,
    },
    /// One name longer than [`NAME_MAX`].
    #[error(
        "the name '{start}…' is {bytes} bytes long; a file or folder name can be at most {NAME_MAX} bytes: use a shorter name"
    )]
    NameTooLong {
        /// The name's first characters.
        start: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// The whole path longer than the system takes.
    #[error(
        "the path is {bytes} bytes long; paths in this repository can be at most {limit} bytes: use a shorter path"
    )]
    PathTooLong {
        /// Its length in bytes.
        bytes: usize,
        /// The longest path allowed here.
        limit: usize,
    },
}

/// Checks `user`, the path as the model wrote it, which is really at `real` (the stage's
/// path inside a transaction: longer, so the limit on the whole path is lowered by the
/// difference; the message only ever names the model's path and lengths).
pub fn check(user: &Path, real: &Path) -> Result<(), BadPath> {
    let bytes = user.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(BadPath::Nul);
    }
    if let Some(at) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
        return Err(BadPath::LineBreak {
            before: String::from_utf8_lossy(&bytes[..at]).into_owned(),
        });
    }
    if let Some(name) = user
        .components()
        .map(|c| c.as_os_str().as_bytes())
        .find(|name| name.len() > NAME_MAX)
    {
        return Err(BadPath::NameTooLong {
            start: String::from_utf8_lossy(&name[..name.len().min(40)])
                .trim_end_matches('\u{fffd}')
                .to_owned(),
            bytes: name.len(),
        });
    }
    let extra = real.as_os_str().len().saturating_sub(bytes.len());
    let limit = (PATH_MAX - 1).saturating_sub(extra);
    if bytes.len() > limit {
        return Err(BadPath::PathTooLong {
            bytes: bytes.len(),
            limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(user: &str) -> Result<(), BadPath> {
        check(Path::new(user), Path::new(user))
    }

    #[test]
    fn ordinary_paths_pass() {
        assert_eq!(checked("/repo/src/a file.rs"), Ok(()));
        assert_eq!(checked(&format!("/repo/{}", "n".repeat(NAME_MAX))), Ok(()));
    }

    #[test]
    fn nul_and_line_breaks_are_refused() {
        assert_eq!(checked("/repo/a\0b"), Err(BadPath::Nul));
        for path in ["/repo/a\nb", "/repo/a\r\nb", "/repo/a\n"] {
            assert_eq!(
                checked(path),
                Err(BadPath::LineBreak {
                    before: "/repo/a".into()
                }),
                "{path:?}"
            );
        }
    }

    #[test]
    fn a_name_past_the_limit_is_named_by_its_start() {
        let error = checked(&format!("/repo/{}.txt", "n".repeat(300))).unwrap_err();
        assert_eq!(
            error,
            BadPath::NameTooLong {
                start: "n".repeat(40),
                bytes: 304
            }
        );
        assert!(error.to_string().contains("at most 255 bytes"), "{error}");
    }

    #[test]
    fn the_path_limit_leaves_room_for_where_the_path_really_is() {
        let user = format!("/repo/{}", "d/".repeat(2040));
        assert_eq!(user.len(), 4086);
        assert_eq!(check(Path::new(&user), Path::new(&user)), Ok(()));
        let real = user.replacen("/repo", "/repo/.git/loaf/stage", 1);
        assert_eq!(
            check(Path::new(&user), Path::new(&real)),
            Err(BadPath::PathTooLong {
                bytes: 4086,
                limit: PATH_MAX - 1 - 16
            })
        );
    }
}
