//! The command line of §8.3: every command parses; none is built yet, and each says so.

use assert_cmd::Command;

fn lorch(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("lorch")
        .expect("lorch is built")
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_command_of_the_spec_parses_and_says_it_is_not_built_yet() {
    let cases: [(&[&str], &str); 6] = [
        (&[], "run"),
        (&["--task", "T-0042"], "run"),
        (&["run", "--task", "T-0042"], "run"),
        (&["resume", "--run", "run-1"], "resume"),
        (&["validate", "--schemas"], "validate --schemas"),
        (&["doctor"], "doctor"),
    ];
    for (args, what) in cases {
        assert_eq!(
            lorch(args),
            (Some(2), format!("lorch: {what}: not built yet\n")),
            "{args:?}"
        );
    }
}

#[test]
fn usage_errors_are_clap_errors() {
    for args in [
        &["agent", "builder"][..],
        &["agent", "tester", "--", "x"],
        &["resume"],
        &["validate"],
        &["--task", "T-1", "doctor"],
    ] {
        let (code, stderr) = lorch(args);
        assert_eq!(code, Some(2), "{args:?}");
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    }
}
