//! An operation's answer ([`crate::ops::Response`]) on the command line: the notices on
//! stderr, the report on stdout.

use super::CliError;
use crate::ops::Response;

/// Prints the notices on stderr and the report on stdout (its JSON form when `json`).
pub fn print(response: &Response, json: bool) -> Result<(), CliError> {
    super::print_notices(&response.notices);
    match (&response.json, json) {
        (Some(data), true) => {
            super::print_out(&(serde_json::to_string_pretty(data).unwrap_or_default() + "\n"))
        }
        _ => super::print_out(&response.text),
    }
}
