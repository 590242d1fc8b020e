//! Resuming a run (docs/lorch.md, "Failures, Ctrl-C and resuming"): its ledger read back
//! into the run's state, the orphaned agents of the crashed process stopped, and the
//! receipts a crash left unwritten restored and checked against the files, before the run
//! is driven on as a live one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    AGENTS, Artifact, Config, Orchestrator, RunError, RunState, Status, check_artifact, signals,
    store, supervisor,
};

impl Orchestrator {
    /// Resumes run `run_id` from its ledger; `user` decides the conflicts that come
    /// up.
    pub fn resume(
        config: Config,
        workspace: PathBuf,
        run_id: &str,
        user: &mut dyn super::User,
    ) -> Result<Status, RunError> {
        // Above all, never two orchestrators for the agents of one run.
        let _lock = store::lock_workspace(&workspace)?;
        crate::records::keep_out_of_git(&workspace)?;
        let ledger = store::ledger_path(&workspace, run_id);
        if !ledger.exists() {
            return Err(RunError::NoRun(
                run_id.to_owned(),
                format!(
                    "{} does not exist; {}",
                    ledger.strip_prefix(&workspace).unwrap_or(&ledger).display(),
                    store::known_runs(&workspace)
                ),
            ));
        }
        store::repair_ledger(&ledger)?;
        let messages = store::read_ledger(&ledger)?;
        let Some(state) = RunState::from_ledger(&messages) else {
            return Err(RunError::NoRun(
                run_id.to_owned(),
                format!("{} has no run_started", ledger.display()),
            ));
        };
        let mut o = Orchestrator::new(config, workspace, state);
        if o.state.status == Status::Completed {
            // A crash may have come between the last record and the files derived from it,
            // and before the agents were stopped: they are stopped here (an agent whose lorch
            // died ends by itself once it reads the end of its stdin, but not at once).
            o.terminate_orphans()?;
            o.restore_receipts()?;
            o.write_state()?;
            o.say(&format!("[lorch] run {run_id} already ended"));
            return Ok(o.state.status.clone());
        }
        signals::install();
        // Before anything is recorded: recording rewrites state/run.json, where their pids are.
        o.terminate_orphans()?;
        // A failed or aborted run goes on from where it stopped: the user fixed the cause.
        let mut payload = json!({"run_id": run_id});
        match &o.state.status {
            Status::Failed(why) => payload["reopened"] = format!("it had failed: {why}").into(),
            Status::Aborted(why) => payload["reopened"] = format!("it was aborted: {why}").into(),
            Status::Running | Status::Completed => {}
        }
        let resumed = o.system("system.run_resumed", None, payload);
        o.record(&resumed)?;
        // Whatever was in flight went with the old process: send it again, same IK.
        if let Some(cur) = o.state.current.as_mut() {
            cur.sent_live = false;
        }
        o.restore_receipts()?;
        o.drive(user)
    }

    /// Orphaned agents of the crashed process (pids in `state/run.json`) are stopped: their
    /// stdio went with the old lorch, so they cannot be adopted.
    pub(super) fn terminate_orphans(&mut self) -> Result<(), RunError> {
        let state = store::read_json(&store::state_path(&self.store.workspace))
            .ok()
            .flatten();
        let Some(state) = state.filter(|s| s["run_id"] == self.state.run_id.as_str()) else {
            return self.sweep();
        };
        for agent in AGENTS {
            let Some(pid) = state["agents"][agent.as_str()]["pid"].as_u64() else {
                continue;
            };
            let pid = pid as u32;
            if !supervisor::is_our_agent(pid, &self.state.run_id, agent) {
                continue;
            }
            supervisor::kill_group(pid as i32, libc::SIGTERM);
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until && supervisor::is_our_agent(pid, &self.state.run_id, agent)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            supervisor::kill_group(pid as i32, libc::SIGKILL);
            let m = self.system(
                "system.orphan_terminated",
                None,
                json!({"agent": agent.as_str(), "pid": pid}),
            );
            self.record(&m)?;
        }
        // What the orphans started (their models) can outlive them.
        self.sweep()
    }

    /// Rewrites receipts a crash left unwritten (the ledger has them) and checks every
    /// file's latest receipt against the file. A mismatch with a command in flight is that
    /// command's partial work: it is resent with the same IK. Without one, something
    /// outside lorch changed the workspace and a human decides.
    pub(super) fn restore_receipts(&mut self) -> Result<(), RunError> {
        let ws = self.store.workspace.clone();
        let mut latest: BTreeMap<String, Artifact> = BTreeMap::new();
        for step in &self.state.steps {
            let path = store::receipt_path(&ws, &self.state.task.id, step.step);
            if !path.exists() {
                let mut receipt = Value::Object(step.payload.clone());
                if let Some(map) = receipt.as_object_mut() {
                    map.remove("receipt_path");
                }
                self.store.write_json(&path, &receipt)?;
            }
            for a in Artifact::listed_in(&step.payload) {
                latest.insert(a.path.clone(), a);
            }
        }
        let max = self.config.policy.artifact_max_bytes;
        let problems: Vec<String> = latest
            .values()
            .filter_map(|a| check_artifact(&ws, a, max).err())
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        if self.state.current.is_none() {
            return Err(RunError::Checksums(problems.join("\n")));
        }
        for p in &problems {
            self.say(&format!(
                "[lorch] {p} (partial work of the command in flight; resent with the same IK)"
            ));
        }
        Ok(())
    }
}
