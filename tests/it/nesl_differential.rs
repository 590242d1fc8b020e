//! Regression cases found by differential fuzzing against the reference parser
//! (`scripts/fuzz-differential.py`): each `NNN-name.nesl` in `test-data/nesl/differential/`
//! is an input, exact bytes, and `NNN-name.json` what the reference printed for it,
//! `JSON.stringify(parseNesl(input), null, 2)`.

use git_loaf::nesl;

use crate::support::test_data;

#[test]
fn differential_cases_match_the_reference_byte_for_byte() {
    let dir = test_data("nesl/differential");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "nesl"))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 10, "the differential corpus is there");
    let mut failures = Vec::new();
    for input in &inputs {
        let bytes = std::fs::read(input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let text = String::from_utf8(bytes).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let expected = std::fs::read_to_string(input.with_extension("json"))
            .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let mut actual = Vec::new();
        nesl::write_json(&nesl::parse(&text), &mut actual).expect("writes to a Vec");
        if String::from_utf8_lossy(&actual).trim_end() != expected.trim_end() {
            failures.push(input.display().to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "differ from the reference: {failures:#?}"
    );
}
