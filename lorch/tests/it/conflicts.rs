//! Conflicts of a run put to the user (§7.4, §20, §4.1.4): a spec maintainer refused an edit
//! of a requirement (a conflict between the work and the spec), a task that does not
//! converge; the user's decision is recorded as `system.user_decision` and followed; nobody
//! answering leaves the run as it was without a human.

use serde_json::Value;

use crate::harness::{Ws, assert_exit, config, stderr, stdout};

fn with_plan(role: &str, plan: &str) -> Value {
    let mut c = config();
    c["agents"][role]["env"]["FAKE_PLAN"] = plan.into();
    c
}

fn decisions(ws: &Ws) -> Vec<(String, String)> {
    ws.system_events("system.user_decision")
        .iter()
        .map(|d| {
            (
                d["status"].as_str().unwrap_or("").to_owned(),
                d["payload"]["conflict"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn attempts(ws: &Ws, action: &str) -> Vec<u64> {
    ws.ledger()
        .iter()
        .filter(|m| m["action"] == action)
        .filter_map(|m| m["retry"]["attempt"].as_u64())
        .collect()
}

#[test]
fn a_spec_conflict_is_put_to_the_user_who_retries_on_fresh_attempts_or_stops() {
    // Refused three times: without a human, three attempts and the run fails.
    let plan = "forbidden,forbidden,forbidden,updated";
    let ws = Ws::new(&with_plan("spec_maintainer", plan));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(decisions(&ws).is_empty());

    // The user says retry each time: each is a new round, and the fourth answer lands.
    let ws = Ws::new(&with_plan("spec_maintainer", plan));
    let out = ws.lorch_typing(&["run", "--task", "T-0042"], "retry\nretry\nretry\n");
    assert_exit(&out, 0);
    let console = stdout(&out);
    assert!(
        console.contains(
            "lorch: CONFLICT: the spec maintainer would change what it may not (refused: the edit changes Requirements of specs/MASTER-SPEC.md); lorch never changes the spec for it\n  retry: ask the spec maintainer again (change the spec yourself first if it should change)\n  stop: stop the run (`lorch resume --run ID` continues it)\nlorch> What now? (retry/stop) retry\n[lorch] user_decision retry (spec conflict)\n"
        ),
        "{console}"
    );
    assert_eq!(
        decisions(&ws),
        vec![("retry".to_owned(), "spec".to_owned()); 3]
    );
    assert_eq!(attempts(&ws, "update_spec"), [0, 0, 0, 0]);
    assert!(console.ends_with("[lorch] DONE\n"), "{console}");

    // Stop: recorded, and the run fails saying why.
    let ws = Ws::new(&with_plan("spec_maintainer", plan));
    let out = ws.lorch_typing(&["run", "--task", "T-0042"], "later\nstop\n");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let console = stdout(&out);
    assert!(console.contains("  answer retry or stop\n"), "{console}");
    assert!(
        console.contains("[lorch] FAILED: you stopped the run on a conflict between the work and the spec: refused: the edit changes Requirements of specs/MASTER-SPEC.md\n"),
        "{console}"
    );
    assert_eq!(decisions(&ws), [("stopped".to_owned(), "spec".to_owned())]);
    assert_eq!(ws.json("state/run.json")["status"], "failed");
}

#[test]
fn a_task_that_does_not_converge_is_put_to_the_user_who_gives_it_more_steps() {
    // Sixteen reviews: fifteen ask for changes (30 steps), the sixteenth approves.
    let mut plan = vec!["changes_requested"; 15];
    plan.push("approved");
    let plan = plan.join(",");
    let ws = Ws::new(&with_plan("reviewer", &plan));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out)
            .ends_with("[lorch] FAILED: no agreement after 30 steps (persistent conflict)\n"),
        "{}",
        stdout(&out)
    );

    let ws = Ws::new(&with_plan("reviewer", &plan));
    let out = ws.lorch_typing(&["run", "--task", "T-0042"], "continue\n");
    assert_exit(&out, 0);
    let console = stdout(&out);
    assert!(
        console.contains("lorch: CONFLICT: task T-0042: no agreement after 30 steps (persistent conflict): the agents keep disagreeing\n  continue: give it another 30 steps\n"),
        "{console}"
    );
    assert_eq!(
        decisions(&ws),
        [("continue".to_owned(), "persistent".to_owned())]
    );
    let state = ws.json("state/run.json");
    assert_eq!(state["status"], "completed");
    assert_eq!(state["steps"].as_array().map(Vec::len), Some(33));
}
