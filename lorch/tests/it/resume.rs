//! Crash and resume (§5.6, §7.3, §7.5): lorch is SIGKILLed right after each durable write of
//! a run (ledger lines, receipts, state, snapshots: every moment at which what is on disk
//! changes), then `lorch resume` finishes the run. No command that had a terminal event is
//! sent again, a command without one is resent with the same IK, and the final state and
//! receipts are those of an uninterrupted run.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;

use serde_json::Value;

use crate::harness::{Ws, assert_exit, config, stderr, stdout};

fn scenario() -> Value {
    let mut c = config();
    c["agents"]["reviewer"]["env"]["FAKE_PLAN"] = "changes_requested,approved,approved".into();
    c["agents"]["spec_maintainer"]["env"]["FAKE_PLAN"] = "changes_requested,updated".into();
    c
}

/// `state/run.json` without what differs between two runs of the same work: the run id,
/// the time, the agents' pids.
fn final_state(ws: &Ws) -> Value {
    let mut state = ws.json("state/run.json");
    let map = state.as_object_mut().expect("object");
    for key in ["run_id", "updated_at", "agents"] {
        map.remove(key);
    }
    state
}

/// Every receipt without its creation time.
fn receipts(ws: &Ws) -> BTreeMap<String, Value> {
    let dir = ws.path().join("receipts/T-0042");
    std::fs::read_dir(&dir)
        .expect("receipts")
        .map(|e| {
            let path = e.expect("entry").path();
            let mut v: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
            v.as_object_mut().expect("object").remove("created_at");
            (
                path.file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned(),
                v,
            )
        })
        .collect()
}

fn is_terminal(m: &Value) -> bool {
    m["kind"] == "event"
        && m["from"]["agent_type"] != "system"
        && [
            "builder.completed",
            "review.completed",
            "spec.updated",
            "spec.no_changes_needed",
            "spec.changes_requested",
            "error",
        ]
        .iter()
        .any(|t| m["event"] == *t)
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn sigkill_at_every_durable_write_then_resume_ends_as_an_uninterrupted_run() {
    let reference = Ws::new(&scenario());
    let out = reference.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let want_state = final_state(&reference);
    let want_receipts = receipts(&reference);
    assert_eq!(want_state["status"], "completed");
    assert_eq!(want_state["steps"].as_array().map(Vec::len), Some(8));

    let mut moments = 0;
    for n in 1.. {
        let ws = Ws::new(&scenario());
        let crash = n.to_string();
        let out = ws.lorch(
            &["run", "--task", "T-0042"],
            &[("LORCH_CRASH_AFTER_WRITES", crash.as_str())],
        );
        if out.status.code() == Some(0) {
            // n is past the run's last write: every moment has been tried.
            break;
        }
        assert_eq!(out.status.signal(), Some(9), "n={n}: {}", stderr(&out));
        moments += 1;
        let before = ws.ledger();
        let pids: Vec<u64> = std::fs::read_to_string(ws.path().join("state/run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map(|s| {
                ["builder", "reviewer", "spec_maintainer"]
                    .iter()
                    .filter_map(|a| s["agents"][a]["pid"].as_u64())
                    .collect()
            })
            .unwrap_or_default();

        let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "n={n}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert_eq!(final_state(&ws), want_state, "n={n}");
        assert_eq!(receipts(&ws), want_receipts, "n={n}");
        for pid in pids {
            assert!(
                !alive(pid),
                "n={n}: agent {pid} of the crashed lorch still runs"
            );
        }

        // Commands sent after the crash: none for a correlation that had its terminal event
        // before it; one that had no terminal event is resent with the same IK.
        let after = &ws.ledger()[before.len()..];
        for command in after.iter().filter(|m| m["kind"] == "command") {
            let corr = &command["correlation_id"];
            assert!(
                !before
                    .iter()
                    .any(|m| is_terminal(m) && m["correlation_id"] == *corr),
                "n={n}: {corr} re-executed after its terminal event"
            );
            for earlier in before
                .iter()
                .filter(|m| m["kind"] == "command" && m["correlation_id"] == *corr)
            {
                assert_eq!(
                    earlier["idempotency_key"], command["idempotency_key"],
                    "n={n}"
                );
            }
        }
        let out = ws.lorch(&["validate", "--schemas"], &[]);
        assert_eq!(out.status.code(), Some(0), "n={n}: {}", stdout(&out));
    }
    eprintln!("{moments} crash moments, each resumed to the reference state");
    assert!(moments >= 20, "only {moments} crash moments");
}

#[test]
fn resume_terminates_the_orphaned_agents_of_the_crashed_process() {
    let mut c = scenario();
    c["agents"]["spec_maintainer"]["env"]["FAKE_MODE"] = "sticky".into();
    for n in 1.. {
        let ws = Ws::new(&c);
        let crash = n.to_string();
        let out = ws.lorch(
            &["run", "--task", "T-0042"],
            &[("LORCH_CRASH_AFTER_WRITES", crash.as_str())],
        );
        assert_eq!(out.status.signal(), Some(9), "n={n}");
        if !ws.path().join("state/run.json").exists() {
            continue;
        }
        let state = ws.json("state/run.json");
        let Some(pid) = state["agents"]["spec_maintainer"]["pid"].as_u64() else {
            continue;
        };
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(alive(pid), "the sticky agent outlives lorch");
        let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        assert!(
            stdout(&out).contains(&format!(
                "[lorch] terminated orphaned spec_maintainer (pid {pid})"
            )),
            "{}",
            stdout(&out)
        );
        assert!(!alive(pid));
        // (Other agents of the crashed lorch may have been caught alive too.)
        let terminated = ws.system_events("system.orphan_terminated");
        assert!(
            terminated
                .iter()
                .any(|e| e["payload"]["pid"] == pid && e["payload"]["agent"] == "spec_maintainer"),
            "{terminated:?}"
        );
        return;
    }
}

#[test]
fn a_file_changed_behind_a_receipt_stops_the_resume_unless_a_command_in_flight_explains_it() {
    // Find a crash between two steps (the ledger ends with a step accepted).
    for n in 1.. {
        let ws = Ws::new(&scenario());
        let crash = n.to_string();
        let out = ws.lorch(
            &["run", "--task", "T-0042"],
            &[("LORCH_CRASH_AFTER_WRITES", crash.as_str())],
        );
        assert_eq!(out.status.signal(), Some(9), "n={n}");
        let ledger = ws.ledger();
        let last = ledger.last().expect("a line");
        if !(last["event"] == "system.step_completed" && last["payload"]["step"] == 1) {
            continue;
        }
        ws.write("src/foo/bar.js", "tampered\n");
        let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains(
                "checksums do not match the receipts:\nsrc/foo/bar.js: checksum mismatch"
            ),
            "{}",
            stderr(&out)
        );
        return;
    }
}

#[test]
fn resume_of_an_unknown_run_says_so() {
    let ws = Ws::new(&config());
    let out = ws.lorch(&["resume", "--run", "20990101-000000-dead"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("lorch: no run 20990101-000000-dead: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn resuming_a_run_that_ended_changes_nothing_and_reports_how_it_ended() {
    let ws = Ws::new(&scenario());
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let ledger = ws.ledger();
    let out = ws.lorch(&["resume", "--run", &format!("run-{}", ws.run_id())], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("[lorch] run {} already ended\n", ws.run_id())
    );
    assert_eq!(ws.ledger(), ledger);

    let mut c = config();
    c["agents"]["builder"]["env"]["FAKE_PLAN"] = "fail,fail,fail".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed run resumed without fixing its cause fails again"
    );
}

#[test]
fn one_lorch_per_workspace_and_a_crash_leaves_no_stale_lock() {
    let mut c = scenario();
    c["agents"]["builder"]["env"]["FAKE_MODE"] = "hang".into();
    let ws = Ws::new(&c);
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("lorch"))
        .current_dir(ws.path())
        .args(["run", "--task", "T-0042"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("lorch starts");
    // Wait until it has sent the (hanging) implement command.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ws.path().join("events").exists() || !ws.ledger().iter().any(|m| m["kind"] == "command")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first lorch never sent its command"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "lorch: another lorch (pid {}) is running in this workspace\n",
            first.id()
        )
    );
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1));
    // SIGKILL: the lock goes with the process.
    first.kill().expect("kill");
    first.wait().expect("reaped");
    c["agents"]["builder"]["env"]["FAKE_MODE"] = "normal".into();
    std::fs::write(ws.path().join("lorch.json"), c.to_string()).expect("write");
    let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("[lorch] terminated orphaned builder"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_ledger_line_torn_by_the_crash_is_cut_and_the_run_resumes() {
    let ws = Ws::new(&scenario());
    let out = ws.lorch(
        &["run", "--task", "T-0042"],
        &[("LORCH_CRASH_AFTER_WRITES", "12")],
    );
    assert_eq!(out.status.signal(), Some(9));
    let lines = ws.ledger().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(ws.ledger_path())
        .expect("open");
    std::io::Write::write_all(&mut file, br#"{"kind":"event","message_id":"#).expect("torn");
    let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
    assert_exit(&out, 0);
    // Every line reads (ws.ledger() parses each), the torn one is gone.
    let ledger = ws.ledger();
    assert!(ledger.len() > lines);
    assert!(
        ledger
            .iter()
            .all(|m| m["message_id"] != Value::Null || m["kind"] == "heartbeat")
    );
    assert_eq!(ws.json("state/run.json")["status"], "completed");
}
