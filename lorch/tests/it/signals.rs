//! Ctrl-C (issue 26, finding 5): SIGINT or SIGTERM during a run records `aborted` in the
//! ledger and `state/run.json`, stops every agent and its model's processes (nothing of the
//! run is left running to commit afterwards), and `lorch resume` continues the run.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::agent::ENV;
use crate::failures::{real_agents, scripted_model};
use crate::harness::{assert_exit, stdout};

const REPLIES: [(&str, &str); 3] = [
    (
        "T-0042-1",
        "#!nesl [@three-char-SHA-256: b1d]\naction = \"file_write\"\npath = \"@ROOT@/src/hello.txt\"\ncontent = \"hello\\n\"\n#!end_b1d\n",
    ),
    ("T-0042-2", "Fine.\nVERDICT: approved\n"),
    (
        "T-0042-3",
        "STATUS: no_changes_needed\nSUMMARY: nothing to note.\n",
    ),
];

/// The processes whose environment says they belong to run `run_id` (every agent, model and
/// check of a run inherits `LORCH_RUN_ID`), zombies left out.
fn processes_of(run_id: &str) -> Vec<u32> {
    let marker = format!("LORCH_RUN_ID={run_id}");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|raw| raw.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
        })
        .collect()
}

/// Waits (up to a minute: the machine is shared) until `path` exists.
fn wait_for(path: &Path) {
    let until = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn interrupted_then_resumed(signal: i32, name: &str) {
    let scratch = tempfile::tempdir().expect("tempdir");
    for (id, text) in REPLIES {
        std::fs::write(scratch.path().join(format!("{id}.md")), text).expect("reply");
    }
    let pid_file = scratch.path().join("model.pid");
    let replies = scratch.path().display().to_string();
    let pid_path = pid_file.display().to_string();
    let (ws, root) = real_agents(
        &scripted_model(),
        &[
            ("FAKE_REPLY", &replies),
            ("FAKE_PID", &pid_path),
            // The model thinks for ten minutes: the signal comes while it does.
            ("FAKE_SLEEP", "600"),
        ],
    );
    let mut lorch = Command::new(assert_cmd::cargo::cargo_bin("lorch"))
        .args(["run", "--task", "T-0042"])
        .current_dir(ws.path())
        .envs(ENV)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lorch starts");
    wait_for(&pid_file);
    // SAFETY: kill(2) has no memory effects.
    unsafe {
        libc::kill(lorch.id() as i32, signal);
    }
    let status = lorch.wait().expect("lorch ends");
    let mut shown = String::new();
    lorch
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut shown)
        .expect("read");
    assert_eq!(status.code(), Some(130), "{shown}");
    let run = ws.run_id();
    assert!(
        shown.ends_with(&format!(
            "[lorch] ABORTED: interrupted by {name}; `lorch resume --run {run}` continues it\n"
        )),
        "{shown}"
    );
    assert_eq!(ws.json("state/run.json")["status"], "aborted");
    assert_eq!(
        ws.json("state/index.json")["runs"][&run]["status"],
        "aborted"
    );
    let ended = ws.system_events("system.run_completed");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["status"], "aborted");
    // Nothing of the run survives: not the agents, not the model, not the model's `sleep`.
    let until = Instant::now() + Duration::from_secs(5);
    while !processes_of(&run).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_of(&run), Vec::<u32>::new());
    let model: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        std::fs::read_to_string(format!("/proc/{model}/stat")).map_or(true, |s| s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')),
        "the model {model} was stopped"
    );
    assert_eq!(
        crate::deterministic::git_in(&root, &["rev-list", "--count", "HEAD"]),
        "1\n",
        "nothing was committed after the abort"
    );

    // The user lets the model answer at once now; resume continues the same step, same IK.
    let mut config: Value = ws.json("lorch.json");
    for role in ["builder", "reviewer", "spec_maintainer"] {
        config["agents"][role]["env"]
            .as_object_mut()
            .expect("env")
            .remove("FAKE_SLEEP");
    }
    std::fs::write(ws.path().join("lorch.json"), config.to_string()).expect("write");
    let out = ws.lorch(&["resume", "--run", &run], &[]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with(&format!(
            "[lorch] resuming run {run} (it was aborted: interrupted by {name})\n"
        )),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).ends_with("[lorch] DONE\n"), "{}", stdout(&out));
    let implements: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["action"] == "implement")
        .collect();
    assert_eq!(implements.len(), 2);
    assert_eq!(
        implements[0]["idempotency_key"],
        implements[1]["idempotency_key"]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/hello.txt")).expect("built"),
        "hello\n"
    );
}

#[test]
fn ctrl_c_records_the_abort_stops_every_agent_and_model_and_resume_continues() {
    interrupted_then_resumed(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_is_an_abort_too() {
    interrupted_then_resumed(libc::SIGTERM, "SIGTERM");
}

/// An init that reaps nothing, as in many containers: it becomes the reaper of what is
/// orphaned below it (`PR_SET_CHILD_SUBREAPER`), starts lorch, writes lorch's pid to
/// `$LORCH_PID_FILE`, waits for lorch alone, then prints the pids of its children left as
/// zombies (none when lorch reaped what its agents left).
const NO_REAPER: &str = r#"
import ctypes, os, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
open(os.environ["LORCH_PID_FILE"], "w").write(str(pid))
_, status = os.waitpid(pid, 0)
me = str(os.getpid())
zombies = []
for entry in os.listdir("/proc"):
    if not entry.isdigit():
        continue
    try:
        stat = open("/proc/%s/stat" % entry).read()
    except OSError:
        continue
    fields = stat.rsplit(")", 1)[1].split()
    if fields[1] == me and fields[0] == "Z":
        zombies.append(entry)
print("lorch exit %d; zombies: %s" % (os.waitstatus_to_exitcode(status), " ".join(zombies) or "none"))
"#;

#[test]
fn after_ctrl_c_lorch_reaps_the_model_its_agent_left_even_under_an_init_that_reaps_nothing() {
    let scratch = tempfile::tempdir().expect("tempdir");
    for (id, text) in REPLIES {
        std::fs::write(scratch.path().join(format!("{id}.md")), text).expect("reply");
    }
    let model_pid = scratch.path().join("model.pid");
    let lorch_pid = scratch.path().join("lorch.pid");
    let init = scratch.path().join("no_reaper.py");
    std::fs::write(&init, NO_REAPER).expect("init");
    let replies = scratch.path().display().to_string();
    let model_path = model_pid.display().to_string();
    let (ws, _root) = real_agents(
        &scripted_model(),
        &[
            ("FAKE_REPLY", &replies),
            ("FAKE_PID", &model_path),
            ("FAKE_SLEEP", "600"),
        ],
    );
    let mut init = Command::new("python3")
        .arg(&init)
        .arg(assert_cmd::cargo::cargo_bin("lorch"))
        .args(["run", "--task", "T-0042"])
        .current_dir(ws.path())
        .envs(ENV)
        .env("LORCH_PID_FILE", &lorch_pid)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the init starts");
    wait_for(&model_pid);
    wait_for(&lorch_pid);
    let lorch: i32 = std::fs::read_to_string(&lorch_pid)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // SAFETY: kill(2) has no memory effects.
    unsafe {
        libc::kill(lorch, libc::SIGINT);
    }
    init.wait().expect("the init ends");
    let mut said = String::new();
    init.stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut said)
        .expect("read");
    assert!(
        said.ends_with("continues it\nlorch exit 130; zombies: none\n"),
        "{said}"
    );
}
