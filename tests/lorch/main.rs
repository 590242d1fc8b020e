//! Integration tests of lorch (issue 15), a test binary of its own.

mod agent;
mod agent_builder;
mod agent_roles;
mod canonical;
mod cli;
mod config;
#[path = "../common/deterministic.rs"]
#[allow(dead_code)] // `git_cmd` serves the `it` binary only
mod deterministic;
mod end_to_end;
mod harness;
mod protocol;
mod resume;
mod run;
mod supervise;
