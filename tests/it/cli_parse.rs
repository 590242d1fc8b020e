//! `git loaf parse` end to end: output, exit codes, and unreadable input.

use insta::assert_snapshot;

use crate::support::{fixture, git_loaf, read};

const REPLY: &str = "001_parse_reply_with_prose_and_errors/reply.md";

#[test]
fn json_output_is_byte_identical_to_the_reference() {
    // expected-parse.json was written by the reference parser:
    // JSON.stringify(parseNesl(reply), null, 2) + "\n".
    let expected = read(&fixture(
        "001_parse_reply_with_prose_and_errors/expected-parse.json",
    ));
    let out = git_loaf()
        .args(["parse", "--json"])
        .arg(fixture(REPLY))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "the reply has syntax errors");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn listing_shows_blocks_keys_and_errors() {
    let out = git_loaf()
        .arg("parse")
        .arg(fixture(REPLY))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r#"
    block k7m lines 4-13: action, path, content
    block x9z lines 19-28: action, path, old_text, new_text
    block q1w lines 33-38: action, lang, cwd
    36:6 INVALID_ASSIGNMENT_OPERATOR Invalid assignment operator ':=' - only '=' is allowed
        | code := "cargo build"
    37:15 TRAILING_CONTENT Unexpected content after quoted value
        | cwd = "/repo" // inside the repo
    3 blocks, 2 errors
    "#);
}

#[test]
fn clean_reply_from_stdin_exits_0() {
    let reply = "text\n#!nesl [@three-char-SHA-256: ab1]\npath = \"/tmp/x\"\n#!end_ab1\n";
    let out = git_loaf()
        .args(["parse", "-"])
        .write_stdin(reply)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    block ab1 lines 2-4: path
    1 block, 0 errors
    ");
}

#[test]
fn unclosed_block_listing_says_so() {
    let out = git_loaf()
        .arg("parse")
        .write_stdin("#!nesl [@three-char-SHA-256: abc]\nk = \"v\"")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    block abc lines 1-? (not closed): k
    3:1 UNCLOSED_BLOCK Block 'abc' not closed before EOF
        |
    1 block, 1 error
    ");
}

#[test]
fn invalid_utf8_is_exit_2_naming_the_byte_offset() {
    let out = git_loaf()
        .arg("parse")
        .write_stdin(b"abc\n\xc3\x28".to_vec())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_snapshot!(String::from_utf8_lossy(&out.stderr), @r"
    error: standard input is not valid UTF-8: invalid byte 0xc3 at byte offset 4 (line 2)
    hint: save the reply as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8`), or remove the bytes at that offset
    ");
}

#[test]
fn missing_file_is_exit_2_naming_the_path() {
    let out = git_loaf()
        .args(["parse", "no/such/reply.md"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_snapshot!(String::from_utf8_lossy(&out.stderr), @r"
    error: no such file: 'no/such/reply.md'
    hint: check the path, or pass '-' to read the reply from standard input
    ");
}

#[test]
fn input_over_100_mib_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.md");
    let file = std::fs::File::create(&path).expect("create");
    // A sparse file: 100 MiB + 1 byte of zeros without writing them.
    file.set_len(104_857_601).expect("set_len");
    let out = git_loaf().arg("parse").arg(&path).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("larger than the 104857600-byte (100 MiB) limit"),
        "{stderr}"
    );
}

#[test]
fn crlf_reply_parses_like_lf_but_context_keeps_cr() {
    let reply = "#!nesl [@three-char-SHA-256: abc]\r\nk = v\r\n#!end_abc\r\n";
    let out = git_loaf()
        .args(["parse", "--json"])
        .write_stdin(reply)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["blocks"][0]["endLine"], 3);
    assert_eq!(json["errors"][0]["content"], "k = v");
    assert_eq!(
        json["errors"][0]["context"],
        "#!nesl [@three-char-SHA-256: abc]\r\nk = v\r\n#!end_abc\r\n"
    );
}
