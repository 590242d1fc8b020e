//! Integration tests of lorch (issue 15): the `lorch` binary and library, and the `git-loaf`
//! binary on what lorch made (see [`binaries`]).

mod agent;
mod agent_builder;
mod agent_roles;
mod binaries;
mod budget;
mod canonical;
mod cli;
mod config;
mod configure;
mod conflicts;
mod context;
mod conversation;
#[path = "../common/deterministic.rs"]
mod deterministic;
mod end_to_end;
mod example;
mod failures;
mod finished;
mod harness;
mod intake;
mod layout;
mod pinning;
mod protocol;
mod recipes;
mod resume;
mod run;
mod sandbox;
mod signals;
mod supervise;
