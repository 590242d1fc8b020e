//! Text files as the actions see them: UTF-8 only, with their line-ending style and byte
//! order mark remembered so that an edit writes them back the way they were; binary,
//! non-UTF-8 and oversized files refused before anything is changed; every write made
//! atomic (temporary file in the same directory, then rename).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::call::Target;
use super::os_error::os_error;

const BOM: &str = "\u{feff}";

/// Why a file cannot be used as text. `Display` is the message without the action's name;
/// [`LoadError::for_action`] adds it where the seeds' format wants it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LoadError {
    /// An OS error, already in Node's words (which carry no action name).
    #[error("{0}")]
    Os(String),
    /// The path is a directory.
    #[error("Is a directory, not a file '{path}' (EISDIR)")]
    Directory {
        /// The model's path.
        path: String,
    },
    /// Larger than `max_file_size`.
    #[error(
        "File too large '{path}': {size} bytes, over max_file_size ({max} bytes, set in loaf.yml); refused"
    )]
    TooLarge {
        /// The model's path.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// New contents larger than `max_file_size`.
    #[error(
        "Content too large for '{path}': {size} bytes, over max_file_size ({max} bytes, set in loaf.yml); refused"
    )]
    ContentTooLarge {
        /// The model's path.
        path: String,
        /// The size the file would have.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// Contains NUL bytes.
    #[error(
        "Binary file '{path}' (contains NUL bytes); refused: only UTF-8 text files can be read or edited"
    )]
    Binary {
        /// The model's path.
        path: String,
    },
    /// Not valid UTF-8.
    #[error(
        "Not valid UTF-8 '{path}' (first invalid byte on line {line}); refused: only UTF-8 text files can be read or edited"
    )]
    NotUtf8 {
        /// The model's path.
        path: String,
        /// The line of the first invalid byte, from 1.
        line: usize,
    },
}

impl LoadError {
    /// The message as a single action reports it: OS errors as they are, the rest prefixed
    /// with the action's name.
    pub fn for_action(&self, action: &str) -> String {
        match self {
            LoadError::Os(message) => message.clone(),
            other => format!("{action}: {other}"),
        }
    }
}

/// The line-ending style of a file: what its new lines will be written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Eol {
    Lf,
    CrLf,
}

impl Eol {
    /// CRLF when most line breaks are CRLF, so a mostly-CRLF file with one stray LF line
    /// still gets CRLF for the lines the model adds.
    pub fn of(text: &str) -> Eol {
        let lf = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        let crlf = memchr::memmem::find_iter(text.as_bytes(), "\r\n").count();
        if crlf > 0 && crlf * 2 >= lf {
            Eol::CrLf
        } else {
            Eol::Lf
        }
    }

    /// `text` with every line break in this style (the model writes LF; a file may be CRLF).
    pub fn apply(self, text: &str) -> String {
        let lf = text.replace("\r\n", "\n");
        match self {
            Eol::Lf => lf,
            Eol::CrLf => lf.replace('\n', "\r\n"),
        }
    }

    /// The line break itself.
    pub fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::CrLf => "\r\n",
        }
    }
}

/// A text file's contents and the form to write them back in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TextFile {
    /// Whether it starts with a UTF-8 byte order mark (not part of `text`).
    pub bom: bool,
    /// The contents, line breaks as they are.
    pub text: String,
    /// Its dominant line-ending style.
    pub eol: Eol,
}

impl TextFile {
    /// Bytes as text, or why they are not text.
    pub fn decode(bytes: Vec<u8>, path: &str) -> Result<TextFile, LoadError> {
        if memchr::memchr(0, &bytes).is_some() {
            return Err(LoadError::Binary {
                path: path.to_owned(),
            });
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            LoadError::NotUtf8 {
                path: path.to_owned(),
                line: memchr::memchr_iter(b'\n', valid).count() + 1,
            }
        })?;
        let (bom, text) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest.to_owned()),
            None => (false, text),
        };
        let eol = Eol::of(&text);
        Ok(TextFile { bom, text, eol })
    }

    /// What to write for new contents `text`: the byte order mark back in front.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(text.len() + 3);
        if self.bom && !text.starts_with(BOM) {
            bytes.extend_from_slice(BOM.as_bytes());
        }
        bytes.extend_from_slice(text.as_bytes());
        bytes
    }

    /// [`TextFile::encode`] for new contents given as consecutive pieces, without joining
    /// them: an edit of a large file writes its unchanged parts straight from the old text
    /// rather than holding a second and a third copy of it.
    pub fn encode_pieces<'a>(&self, pieces: &[&'a str]) -> Vec<&'a [u8]> {
        let mut out = Vec::with_capacity(pieces.len() + 1);
        if self.bom && !starts_with_bom(pieces) {
            out.push(BOM.as_bytes());
        }
        out.extend(pieces.iter().map(|p| p.as_bytes()));
        out
    }
}

/// Whether the text the pieces make up starts with a byte order mark (which may span pieces).
fn starts_with_bom(pieces: &[&str]) -> bool {
    let head: Vec<u8> = pieces
        .iter()
        .flat_map(|p| p.bytes())
        .take(BOM.len())
        .collect();
    head == BOM.as_bytes()
}

/// Reads `target` as text, refusing directories, files over `max` bytes, binary and
/// non-UTF-8 files.
pub(super) fn load(target: &Target, max: u64) -> Result<TextFile, LoadError> {
    let meta = fs::metadata(&target.checked)
        .map_err(|e| LoadError::Os(os_error(&e, "open", &target.user)))?;
    if meta.is_dir() {
        return Err(LoadError::Directory {
            path: target.user.clone(),
        });
    }
    if meta.len() > max {
        return Err(LoadError::TooLarge {
            path: target.user.clone(),
            size: meta.len(),
            max,
        });
    }
    let bytes =
        fs::read(&target.checked).map_err(|e| LoadError::Os(os_error(&e, "read", &target.user)))?;
    TextFile::decode(bytes, &target.user)
}

/// The byte order mark and line-ending style of an existing text file, learnt from its
/// first 64 KiB; `None` for a missing or binary file. A file about to be overwritten passes
/// them on to its new contents.
pub(super) fn existing_style(path: &Path) -> Option<(bool, Eol)> {
    let mut head = Vec::new();
    fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .ok()?;
    if memchr::memchr(0, &head).is_some() {
        return None;
    }
    let bom = head.starts_with(BOM.as_bytes());
    Some((bom, Eol::of(&String::from_utf8_lossy(&head))))
}

/// Refuses contents over `max` bytes before they are written.
pub(super) fn check_size(path: &str, size: usize, max: u64) -> Result<(), LoadError> {
    let size = size as u64;
    if size > max {
        return Err(LoadError::ContentTooLarge {
            path: path.to_owned(),
            size,
            max,
        });
    }
    Ok(())
}

/// Writes `bytes` to `target` atomically (in place in the stage: [`write_scratch`]); the
/// message on failure is Node's for `open`.
pub(super) fn store(target: &Target, bytes: &[u8]) -> Result<(), String> {
    store_pieces(target, &[bytes])
}

/// [`store`] of contents given as consecutive pieces.
pub(super) fn store_pieces(target: &Target, pieces: &[&[u8]]) -> Result<(), String> {
    let written = if target.scratch {
        write_scratch(&target.checked, pieces)
    } else {
        write_atomic_pieces(&target.checked, pieces)
    };
    written.map_err(|e| os_error(&e, "open", &target.user))
}

/// Files up to this size are written in place in the stage; a larger one's own write costs
/// far more than a temporary file and a rename, and keeping its old contents to put back
/// would double the memory an edit of it takes.
const IN_PLACE_MAX: u64 = 1024 * 1024;

/// Writes a file of the stage (a scratch copy of the user's tree, reset after a crash, which
/// nobody reads while an action runs) in place: a temporary file and a rename per write
/// cost a new inode each, more than the write itself for the small files of a large reply.
/// A write that fails puts back what the file held (or removes the file it created), so a
/// failed action leaves the stage as it was, as the atomic write does. Anything but a plain
/// small file with a single name (a symlink, a hard-linked or large file) is written
/// atomically.
fn write_scratch(path: &Path, pieces: &[&[u8]]) -> io::Result<()> {
    write_scratch_with(path, pieces, &mut |file, piece| file.write_all(piece))
}

/// [`write_scratch`] with the write of each piece given (a test makes it fail).
fn write_scratch_with(
    path: &Path,
    pieces: &[&[u8]],
    write: &mut dyn FnMut(&mut fs::File, &[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let before = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && single_name(&meta) && meta.len() <= IN_PLACE_MAX => {
            match fs::read(path) {
                Ok(old) => Some(old),
                // Writable but not readable: nothing to put back, so replaced whole.
                Err(_) => return write_atomic_pieces(path, pieces),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        _ => return write_atomic_pieces(path, pieces),
    };
    // Written over the old bytes and then cut to length, never truncated to nothing first:
    // ext4 flushes a file emptied and rewritten as it is closed (its guard against the
    // truncate-and-rewrite pattern losing data in a crash), which made each write several
    // times dearer. The stage needs no such guard: a crash makes the next apply scan it.
    let mut options = fs::OpenOptions::new();
    options.write(true);
    if before.is_none() {
        options.create_new(true);
    }
    let mut file = options.open(path)?;
    let length: usize = pieces.iter().map(|piece| piece.len()).sum();
    let written = pieces
        .iter()
        .try_for_each(|piece| write(&mut file, piece))
        .and_then(|()| file.set_len(length as u64));
    let Err(error) = written else {
        return Ok(());
    };
    drop(file);
    match before {
        Some(old) => fs::write(path, old)?,
        None => fs::remove_file(path)?,
    }
    Err(error)
}

/// Whether no other name shares the file's contents (a hard link would see the change).
#[cfg(unix)]
pub(crate) fn single_name(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    meta.nlink() == 1
}

#[cfg(not(unix))]
pub(crate) fn single_name(_meta: &fs::Metadata) -> bool {
    false
}

/// Writes `bytes` to a temporary file next to `path`, then renames it over `path`: readers
/// see the old contents or the new, never a half-written file, and a failure (disk full,
/// permission) leaves the old file as it was. An existing file keeps its permissions; a
/// symlink keeps pointing where it did and its target gets the new contents.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_pieces(path, &[bytes])
}

/// [`write_atomic`] of the concatenation of `pieces`, written one after the other.
pub(super) fn write_atomic_pieces(path: &Path, pieces: &[&[u8]]) -> io::Result<()> {
    let path = through_symlink(path);
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::from(io::ErrorKind::IsADirectory))?;
    let existing = fs::metadata(&path).ok();
    if let Some(meta) = &existing {
        if meta.is_dir() {
            return Err(io::Error::from(io::ErrorKind::IsADirectory));
        }
        // The rename would replace a file we may not write; refuse as writing in place would.
        fs::OpenOptions::new().append(true).open(&path)?;
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(".loaf-").suffix(".tmp");
    #[cfg(unix)]
    {
        // A new file gets the usual 0666 less the umask, as any editor would create it,
        // rather than the temporary file's private 0600.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(dir)?;
    for piece in pieces {
        temp.write_all(piece)?;
    }
    if let Some(meta) = existing {
        fs::set_permissions(temp.path(), meta.permissions())?;
    }
    temp.persist(&path).map_err(|e| e.error)?;
    Ok(())
}

/// The file a symlink points to (so the link survives the rename), or `path` itself.
fn through_symlink(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_wins_only_when_most_breaks_are_crlf() {
        assert_eq!(Eol::of("a\r\nb\r\nc\n"), Eol::CrLf);
        assert_eq!(Eol::of("a\nb\nc\r\n"), Eol::Lf);
        assert_eq!(Eol::of("no breaks"), Eol::Lf);
        assert_eq!(Eol::CrLf.apply("a\nb\r\nc"), "a\r\nb\r\nc");
        assert_eq!(Eol::Lf.apply("a\r\nb"), "a\nb");
    }

    #[test]
    fn decode_refuses_binary_and_names_the_line_of_bad_utf8() {
        assert!(matches!(
            TextFile::decode(b"a\0b".to_vec(), "/x"),
            Err(LoadError::Binary { .. })
        ));
        assert_eq!(
            TextFile::decode(b"ok\nok\n\xff".to_vec(), "/x"),
            Err(LoadError::NotUtf8 {
                path: "/x".into(),
                line: 3
            })
        );
        let file = TextFile::decode(b"\xef\xbb\xbfhi\r\n".to_vec(), "/x").unwrap();
        assert_eq!(
            (file.bom, file.text.as_str(), file.eol),
            (true, "hi\r\n", Eol::CrLf)
        );
        assert_eq!(file.encode("yo"), b"\xef\xbb\xbfyo");
        assert_eq!(file.encode_pieces(&["y", "o"]).concat(), b"\xef\xbb\xbfyo");
        // A mark the new text starts with (here split across pieces) is not doubled.
        let split = ["\u{feff}y", "o"];
        assert_eq!(
            file.encode_pieces(&split).concat(),
            file.encode(&split.concat())
        );
        assert_eq!(
            file.encode_pieces(&["", "\u{feff}", "o"]).concat(),
            b"\xef\xbb\xbfo"
        );
    }

    #[test]
    fn atomic_write_keeps_permissions_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.sh");
        fs::write(&file, "old").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&file, fs::Permissions::from_mode(0o750)).unwrap();
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            write_atomic(&link, b"new").unwrap();
            assert!(
                fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(fs::read_to_string(&file).unwrap(), "new");
            let mode = fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o750);
        }
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), if cfg!(unix) { 2 } else { 1 }, "no temp left");
    }

    #[test]
    fn a_read_only_file_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("locked.txt");
        fs::write(&file, "old").unwrap();
        let mut perms = fs::metadata(&file).unwrap().permissions();
        perms.set_readonly(true);
        fs::set_permissions(&file, perms).unwrap();
        // Root may write anything; then there is nothing to refuse.
        let privileged = fs::OpenOptions::new().append(true).open(&file).is_ok();
        let result = write_atomic(&file, b"new");
        if privileged {
            assert!(result.is_ok());
        } else {
            assert_eq!(result.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
            assert_eq!(fs::read_to_string(&file).unwrap(), "old");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_stage_is_written_in_place_except_through_links() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "old").unwrap();
        let inode = fs::metadata(&file).unwrap().ino();
        write_scratch(&file, &[b"new ", b"text"]).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new text");
        assert_eq!(fs::metadata(&file).unwrap().ino(), inode, "in place");
        // A second name for the same contents must not see the change: replaced instead.
        let twin = dir.path().join("twin.txt");
        fs::hard_link(&file, &twin).unwrap();
        write_scratch(&file, &[b"changed"]).unwrap();
        assert_eq!(fs::read_to_string(&twin).unwrap(), "new text");
        assert_eq!(fs::read_to_string(&file).unwrap(), "changed");
        // Through a symlink: the link stays, its target changes.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&twin, &link).unwrap();
        write_scratch(&link, &[b"via link"]).unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&twin).unwrap(), "via link");
        let created = dir.path().join("new.txt");
        write_scratch(&created, &[b"fresh"]).unwrap();
        assert_eq!(fs::read_to_string(&created).unwrap(), "fresh");
    }

    #[test]
    fn a_shorter_write_in_place_leaves_nothing_of_the_old_contents() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "a much longer old text\n").unwrap();
        write_scratch(&file, &[b"sh", b"ort\n"]).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "short\n");
        write_scratch(&file, &[]).unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "");
    }

    #[test]
    fn a_failed_write_in_place_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "old contents").unwrap();
        let mut calls = 0;
        let mut fail_second = |f: &mut fs::File, piece: &[u8]| {
            calls += 1;
            if calls == 2 {
                return Err(io::Error::other("disk full"));
            }
            f.write_all(piece)
        };
        let error = write_scratch_with(&file, &[b"half", b"rest"], &mut fail_second);
        assert_eq!(error.unwrap_err().to_string(), "disk full");
        assert_eq!(fs::read_to_string(&file).unwrap(), "old contents");
        let created = dir.path().join("new.txt");
        let mut fail = |_: &mut fs::File, _: &[u8]| Err(io::Error::other("disk full"));
        assert!(write_scratch_with(&created, &[b"x"], &mut fail).is_err());
        assert!(!created.exists(), "a file it created is removed again");
    }
}
