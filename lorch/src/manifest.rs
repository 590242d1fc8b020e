//! What a snapshot of the workspace is: the manifest of its files (path, sha256, size,
//! mtime) and the id of that manifest, the version lorch pins each command to and an agent
//! checks before working on it (docs/lorch.md, "Supervision"). `store` writes it to
//! `snapshots/`; `version` derives the content hashes from it.

use std::io;
use std::path::Path;

use serde::Serialize;

use crate::canonical::{sha256_hex, snapshot_id};
use crate::records::FOLDERS;
use crate::safety::naming;

/// One file of a snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestEntry {
    /// Relative, `/`-separated.
    pub path: String,
    /// `sha256:<hex>`.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    /// Last modification, RFC 3339.
    pub mtime: String,
}

/// The snapshot of the workspace at `root`: its id and its manifest's bytes. Every file git
/// would track (hidden files, ignored files, lorch.json and lorch's own folders left out:
/// the record folders only when lorch keeps its records at the top, never the project's
/// folders of those names), sorted by path. lorch pins commands to it; an agent computes it
/// again to find out whether it sees what the command was meant for (`version_mismatch`).
pub fn snapshot_of(root: &Path) -> io::Result<(String, Vec<u8>)> {
    let files = manifest(root)?;
    let bytes = manifest_bytes(&files)?;
    Ok((snapshot_id(&bytes), bytes))
}

/// The bytes of a snapshot's manifest (what its id is the hash of).
pub fn manifest_bytes(files: &[ManifestEntry]) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(&serde_json::json!({ "files": files }))
        .map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The files of a snapshot (see [`snapshot_of`]), sorted by path.
pub fn manifest(root: &Path) -> io::Result<Vec<ManifestEntry>> {
    let mut files = Vec::new();
    let records_at_top = crate::records::location(root).at_top();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            e.depth() != 1
                || !(records_at_top && FOLDERS.iter().any(|d| e.file_name() == *d)
                    || e.file_name() == crate::config::FILE_NAME)
        })
        .build();
    for entry in walk {
        let entry = entry.map_err(io::Error::other)?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .map_err(io::Error::other)?
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(path).map_err(naming(path))?;
        let meta = std::fs::metadata(path).map_err(naming(path))?;
        files.push(ManifestEntry {
            path: relative,
            sha256: format!("sha256:{}", sha256_hex(&bytes)),
            size: bytes.len() as u64,
            mtime: meta
                .modified()
                .map(|t| humantime::format_rfc3339_seconds(t).to_string())
                .unwrap_or_default(),
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}
