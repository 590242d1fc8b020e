//! Property tests of the parser over random and mutated input: it never panics, its output
//! is internally consistent, and well-formed blocks round-trip exactly. A short run is part
//! of the suite; `PROPTEST_CASES=200000 cargo test --release --test it nesl_properties` is
//! the long run.

use git_loaf::nesl::{self, js::utf16_len};
use proptest::prelude::*;

/// Lines that exercise every branch of the grammar, valid and broken.
fn nesl_line() -> impl Strategy<Value = String> {
    let id = prop_oneof![
        Just("abc".to_owned()),
        Just("x9z".to_owned()),
        "[A-Za-z0-9]{0,10}",
        "[a-z\\-é😀]{1,4}",
    ];
    let key = prop_oneof![
        Just("path".to_owned()),
        Just("__proto__".to_owned()),
        Just("constructor".to_owned()),
        "[a-zA-Z_][a-zA-Z0-9_]{0,8}",
        "\\PC{0,6}",
        "[ \t]{1,2}[a-z]{1,4}",
    ];
    let value = prop_oneof![
        "\"[^\"\\\\\n\r]{0,12}\"",
        Just(r#""esc \" \\ \n \u00e9 \ud83d\ude00""#.to_owned()),
        Just(r#""lone \ud800 \x""#.to_owned()),
        Just("\"unclosed".to_owned()),
        Just("\"a\" trailing".to_owned()),
        Just("unquoted".to_owned()),
        Just(String::new()),
        (id.clone()).prop_map(|i| format!("<<'EOT_{i}'")),
    ];
    let op = prop_oneof![
        Just(" = "),
        Just("="),
        Just(" := "),
        Just(" => "),
        Just(" == ")
    ];
    prop_oneof![
        id.clone()
            .prop_map(|i| format!("#!nesl [@three-char-SHA-256: {i}]")),
        id.clone().prop_map(|i| format!("#!nesl [@sha: {i}]")),
        Just("#!nesl broken".to_owned()),
        id.clone().prop_map(|i| format!("#!end_{i}")),
        id.clone().prop_map(|i| format!("#!end_{i}'")),
        id.clone().prop_map(|i| format!("EOT_{i}")),
        id.prop_map(|i| format!("text EOT_{i}")),
        (key, op, value).prop_map(|(k, o, v)| format!("{k}{o}{v}")),
        Just(String::new()),
        Just("  \u{FEFF}\u{3000}".to_owned()),
        "\\PC{0,20}",
        any::<String>(),
    ]
}

/// 512 cases per property in the suite; `PROPTEST_CASES` sets more for a long run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

fn reply() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(nesl_line(), 0..40),
        prop_oneof![Just("\n"), Just("\r\n")],
    )
        .prop_map(|(lines, eol)| lines.join(eol))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn never_panics_and_stays_consistent(input in prop_oneof![reply(), any::<String>()]) {
        let result = nesl::parse(&input);
        let lines = input.split('\n').count();
        let mut last_start = 0;
        for block in &result.blocks {
            prop_assert!(block.start_line > last_start, "blocks in order");
            last_start = block.start_line;
            if let Some(end) = block.end_line {
                prop_assert!(end > block.start_line && end <= lines);
            }
            for key in block.properties.keys() {
                prop_assert!(nesl::validate_key(key).is_ok(), "stored key {key:?} is valid");
            }
        }
        for error in &result.errors {
            prop_assert!(error.line >= 1 && error.line <= lines + 1, "{error:?}");
            prop_assert!(error.column >= 1);
            prop_assert!(error.column - 1 + error.length <= utf16_len(&error.content) + 1, "{error:?}");
            prop_assert!(error.context.contains(&*error.content));
            prop_assert!(error.context.split('\n').count() <= 5);
        }
        // The JSON shape always serializes.
        prop_assert!(serde_json::to_string(&result).is_ok());
    }

    #[test]
    fn well_formed_blocks_round_trip(
        blocks in prop::collection::vec(
            ("[a-z0-9]{3}", prop::collection::btree_map("[a-z_][a-z0-9_]{0,6}", ("\\PC{0,20}", any::<bool>()), 0..5)),
            0..6,
        )
    ) {
        let mut text = String::from("Some prose first.\n\n");
        for (id, props) in &blocks {
            text.push_str(&format!("```sh nesl\n#!nesl [@three-char-SHA-256: {id}]\n"));
            for (key, (value, heredoc)) in props {
                if *heredoc {
                    text.push_str(&format!("{key} = <<'EOT_{id}'\n{value}\nEOT_{id}\n"));
                } else {
                    text.push_str(&format!("{key} = {}\n", serde_json::to_string(value).unwrap_or_default()));
                }
            }
            text.push_str(&format!("#!end_{id}\n```\nmore prose\n"));
        }
        let result = nesl::parse(&text);
        // A heredoc value containing its own delimiter or a line break would change meaning,
        // and the reference refuses `:=` anywhere on an assignment line, even inside quotes.
        let plain = blocks.iter().all(|(id, props)| props.values().all(|(v, h)| {
            if *h {
                !v.contains(&format!("EOT_{id}")) && !v.contains(['\n', '\r'])
            } else {
                !v.contains(":=")
            }
        }));
        prop_assume!(plain);
        prop_assert!(result.errors.is_empty(), "{:?}", result.errors);
        prop_assert_eq!(result.blocks.len(), blocks.len());
        for (block, (id, props)) in result.blocks.iter().zip(&blocks) {
            prop_assert_eq!(&block.id, id);
            let got: Vec<(&str, &str)> = block.properties.iter().collect();
            let want: Vec<(&str, &str)> = props.iter().map(|(k, (v, _))| (k.as_str(), v.as_str())).collect();
            prop_assert_eq!(got, want);
        }
    }
}

#[test]
fn a_million_keys_in_one_block_stay_linear() {
    let mut text = String::from("#!nesl [@three-char-SHA-256: big]\n");
    for i in 0..1_000_000 {
        text.push_str(&format!("k{i} = \"v\"\n"));
    }
    text.push_str("k7 = \"again\"\n#!end_big\n");
    let result = nesl::parse(&text);
    assert_eq!(result.blocks[0].properties.len(), 1_000_000);
    assert_eq!(result.blocks[0].properties.get("k7"), Some("again"));
    assert_eq!(result.errors.len(), 1, "one duplicate");
}

#[test]
fn deeply_broken_input_is_bounded() {
    // Every line an error: the errors grow with the input, never faster.
    let text = "#!nesl [@three-char-SHA-256: abc]\n".to_owned()
        + &"// not an assignment\n".repeat(100_000);
    let result = nesl::parse(&text);
    assert_eq!(result.errors.len(), 100_001);
    let context_bytes: usize = result.errors.iter().map(|e| e.context.len()).sum();
    assert!(context_bytes <= 5 * text.len() + 100, "{context_bytes}");
}
