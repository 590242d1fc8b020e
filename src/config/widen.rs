//! Whether a change to loaf.yml widens what a reply's code may do (docs/loaf-yml.md, "A loaf.yml a
//! reply writes waits for you"): a reply or an agent's turn may narrow loaf.yml at once, but a
//! widening waits for the user. [`widenings`] names each thing the new text allows that the old one
//! did not; nothing named means the new text is the same or narrower.
//!
//! Where a comparison cannot be made (a key this module does not know, a text that does not
//! load), the change counts as widening: a mistaken "narrower" would let a reply widen its
//! own powers, a mistaken "wider" only asks the user to look.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::{Config, FsGuardConfig, GuardRules, HookCommand, NotesOutputs};

/// Each thing `new` allows that `old` did not, as a line for the user (`exec.network: false
/// → true`); empty when `new` allows nothing more. `None` is no loaf.yml (the defaults);
/// both texts are read as loaf.yml files in `dir`.
pub fn widenings(old: Option<&str>, new: Option<&str>, dir: &Path) -> Vec<String> {
    let load = |text: Option<&str>| match text {
        Some(text) => Config::parse(text, dir),
        None => Ok(Config::default_for(dir)),
    };
    let new_config = match load(new) {
        Ok(config) => config,
        Err(error) => return vec![format!("it does not load ({error})")],
    };
    let old_config = match load(old) {
        Ok(config) => config,
        Err(error) => return vec![format!("the accepted loaf.yml does not load ({error})")],
    };
    let mut found = compare(&old_config, &new_config);
    found.extend(unknown_keys(old, new));
    found
}

/// What `new` allows beyond `old`, key by key, for every key [`Config`] knows.
fn compare(old: &Config, new: &Config) -> Vec<String> {
    let mut found = Vec::new();
    for action in crate::actions::runnable() {
        if new.allows(action) && !old.allows(action) {
            found.push(format!("allowed-actions: adds {action}"));
        }
    }
    found.extend(guard(old.fs_guard.as_ref(), new.fs_guard.as_ref()));
    for (name, old_list, new_list) in [
        ("before", &old.hooks.before, &new.hooks.before),
        ("after", &old.hooks.after, &new.hooks.after),
    ] {
        found.extend(hooks(name, old_list, new_list));
    }
    let has_hooks = !new.hooks.before.is_empty() || !new.hooks.after.is_empty();
    if has_hooks && new.vars != old.vars {
        found.push("vars: changed (they are part of the hooks' commands)".to_owned());
    }
    if new.git_hooks && !old.git_hooks {
        found.push("git-hooks: false → true (the repository's git hooks run)".to_owned());
    }
    if new.max_file_size > old.max_file_size {
        found.push(format!(
            "max_file_size: {} → {}",
            old.max_file_size, new.max_file_size
        ));
    }
    found.extend(exec(old, new));
    for pattern in &old.stage.isolate {
        if !new.stage.isolate.contains(pattern) {
            found.push(format!("stage.isolate: no longer keeps out '{pattern}'"));
        }
    }
    if new.notes_outputs == NotesOutputs::Full && old.notes_outputs == NotesOutputs::Hashes {
        found.push("notes.outputs: hashes → full (outputs go into notes you may push)".to_owned());
    }
    if new.gc.auto && (!old.gc.auto || new.gc.keep_days < old.gc.keep_days) {
        found.push(format!(
            "gc: the operation log is pruned on its own, keeping {} days",
            new.gc.keep_days
        ));
    }
    found
}

/// `exec`: a longer timeout, more output, the network, more writable paths, no sandbox.
fn exec(old: &Config, new: &Config) -> Vec<String> {
    let (old, new) = (&old.exec, &new.exec);
    let mut found = Vec::new();
    if new.timeout > old.timeout {
        found.push(format!(
            "exec.timeout: {}s → {}s",
            old.timeout.as_secs(),
            new.timeout.as_secs()
        ));
    }
    if new.max_output > old.max_output {
        found.push(format!(
            "exec.max_output: {} → {}",
            old.max_output, new.max_output
        ));
    }
    if new.network && !old.network {
        found.push("exec.network: false → true".to_owned());
    }
    for path in &new.writable {
        // Exactly the paths accepted: one under an accepted path may be a symlink out of it.
        if !old.writable.contains(path) {
            found.push(format!("exec.writable: adds {}", path.display()));
        }
    }
    if new.sandbox_off && !old.sandbox_off {
        found.push("exec.sandbox: on → off".to_owned());
    }
    found
}

/// `fs-guard`: an allow added or a deny dropped widens (the most specific pattern wins, so
/// removing an allow or adding a deny can only refuse more). No key is the built-in rules.
fn guard(old: Option<&FsGuardConfig>, new: Option<&FsGuardConfig>) -> Vec<String> {
    let built_in = crate::exec::guard::built_in_rules();
    let old = old.unwrap_or(&built_in);
    let new = new.unwrap_or(&built_in);
    let mut found = Vec::new();
    let mut rules = |kind: &str, old: &GuardRules, new: &GuardRules| {
        for pattern in new.allow.iter().filter(|p| !old.allow.contains(p)) {
            found.push(format!("fs-guard.{kind}.allow: adds '{pattern}'"));
        }
        for pattern in old.deny.iter().filter(|p| !new.deny.contains(p)) {
            found.push(format!("fs-guard.{kind}.deny: drops '{pattern}'"));
        }
    };
    rules("read", &old.read, &new.read);
    rules("write", &old.write, &new.write);
    found
}

/// `hooks.<name>`: the new list may only leave hooks out of the old one, in the old order;
/// a hook added, changed (command, cwd, timeout, continueOnError) or moved widens.
fn hooks(name: &str, old: &[HookCommand], new: &[HookCommand]) -> Vec<String> {
    let mut rest = old.iter();
    let mut found = Vec::new();
    for hook in new {
        if rest.any(|h| h == hook) {
            continue;
        }
        let what = if old.contains(hook) {
            "runs earlier"
        } else {
            "runs"
        };
        found.push(format!("hooks.{name}: {what} `{}`", hook.run));
        // The rest is compared from the start again: one change is named once.
        rest = old.iter();
    }
    found
}

/// Keys [`compare`] reads, with the keys it reads inside each section (`None`: the whole
/// value). Any other key, or another key inside these sections, is compared as written.
const KNOWN: &[(&str, Option<&[&str]>)] = &[
    ("version", None),
    ("allowed-actions", None),
    ("fs-guard", None),
    ("hooks", None),
    ("vars", None),
    ("commit_message_format", None),
    ("git-hooks", None),
    ("max_file_size", None),
    (
        "exec",
        Some(&["timeout", "max_output", "network", "writable", "sandbox"]),
    ),
    ("stage", Some(&["isolate", "share"])),
    ("gc", Some(&["keep-days"])),
    ("notes", Some(&["outputs"])),
];

/// A line for every key [`compare`] does not read whose value differs between the two
/// texts: git-loaf cannot tell whether it widens, so it counts as widening.
fn unknown_keys(old: Option<&str>, new: Option<&str>) -> Vec<String> {
    let (old, new) = (tree(old), tree(new));
    let mut found = Vec::new();
    for key in keys(&old, &new) {
        let known = KNOWN.iter().find(|(name, _)| *name == key);
        let (old_value, new_value) = (old.get(&key), new.get(&key));
        match known {
            Some((_, None)) => {}
            Some((_, Some(inner))) => {
                let empty = Value::Null;
                let (o, n) = (old_value.unwrap_or(&empty), new_value.unwrap_or(&empty));
                for sub in keys(o, n)
                    .into_iter()
                    .filter(|k| !inner.contains(&k.as_str()))
                {
                    if o.get(&sub) != n.get(&sub) {
                        found.push(format!(
                            "{key}.{sub}: changed (not a key git-loaf can compare)"
                        ));
                    }
                }
            }
            None if old_value != new_value => {
                found.push(format!("{key}: changed (not a key git-loaf can compare)"));
            }
            None => {}
        }
    }
    found
}

/// The text as a YAML tree (`Null` for no file or one that does not read as YAML: it was
/// parsed as loaf.yml before this is called).
fn tree(text: Option<&str>) -> Value {
    text.filter(|t| !t.trim().is_empty())
        .and_then(|t| serde_saphyr::from_str::<Value>(t).ok())
        .unwrap_or(Value::Null)
}

/// The keys of two YAML mappings, each once.
fn keys(a: &Value, b: &Value) -> BTreeSet<String> {
    [a, b]
        .into_iter()
        .filter_map(Value::as_object)
        .flat_map(|map| map.keys().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::widenings;
    use std::path::Path;

    fn widens(old: &str, new: &str) -> Vec<String> {
        widenings(Some(old), Some(new), Path::new(""))
    }

    #[test]
    fn each_power_a_reply_could_add_is_named() {
        let base = "allowed-actions: [defaults]\n";
        assert_eq!(
            widens(base, "allowed-actions: [defaults, exec]\n"),
            ["allowed-actions: adds exec"]
        );
        let exec = "allowed-actions: [defaults, exec]\n";
        assert_eq!(
            widens(
                exec,
                "allowed-actions: [defaults, exec]\nexec:\n  network: true\n  sandbox: off\n  timeout: 99\n"
            ),
            [
                "exec.timeout: 30s → 99s",
                "exec.network: false → true",
                "exec.sandbox: on → off"
            ]
        );
        assert_eq!(
            widens(
                exec,
                "allowed-actions: [defaults, exec]\nexec:\n  writable: [/var/cache/x]\n"
            ),
            ["exec.writable: adds /var/cache/x"]
        );
        assert_eq!(
            widens("", "hooks:\n  after:\n    - run: make\n"),
            ["hooks.after: runs `make`"]
        );
        assert_eq!(
            widens("", "notes:\n  outputs: full\n"),
            ["notes.outputs: hashes → full (outputs go into notes you may push)"]
        );
        assert_eq!(
            widens("", "stage:\n  isolate: [\".env\"]\n").len(),
            crate::config::DEFAULT_ISOLATE.len() - 1
        );
        assert_eq!(
            widens(
                "fs-guard:\n  write: { allow: [\"./src/**\"], deny: [\"**/.env\"] }\n",
                "fs-guard:\n  write: { allow: [\"./**\"], deny: [] }\n"
            ),
            [
                "fs-guard.write.allow: adds './**'",
                "fs-guard.write.deny: drops '**/.env'"
            ]
        );
    }

    #[test]
    fn narrowing_or_the_same_is_no_widening() {
        let wide = "allowed-actions: [defaults, exec]\nexec:\n  network: true\n  writable: [/var/cache/x]\nhooks:\n  after:\n    - run: make\n    - run: fmt\n";
        assert!(widens(wide, wide).is_empty());
        assert!(widens(wide, "allowed-actions: [file_read]\n").is_empty());
        assert!(
            widens(
                wide,
                "allowed-actions: [defaults, exec]\nhooks:\n  after:\n    - run: fmt\n"
            )
            .is_empty()
        );
        assert!(widenings(Some(wide), None, Path::new("")).is_empty());
        assert!(widens("", "commit_message_format: \"x {operation_summary}\"\n").is_empty());
    }

    #[test]
    fn what_cannot_be_compared_counts_as_widening() {
        assert_eq!(
            widens("", "allowed-actions: [nonsense]\n").len(),
            1,
            "a text that does not load"
        );
        assert_eq!(
            widens("", "hooks:\n  after:\n    - run: a\n    - run: b\n").len(),
            2
        );
        assert_eq!(
            widens(
                "hooks:\n  after:\n    - run: a\n    - run: b\n",
                "hooks:\n  after:\n    - run: b\n    - run: a\n"
            ),
            ["hooks.after: runs earlier `a`"]
        );
        assert_eq!(
            super::unknown_keys(Some("exec:\n  timeout: 5\n"), Some("exec:\n  later: 1\n")),
            ["exec.later: changed (not a key git-loaf can compare)"]
        );
        assert_eq!(
            super::unknown_keys(None, Some("someday: [x]\n")),
            ["someday: changed (not a key git-loaf can compare)"]
        );
    }
}
