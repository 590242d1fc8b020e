//! loaf.yml, data-driven: `test-data/config/valid/NAME.yml` loads to `NAME.expected.json`;
//! `test-data/config/invalid/NAME.yml` is refused with a message naming the line (and, where
//! `NAME.expected` exists, exactly that message).

use std::path::Path;

use git_loaf::config::Config;
use serde_json::{Value, json};

use crate::support::{read, test_data};

fn summary(config: &Config) -> Value {
    let hooks = |list: &[git_loaf::config::HookCommand]| {
        list.iter()
            .map(|h| {
                json!({"run": h.run, "continueOnError": h.continue_on_error,
                            "timeout_ms": h.timeout.as_millis() as u64, "cwd": h.cwd})
            })
            .collect::<Vec<_>>()
    };
    let mut summary = json!({
        "version": config.version,
        "allowed_actions": config.allowed_actions,
        "fs_guard": config.fs_guard.as_ref().map(|g| json!({
            "read": {"allow": g.read.allow, "deny": g.read.deny},
            "write": {"allow": g.write.allow, "deny": g.write.deny},
        })),
        "hooks": {"before": hooks(&config.hooks.before), "after": hooks(&config.hooks.after)},
        "vars": config.vars,
        "commit_message_format": config.commit_message_format,
        "max_file_size": config.max_file_size,
        "exec": {"timeout_secs": config.exec.timeout.as_secs(), "max_output": config.exec.max_output,
                 "network": config.exec.network, "writable": config.exec.writable,
                 "sandbox_off": config.exec.sandbox_off},
        "stage": config.stage.share,
    });
    // Only where loaf.yml sets it, so that the other cases need not name the default.
    let env = &config.exec.env;
    if !env.is_default() {
        summary["exec"]["env"] = json!({"pass": env.pass, "set": env.set});
    }
    summary
}

fn cases(kind: &str) -> Vec<(String, String)> {
    let dir = test_data(&format!("config/{kind}"));
    let mut cases: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml"))
        .map(|p| {
            (
                p.file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                read(&p),
            )
        })
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "{kind} cases exist");
    cases
}

#[test]
fn valid_configs_load() {
    for (name, text) in cases("valid") {
        let config = Config::parse(&text, Path::new("")).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected: Value = serde_json::from_str(&read(&test_data(&format!(
            "config/valid/{name}.expected.json"
        ))))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(summary(&config), expected, "{name}");
    }
}

#[test]
fn invalid_configs_name_the_problem() {
    for (name, text) in cases("invalid") {
        let error = Config::parse(&text, Path::new(""))
            .expect_err(&name)
            .to_string();
        assert!(error.starts_with("loaf.yml: "), "{name}: {error}");
        let expected = test_data(&format!("config/invalid/{name}.expected"));
        if expected.exists() {
            assert_eq!(error, read(&expected).trim_end(), "{name}");
        } else {
            assert!(error.contains("line "), "{name} names the line: {error}");
        }
    }
}

#[test]
fn example_documents_every_key_and_loads() {
    let text = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("loaf.yml.example"));
    let config = Config::parse(&text, Path::new("/repo")).unwrap_or_else(|e| panic!("{e}"));
    let defaults = Config::default_for(Path::new("/repo"));
    assert_eq!(config.max_file_size, defaults.max_file_size);
    assert_eq!(config.exec, defaults.exec);
    assert_eq!(config.commit_message_format, defaults.commit_message_format);
    assert!(!config.allows("exec"), "the example leaves exec off");
    assert!(config.allows("file_write"));
    let guard = config.fs_guard.as_ref().expect("the example sets fs-guard");
    assert_eq!(guard.write.deny, ["**/.git/**", "**/.env"]);
    assert_eq!(
        guard.write.allow,
        ["./**"],
        "writes stay inside the repository"
    );
    assert_eq!(
        config.stage.isolate, defaults.stage.isolate,
        "the example lists the built-in secret files"
    );
    assert_eq!(config.notes_outputs, defaults.notes_outputs);
    for key in [
        "version:",
        "allowed-actions:",
        "fs-guard:",
        "hooks:",
        "vars:",
        "commit_message_format:",
        "max_file_size:",
        "exec:",
        "stage:",
        "continueOnError",
        "timeout",
        "cwd",
        "share:",
        "max_output:",
        "notes:",
        "outputs:",
        "env:",
        "pass:",
        "set:",
    ] {
        assert!(text.contains(key), "loaf.yml.example documents {key}");
    }
}
