//! The one integration test binary: reference conformance, the command line, and
//! property tests of the parser.

mod bad_paths;
mod cli_apply;
mod cli_apply_no_commit;
mod cli_output;
mod cli_parse;
mod config;
mod crash;
mod demo;
#[path = "../common/deterministic.rs"]
mod deterministic;
mod durable;
mod escape;
mod execute_seeds;
mod filters;
mod fs_actions;
mod gc;
mod githooks;
mod guard;
mod help;
mod hints;
mod history_cli;
mod init;
mod instructions;
mod man;
mod nesl_conformance;
mod nesl_differential;
mod nesl_properties;
mod readme;
mod real_world;
mod report_quality;
mod sandbox;
mod scratch;
mod slupe;
mod squash;
mod stage_moves;
mod states;
mod step;
mod step_crash;
mod storage;
mod support;
mod transaction;
mod undo_to;
mod validation;
mod visible;
mod watch;
