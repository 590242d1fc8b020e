//! What code sees of git-loaf's environment (DESIGN §2 "Secrets"): a reply's exec, a loaf.yml
//! hook and the git hooks (`pre-commit` in the sandbox, `post-commit` in the user's tree) get it without the variables holding secrets (`MY_API_KEY` here),
//! with the others (`NORMAL_VAR`); loaf.yml's `exec.env.pass` gives one back, `exec.env.set`
//! sets one.

use std::process::Output;

use crate::scratch::{ENV, Scratch, block};

/// Each piece of code writes what it sees of the three variables into its file.
const PROBE: &str =
    r#"printf '%s|%s|%s\n' "${MY_API_KEY-unset}" "${NORMAL_VAR-unset}" "${LOAF_GREETING-unset}""#;

/// A repository whose exec, loaf.yml before hook and pre-commit hook each run [`PROBE`] into
/// a file of the commit, and whose post-commit hook runs it into a file of the user's tree; `env` is loaf.yml's `exec.env` section (indented), if any.
fn project(env: &str) -> Scratch {
    use std::os::unix::fs::PermissionsExt as _;
    let s = Scratch::with(&[
        ("probe.sh", PROBE),
        (
            "loaf.yml",
            &format!(
                "allowed-actions: [defaults, exec]\nexec:\n  timeout: 30\n{env}hooks:\n  before:\n    - run: sh probe.sh > before-seen.txt\n"
            ),
        ),
    ]);
    for (name, script) in [
        (
            "pre-commit",
            "sh probe.sh > hook-seen.txt && git add hook-seen.txt",
        ),
        // After publish, in the user's tree, outside the sandbox.
        ("post-commit", "sh probe.sh > post-seen.txt"),
    ] {
        let hook = s.root.join(".git/hooks").join(name);
        std::fs::write(&hook, format!("#!/bin/sh\n{script}\n")).expect("write the hook");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    s
}

/// `git loaf apply` of an exec running the probe, with a secret and a plain variable in
/// git-loaf's environment.
fn apply(s: &Scratch, extra: &[(&str, &str)]) -> Output {
    let reply = block(
        "v1a",
        "exec",
        &[("lang", "bash"), ("code", "sh probe.sh > exec-seen.txt")],
    );
    crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(ENV)
        .env("MY_API_KEY", "s3cret")
        .env("NORMAL_VAR", "plain")
        .envs(extra.iter().copied())
        .arg("apply")
        .write_stdin(s.reply(&reply))
        .output()
        .expect("git-loaf runs")
}

/// Each piece of code saw `expected`.
fn assert_seen(s: &Scratch, out: &Output, expected: &str) {
    s.assert_exit(out, 0);
    for file in [
        "exec-seen.txt",
        "before-seen.txt",
        "hook-seen.txt",
        "post-seen.txt",
    ] {
        assert_eq!(s.read(file).as_deref(), Some(expected), "{file}");
    }
}

#[test]
fn a_secret_in_git_loafs_environment_reaches_no_code() {
    let s = project("");
    assert_seen(&s, &apply(&s, &[]), "unset|plain|unset\n");
}

#[test]
fn without_namespaces_too_a_secret_reaches_no_code() {
    let s = project("");
    assert_seen(
        &s,
        &apply(&s, &[("LOAF_SANDBOX", "off")]),
        "unset|plain|unset\n",
    );
}

#[test]
fn exec_env_passes_a_named_variable_and_sets_one() {
    let s = project("  env:\n    pass: [\"MY_*\"]\n    set:\n      LOAF_GREETING: hello\n");
    assert_seen(&s, &apply(&s, &[]), "s3cret|plain|hello\n");
}
