//! The `git-loaf` binary the tests run on what lorch made (`git loaf log`, `undo`,
//! `squash`). `lorch` is this package's binary, which Cargo builds for these tests and names
//! in `CARGO_BIN_EXE_lorch`; `git-loaf` is the root package's, and Cargo gives a member's
//! tests only their own package's binaries (artifact dependencies are unstable).
//!
//! `cargo test --workspace` builds git-loaf's binary too (for git-loaf's own tests), into
//! the folder it builds `lorch` into, before any test runs: that one is used when it is newer
//! than every source Cargo built it from. Otherwise (`cargo test -p lorch`, or git-loaf's
//! code changed since it was built) the tests build it, once per test process, with the
//! cargo that runs them, so they never drive a missing or older git-loaf. `GIT_LOAF_BIN`
//! names a binary to use instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

use serde_json::Value;

/// The `git-loaf` binary of this checkout.
pub fn git_loaf() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("GIT_LOAF_BIN") {
            return PathBuf::from(bin);
        }
        let beside_lorch = Path::new(env!("CARGO_BIN_EXE_lorch")).with_file_name("git-loaf");
        if is_fresh(&beside_lorch) {
            beside_lorch
        } else {
            build_git_loaf()
        }
    })
}

/// The root of the workspace: git-loaf's package.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether `bin` exists and is newer than the workspace's manifest and lockfile and every
/// source its dep-info file (`git-loaf.d` beside it, written by Cargo) lists.
fn is_fresh(bin: &Path) -> bool {
    let Some(built) = modified(bin) else {
        return false;
    };
    let Ok(dep_info) = fs::read_to_string(bin.with_extension("d")) else {
        return false;
    };
    let root = workspace_root();
    let mut sources = vec![root.join("Cargo.toml"), root.join("Cargo.lock")];
    sources.extend(dep_info_sources(&dep_info));
    sources
        .iter()
        .all(|source| modified(source).is_some_and(|changed| changed <= built))
}

/// The sources of a Makefile-style dep-info file: `target: source source …`, a space inside
/// a path escaped as `\ `.
fn dep_info_sources(dep_info: &str) -> Vec<PathBuf> {
    let Some((_, list)) = dep_info.lines().next().and_then(|l| l.split_once(": ")) else {
        return Vec::new();
    };
    let mut sources = Vec::new();
    let mut current = String::new();
    for word in list.split(' ') {
        match word.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(word);
                if !current.is_empty() {
                    sources.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
        }
    }
    sources
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Builds git-loaf's binary in the profile and target folder of these tests and returns
/// where Cargo put it.
fn build_git_loaf() -> PathBuf {
    let out = Command::new(cargo())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("build")
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"))
        .args(["--package", "git-loaf", "--bin", "git-loaf"])
        .args(["--profile", &profile()])
        // The lockfile and the downloaded crates are those that built these tests.
        .args(["--locked", "--offline", "--quiet"])
        .arg("--message-format=json-render-diagnostics")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building git-loaf for lorch's tests failed (GIT_LOAF_BIN may name a built one):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "git-loaf")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the git-loaf executable it built")
}

/// The cargo running the tests (it sets `CARGO`), else the one that compiled them.
fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from(env!("CARGO")), PathBuf::from)
}

/// The profile these tests were built with, read from the folder Cargo put `lorch` in
/// (`target/debug/` for the `dev` profile, `target/<profile>/` for the others).
fn profile() -> String {
    let folder = Path::new(env!("CARGO_BIN_EXE_lorch"))
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .expect("the lorch binary is in a profile folder");
    match folder {
        "debug" => "dev".to_owned(),
        other => other.to_owned(),
    }
}
