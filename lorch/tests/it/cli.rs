//! The command line of §8.3: what lorch says when it cannot start (the commands themselves
//! are tested in run.rs, resume.rs, supervise.rs, config.rs, intake.rs and agent*.rs).

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
