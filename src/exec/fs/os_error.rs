//! OS errors in the words of Node's `fs` module, which the seeds' expected results use:
//! `ENOENT: no such file or directory, unlink '/tmp/a.txt'`.

use std::io::{self, ErrorKind};

/// `<CODE>: <description>, <syscall> '<path>'`.
pub(super) fn os_error(err: &io::Error, syscall: &str, path: &str) -> String {
    match code_and_description(err) {
        Some((code, description)) => format!("{code}: {description}, {syscall} '{path}'"),
        // Not the error's own text: a wrapped error (tempfile's) may name the real path.
        None => match err.raw_os_error() {
            Some(code) => format!("{}, {syscall} '{path}'", io::Error::from_raw_os_error(code)),
            None => format!("{}, {syscall} '{path}'", err.kind()),
        },
    }
}

/// `<CODE>: <description>, <syscall> '<from>' -> '<to>'`, for two-path calls like rename.
pub(super) fn os_error2(err: &io::Error, syscall: &str, from: &str, to: &str) -> String {
    os_error(err, syscall, from) + &format!(" -> '{to}'")
}

/// Node's (libuv's) code and description for the errors a file operation can meet.
fn code_and_description(err: &io::Error) -> Option<(&'static str, &'static str)> {
    // EPERM and EACCES share ErrorKind::PermissionDenied; EPERM is 1 on every unix.
    if err.raw_os_error() == Some(1) {
        return Some(("EPERM", "operation not permitted"));
    }
    // ErrorKind::FilesystemLoop is not stable yet; ELOOP's number differs per system.
    let eloop = if cfg!(target_os = "macos") { 62 } else { 40 };
    if cfg!(unix) && err.raw_os_error() == Some(eloop) {
        return Some(("ELOOP", "too many symbolic links encountered"));
    }
    Some(match err.kind() {
        ErrorKind::NotFound => ("ENOENT", "no such file or directory"),
        ErrorKind::PermissionDenied => ("EACCES", "permission denied"),
        ErrorKind::AlreadyExists => ("EEXIST", "file already exists"),
        ErrorKind::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        ErrorKind::NotADirectory => ("ENOTDIR", "not a directory"),
        ErrorKind::DirectoryNotEmpty => ("ENOTEMPTY", "directory not empty"),
        ErrorKind::ReadOnlyFilesystem => ("EROFS", "read-only file system"),
        ErrorKind::CrossesDevices => ("EXDEV", "cross-device link not permitted"),
        ErrorKind::StorageFull => ("ENOSPC", "no space left on device"),
        ErrorKind::QuotaExceeded => ("EDQUOT", "disk quota exceeded"),
        ErrorKind::InvalidFilename => ("ENAMETOOLONG", "name too long"),
        ErrorKind::ResourceBusy => ("EBUSY", "resource busy or locked"),
        ErrorKind::ExecutableFileBusy => ("ETXTBSY", "text file is busy"),
        ErrorKind::FileTooLarge => ("EFBIG", "file too large"),
        ErrorKind::InvalidInput => ("EINVAL", "invalid argument"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_node() {
        let gone = io::Error::from(ErrorKind::NotFound);
        assert_eq!(
            os_error(&gone, "unlink", "/tmp/does-not-exist.txt"),
            "ENOENT: no such file or directory, unlink '/tmp/does-not-exist.txt'"
        );
        assert_eq!(
            os_error2(&gone, "rename", "/a", "/b"),
            "ENOENT: no such file or directory, rename '/a' -> '/b'"
        );
        let wrapped = io::Error::other("failed at /real/stage/.loaf-x.tmp");
        assert_eq!(os_error(&wrapped, "open", "/x"), "other error, open '/x'");
        let eperm = io::Error::from_raw_os_error(1);
        assert_eq!(
            os_error(&eperm, "open", "/x"),
            "EPERM: operation not permitted, open '/x'"
        );
    }
}
