//! Only what git-loaf opened reaches code (DESIGN §2): descriptors git-loaf inherits from
//! whoever started it — here one appending to a file outside the repository, one on the real
//! git dir, one on the working tree — are not open in a reply's exec, a git hook or a
//! loaf.yml hook, in the namespace sandbox, without it (`LOAF_SANDBOX=off`) and with
//! `--no-commit`; writing through them changes nothing.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::scratch::{ENV, Scratch, block};

/// Run by every piece of code: the descriptors a program it starts finds open (`ls` itself
/// holds 3, the folder it lists), then every way of writing through one the caller left
/// open, each line saying what worked.
const PROBE: &str = r#"ls /proc/self/fd | tr '\n' ' '; echo
for fd in 3 4 5 6 7 8 9 10 11 12; do
  (echo pwned >&$fd) 2>/dev/null && echo "wrote through $fd"
  touch /proc/self/fd/$fd/planted 2>/dev/null && echo "planted through $fd"
done
exit 0
"#;

/// What [`PROBE`] prints when nothing but 0–2 was passed on.
const NOTHING_INHERITED: &str = "0 1 2 3 \n";

/// A repository whose `probe.sh` is [`PROBE`], exec allowed, a loaf.yml before hook and a
/// pre-commit hook each running it into a file of the commit.
fn project() -> Scratch {
    let s = Scratch::with(&[
        ("probe.sh", PROBE),
        (
            "loaf.yml",
            "allowed-actions: [defaults, exec]\nhooks:\n  before:\n    - run: sh probe.sh > before-seen.txt\n",
        ),
    ]);
    let hook = s.root.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        "#!/bin/sh\nsh probe.sh > hook-seen.txt && git add hook-seen.txt\n",
    )
    .expect("write the hook");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    s
}

/// The reply: exec runs the probe into `exec-seen.txt`.
fn reply() -> String {
    block(
        "d1a",
        "exec",
        &[("lang", "bash"), ("code", "sh probe.sh > exec-seen.txt")],
    )
}

/// A running `git loaf args` (its stdin holding `reply`) with descriptor 7 appending to
/// `victim.txt` beside the repository, 8 on the real git dir and 9 on the working tree, as
/// `(exec 7>>victim.txt 8<.git 9<.; git loaf …)` would leave them.
struct Holding {
    child: std::process::Child,
    victim: PathBuf,
    /// The three files, open in the test too.
    held: [File; 3],
}

fn spawn_holding(s: &Scratch, args: &[&str], env: &[(&str, &str)], reply: &str) -> Holding {
    use std::io::Write as _;
    let victim = s.sibling("victim.txt");
    std::fs::write(&victim, "mine\n").expect("write the victim");
    let held = [
        File::options()
            .append(true)
            .open(&victim)
            .expect("open the victim"),
        File::open(s.root.join(".git")).expect("open the git dir"),
        File::open(&s.root).expect("open the working tree"),
    ];
    let raw: Vec<i32> = held.iter().map(AsRawFd::as_raw_fd).collect();
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"));
    command
        .args(args)
        .current_dir(&s.root)
        .envs(ENV)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only dup2 system calls in the child; dup2 leaves the copy open across exec.
    unsafe {
        command.pre_exec(move || {
            for (at, fd) in (7..).zip(&raw) {
                if libc::dup2(*fd, at) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("git-loaf starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(s.reply(reply).as_bytes())
        .expect("reply written");
    Holding {
        child,
        victim,
        held,
    }
}

/// [`spawn_holding`] of [`reply`], to its end: its output and the victim's path.
fn apply_holding_descriptors(
    s: &Scratch,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, PathBuf) {
    let holding = spawn_holding(s, args, env, &reply());
    let out = holding.child.wait_with_output().expect("git-loaf ends");
    (out, holding.victim)
}

/// Nothing was written through the descriptors, and each piece of code saw none of them.
fn assert_nothing_reached(s: &Scratch, out: &Output, victim: &std::path::Path, seen: &[&str]) {
    let report = s.redact(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}{}",
        s.redact(&out.stderr)
    );
    for file in seen {
        assert_eq!(
            s.read(file).as_deref(),
            Some(NOTHING_INHERITED),
            "{file}: {report}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(victim).ok().as_deref(),
        Some("mine\n")
    );
    assert!(!s.root.join(".git/planted").exists(), "git dir written");
    assert!(!s.root.join("planted").exists(), "working tree written");
}

#[test]
fn inherited_descriptors_reach_no_code_in_the_namespace_sandbox() {
    let s = project();
    let (out, victim) = apply_holding_descriptors(&s, &["apply"], &[]);
    assert_nothing_reached(
        &s,
        &out,
        &victim,
        &["exec-seen.txt", "before-seen.txt", "hook-seen.txt"],
    );
    assert_eq!(s.git(&["show", "HEAD:hook-seen.txt"]), NOTHING_INHERITED);
}

#[test]
fn inherited_descriptors_reach_no_code_without_namespaces() {
    let s = project();
    let (out, victim) = apply_holding_descriptors(&s, &["apply"], &[("LOAF_SANDBOX", "off")]);
    assert_nothing_reached(
        &s,
        &out,
        &victim,
        &["exec-seen.txt", "before-seen.txt", "hook-seen.txt"],
    );
}

#[test]
fn inherited_descriptors_reach_no_code_with_no_commit() {
    let s = project();
    let (out, victim) = apply_holding_descriptors(&s, &["apply", "--no-commit"], &[]);
    assert_nothing_reached(&s, &out, &victim, &["exec-seen.txt", "before-seen.txt"]);
}

/// The processes descending from `pid` (not itself), from the host's /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces, so read after its last ')'.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((child, parent));
        }
    }
    let mut found = vec![pid];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        at += 1;
    }
    found.split_off(1)
}

/// Device and inode of what a path (or an open descriptor's `/proc` link) leads to.
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[test]
fn no_process_of_the_apply_holds_an_inherited_descriptor_while_code_runs() {
    // The sandbox's relay and init never exec: close-on-exec alone would leave the
    // descriptors open in them, reachable through /proc. Code waits in the middle of its run
    // (a folder it may write, outside the repository) while the test looks at every
    // process git-loaf started.
    let s = project();
    let meeting = s.sibling("meeting");
    std::fs::create_dir(&meeting).expect("mkdir");
    s.write(
        "loaf.yml",
        &format!(
            "allowed-actions: [defaults, exec]\nexec:\n  writable: [\"{}\"]\n",
            meeting.display()
        ),
    );
    s.commit_all("meeting point");
    let code = format!(
        "touch {0}/started; while [ ! -e {0}/go ]; do sleep 0.05; done",
        meeting.display()
    );
    let reply = block("d2b", "exec", &[("lang", "bash"), ("code", &code)]);
    let holding = spawn_holding(&s, &["apply"], &[], &reply);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !meeting.join("started").exists() {
        assert!(std::time::Instant::now() < until, "the code never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let inherited: Vec<(u64, u64)> = holding
        .held
        .iter()
        .map(|f| identity(&PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()))))
        .collect::<Option<_>>()
        .expect("the held files");
    let processes = descendants(holding.child.id());
    let mut holders = Vec::new();
    for pid in &processes {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if identity(&fd.path()).is_some_and(|id| inherited.contains(&id)) {
                holders.push(fd.path());
            }
        }
    }
    std::fs::write(meeting.join("go"), "").expect("let the code end");
    let out = holding.child.wait_with_output().expect("git-loaf ends");
    s.assert_exit(&out, 0);
    assert!(processes.len() >= 3, "relay, init and code: {processes:?}");
    assert!(
        holders.is_empty(),
        "held by the apply's processes: {holders:?}"
    );
}
