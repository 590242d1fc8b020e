//! Supervision (§7): heartbeat loss, per-action timeouts, restarts with backoff and full
//! jitter up to 5 per agent per run, and a chatty agent that never blocks lorch.

use std::time::Instant;

use serde_json::{Value, json};

use crate::harness::{Ws, config, stdout};

fn with_builder(mode: &str, max_attempts: u32) -> Value {
    let mut c = config();
    c["agents"]["builder"]["env"]["FAKE_MODE"] = mode.into();
    c["policy"]["retry"]["max_attempts"] = max_attempts.into();
    c
}

fn reasons(ws: &Ws) -> Vec<String> {
    ws.system_events("system.agent_unhealthy")
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["payload"]["agent"].as_str().unwrap_or(""),
                e["payload"]["reason"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn three_missed_heartbeats_make_an_agent_unhealthy_and_restarts_stop_at_five() {
    let mut c = with_builder("silent", 20);
    c["agents"]["builder"]["heartbeat_interval_s"] = json!(0.2);
    let ws = Ws::new(&c);
    let started = Instant::now();
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let reasons = reasons(&ws);
    assert_eq!(reasons.len(), 6, "{reasons:?}");
    for r in &reasons {
        assert_eq!(r, "builder no heartbeat for 3 intervals of 200ms");
    }
    let restarts = ws.system_events("system.agent_restarted");
    assert_eq!(restarts.len(), 5);
    // Full jitter: each delay is at most min(max, initial × 2^n).
    for (n, r) in restarts.iter().enumerate() {
        assert_eq!(r["payload"]["restart"], n + 1);
        let ceiling = (10u64 << n).min(80);
        assert!(
            r["payload"]["delay_ms"].as_u64().expect("delay") <= ceiling,
            "{r}"
        );
    }
    assert!(
        stdout(&out).ends_with("[lorch] FAILED: builder needed more than 5 restarts\n"),
        "{}",
        stdout(&out)
    );
    // Six lives of 3 × 200 ms at least, far from any command timeout.
    assert!(started.elapsed().as_millis() >= 6 * 600);
    let state = ws.json("state/run.json");
    assert_eq!(state["agents"]["builder"]["restarts"], 5);
    // Every resend kept the IK.
    let iks: Vec<Value> = ws
        .ledger()
        .into_iter()
        .filter(|m| m["kind"] == "command")
        .map(|c| c["idempotency_key"].clone())
        .collect();
    assert_eq!(iks.len(), 6);
    assert!(iks.iter().all(|k| *k == iks[0]));
}

#[test]
fn an_action_past_its_timeout_is_killed_and_retried_until_its_attempts_run_out() {
    let mut c = with_builder("hang", 2);
    c["agents"]["builder"]["timeouts_s"] = json!({"implement": 0.5});
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        reasons(&ws),
        [
            "builder implement timed out after 500ms",
            "builder implement timed out after 500ms"
        ]
    );
    assert!(
        stdout(&out).ends_with("[lorch] FAILED: implement exhausted its 2 attempts\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_agent_that_exits_is_restarted_and_gets_the_same_command_again() {
    let ws = Ws::new(&with_builder("die_once", 3));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(reasons(&ws), ["builder exited"]);
    assert_eq!(ws.system_events("system.agent_restarted").len(), 1);
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
    assert_eq!(implements[1]["retry"]["attempt"], 1);
}

#[test]
fn an_agent_that_always_exits_stops_the_run_after_five_restarts() {
    let ws = Ws::new(&with_builder("die", 50));
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(ws.system_events("system.agent_restarted").len(), 5);
    assert!(
        stdout(&out).ends_with("[lorch] FAILED: builder needed more than 5 restarts\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_chatty_agent_is_drained_and_never_blocks_the_run() {
    let ws = Ws::new(&with_builder("chatty", 3));
    let started = Instant::now();
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(started.elapsed().as_secs() < 60);
    let run = ws.run_id();
    let log = std::fs::read_to_string(ws.path().join(format!("logs/builder/run-{run}.ndjson")))
        .expect("log");
    // 20 000 log lines (4 MiB) plus heartbeats, all kept, none of them in the ledger.
    assert!(log.lines().filter(|l| l.contains("\"chatter ")).count() == 20_000);
    let stderr_log = std::fs::metadata(ws.path().join(format!("logs/builder/run-{run}.stderr")))
        .expect("stderr log");
    assert_eq!(stderr_log.len(), 1 << 20);
    assert!(
        !std::fs::read_to_string(ws.ledger_path())
            .expect("ledger")
            .contains("chatter")
    );
}

#[test]
fn an_agent_flooding_events_still_times_out() {
    let mut c = with_builder("flood", 1);
    // Long enough that even a loaded machine starts the agent and sees it flood (the
    // count below), short enough that the flood would outlast it many times over.
    c["agents"]["builder"]["timeouts_s"] = json!({"implement": 3});
    let ws = Ws::new(&c);
    let started = Instant::now();
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(started.elapsed().as_secs() < 30);
    assert_eq!(reasons(&ws), ["builder implement timed out after 3s"]);
    assert!(
        ws.ledger()
            .iter()
            .filter(|m| m["event"] == "builder.progress")
            .count()
            > 10
    );
}

#[test]
fn a_burst_of_thousands_of_events_never_makes_a_live_agent_unhealthy() {
    let mut c = with_builder("burst", 1);
    // Three missed heartbeats of every agent fit many times in the time lorch takes to
    // record the burst (each event is synced to the ledger): a heartbeat waiting behind the
    // events would be seen too late, and the idle reviewer and spec maintainer (and the
    // builder) declared unhealthy.
    for agent in ["builder", "reviewer", "spec_maintainer"] {
        c["agents"][agent]["heartbeat_interval_s"] = json!(0.5);
    }
    c["agents"]["builder"]["env"]["FAKE_BURST"] = json!("2000");
    let ws = Ws::new(&c);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(reasons(&ws), Vec::<String>::new());
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        ws.ledger()
            .iter()
            .filter(|m| m["event"] == "builder.progress")
            .count(),
        2000
    );
}
