//! The version a command is pinned to and how an agent compares what it sees with it
//! (docs/lorch.md, "Supervision").
//!
//! - `snapshot_id`: the manifest of the workspace's files (paths, sha256, sizes, mtimes);
//! - `code_hash`: the content of the same files without the spec (paths, sha256, sizes, no
//!   mtimes): `sha256:` of their canonical JSON;
//! - `specs_hash`: `sha256:` of the spec file's bytes (`spec_path`; absent when there is
//!   none). The spec is read where it is even when the snapshot leaves it out (a hidden or
//!   ignored file).
//!
//! `policy.strict_version_pinning` chooses what must match. Strict (the default):
//! the snapshot and every hash the command carries, so a file touched without being changed
//! (a checkout, an editor saving it again) is already another version. Not strict: pinning
//! by content, `code_hash` and `specs_hash`; the agent works on a workspace whose files are
//! what the command meant, whatever their mtimes, and reports the snapshot it saw. Either
//! way a change of content is a `version_mismatch`: agents never work on files the
//! command did not mean.

use std::io;
use std::path::Path;

use serde_json::json;

use super::canonical::{canonical_json, sha256_hex};
use super::manifest::{self, ManifestEntry};
use super::protocol::{ObservedVersion, Version};
use super::safety;

/// The version of the workspace at `root` whose spec is `spec` (relative to `root`), and
/// the snapshot's manifest bytes.
pub fn version_of(root: &Path, spec: Option<&str>) -> io::Result<(Version, Vec<u8>)> {
    let files = manifest::manifest(root)?;
    let bytes = manifest::manifest_bytes(&files)?;
    let specs_hash = match spec {
        Some(spec) => spec_bytes(root, spec)?.map(|b| format!("sha256:{}", sha256_hex(&b))),
        None => None,
    };
    let version = Version {
        snapshot_id: super::canonical::snapshot_id(&bytes),
        specs_hash,
        code_hash: Some(code_hash(&files, spec)),
    };
    Ok((version, bytes))
}

/// The spec's bytes, `None` when there is no such file (a path outside `root` is an error).
pub fn spec_bytes(root: &Path, spec: &str) -> io::Result<Option<Vec<u8>>> {
    let path = safety::confine(root, spec).map_err(io::Error::other)?;
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

/// The hash of the files' content, the spec left out.
fn code_hash(files: &[ManifestEntry], spec: Option<&str>) -> String {
    let spec = spec.map(|s| s.trim_start_matches("./"));
    let content: Vec<_> = files
        .iter()
        .filter(|f| Some(f.path.as_str()) != spec)
        .map(|f| json!({"path": f.path, "sha256": f.sha256, "size": f.size}))
        .collect();
    format!(
        "sha256:{}",
        sha256_hex(canonical_json(&json!(content)).as_bytes())
    )
}

/// The parts of `seen` that differ from what `pinned` asks for: under strict pinning the
/// snapshot and each hash the command carries, otherwise the hashes only (the content).
/// Empty when the agent may work.
pub fn mismatched(pinned: &Version, seen: &Version, strict: bool) -> Vec<&'static str> {
    let mut parts = Vec::new();
    if strict && pinned.snapshot_id != seen.snapshot_id {
        parts.push("snapshot_id");
    }
    if pinned.code_hash.is_some() && pinned.code_hash != seen.code_hash {
        parts.push("code_hash");
    }
    if pinned.specs_hash.is_some() && pinned.specs_hash != seen.specs_hash {
        parts.push("specs_hash");
    }
    // A command pinned by its snapshot only can be checked by nothing else.
    if !strict && pinned.code_hash.is_none() && pinned.snapshot_id != seen.snapshot_id {
        parts.push("snapshot_id");
    }
    parts
}

/// `version` as an event's `observed_version`.
pub fn observed(version: &Version) -> ObservedVersion {
    ObservedVersion {
        snapshot_id: Some(version.snapshot_id.clone()),
        specs_hash: version.specs_hash.clone(),
        code_hash: version.code_hash.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(snapshot: &str, code: Option<&str>, specs: Option<&str>) -> Version {
        Version {
            snapshot_id: snapshot.into(),
            code_hash: code.map(str::to_owned),
            specs_hash: specs.map(str::to_owned),
        }
    }

    #[test]
    fn strict_pinning_wants_the_snapshot_and_every_hash_lenient_the_content() {
        let pinned = version("snap-1", Some("c1"), Some("s1"));
        let touched = version("snap-2", Some("c1"), Some("s1"));
        let edited = version("snap-3", Some("c2"), Some("s1"));
        let spec_edited = version("snap-4", Some("c1"), Some("s2"));
        assert_eq!(mismatched(&pinned, &pinned, true), Vec::<&str>::new());
        assert_eq!(mismatched(&pinned, &touched, true), ["snapshot_id"]);
        assert_eq!(mismatched(&pinned, &touched, false), Vec::<&str>::new());
        assert_eq!(
            mismatched(&pinned, &edited, true),
            ["snapshot_id", "code_hash"]
        );
        assert_eq!(mismatched(&pinned, &edited, false), ["code_hash"]);
        assert_eq!(mismatched(&pinned, &spec_edited, false), ["specs_hash"]);
        // Without hashes, the snapshot is all there is to check, strict or not.
        let bare = version("snap-1", None, None);
        assert_eq!(mismatched(&bare, &touched, false), ["snapshot_id"]);
    }

    #[test]
    fn the_code_hash_ignores_mtimes_and_the_spec_and_the_specs_hash_is_the_spec() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "a\n").expect("write");
        std::fs::write(root.join("SPEC.md"), "# Spec\n").expect("write");
        let (before, _) = version_of(root, Some("SPEC.md")).expect("version");
        assert_eq!(
            before.specs_hash.as_deref(),
            Some(format!("sha256:{}", sha256_hex(b"# Spec\n")).as_str())
        );
        let file = std::fs::File::options()
            .write(true)
            .open(root.join("a.txt"))
            .expect("open");
        file.set_modified(std::time::UNIX_EPOCH).expect("mtime");
        let (touched, _) = version_of(root, Some("SPEC.md")).expect("version");
        assert_ne!(touched.snapshot_id, before.snapshot_id, "mtime is in it");
        assert_eq!(touched.code_hash, before.code_hash);
        std::fs::write(root.join("SPEC.md"), "# Spec\n\nmore\n").expect("write");
        let (spec, _) = version_of(root, Some("SPEC.md")).expect("version");
        assert_eq!(spec.code_hash, before.code_hash, "the spec is not code");
        assert_ne!(spec.specs_hash, before.specs_hash);
        std::fs::write(root.join("a.txt"), "b\n").expect("write");
        let (code, _) = version_of(root, Some("SPEC.md")).expect("version");
        assert_ne!(code.code_hash, before.code_hash);
        let (none, _) = version_of(root, Some("NONE.md")).expect("version");
        assert_eq!(none.specs_hash, None, "no spec, no hash");
        assert!(version_of(root, Some("../outside.md")).is_err());
    }
}
