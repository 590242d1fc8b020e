//! Canonical JSON, the idempotency key (§5.4) and the snapshot id (§5.3).

use lorch::canonical::{canonical_json, idempotency_key, sha256_hex, snapshot_id};
use lorch::protocol::{Action, ExpectedOutput};
use serde_json::{Value, json};

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("test JSON")
}

#[test]
fn canonical_json_sorts_keys_and_drops_whitespace() {
    let value = parse(r#"{ "b": [1, {"z": null, "a": true}], "a": "x", "": 0 }"#);
    assert_eq!(
        canonical_json(&value),
        r#"{"":0,"a":"x","b":[1,{"a":true,"z":null}]}"#
    );
}

#[test]
fn canonical_json_follows_rfc_8785() {
    // RFC 8785 §3.2.3: keys compare as UTF-16 code units, so U+1F600 (a surrogate pair,
    // 0xD83D…) sorts before U+FB33 although it is the larger code point.
    let keys = json!({"\u{fb33}": 1, "\u{1f600}": 2, "\r": 3, "1": 4, "\u{80}": 5});
    assert_eq!(
        canonical_json(&keys),
        "{\"\\r\":3,\"1\":4,\"\u{80}\":5,\"\u{1f600}\":2,\"\u{fb33}\":1}"
    );
    // Escapes: the short ones, the rest of the control characters as \u00xx, nothing else.
    let text = json!("\"\\/\u{8}\u{c}\n\r\t\u{1}\u{1f}é€");
    assert_eq!(canonical_json(&text), r#""\"\\/\b\f\n\r\t\u0001\u001fé€""#);
    // Numbers as ECMAScript prints them.
    let numbers =
        parse("[2.0, -0.0, 1e21, 1E-7, 0.000001, 4.50, 18446744073709551615, -9007199254740993]");
    assert_eq!(
        canonical_json(&numbers),
        "[2,0,1e+21,1e-7,0.000001,4.5,18446744073709551615,-9007199254740993]"
    );
}

fn outputs() -> Vec<ExpectedOutput> {
    vec![ExpectedOutput {
        path: "src/foo/bar.js".into(),
        description: None,
        required: None,
    }]
}

#[test]
fn the_idempotency_key_is_the_sha256_of_the_spec_formula() {
    let inputs = parse(r#"{"goal": "x", "files": ["a", "b"]}"#);
    let key = idempotency_key(
        Action::ImplementChanges,
        "T-0042",
        "snap-0007",
        &inputs,
        &outputs(),
    );
    let formula = "implement_changes\nT-0042\nsnap-0007\n{\"files\":[\"a\",\"b\"],\"goal\":\"x\"}\n[{\"path\":\"src/foo/bar.js\"}]";
    assert_eq!(key, sha256_hex(formula.as_bytes()));
    assert_eq!(key.len(), 64);
    assert!(
        key.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
}

#[test]
fn the_idempotency_key_changes_with_the_work_and_only_with_it() {
    let inputs = parse(r#"{"goal": "x", "files": ["a", "b"]}"#);
    let same = parse(r#"{"files":["a","b"],"goal":"x"}"#);
    let key = |action, task, snap, inputs: &Value, outputs: &[ExpectedOutput]| {
        idempotency_key(action, task, snap, inputs, outputs)
    };
    let base = key(Action::Implement, "T-1", "snap-1", &inputs, &outputs());
    assert_eq!(
        base,
        key(Action::Implement, "T-1", "snap-1", &same, &outputs())
    );
    let others = [
        key(
            Action::ImplementChanges,
            "T-1",
            "snap-1",
            &inputs,
            &outputs(),
        ),
        key(Action::Implement, "T-2", "snap-1", &inputs, &outputs()),
        key(Action::Implement, "T-1", "snap-2", &inputs, &outputs()),
        key(
            Action::Implement,
            "T-1",
            "snap-1",
            &parse(r#"{"goal":"y","files":["a","b"]}"#),
            &outputs(),
        ),
        key(
            Action::Implement,
            "T-1",
            "snap-1",
            &parse(r#"{"goal":"x","files":["b","a"]}"#),
            &outputs(),
        ),
        key(Action::Implement, "T-1", "snap-1", &inputs, &[]),
    ];
    for other in others {
        assert_ne!(base, other);
    }
}

#[test]
fn the_snapshot_id_is_snap_and_eight_hex_digits_of_the_manifest_hash() {
    // SHA-256 of nothing is e3b0c442…; of "abc", ba7816bf… (FIPS 180-2 test vectors).
    assert_eq!(snapshot_id(b""), "snap-e3b0c442");
    assert_eq!(snapshot_id(b"abc"), "snap-ba7816bf");
}
