//! Every case of the reference parser's own test data, run against our parser.

use git_loaf::nesl::{self, Assignment};
use serde_json::{Value, json};

use crate::support::{markdown_cases, pretty, read, test_data};

#[test]
fn all_38_integration_cases_match_the_reference() {
    let text = read(&test_data("nesl/reference/integration.md"));
    let cases = markdown_cases(&text);
    assert_eq!(cases.len(), 38, "integration.md has 38 cases");
    let mut failures = Vec::new();
    for (name, fences) in &cases {
        let [input, expected] = fences.as_slice() else {
            panic!(
                "case {name}: expected an input and a JSON fence, found {}",
                fences.len()
            );
        };
        let expected: Value =
            serde_json::from_str(expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        let actual = serde_json::to_value(nesl::parse(input)).expect("results serialize");
        if pretty(&actual) != pretty(&expected) {
            failures.push(format!(
                "--- {name}\nexpected:\n{}\nactual:\n{}",
                pretty(&expected),
                pretty(&actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 38 cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `(name, inputs, expected)` of a reference `*.test.json` file.
fn unit_cases(file: &str) -> Vec<(String, Vec<String>, Value)> {
    let data: Value = serde_json::from_str(&read(&test_data(&format!("nesl/reference/{file}"))))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut cases = Vec::new();
    for group in data["groups"].as_array().expect("groups") {
        for test in group["tests"].as_array().expect("tests") {
            let inputs = test["input"]
                .as_array()
                .expect("input")
                .iter()
                .map(|v| v.as_str().expect("string input").to_owned())
                .collect();
            cases.push((
                test["name"].as_str().unwrap_or("?").to_owned(),
                inputs,
                test["expected"].clone(),
            ));
        }
    }
    assert!(!cases.is_empty(), "{file} has cases");
    cases
}

/// Runs every case of `file` through `f` and compares with the expected value.
fn check(file: &str, f: impl Fn(&[String]) -> Value) {
    let mut failures = Vec::new();
    for (name, inputs, expected) in unit_cases(file) {
        let actual = f(&inputs);
        if actual != expected {
            failures.push(format!(
                "{name} {inputs:?}: expected {expected}, got {actual}"
            ));
        }
    }
    assert!(failures.is_empty(), "{file}:\n{}", failures.join("\n"));
}

#[test]
fn classify_line() {
    check("classifyLine.test.json", |i| {
        json!(nesl::classify_line(&i[0]).as_str())
    });
}

#[test]
fn find_invalid_char_position() {
    check(
        "findInvalidCharPosition.test.json",
        |i| match nesl::find_invalid_char(&i[0]) {
            None => Value::Null,
            Some((position, c)) => json!({"position": position, "char": c.to_string()}),
        },
    );
}

#[test]
fn parse_assignment() {
    check(
        "parseAssignment.test.json",
        |i| match nesl::parse_assignment(&i[0]) {
            Ok(Assignment::KeyValue { key, value }) => {
                json!({"success": true, "type": "key-value", "key": key, "value": value.text})
            }
            Ok(Assignment::Heredoc { key, delimiter }) => {
                json!({"success": true, "type": "heredoc", "key": key, "delimiter": delimiter})
            }
            Err(e) => json!({"success": false, "error": {
            "code": e.code.as_str(), "position": e.position, "length": e.length}}),
        },
    );
}

#[test]
fn parse_end_marker() {
    check(
        "parseEndMarker.test.json",
        |i| match nesl::parse_end_marker(&i[0]) {
            Some(id) => json!({"isEnd": true, "blockId": id}),
            None => json!({"isEnd": false}),
        },
    );
}

#[test]
fn parse_header() {
    check("parseHeader.test.json", |i| {
        match nesl::parse_header(&i[0]) {
            Some(id) => json!({"isValid": true, "blockId": id}),
            None => json!({"isValid": false}),
        }
    });
}

/// `{valid}` or `{valid, error}` as the reference's validators return.
fn validity<E: std::fmt::Display>(result: Result<(), E>) -> Value {
    match result {
        Ok(()) => json!({"valid": true}),
        Err(e) => json!({"valid": false, "error": e.to_string()}),
    }
}

#[test]
fn validate_block_id() {
    check("validateBlockId.test.json", |i| {
        validity(nesl::validate_block_id(&i[0]))
    });
}

#[test]
fn validate_heredoc_delimiter() {
    check("validateHeredocDelimiter.test.json", |i| {
        validity(nesl::validate_heredoc_delimiter(&i[0], &i[1]))
    });
}

#[test]
fn validate_key() {
    check("validateKey.test.json", |i| {
        validity(nesl::validate_key(&i[0]))
    });
}

#[test]
fn context_window() {
    let cases = markdown_cases(&read(&test_data("nesl/reference/getContextWindow.test.md")));
    assert_eq!(cases.len(), 12);
    for (name, fences) in cases {
        let [content, line, expected] = fences.as_slice() else {
            panic!("{name}: expected three fences");
        };
        let line: usize = line
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&nesl::context_window(content, line), expected, "{name}");
    }
}
