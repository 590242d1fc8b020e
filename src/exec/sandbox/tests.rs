use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::orphans::stat_fields;
use super::placeholders::Kind;
use super::*;
use crate::exec::process::tests::is_running;
use crate::exec::process::{self, Ending, Job, RunError, SignalName};

/// A repository's folders without git: the root, its git dir, the stage inside it.
struct Layout {
    _dir: Option<tempfile::TempDir>,
    root: PathBuf,
    common: PathBuf,
    stage: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut layout = Layout::at(&dir.path().canonicalize().expect("canonical"));
        fs::create_dir_all(&layout.stage).expect("mkdir");
        layout._dir = Some(dir);
        layout
    }

    fn at(dir: &Path) -> Layout {
        let root = dir.join("repo");
        let common = root.join(".git");
        let stage = common.join("loaf").join("stage");
        Layout {
            _dir: None,
            root,
            common,
            stage,
        }
    }

    fn sandbox(&self) -> Sandbox {
        Sandbox::new(&self.root, &self.stage, &self.common, Vec::new())
    }
}

fn bash<'a>(script: &str, cwd: &'a Path, sandbox: &'a Sandbox, timeout: Duration) -> Job<'a> {
    Job {
        program: "bash",
        args: vec!["-c".into(), script.into()],
        cwd,
        env: Vec::new(),
        environment: &crate::exec::environment::DEFAULT_ENVIRONMENT,
        path: None,
        timeout,
        max_output: 4096,
        sandbox: Some(sandbox),
    }
}

#[test]
fn isolated_runs_keep_exit_codes_signals_output_and_timeouts() {
    let layout = Layout::new();
    let sandbox = layout.sandbox();
    assert!(sandbox.isolated());
    let run = |script: &str, timeout_ms| {
        process::run(&bash(
            script,
            &layout.stage,
            &sandbox,
            Duration::from_millis(timeout_ms),
        ))
    };
    let done = run("echo out; echo err >&2; exit 3", 5000).unwrap();
    assert_eq!(done.ending, Ending::Exited(3));
    assert_eq!(
        (done.stdout.text.as_str(), done.stderr.text.as_str()),
        ("out\n", "err\n")
    );
    // The code is pid 2 of its namespace (pid 1 is our init), with a /proc of its own.
    let done = run("echo $$; ls /proc | grep -c '^[0-9]'", 5000).unwrap();
    assert_eq!(done.stdout.text.lines().next(), Some("2"));
    let done = run("kill -SEGV $$", 5000).unwrap();
    assert_eq!(done.ending, Ending::Signalled(SignalName(libc::SIGSEGV)));
    let started = Instant::now();
    let done = run("sleep 30", 300).unwrap();
    assert_eq!(done.ending, Ending::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(3));
    let mut job = bash("true", &layout.stage, &sandbox, Duration::from_secs(5));
    job.program = "no-such-interpreter";
    assert!(matches!(process::run(&job), Err(RunError::NotFound(_))));
}

#[test]
fn isolated_code_sees_the_stage_at_the_root_and_writes_there() {
    let layout = Layout::new();
    fs::write(layout.stage.join("a.txt"), "stage\n").unwrap();
    fs::write(layout.root.join("a.txt"), "user\n").unwrap();
    let sandbox = layout.sandbox();
    let script = format!(
        "cat {0}/a.txt; echo new > {0}/b.txt; ls -a {0}",
        layout.root.display()
    );
    let done = process::run(&bash(
        &script,
        &layout.stage,
        &sandbox,
        Duration::from_secs(5),
    ))
    .unwrap();
    assert_eq!(done.stdout.text, "stage\n.\n..\na.txt\nb.txt\n");
    assert_eq!(
        fs::read_to_string(layout.stage.join("b.txt")).unwrap(),
        "new\n"
    );
    assert!(!layout.root.join("b.txt").exists());
}

#[test]
fn visible_placeholders_are_made_when_missing_and_odd_entries_left_out() {
    let layout = Layout::new();
    fs::create_dir_all(layout.root.join("sub/target/debug")).unwrap();
    fs::write(layout.root.join(".env"), "A=1\n").unwrap();
    std::os::unix::fs::symlink("/nonexistent/venv", layout.root.join(".venv")).unwrap();
    let sandbox = Sandbox::new(
        &layout.root,
        &layout.stage,
        &layout.common,
        [
            "sub/target",
            ".env",
            ".venv",
            "missing",
            "../x",
            "/abs",
            ".git/config",
            "sub/target/debug",
        ]
        .into_iter()
        .map(PathBuf::from)
        .collect(),
    );
    assert_eq!(
        sandbox.visible(),
        ["sub/target", ".env", ".venv", "missing"].map(PathBuf::from)
    );
    let prepared = sandbox.prepare_visible();
    let stages: Vec<&Path> = prepared.iter().map(|v| v.stage.as_path()).collect();
    assert_eq!(
        stages,
        [layout.stage.join("sub/target"), layout.stage.join(".env")]
    );
    assert!(layout.stage.join("sub/target").is_dir());
    assert_eq!(fs::read_to_string(layout.stage.join(".env")).unwrap(), "");
    // A symlink of the user's is copied as a symlink.
    assert_eq!(
        fs::read_link(layout.stage.join(".venv")).unwrap(),
        Path::new("/nonexistent/venv")
    );
    assert_eq!(
        sandbox.seen_at(&layout.stage.join("sub/target/debug")),
        layout.root.join("sub/target/debug")
    );
    assert_eq!(
        sandbox.seen_at(&layout.stage.join("sub/other")),
        layout.stage.join("sub/other")
    );
}

#[test]
fn the_fallback_notice_is_given_once() {
    let layout = Layout::new();
    let sandbox = layout.sandbox().without_isolation();
    assert!(!sandbox.isolated());
    let first = fallback_notice();
    assert!(
        first
            .as_deref()
            .is_some_and(|n| n.contains("without isolation")),
        "{first:?}"
    );
    assert_eq!(fallback_notice(), None);
    let _again = layout.sandbox().without_isolation();
    assert_eq!(fallback_notice(), None);
}

#[test]
fn only_off_turns_namespaces_off() {
    assert!(turns_off(OsStr::new("off")));
    assert!(turns_off(OsStr::new("OFF")));
    assert!(!turns_off(OsStr::new("on")));
    assert!(!turns_off(OsStr::new("")));
}

/// A process group of its own: `sleep 1000` as its leader.
fn sleeper() -> std::process::Child {
    Command::new("sleep")
        .arg("1000")
        .process_group(0)
        .spawn()
        .expect("sleep runs")
}

fn record(common: &Path, pgid: u32, start: u64) {
    let path = common.join(RECORD);
    make_parent(&path).unwrap();
    fs::write(path, format!("{pgid} {start}\n")).unwrap();
}

#[test]
fn kill_recorded_ends_the_recorded_group_and_removes_the_record() {
    let layout = Layout::new();
    assert!(
        !kill_recorded(&layout.common).unwrap(),
        "no record, nothing to do"
    );
    let mut child = sleeper();
    record(&layout.common, child.id(), start_time(child.id()).unwrap());
    assert!(kill_recorded(&layout.common).unwrap());
    let _ = child.wait();
    assert!(!is_running(child.id()));
    assert!(!layout.common.join(RECORD).exists());
}

#[test]
fn kill_recorded_spares_a_group_whose_leader_started_at_another_time() {
    let layout = Layout::new();
    let mut child = sleeper();
    let start = start_time(child.id()).unwrap();
    record(&layout.common, child.id(), start + 1);
    assert!(!kill_recorded(&layout.common).unwrap());
    assert!(is_running_now(child.id()));
    assert!(!layout.common.join(RECORD).exists());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn kill_recorded_ends_members_left_after_the_leader() {
    let layout = Layout::new();
    // The leader starts a member, then exits when its stdin closes.
    let mut leader = Command::new("bash")
        .args(["-c", "sleep 1000 & echo $!; read"])
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    record(
        &layout.common,
        leader.id(),
        start_time(leader.id()).unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(leader.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let member: u32 = line.trim().parse().unwrap();
    drop(leader.stdin.take());
    let _ = leader.wait();
    assert!(is_running_now(member));
    assert!(kill_recorded(&layout.common).unwrap());
    assert!(!is_running(member));
}

fn is_running_now(pid: u32) -> bool {
    stat_fields(pid).is_some()
}

/// Set for [`helper_runs_code_until_killed`]: the folder of its layout.
const HELPER_DIR: &str = "LOAF_SANDBOX_TEST_DIR";
/// Set for [`helper_runs_code_until_killed`]: the argv[0] its code's process takes.
const HELPER_NAME: &str = "LOAF_SANDBOX_TEST_NAME";

/// Not a test: run by the parent-killed tests in a process of their own, which they SIGKILL
/// while the code runs.
#[test]
#[ignore = "a helper process of the parent-killed tests"]
fn helper_runs_code_until_killed() {
    let (Some(dir), Some(name)) = (
        std::env::var_os(HELPER_DIR),
        std::env::var(HELPER_NAME).ok(),
    ) else {
        return;
    };
    let layout = Layout::at(Path::new(&dir));
    let sandbox = layout.sandbox();
    fs::write(
        Path::new(&dir).join("isolated"),
        sandbox.isolated().to_string(),
    )
    .unwrap();
    let (first, rest) = name.split_at(1);
    // Built at run time so that bash's own command line does not carry the name.
    let script = format!("N={first}; exec -a ${{N}}{rest} sleep 1000");
    let _ = process::run(&bash(
        &script,
        &layout.stage,
        &sandbox,
        Duration::from_secs(60),
    ));
}

/// Starts the helper (with `LOAF_SANDBOX=off` when `off`), waits until its code runs,
/// SIGKILLs it; returns the layout's folder, whether the helper ran isolated, and the
/// code's argv[0].
fn kill_helper_while_code_runs(off: bool) -> (tempfile::TempDir, bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::at(dir.path());
    fs::create_dir_all(&layout.stage).unwrap();
    let name = format!("loaf-killed-{}-{}", std::process::id(), u8::from(off));
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "exec::sandbox::tests::helper_runs_code_until_killed",
            "--ignored",
            "--test-threads=1",
        ])
        .env(HELPER_DIR, dir.path())
        .env(HELPER_NAME, &name)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if off {
        command.env(SANDBOX_ENV, "off");
    } else {
        command.env_remove(SANDBOX_ENV);
    }
    let mut helper = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    // In the fallback the group is recorded right after the spawn, which a loaded machine can
    // let the code's exec overtake: the kill waits for the record too.
    let record = layout.common.join(RECORD);
    while !running_with_argv0(&name) || (off && !record.exists()) {
        if Instant::now() > deadline {
            let _ = helper.kill();
            panic!("the helper's code never started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    helper.kill().unwrap();
    helper.wait().unwrap();
    let isolated = fs::read_to_string(dir.path().join("isolated")).unwrap() == "true";
    (dir, isolated, name)
}

#[test]
fn when_git_loaf_is_killed_isolated_code_dies_with_it() {
    let (_dir, isolated, name) = kill_helper_while_code_runs(false);
    assert!(isolated);
    assert!(
        gone_within(&name, Duration::from_secs(1)),
        "{name} survived"
    );
}

#[test]
fn when_git_loaf_is_killed_in_the_fallback_the_next_command_ends_the_group() {
    let (dir, isolated, name) = kill_helper_while_code_runs(true);
    assert!(!isolated, "LOAF_SANDBOX=off");
    // Nothing kills the group by itself here; the record tells the next command what to.
    std::thread::sleep(Duration::from_millis(200));
    assert!(running_with_argv0(&name), "{name} died by itself");
    let common = Layout::at(dir.path()).common;
    assert!(kill_recorded(&common).unwrap());
    assert!(
        gone_within(&name, Duration::from_secs(1)),
        "{name} survived"
    );
}

/// Whether no live process has argv[0] `name` by `within` from now.
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
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            return false;
        };
        fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| cmdline.split(|&b| b == 0).next() == Some(name.as_bytes()))
            && is_running_now(pid)
    })
}

/// The sandbox of a machine without user namespaces (what `Sandbox::new` makes there).
fn without_namespaces(layout: &Layout) -> Sandbox {
    Sandbox {
        isolated: false,
        unisolated_because: Some("user namespaces unavailable: EPERM".into()),
        ..layout.sandbox()
    }
}

#[test]
fn without_namespaces_code_is_refused_unless_the_user_allows_it() {
    let layout = Layout::new();
    let sandbox = without_namespaces(&layout);
    let job = bash("echo ran", &layout.stage, &sandbox, Duration::from_secs(5));
    match process::run(&job) {
        Err(RunError::Refused(message)) => {
            assert!(message.contains("EPERM"), "{message}");
            assert!(message.contains("sandbox: off"), "{message}");
        }
        other => panic!("not refused: {other:?}"),
    }
    let allowed = without_namespaces(&layout).with_policy(Policy {
        unisolated_allowed: true,
        ..Policy::default()
    });
    assert!(allowed.refusal().is_none());
    let job = bash("echo ran", &layout.stage, &allowed, Duration::from_secs(5));
    assert_eq!(process::run(&job).unwrap().stdout.text, "ran\n");
    // Where namespaces work, `sandbox: off` changes nothing.
    let isolated = layout.sandbox().with_policy(Policy {
        unisolated_allowed: true,
        ..Policy::default()
    });
    assert!(isolated.isolated());
}

/// Without namespaces a placeholder gives way to a symlink to the user's entry for the run,
/// and comes back as the same file (the file actions know it by its inode, to read the
/// user's entry through it instead of an empty file); a run killed meanwhile leaves its
/// folder of placeholders, which the next recovery removes.
#[test]
fn the_fallback_puts_back_the_same_placeholder_files() {
    use std::os::unix::fs::MetadataExt as _;
    let layout = Layout::new();
    fs::create_dir_all(&layout.root).expect("mkdir");
    let user = layout.root.join(".env");
    fs::write(&user, "SECRET=1\n").expect("user file");
    fs::create_dir_all(layout.root.join(".venv")).expect("user folder");
    let entries = [
        Visible {
            user: user.clone(),
            stage: layout.stage.join(".env"),
            kind: Kind::File,
        },
        Visible {
            user: layout.root.join(".venv"),
            stage: layout.stage.join(".venv"),
            kind: Kind::Dir,
        },
    ];
    fs::write(&entries[0].stage, "").expect("placeholder");
    fs::create_dir(&entries[1].stage).expect("placeholder folder");
    let inodes: Vec<u64> = entries
        .iter()
        .map(|e| fs::symlink_metadata(&e.stage).expect("meta").ino())
        .collect();
    let aside = tempfile::Builder::new()
        .prefix("placeholders-")
        .tempdir_in(layout.common.join("loaf"))
        .expect("aside");
    let linked = link_visible(&entries, Some(aside.path()));
    assert_eq!(linked.len(), 2);
    assert_eq!(
        fs::read_to_string(&entries[0].stage).expect("through the link"),
        "SECRET=1\n"
    );
    for (visible, kept) in &linked {
        visible.unlink(kept.as_deref());
    }
    for (entry, inode) in entries.iter().zip(inodes) {
        let meta = fs::symlink_metadata(&entry.stage).expect("back");
        assert!(!meta.file_type().is_symlink());
        assert_eq!(
            meta.ino(),
            inode,
            "{} is the same file",
            entry.stage.display()
        );
    }
    // Killed during a run: the folder stays until the next recovery.
    let left = aside.keep();
    assert!(left.exists());
    assert!(!kill_recorded(&layout.common).expect("recovery"));
    assert!(
        !left.exists(),
        "recovery removes the folder a killed run left"
    );
}
