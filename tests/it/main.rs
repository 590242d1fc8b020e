//! The one integration test binary: reference conformance, the command line, and
//! property tests of the parser.

mod cli_apply;
mod cli_apply_no_commit;
mod cli_parse;
mod config;
mod crash;
mod demo;
mod execute_seeds;
mod filters;
mod fs_actions;
mod githooks;
mod guard;
mod hints;
mod history_cli;
mod instructions;
mod man;
mod nesl_conformance;
mod nesl_differential;
mod nesl_properties;
mod real_world;
mod report_quality;
mod sandbox;
mod scratch;
mod slupe;
mod squash;
mod states;
mod step;
mod support;
mod transaction;
mod undo_to;
mod validation;
mod visible;
