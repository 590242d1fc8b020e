//! Canonical JSON, the idempotency key and the snapshot id: pure functions.
//!
//! The spec's idempotency key hashes `canonical_json(inputs)` but does not spell the
//! canonical form out beyond its name, so we take the standard one, RFC 8785 (JSON
//! Canonicalization Scheme):
//!
//! - no whitespace anywhere;
//! - object members sorted by key, comparing keys as UTF-16 code units;
//! - strings escaped as JSON requires and no more: `\"`, `\\`, `\b \f \n \r \t`, other
//!   control characters as `\u00xx` (lowercase hex), everything else as raw UTF-8;
//! - numbers as ECMAScript prints them: integers without a fraction or exponent (`2.0` is
//!   `2`), `-0` as `0`, and the shortest round-trip digits otherwise, in exponent form
//!   (`1e+21`, `1e-7`) only outside `1e-7 ≤ |x| < 1e21`.
//!
//! Two values equal as JSON data therefore hash the same whatever order or spacing they
//! arrived in (serde_json keeps insertion order here, so the sort is explicit).

use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

use super::protocol::{Action, ExpectedOutput};

/// The canonical text of `value` (RFC 8785).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&ecmascript_number(f));
    }
}

/// ECMAScript's `Number.prototype.toString` for a finite double (JSON has no others).
fn ecmascript_number(f: f64) -> String {
    if f == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d[.ddd]e<exp>`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    // ECMAScript's n: the decimal point sits after n digits.
    let n = exp + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let sign = if n - 1 < 0 { '-' } else { '+' };
        let e = (n - 1).abs();
        if k == 1 {
            format!("{digits}e{sign}{e}")
        } else {
            format!("{}.{}e{sign}{e}", &digits[..1], &digits[1..])
        }
    };
    if f < 0.0 { format!("-{body}") } else { body }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The idempotency key, exactly as the spec defines it:
///
/// ```text
/// SHA256(action + '\n' + task_id + '\n' + snapshot_id + '\n' +
///        canonical_json(inputs) + '\n' + canonical_json(expected_outputs))
/// ```
///
/// as 64 lowercase hex digits. `expected_outputs` is hashed as the list the command carries
/// (an absent `required` stays absent), so the key is a function of the command as sent.
pub fn idempotency_key(
    action: Action,
    task_id: &str,
    snapshot_id: &str,
    inputs: &Value,
    expected_outputs: &[ExpectedOutput],
) -> String {
    // Serializing these plain structs cannot fail; an empty list is the fallback all the same.
    let outputs = serde_json::to_value(expected_outputs).unwrap_or(Value::Array(Vec::new()));
    let text = format!(
        "{}\n{task_id}\n{snapshot_id}\n{}\n{}",
        action.as_str(),
        canonical_json(inputs),
        canonical_json(&outputs),
    );
    sha256_hex(text.as_bytes())
}

/// The snapshot id: `"snap-" + first8(sha256(manifest_bytes))`, the first eight hex
/// digits of the manifest file's SHA-256.
pub fn snapshot_id(manifest_bytes: &[u8]) -> String {
    let hex = sha256_hex(manifest_bytes);
    format!("snap-{}", &hex[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_ecmascript_does() {
        // Values from RFC 8785 appendix B and ECMAScript's algorithm.
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (2.5, "2.5"),
            (-1.5, "-1.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (123.456, "123.456"),
            (4.5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (333333333.3333333, "333333333.3333333"),
            (1.2345e25, "1.2345e+25"),
        ];
        for (f, want) in cases {
            assert_eq!(ecmascript_number(f), want, "{f:e}");
        }
    }
}
