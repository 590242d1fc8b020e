//! `lorch validate --run ID` (MASTER-SPEC §11.1): a finished run is checked from its records:
//! completed, a terminal event for every command, the last review approved, the spec
//! maintainer's confirmation, every receipt present and matching its files.

use serde_json::Value;

use crate::harness::{Ws, config, stderr, stdout};

fn with_plan(role: &str, plan: &str) -> Value {
    let mut c = config();
    c["agents"][role]["env"]["FAKE_PLAN"] = plan.into();
    c
}

#[test]
fn a_passing_run_passes_until_a_file_it_made_changes() {
    let ws = Ws::new(&with_plan("reviewer", "changes_requested,approved"));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run = ws.run_id();
    let out = ws.lorch(&["validate", "--run", &run], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "ok   run completed: ledger and state/index.json\n\
         ok   a terminal event for every command: 5 correlations\n\
         ok   final review approved: step 4: approved\n\
         ok   spec maintainer confirmed: step 5: updated\n\
         ok   artifacts match their receipts: 5 receipts, 4 files\n\
         ok   spec edits within the allowed sections: the spec is as the run found it\n"
    );
    ws.write("src/foo/bar.js", "changed since\n");
    let out = ws.lorch(&["validate", "--run", &format!("run-{run}")], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "FAIL artifacts match their receipts: src/foo/bar.js: checksum mismatch (receipt sha256:"
        ),
        "{}",
        stdout(&out)
    );
    std::fs::remove_file(ws.path().join("receipts/T-0042/step-2.json")).expect("rm");
    let out = ws.lorch(&["validate", "--run", &run], &[]);
    assert!(
        stdout(&out).contains("receipts/T-0042/step-2.json is missing"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_failed_run_does_not_pass_and_an_unknown_one_is_a_usage_error() {
    let ws = Ws::new(&with_plan("builder", "fail,fail,fail"));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let out = ws.lorch(&["validate", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "FAIL run completed: the ledger says failed\n\
         ok   a terminal event for every command: 1 correlations\n\
         FAIL final review approved: no review step was accepted\n\
         FAIL spec maintainer confirmed: no update_spec step was accepted\n\
         ok   artifacts match their receipts: 0 receipts, 0 files\n\
         FAIL spec edits within the allowed sections: the ledger does not say which spec the run found and left (specs_hash): a run that did not complete, or one of an older lorch\n"
    );
    let out = ws.lorch(&["validate", "--run", "nonexist"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(
            "lorch: no run nonexist: events/run-nonexist.ndjson does not exist; the runs here are "
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn spec_edits_outside_the_allowed_sections_fail_the_check_whoever_made_them() {
    let mut c = config();
    c["agents"]["spec_maintainer"]["env"]["FAKE_MODE"] = "status".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = ws.lorch(&["validate", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("ok   spec edits within the allowed sections: changed: Status\n"),
        "{}",
        stdout(&out)
    );

    // A builder that rewrote the spec's requirements (the text before ## Status): the
    // run completed, but it did not pass.
    c["agents"]["builder"]["env"]["FAKE_MODE"] = "rewrite_spec".into();
    c["agents"]["spec_maintainer"]["env"]["FAKE_MODE"] = "normal".into();
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = ws.lorch(&["validate", "--run", &ws.run_id()], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "FAIL spec edits within the allowed sections: changed outside the allowed sections: (text before the first ## heading)"
        ),
        "{}",
        stdout(&out)
    );
    // lorch's copy of the spec is what it compares: without it, it says so.
    for entry in std::fs::read_dir(ws.path().join("snapshots")).expect("snapshots") {
        let path = entry.expect("entry").path();
        if path.to_string_lossy().contains("/spec-") {
            std::fs::remove_file(path).expect("rm");
        }
    }
    let out = ws.lorch(&["validate", "--run", &ws.run_id()], &[]);
    assert!(
        stdout(&out).contains("(lorch's copy of the spec; it cannot be compared without it)"),
        "{}",
        stdout(&out)
    );
}
