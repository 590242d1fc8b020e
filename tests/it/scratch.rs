//! A scratch git repository for end-to-end tests: the git CLI and `git-loaf` both run in a
//! deterministic environment (no system or global config, fixed identity and dates, UTC, C
//! locale), and the user's whole state can be captured as one string to compare.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::git_loaf;

pub use crate::deterministic::{ENV, git_cmd, git_in};

/// A repository in a temporary folder.
pub struct Scratch {
    _dir: tempfile::TempDir,
    /// The working tree root (canonical: what the model is told).
    pub root: PathBuf,
}

impl Scratch {
    /// An empty repository on branch `main`.
    pub fn empty() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).expect("mkdir");
        let root = root.canonicalize().expect("canonical");
        git_in(&root, &["init", "-q", "-b", "main"]);
        git_in(&root, &["config", "user.name", "Ada"]);
        git_in(&root, &["config", "user.email", "ada@example.com"]);
        Scratch { _dir: dir, root }
    }

    /// A repository with one commit of `files` (path, content).
    pub fn with(files: &[(&str, &str)]) -> Scratch {
        let scratch = Scratch::empty();
        for (path, content) in files {
            scratch.write(path, content);
        }
        scratch.commit_all("initial");
        scratch
    }

    /// A folder next to the repository, removed with it.
    pub fn sibling(&self, name: &str) -> PathBuf {
        self.root.parent().expect("has a parent").join(name)
    }

    /// Runs git in the repository.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, args)
    }

    /// Writes a file (creating folders).
    pub fn write(&self, path: &str, content: &str) {
        let full = self.root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(full, content).expect("write");
    }

    /// A file's content, `None` when absent.
    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path)).ok()
    }

    /// `git add -A && git commit`.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// Runs `git loaf args` in `dir` with `stdin`.
    pub fn loaf_in(&self, dir: &Path, args: &[&str], stdin: &str) -> Output {
        git_loaf()
            .current_dir(dir)
            .envs(ENV)
            .args(args)
            .write_stdin(stdin.to_owned())
            .output()
            .expect("git-loaf runs")
    }

    /// Runs `git loaf args` at the root.
    pub fn loaf(&self, args: &[&str], stdin: &str) -> Output {
        self.loaf_in(&self.root, args, stdin)
    }

    /// Runs a shell command line at the root, as a user pasting a command git-loaf printed.
    pub fn sh(&self, command: &str) -> Output {
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.root)
            .envs(ENV)
            .output()
            .expect("sh runs")
    }

    /// `git loaf apply` of `reply` (`/repo` in it stands for the root).
    pub fn apply(&self, reply: &str) -> Output {
        self.loaf(&["apply"], &self.reply(reply))
    }

    /// `git loaf apply` of `reply`, paused at the named moment (see `crash_point`) while
    /// `meanwhile` acts in the repository as the user would.
    pub fn apply_pausing(&self, reply: &str, moment: &str, meanwhile: impl FnOnce()) -> Output {
        use std::io::Write as _;
        let handshake = self.sibling("pause-handshake");
        let _ = std::fs::remove_file(&handshake);
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
            .arg("apply")
            .current_dir(&self.root)
            .envs(ENV)
            .env("NO_COLOR", "1")
            .env("LOAF_PAUSE_AT", moment)
            .env("LOAF_PAUSE_FILE", &handshake)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("git-loaf starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(self.reply(reply).as_bytes())
            .expect("reply written");
        drop(stdin);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !handshake.exists() {
            // Ended without pausing (it refused, or failed, before the moment): say so now,
            // with what it said, rather than wait out the deadline.
            if let Ok(Some(_)) = child.try_wait() {
                let out = child.wait_with_output().expect("git-loaf ends");
                panic!(
                    "git-loaf ended before {moment}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(
                std::time::Instant::now() < until,
                "git-loaf never reached {moment}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        meanwhile();
        std::fs::remove_file(&handshake).expect("resume");
        child.wait_with_output().expect("git-loaf ends")
    }

    /// `reply` with `/repo` replaced by the root.
    pub fn reply(&self, reply: &str) -> String {
        reply.replace("/repo", &self.root.to_string_lossy())
    }

    /// Text with the root shown as `/repo`.
    pub fn redact(&self, text: &[u8]) -> String {
        String::from_utf8_lossy(text).replace(&*self.root.to_string_lossy(), "/repo")
    }

    /// Fails the test, showing stderr and the report, unless `out` exited with `code`.
    pub fn assert_exit(&self, out: &Output, code: i32) {
        assert_eq!(
            out.status.code(),
            Some(code),
            "stderr: {}\nstdout: {}",
            String::from_utf8_lossy(&out.stderr),
            self.redact(&out.stdout)
        );
    }

    /// HEAD's commit id, or `unborn`.
    pub fn head(&self) -> String {
        let out = git_cmd(
            &self.root,
            &["rev-parse", "-q", "--verify", "HEAD^{commit}"],
        )
        .output()
        .expect("git runs");
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if id.is_empty() {
            "unborn".to_owned()
        } else {
            id
        }
    }

    /// Everything git says about the user's state, plus the content of every file that is
    /// not ignored: equal strings mean HEAD, index, working tree and untracked files are
    /// identical.
    pub fn state(&self) -> String {
        let head = self.head();
        let status = self.git(&["status", "--porcelain=v2", "--untracked-files=all"]);
        let (staged, unstaged) = if head == "unborn" {
            (self.git(&["ls-files", "--stage"]), String::new())
        } else {
            (self.git(&["diff", "--cached"]), self.git(&["diff"]))
        };
        let files = self.git(&[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ]);
        let mut contents = String::new();
        let mut names: Vec<&str> = files.split('\0').filter(|n| !n.is_empty()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let content = std::fs::read(self.root.join(name))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_else(|_| "(absent)".to_owned());
            contents.push_str(&format!("--- {name}\n{content}\n"));
        }
        let branch = git_cmd(&self.root, &["symbolic-ref", "-q", "HEAD"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        format!(
            "HEAD {head} {branch}\nSTATUS\n{status}\nSTAGED\n{staged}\nUNSTAGED\n{unstaged}\nFILES\n{contents}"
        )
    }

    /// Checks the repository with `git fsck` and that git-loaf left no lock, journal, branch
    /// or extra worktree behind.
    pub fn assert_tidy(&self) {
        self.git(&["fsck", "--no-progress"]);
        let common = self.git(&["rev-parse", "--git-common-dir"]);
        let common = self.root.join(common.trim());
        // The lock file stays between operations, empty when no operation holds it.
        let lock = std::fs::read_to_string(common.join("loaf/lock")).unwrap_or_default();
        assert_eq!(lock, "", "no lock left");
        assert!(
            !common.join("loaf/journal.json").exists(),
            "no journal left"
        );
        let branches = self.git(&["branch", "--list", "loaf-stage"]);
        assert_eq!(branches, "", "no stage branch");
        let prune = self.git(&["worktree", "prune", "--dry-run", "-v"]);
        assert_eq!(prune, "", "nothing for `git worktree prune` to clean");
    }
}

/// One NESL block: values with a line break become heredocs.
pub fn block(id: &str, action: &str, params: &[(&str, &str)]) -> String {
    let mut out = format!("#!nesl [@three-char-SHA-256: {id}]\naction = \"{action}\"\n");
    for (key, value) in params {
        if value.contains('\n') {
            out.push_str(&format!("{key} = <<'EOT_{id}'\n{value}\nEOT_{id}\n"));
        } else {
            let quoted = serde_json::to_string(value).expect("a string serializes");
            out.push_str(&format!("{key} = {quoted}\n"));
        }
    }
    out.push_str(&format!("#!end_{id}\n"));
    out
}

/// A trailer's value on a commit, read by git.
pub fn trailer(scratch: &Scratch, rev: &str, key: &str) -> String {
    scratch
        .git(&[
            "log",
            "-1",
            &format!("--format=%(trailers:key={key},valueonly)"),
            rev,
        ])
        .trim()
        .to_owned()
}
