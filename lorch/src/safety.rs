//! What keeps lorch's records safe (docs/lorch.md, "What is recorded, and what survives a
//! crash"), shared by the orchestrator and the agent shim: files written
//! atomically with mode 0600 in folders of mode 0700, paths confined to the workspace, and
//! secret environment values kept out of everything lorch records.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};

/// Why a path may not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// It has a `..` component.
    #[error("{0}: `..` is not allowed in an artifact path")]
    ParentComponent(String),
    /// It is absolute and outside the workspace.
    #[error("{0}: outside the workspace")]
    Outside(String),
    /// A symlink on the way leads out of the workspace.
    #[error("{0}: a symlink leads out of the workspace")]
    EscapingSymlink(String),
    /// It is empty or names the workspace itself.
    #[error("{0:?}: not a file path inside the workspace")]
    Empty(String),
}

/// `path` (relative to `workspace`, or absolute inside it) as an absolute path inside the
/// workspace, refusing `..`, absolute paths outside it, and symlinks (of the parts that
/// exist) that lead out of it. `workspace` must exist.
pub fn confine(workspace: &Path, path: &str) -> Result<PathBuf, PathError> {
    let shown = || path.to_owned();
    let candidate = Path::new(path);
    if candidate
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(PathError::ParentComponent(shown()));
    }
    let root = workspace
        .canonicalize()
        .map_err(|_| PathError::Outside(shown()))?;
    let relative = if candidate.is_absolute() {
        candidate
            .strip_prefix(workspace)
            .or_else(|_| candidate.strip_prefix(&root))
            .map_err(|_| PathError::Outside(shown()))?
            .to_path_buf()
    } else {
        candidate.to_path_buf()
    };
    let relative: PathBuf = relative
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    if relative.as_os_str().is_empty() {
        return Err(PathError::Empty(shown()));
    }
    // Resolve the longest existing prefix: a symlink anywhere on the way must stay inside.
    let full = root.join(&relative);
    let mut existing = full.as_path();
    while fs::symlink_metadata(existing).is_err() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => break,
        }
    }
    let resolved = existing
        .canonicalize()
        .map_err(|_| PathError::EscapingSymlink(shown()))?;
    if !resolved.starts_with(&root) {
        return Err(PathError::EscapingSymlink(shown()));
    }
    Ok(full)
}

/// Makes `dir` and its missing parents with mode 0700.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes `bytes` to `path` atomically: a temporary `.<name>.tmp.<pid>.<rand>` in the
/// same folder (mode 0600), fsync, rename over `path`, fsync the folder. A reader sees the
/// old content or the new, never a part; a crash leaves at most the temporary file.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    create_private_dir(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{:08x}",
        name.to_string_lossy(),
        std::process::id(),
        random_u32()
    ));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&tmp);
        return Err(error);
    }
    File::open(dir)?.sync_all()
}

/// Appends one line (a newline is added) to `path`, created with mode 0600, and syncs it:
/// the ledger's write, durable before lorch acts on what it records.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    file.sync_data()
}

/// A random number for temporary names (collisions are also prevented by `create_new`).
fn random_u32() -> u32 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish() as u32
}

/// Whether an environment variable's value is a secret (names ending in `_TOKEN`,
/// `_KEY` or `_SECRET`, any case).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_TOKEN", "_KEY", "_SECRET"]
        .iter()
        .any(|suffix| upper.ends_with(suffix))
}

/// The secret values of an environment, longest first (so that a value containing another
/// is redacted whole). Values shorter than 4 bytes are left out: redacting `1` everywhere
/// would make every record unreadable and protect nothing.
pub fn secret_values<I, K, V>(env: I) -> Vec<String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut values: Vec<String> = env
        .into_iter()
        .filter(|(k, v)| is_secret_name(k.as_ref()) && v.as_ref().len() >= 4)
        .map(|(_, v)| v.as_ref().to_owned())
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

/// The process environment's secret values (see [`secret_values`]).
pub fn process_secrets() -> Vec<String> {
    secret_values(std::env::vars())
}

/// `text` with every secret value replaced by `[REDACTED]`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), "[REDACTED]");
        }
    }
    out
}

/// An I/O error that names the file it is about (the OS's message alone does not).
pub fn naming(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn confine_keeps_paths_inside_and_refuses_the_ways_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        fs::create_dir(ws.join("src")).expect("mkdir");
        assert_eq!(
            confine(ws, "src/a.rs"),
            Ok(ws.canonicalize().expect("c").join("src/a.rs"))
        );
        let inside = ws.join("src/b.rs");
        assert!(confine(ws, &inside.to_string_lossy()).is_ok());
        assert!(matches!(
            confine(ws, "../x"),
            Err(PathError::ParentComponent(_))
        ));
        assert!(matches!(
            confine(ws, "src/../../x"),
            Err(PathError::ParentComponent(_))
        ));
        assert!(matches!(
            confine(ws, "/etc/passwd"),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(confine(ws, ""), Err(PathError::Empty(_))));
        std::os::unix::fs::symlink("/etc", ws.join("out")).expect("symlink");
        assert!(matches!(
            confine(ws, "out/passwd"),
            Err(PathError::EscapingSymlink(_))
        ));
        std::os::unix::fs::symlink(ws.join("src"), ws.join("in")).expect("symlink");
        assert!(
            confine(ws, "in/new.rs").is_ok(),
            "a symlink that stays inside is fine"
        );
    }

    #[test]
    fn atomic_write_replaces_whole_files_with_private_modes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state").join("run.json");
        atomic_write(&path, b"one").expect("write");
        atomic_write(&path, b"two").expect("write again");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().expect("dir")), 0o700);
        let left: Vec<_> = fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .collect();
        assert_eq!(left.len(), 1, "no temporary file left");
        append_line(&dir.path().join("events/run-1.ndjson"), "{}").expect("append");
        append_line(&dir.path().join("events/run-1.ndjson"), "{}").expect("append");
        assert_eq!(
            fs::read_to_string(dir.path().join("events/run-1.ndjson")).expect("read"),
            "{}\n{}\n"
        );
    }

    #[test]
    fn secrets_are_found_by_name_and_redacted_longest_first() {
        let env = [
            ("GITHUB_TOKEN", "ghp_abcdef123"),
            ("OPENAI_API_KEY", "sk-abc"),
            ("db_secret", "hunter22"),
            ("SHORT_KEY", "1"),
            ("PATH", "/usr/bin"),
        ];
        let secrets = secret_values(env);
        assert_eq!(secrets, vec!["ghp_abcdef123", "hunter22", "sk-abc"]);
        assert_eq!(
            redact("token ghp_abcdef123 and sk-abc, path /usr/bin", &secrets),
            "token [REDACTED] and [REDACTED], path /usr/bin"
        );
    }
}
