//! Integration tests of lorch (issue 15), a test binary of its own.

mod agent;
mod agent_builder;
mod agent_roles;
mod canonical;
mod cli;
mod config;
mod end_to_end;
mod harness;
mod protocol;
mod resume;
mod run;
mod supervise;
