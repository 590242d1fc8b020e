//! The fs-guard on real files and symlinks: every way out of the allowed area is refused,
//! nothing is written, and no content of a refused read is shown.

use std::path::{Path, PathBuf};

use git_loaf::config::{FsGuardConfig, GuardRules};
use git_loaf::exec::guard::FsGuard;
use git_loaf::exec::{Access, AccessCheck, PathMap, Workspace, fs};
use serde_json::json;

struct Scene {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

/// `root/` (the repository, with `.git/config`, `src/a.rs`, `.env`) and `outside/secret.txt`,
/// canonical paths.
fn scene() -> Scene {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let root = base.join("root");
    let outside = base.join("outside");
    for (path, text) in [
        (root.join(".git/config"), "[core]\n"),
        (root.join("src/a.rs"), "fn a() {}\n"),
        (root.join(".env"), "TOKEN=1\n"),
        (outside.join("secret.txt"), "SECRET-CONTENT\n"),
    ] {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    }
    Scene {
        _dir: dir,
        root,
        outside,
    }
}

fn default_guard(s: &Scene) -> FsGuard {
    FsGuard::new(None, &s.root, &s.root).expect("default guard")
}

fn refused(guard: &FsGuard, access: Access, path: &Path) -> String {
    match guard.check(access, path) {
        Ok(p) => panic!(
            "{} {} was allowed (as {})",
            access.as_str(),
            path.display(),
            p.display()
        ),
        Err(message) => {
            assert!(
                message.starts_with(&format!(
                    "fs-guard violation: {} access denied for '",
                    access.as_str()
                )),
                "{message}"
            );
            assert!(
                message.contains("allowed"),
                "names the allowed roots: {message}"
            );
            message
        }
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

#[test]
fn the_root_is_allowed_and_git_is_not() {
    let s = scene();
    let guard = default_guard(&s);
    assert_eq!(
        guard.check(Access::Read, &s.root.join("src/a.rs")).ok(),
        Some(s.root.join("src/a.rs"))
    );
    assert!(
        guard
            .check(Access::Write, &s.root.join("new/dir/file.txt"))
            .is_ok(),
        "new paths under the root"
    );
    assert!(
        guard.check(Access::Read, &s.root).is_ok(),
        "the root itself can be listed"
    );
    refused(&guard, Access::Write, &s.root.join(".git/config"));
    refused(&guard, Access::Read, &s.root.join(".git/config"));
    refused(&guard, Access::Write, &s.root.join(".git"));
    refused(&guard, Access::Read, &s.outside.join("secret.txt"));
    refused(&guard, Access::Write, Path::new("/etc/passwd"));
}

#[test]
fn dot_dot_traversal_is_resolved_before_matching() {
    let s = scene();
    let guard = default_guard(&s);
    let message = refused(
        &guard,
        Access::Read,
        &s.root.join("src/../../outside/secret.txt"),
    );
    assert!(message.contains("resolves to"), "{message}");
    refused(
        &guard,
        Access::Write,
        &s.root.join("new/../../outside/new.txt"),
    );
    assert!(
        guard
            .check(Access::Read, &s.root.join("src/../src/a.rs"))
            .is_ok()
    );
}

#[test]
#[cfg(unix)]
fn symlinks_pointing_outside_are_refused() {
    let s = scene();
    symlink(&s.outside, &s.root.join("linked_dir"));
    symlink(&s.outside.join("secret.txt"), &s.root.join("linked_file"));
    let guard = default_guard(&s);
    refused(&guard, Access::Read, &s.root.join("linked_dir/secret.txt"));
    refused(&guard, Access::Write, &s.root.join("linked_dir/new.txt"));
    refused(&guard, Access::Read, &s.root.join("linked_file"));
    refused(&guard, Access::Write, &s.root.join("linked_file"));
}

#[test]
#[cfg(unix)]
fn a_symlink_loop_is_refused_not_followed_forever() {
    let s = scene();
    symlink(&s.root.join("loop_b"), &s.root.join("loop_a"));
    symlink(&s.root.join("loop_a"), &s.root.join("loop_b"));
    let message = refused(
        &default_guard(&s),
        Access::Read,
        &s.root.join("loop_a/file"),
    );
    assert!(message.contains("symbolic links"), "{message}");
}

#[test]
fn a_nul_byte_is_refused() {
    let s = scene();
    let path = PathBuf::from(format!("{}/src/a\0.rs", s.root.display()));
    let message = refused(&default_guard(&s), Access::Write, &path);
    assert!(message.contains("NUL"), "{message}");
}

#[test]
fn most_specific_pattern_wins_and_deny_wins_ties() {
    let s = scene();
    let config = FsGuardConfig {
        read: GuardRules {
            allow: vec!["./**".into(), "./secret/public/**".into()],
            deny: vec!["./secret/**".into(), "**/.env".into()],
        },
        write: GuardRules {
            allow: vec!["./**".into(), "/tmp/**".into()],
            deny: vec![
                "**/.git/**".into(),
                "./src/*.rs".into(),
                "./src/a.rs".into(),
            ],
        },
    };
    let guard = FsGuard::new(Some(&config), &s.root, &s.root).expect("guard");
    assert!(guard.check(Access::Read, &s.root.join("src/a.rs")).is_ok());
    refused(&guard, Access::Read, &s.root.join("secret/key.pem"));
    assert!(
        guard
            .check(Access::Read, &s.root.join("secret/public/cert.pem"))
            .is_ok()
    );
    refused(&guard, Access::Read, &s.root.join(".env"));
    // Two denies match: the refusal names the more specific one, whichever comes first.
    let message = refused(&guard, Access::Write, &s.root.join("src/a.rs"));
    assert!(
        message.contains("`./src/a.rs` in fs-guard.write.deny"),
        "{message}"
    );
    refused(&guard, Access::Write, &s.root.join("src/b.rs"));
    assert!(
        guard
            .check(Access::Write, &s.root.join("src/sub/b.rs"))
            .is_ok(),
        "`*` stays in one segment"
    );
    assert!(
        guard
            .check(Access::Write, Path::new("/tmp/loaf-guard-test.txt"))
            .is_ok(),
        "/tmp for writing"
    );
    refused(&guard, Access::Read, Path::new("/tmp/loaf-guard-test.txt"));
}

/// An allow and a deny of equal specificity that both match: deny wins, whichever pattern
/// is written first and whatever kind of wildcard each has; where only one matches, it
/// decides.
#[test]
fn an_allow_and_a_deny_of_equal_specificity_resolve_to_deny() {
    let s = scene();
    let rules = |allow: &[&str], deny: &[&str]| GuardRules {
        allow: allow.iter().map(|p| (*p).to_owned()).collect(),
        deny: deny.iter().map(|p| (*p).to_owned()).collect(),
    };
    let config = FsGuardConfig {
        // Both `root/src/<one segment>`: a tie on `src/a.rs`.
        read: rules(&["./src/*"], &["./src/*.rs"]),
        // The same pattern allowed and denied, and a tie between `**` and `*` below `docs`.
        write: rules(&["./src/a.rs", "./docs/**"], &["./src/a.rs", "./docs/*"]),
    };
    let guard = FsGuard::new(Some(&config), &s.root, &s.root).expect("guard");
    let message = refused(&guard, Access::Read, &s.root.join("src/a.rs"));
    assert!(
        message.contains("`./src/*.rs` in fs-guard.read.deny"),
        "{message}"
    );
    assert!(
        guard
            .check(Access::Read, &s.root.join("src/notes.txt"))
            .is_ok(),
        "the allow alone matches"
    );
    let message = refused(&guard, Access::Write, &s.root.join("src/a.rs"));
    assert!(
        message.contains("`./src/a.rs` in fs-guard.write.deny"),
        "{message}"
    );
    refused(&guard, Access::Write, &s.root.join("docs/guide.md"));
    assert!(
        guard
            .check(Access::Write, &s.root.join("docs/deep/guide.md"))
            .is_ok(),
        "`*` stays in one segment: only the allow matches"
    );
}

/// Runs an fs action through the default guard and checks it was refused.
fn run_refused(s: &Scene, action: &str, params: serde_json::Value) -> String {
    let guard = default_guard(s);
    let paths = PathMap::identity(&s.root);
    let ws = Workspace::permissive(&guard, &paths);
    let params = params.as_object().cloned().unwrap_or_default();
    let outcome = fs::run(action, &params, &ws);
    assert!(!outcome.success, "{action} was refused");
    let error = outcome.error.unwrap_or_default();
    assert!(error.contains("fs-guard violation"), "{action}: {error}");
    assert!(
        !error.contains("SECRET-CONTENT") && outcome.data.is_none(),
        "no content shown: {error}"
    );
    error
}

#[test]
fn actions_through_the_guard_change_nothing() {
    let s = scene();
    let secret = s.outside.join("secret.txt");
    run_refused(&s, "file_read", json!({"path": secret}));
    run_refused(
        &s,
        "file_write",
        json!({"path": s.outside.join("new.txt"), "content": "x"}),
    );
    run_refused(
        &s,
        "file_write",
        json!({"path": s.root.join(".git/config"), "content": "x"}),
    );
    run_refused(
        &s,
        "file_move",
        json!({"old_path": s.root.join("src/a.rs"), "new_path": s.outside.join("a.rs")}),
    );
    run_refused(&s, "dir_delete", json!({"path": s.root.join(".git")}));
    run_refused(&s, "file_delete", json!({"path": secret}));
    assert_eq!(
        std::fs::read_to_string(&secret).ok().as_deref(),
        Some("SECRET-CONTENT\n")
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join(".git/config"))
            .ok()
            .as_deref(),
        Some("[core]\n")
    );
    assert!(s.root.join("src/a.rs").exists(), "the move did not happen");
    assert!(!s.outside.join("new.txt").exists() && !s.outside.join("a.rs").exists());
}

/// A guard allowing everything everywhere: what stays refused is the guard's own doing.
fn open_guard(root: &Path) -> FsGuard {
    let everything = GuardRules {
        allow: vec!["/**".into()],
        deny: vec![],
    };
    let config = FsGuardConfig {
        read: everything.clone(),
        write: everything,
    };
    FsGuard::new(Some(&config), root, root).expect("guard")
}

#[test]
#[cfg(unix)]
fn git_dirs_and_dot_git_in_any_case_are_refused_whatever_loaf_yml_says() {
    let s = scene();
    symlink(&s.root.join(".git"), &s.root.join("g"));
    std::fs::create_dir_all(s.root.join("nested/.git")).expect("mkdir");
    let guard = open_guard(&s.root).protect(vec![s.root.join(".git")]);
    for path in [
        ".git/config",
        ".GIT/x",
        ".Git",
        "src/../.git/HEAD",
        "g/config",
    ] {
        let message = refused(&guard, Access::Write, &s.root.join(path));
        assert!(message.contains("git directory"), "{path}: {message}");
        refused(&guard, Access::Read, &s.root.join(path));
    }
    let message = refused(&guard, Access::Write, &s.root.join("nested/.git/config"));
    assert!(message.contains("another repository"), "{message}");
    assert!(
        guard
            .check(Access::Read, &s.root.join("nested/.git/config"))
            .is_ok(),
        "a nested repository's files can be read when loaf.yml allows"
    );
    assert!(guard.check(Access::Write, &s.root.join("src/a.rs")).is_ok());
    assert!(
        guard
            .check(Access::Write, &s.root.join(".gitignore"))
            .is_ok()
    );
}

#[test]
fn a_stage_inside_the_git_dir_works_but_is_no_way_into_it() {
    // The transaction's layout: the root is `<repo>/.git/loaf/stage`, whose `.git` is a file.
    let s = scene();
    let common = s.root.join(".git");
    let stage = common.join("loaf/stage");
    std::fs::create_dir_all(stage.join("src")).expect("mkdir");
    std::fs::write(stage.join(".git"), "gitdir: ../../worktrees/loaf-stage\n").expect("write");
    let guard = FsGuard::new(None, &stage, &stage)
        .expect("guard")
        .protect(vec![common.join("worktrees/loaf-stage"), common.clone()]);
    assert!(
        guard
            .check(Access::Write, &stage.join("src/new.rs"))
            .is_ok()
    );
    assert!(guard.check(Access::Read, &stage.join("src/../src")).is_ok());
    for path in [
        stage.join(".git/config"),
        stage.join(".git"),
        stage.join("../x.txt"),
        stage.join("../../config"),
        s.root.join("../root/.git/loaf/stage/src/new.rs"),
        common.join("config"),
    ] {
        let message = refused(&guard, Access::Write, &path);
        assert!(
            message.contains("git directory") && !message.contains("Not a directory"),
            "{}: {message}",
            path.display()
        );
    }
}

#[test]
fn fences_cover_everything_below_them_and_only_that() {
    let s = scene();
    let guard = default_guard(&s).fenced(vec![
        (
            s.root.join("dir2"),
            "is outside your sparse checkout".into(),
        ),
        (s.root.join("src/a.rs"), "is skip-worktree".into()),
    ]);
    for (path, why) in [
        ("dir2", "sparse"),
        ("dir2/sub/c", "sparse"),
        ("src/../dir2/b", "sparse"),
        ("src/a.rs", "skip-worktree"),
    ] {
        let message = guard
            .check(Access::Read, &s.root.join(path))
            .expect_err(path);
        assert!(message.contains(why), "{path}: {message}");
    }
    assert!(guard.check(Access::Write, &s.root.join("dir20/x")).is_ok());
    assert!(guard.check(Access::Write, &s.root.join("src/b.rs")).is_ok());
}

#[test]
fn a_fence_named_through_a_symlink_covers_where_it_leads() {
    // A fence is named as the repository names it (a submodule under a folder that is a
    // symlink, say); an action reaching the same place by its real path is fenced too.
    let s = scene();
    std::fs::create_dir_all(s.root.join("real/sub")).expect("mkdir");
    std::os::unix::fs::symlink(s.root.join("real"), s.root.join("via")).expect("symlink");
    let guard = default_guard(&s).fenced(vec![(s.root.join("via/sub"), "is a submodule".into())]);
    for path in ["via/sub/x", "real/sub/x", "real/sub"] {
        let message = guard
            .check(Access::Write, &s.root.join(path))
            .expect_err(path);
        assert!(message.contains("is a submodule"), "{path}: {message}");
    }
    assert!(
        guard
            .check(Access::Write, &s.root.join("real/other"))
            .is_ok()
    );
}

#[test]
fn an_absolute_pattern_through_a_symlinked_folder_allows_where_it_leads() {
    // `/tmp` is a symlink on some systems: `/tmp/**` in loaf.yml must allow what a path
    // under it resolves to.
    let s = scene();
    let link = s.outside.with_file_name("outside-link");
    std::os::unix::fs::symlink(&s.outside, &link).expect("symlink");
    let config = FsGuardConfig {
        read: GuardRules {
            allow: vec!["./**".into()],
            deny: vec![],
        },
        write: GuardRules {
            allow: vec!["./**".into(), format!("{}/**", link.display())],
            deny: vec![],
        },
    };
    let guard = FsGuard::new(Some(&config), &s.root, &s.root).expect("guard");
    for path in [link.join("new.txt"), s.outside.join("new.txt")] {
        assert!(
            guard.check(Access::Write, &path).is_ok(),
            "{}",
            path.display()
        );
    }
}
