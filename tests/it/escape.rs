//! A reply's code cannot reach past its apply (DESIGN §2, "Exec and hooks are contained"):
//! real exec blocks try each route out — the user's git dir, the host's files, the network,
//! the sandbox's own mounts — through `git loaf apply`, and the test checks afterwards that
//! nothing of the user's or the host's changed.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use crate::scratch::{Scratch, block};

/// A repository where exec may run, with what a user has around it: a second branch, a
/// tag, a stash, a staged edit, and a commit to step back to.
fn user_repo(loaf_yml: &str) -> Scratch {
    let s = Scratch::with(&[("loaf.yml", loaf_yml), ("a.txt", "a\n"), ("s.txt", "s\n")]);
    s.write("a.txt", "a2\n");
    s.commit_all("second");
    s.git(&["branch", "other"]);
    s.git(&["tag", "v1"]);
    s.write("s.txt", "stashed\n");
    s.git(&["stash", "-q"]);
    s.write("s.txt", "staged\n");
    s.git(&["add", "s.txt"]);
    s
}

const EXEC_ONLY: &str = "allowed-actions: [defaults, exec]\n";

fn exec(id: &str, code: &str) -> String {
    block(id, "exec", &[("lang", "bash"), ("code", code)])
}

/// What the user's git dir holds that a reply must not change.
fn git_dir_facts(s: &Scratch) -> String {
    let common = s.root.join(".git");
    let hooks: Vec<String> = std::fs::read_dir(common.join("hooks"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.ends_with(".sample"))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "hooks {hooks:?}\nconfig {}\nrefs {}\nstash {}\nstaged {}",
        std::fs::read_to_string(common.join("config")).unwrap_or_default(),
        s.git(&[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
            "refs/stash"
        ]),
        s.git(&["stash", "list"]),
        s.git(&["diff", "--cached", "--name-only"]),
    )
}

#[test]
fn exec_cannot_change_the_users_git_dir() {
    let s = user_repo(EXEC_ONLY);
    let main_before = s.head();
    let before = git_dir_facts(&s);
    let code = r#"
        common=$(git rev-parse --git-common-dir)
        printf '#!/bin/sh\ntouch /tmp/pwned\n' > "$common/hooks/post-commit"; chmod +x "$common/hooks/post-commit"
        git config user.name Mallory
        git config core.hooksPath /tmp/evil
        git stash clear
        git branch -D other
        git tag -d v1
        git update-ref refs/heads/main main~1
        rm -f "$common/index"
        printf 'x' >> "$common/config"
        rm -rf "$common/refs/tags"
        echo done
    "#;
    let out = s.apply(&exec("e1a", code));
    let report = s.redact(&out.stdout);
    // The code ran (its git commands worked on the sandbox's private layer)...
    assert!(report.contains("done"), "{report}");
    // ... and nothing of the user's git dir changed: the branch moved only by the apply
    // (nothing to commit here, so not at all).
    assert_eq!(s.head(), main_before, "{report}");
    assert_eq!(git_dir_facts(&s), before, "{report}");
    assert!(!Path::new("/tmp/pwned").exists());
    // The user's next commit runs no planted hook.
    s.write("b.txt", "b\n");
    s.git(&["add", "b.txt"]);
    s.git(&["commit", "-q", "-m", "mine"]);
    assert!(!Path::new("/tmp/pwned").exists());
    s.git(&["fsck", "--no-progress"]);
}

#[test]
fn git_in_exec_works_and_what_it_makes_does_not_survive_the_apply() {
    let s = user_repo(EXEC_ONLY);
    let code = r#"
        git checkout -q -b scratch-branch
        echo new > made.txt
        git add made.txt && git commit -q -m 'inside' && git log --format=%s -1
        git stash list | wc -l
        : > "$(git rev-parse --git-dir)/index"
    "#;
    let out = s.apply(&exec("e1a", code));
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains("inside"),
        "git commit worked inside: {report}"
    );
    // The file the code wrote is the apply's; the branch and commit it made are gone.
    assert_eq!(s.git(&["show", "HEAD:made.txt"]), "new\n");
    assert_eq!(s.git(&["branch", "--list", "scratch-branch"]), "");
    assert_eq!(s.git(&["log", "--format=%s", "-2"]).lines().count(), 2);
    assert!(!s.git(&["log", "--all", "--format=%s"]).contains("inside"));
    // The stage survives what the code did to its HEAD and index: the next apply works.
    let next = s.apply(&exec("e2b", "echo again > again.txt"));
    s.assert_exit(&next, 0);
    assert_eq!(s.git(&["show", "HEAD:again.txt"]), "again\n");
    assert_eq!(s.git(&["show", "HEAD:made.txt"]), "new\n");
}

#[test]
fn exec_cannot_write_the_host_outside_its_private_tmp() {
    let s = user_repo(EXEC_ONLY);
    let outside = s.sibling("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    let home = s.sibling("home");
    std::fs::create_dir(&home).expect("mkdir");
    let host_tmp = format!("/tmp/loaf-escape-{}", std::process::id());
    let code = format!(
        "echo x > {outside}/f; echo x > $HOME/f; echo x > /var/tmp/loaf-escape-{pid}; \
         mkdir -p {host_tmp}; echo private > /tmp/mine; ls /tmp | grep -c loaf-escape; true",
        outside = outside.display(),
        pid = std::process::id(),
    );
    let reply = exec("e1a", &code) + &exec("e2b", "cat /tmp/mine");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .arg("apply")
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("HOME", &home)
        .stdin(std::fs::File::open(write_reply(&s, &reply)).expect("reply"))
        .output()
        .expect("git-loaf runs");
    let report = s.redact(&out.stdout);
    assert!(report.contains("Read-only file system"), "{report}");
    assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
    assert_eq!(std::fs::read_dir(&home).expect("ls").count(), 0);
    assert!(!Path::new(&host_tmp).exists());
    assert!(!Path::new(&format!("/var/tmp/loaf-escape-{}", std::process::id())).exists());
    // /tmp is the apply's own: the second block reads what the first wrote there, and the
    // host's /tmp never saw it.
    assert!(report.contains("private"), "{report}");
}

/// The reply, with `/repo` the root, in a file next to the repository.
fn write_reply(s: &Scratch, reply: &str) -> std::path::PathBuf {
    let path = s.sibling("reply.md");
    std::fs::write(&path, s.reply(reply)).expect("reply written");
    path
}

#[test]
fn exec_cannot_undo_its_own_mounts() {
    let s = user_repo(EXEC_ONLY);
    let code = format!(
        "grep CapEff /proc/self/status; umount -l {root} 2>&1; mount -o remount,rw / 2>&1; \
         echo x > {root}/../escaped 2>&1; true",
        root = s.root.display()
    );
    let out = s.apply(&exec("e1a", &code));
    let report = s.redact(&out.stdout);
    assert!(report.contains("CapEff:\t0000000000000000"), "{report}");
    assert!(!s.sibling("escaped").exists(), "{report}");
}

/// Whether someone connected to `listener` within a short while.
fn connected(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).expect("nonblocking");
    for _ in 0..20 {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = String::new();
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = stream.read_to_string(&mut buf);
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

fn connect_reply(listener: &TcpListener) -> String {
    let port = listener.local_addr().expect("addr").port();
    exec("e1a", &format!("echo hello > /dev/tcp/127.0.0.1/{port}"))
}

#[test]
fn exec_has_no_network_by_default_and_is_told_how_to_allow_it() {
    let s = user_repo(EXEC_ONLY);
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let out = s.apply(&connect_reply(&listener));
    let report = s.redact(&out.stdout);
    assert!(
        !connected(&listener),
        "the code reached the host's loopback"
    );
    assert!(report.contains("exec: { network: true }"), "{report}");
}

#[test]
fn exec_network_true_gives_the_code_the_network() {
    let s = user_repo("allowed-actions: [defaults, exec]\nexec:\n  network: true\n");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let out = s.apply(&connect_reply(&listener));
    s.assert_exit(&out, 0);
    assert!(connected(&listener));
}

#[test]
fn exec_writable_paths_are_written_in_place() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let cache = s.sibling("cache");
    std::fs::create_dir(&cache).expect("mkdir");
    s.write(
        "loaf.yml",
        &format!(
            "allowed-actions: [defaults, exec]\nexec:\n  writable: [\"{}\"]\n",
            cache.display()
        ),
    );
    s.commit_all("config");
    let code = format!("echo cached > {}/entry", cache.display());
    let out = s.apply(&exec("e1a", &code));
    s.assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(cache.join("entry")).ok().as_deref(),
        Some("cached\n")
    );
}

#[test]
fn no_commit_runs_code_in_place_but_keeps_it_from_the_git_dir_and_the_host() {
    let s = user_repo(EXEC_ONLY);
    let before = git_dir_facts(&s);
    let outside = s.sibling("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    let code = format!(
        "echo here > {root}/made.txt; common=$(git rev-parse --git-common-dir); \
         echo evil > \"$common/hooks/post-commit\"; git config user.name Mallory; \
         git branch -D other; echo x > {outside}/f; echo ran",
        root = s.root.display(),
        outside = outside.display()
    );
    let out = s.loaf(&["apply", "--no-commit"], &exec("e1a", &code));
    let report = s.redact(&out.stdout);
    assert!(report.contains("ran"), "{report}");
    // In place: the file the code wrote is in the user's tree (--no-commit's point).
    assert_eq!(s.read("made.txt").as_deref(), Some("here\n"));
    assert_eq!(git_dir_facts(&s), before, "{report}");
    assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
}

#[test]
fn no_commit_outside_a_repository_keeps_code_in_its_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("work");
    std::fs::create_dir(&root).expect("mkdir");
    let root = root.canonicalize().expect("canonical");
    std::fs::write(root.join("loaf.yml"), EXEC_ONLY).expect("loaf.yml");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).expect("mkdir");
    let code = format!(
        "echo here > made.txt; echo x > {}/f; echo ran",
        outside.display()
    );
    let out = crate::support::git_loaf()
        .args(["apply", "--no-commit"])
        .current_dir(&root)
        .envs(crate::scratch::ENV)
        .write_stdin(exec("e1a", &code))
        .output()
        .expect("git-loaf runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("ran"), "{report}");
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt"))
            .ok()
            .as_deref(),
        Some("here\n")
    );
    assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
}

#[test]
fn exec_cannot_reach_the_hosts_services_under_run() {
    use std::os::unix::net::UnixListener;
    let s = user_repo(EXEC_ONLY);
    // Where a session bus, an agent or a container engine listens: /run as root (CI),
    // the user's runtime folder under /run/user otherwise.
    let name = format!("loaf-escape-{}", std::process::id());
    let dir = [
        std::path::PathBuf::from("/run").join(&name),
        std::path::PathBuf::from(format!("/run/user/{}", rustix::process::getuid().as_raw()))
            .join(&name),
    ]
    .into_iter()
    .find(|dir| std::fs::create_dir_all(dir).is_ok())
    .expect("a folder under /run");
    let socket = dir.join("service.sock");
    let listener = UnixListener::bind(&socket).expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let code = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); s.send(b'hi')\" 2>&1 | tail -1",
        socket.display()
    );
    let out = s.apply(&exec("e1a", &code));
    let report = s.redact(&out.stdout);
    std::thread::sleep(Duration::from_millis(100));
    let reached = listener.accept().is_ok();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !reached,
        "the code connected to a socket under /run: {report}"
    );
    assert!(report.contains("No such file or directory"), "{report}");
}

#[test]
fn exec_cannot_read_the_credentials_in_the_home_folder() {
    let s = user_repo(EXEC_ONLY);
    // Outside /tmp, which the sandbox replaces by a private one.
    let home_dir = tempfile::tempdir_in("/var/tmp").expect("a folder in /var/tmp");
    let home = home_dir.path().to_path_buf();
    std::fs::create_dir_all(home.join(".ssh")).expect("mkdir");
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE-KEY-7f3a\n").expect("key");
    std::fs::write(home.join(".netrc"), "machine x password NETRC-9c1b\n").expect("netrc");
    std::fs::write(home.join("notes.txt"), "readable\n").expect("notes");
    let code = "cat ~/.ssh/id_ed25519 ~/.netrc ~/notes.txt 2>&1; ls -a ~/.ssh";
    let out = crate::support::git_loaf()
        .arg("apply")
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("HOME", &home)
        .write_stdin(s.reply(&exec("e1a", code)))
        .output()
        .expect("git-loaf runs");
    let report = s.redact(&out.stdout);
    assert!(!report.contains("PRIVATE-KEY-7f3a"), "{report}");
    assert!(!report.contains("NETRC-9c1b"), "{report}");
    // Everything else the user can read stays readable (docs/sandbox-and-safety.md says so).
    assert!(report.contains("readable"), "{report}");
}
