//! The filesystem actions, run from the cases in `test-data/actions/<action>.cases.md`.
//!
//! A case is a `### name` section with fenced blocks, told apart by the word after `json`:
//! `files` (the tree before: path → content), `params`, `outcome` (the expected
//! `{success, error?, data?}`), `after` (what changed: path → content, `null` for gone) and
//! optionally `workspace` (`max_file_size`, and `deny: {read: [..], write: [..]}` path
//! prefixes the test guard refuses). A content is a string (UTF-8 text), `{"hex": ".."}`
//! (raw bytes), `{"dir": true}` or `{"symlink": "<path>"}`.
//!
//! Paths under `/tmp/t_` are the case's own directory. Each case runs twice: once with that
//! path redirected into a temporary directory (so every message must name `/tmp/t_`, never
//! the real place, as in a staged apply), once with `/tmp/t_` rewritten to a temporary
//! directory and no redirection. After the action, the whole tree must equal the tree
//! before with `after` applied: nothing else created, changed or left behind.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use git_loaf::exec::{
    Access, AccessCheck, ActionOutcome, AllowAll, PathMap, Workspace, fs as fs_actions,
};
use serde_json::{Value, json};

use crate::support::{read, test_data};

/// The directory every case's paths live in.
const ROOT: &str = "/tmp/t_";

/// One case: its name and its fences by kind.
struct Case {
    name: String,
    fences: BTreeMap<String, String>,
}

/// `### name` sections with their `json <kind>` fences.
fn cases(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.split('\n') {
        if let Some((kind, body)) = open.as_mut() {
            if line.starts_with("```") {
                let (kind, body) = (std::mem::take(kind), std::mem::take(body));
                let case = cases.last_mut().expect("fences belong to a case");
                assert!(
                    case.fences.insert(kind.clone(), body).is_none(),
                    "{}: two `{kind}` fences",
                    case.name
                );
                open = None;
            } else {
                body.push_str(line);
                body.push('\n');
            }
        } else if let Some(name) = line.strip_prefix("### ") {
            cases.push(Case {
                name: name.trim().to_owned(),
                fences: BTreeMap::new(),
            });
        } else if let Some(info) = line.strip_prefix("```json ") {
            assert!(!cases.is_empty(), "a fence before the first case: {line}");
            open = Some((info.trim().to_owned(), String::new()));
        }
    }
    cases
}

/// How a run places `/tmp/t_`.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// The action sees `/tmp/t_`; the path map sends it to the temporary directory.
    Redirected,
    /// `/tmp/t_` is rewritten to the temporary directory in the case itself.
    Rewritten,
}

/// Refuses paths under the given prefixes, with a message naming the real path (which the
/// actions must map back to the model's).
struct PrefixGuard {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
}

impl AccessCheck for PrefixGuard {
    fn check(&self, access: Access, path: &Path) -> Result<PathBuf, String> {
        let denied = match access {
            Access::Read => &self.read,
            Access::Write => &self.write,
        };
        if denied.iter().any(|d| path.starts_with(d)) {
            return Err(format!(
                "fs-guard violation: {} access denied for '{}'",
                access.as_str(),
                path.display()
            ));
        }
        Ok(path.to_path_buf())
    }
}

/// A case being run in one mode.
struct Run {
    mode: Mode,
    dir: tempfile::TempDir,
}

impl Run {
    fn real_root(&self) -> String {
        self.dir.path().to_string_lossy().into_owned()
    }

    /// A fence's text as the action sees it.
    fn user_text(&self, text: &str) -> String {
        match self.mode {
            Mode::Redirected => text.to_owned(),
            Mode::Rewritten => text.replace(ROOT, &self.real_root()),
        }
    }

    /// Where a case path really is.
    fn real(&self, case_path: &str) -> PathBuf {
        let rest = case_path
            .strip_prefix(ROOT)
            .unwrap_or_else(|| panic!("case paths live under {ROOT}: {case_path}"));
        PathBuf::from(format!("{}{rest}", self.real_root()))
    }

    /// The case path of a real path.
    fn case_path(&self, real: &Path) -> String {
        let rest = real.strip_prefix(self.dir.path()).expect("under the root");
        Path::new(ROOT).join(rest).to_string_lossy().into_owned()
    }
}

fn parse_json(case: &str, kind: &str, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{case}: `{kind}` fence: {e}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// Creates the `files` tree and dates every entry 2024-01-01T00:00:00Z, so `ls` is stable.
fn create_tree(run: &Run, files: &BTreeMap<String, Value>) {
    for (path, content) in files {
        let real = run.real(path);
        if let Some(parent) = real.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        match content {
            Value::String(text) => fs::write(&real, text).unwrap(),
            Value::Object(o) if o.contains_key("hex") => {
                fs::write(&real, unhex(o["hex"].as_str().unwrap())).unwrap()
            }
            Value::Object(o) if o.contains_key("dir") => fs::create_dir_all(&real).unwrap(),
            Value::Object(o) if o.contains_key("symlink") => {
                let target = run.real(o["symlink"].as_str().unwrap());
                std::os::unix::fs::symlink(target, &real).unwrap()
            }
            other => panic!("unknown content for {path}: {other}"),
        }
    }
    let epoch = SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200);
    let mut all: Vec<PathBuf> = walk(run.dir.path());
    all.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for path in all {
        if !fs::symlink_metadata(&path).unwrap().is_symlink() {
            fs::File::open(&path).unwrap().set_modified(epoch).unwrap();
        }
    }
}

/// Every path under `root` (not following symlinks), root excluded.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

/// The tree under the run's root, by case path.
fn snapshot(run: &Run) -> BTreeMap<String, Value> {
    walk(run.dir.path())
        .into_iter()
        .map(|path| {
            let meta = fs::symlink_metadata(&path).unwrap();
            let content = if meta.is_symlink() {
                json!({"symlink": run.case_path(&fs::read_link(&path).unwrap())})
            } else if meta.is_dir() {
                json!({"dir": true})
            } else {
                let bytes = fs::read(&path).unwrap();
                match String::from_utf8(bytes) {
                    Ok(text) => Value::String(text),
                    Err(e) => json!({"hex": hex(e.as_bytes())}),
                }
            };
            (run.case_path(&path), content)
        })
        .collect()
}

/// One form per content: bytes that are UTF-8 as a string, others as compact hex.
fn canonical(content: &Value) -> Value {
    match content.get("hex").and_then(Value::as_str) {
        Some(digits) => {
            let bytes = unhex(digits);
            match String::from_utf8(bytes) {
                Ok(text) => Value::String(text),
                Err(e) => json!({"hex": hex(e.as_bytes())}),
            }
        }
        None => content.clone(),
    }
}

/// The tree expected after: `before` with `after` applied, and every parent directory.
fn expected_tree(
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
) -> BTreeMap<String, Value> {
    let mut tree = before.clone();
    let gone: Vec<&String> = after
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k)
        .collect();
    let under = |path: &str, root: &str| path == root || path.starts_with(&format!("{root}/"));
    for (path, content) in after {
        if !content.is_null() {
            tree.insert(path.clone(), content.clone());
        }
    }
    let mut parents = BTreeSet::new();
    for path in before.keys().chain(after.keys()) {
        let mut p = Path::new(path).parent();
        while let Some(dir) = p.filter(|d| d != &Path::new(ROOT)) {
            parents.insert(dir.to_string_lossy().into_owned());
            p = dir.parent();
        }
    }
    for dir in parents {
        tree.entry(dir).or_insert_with(|| json!({"dir": true}));
    }
    tree.retain(|path, _| !gone.iter().any(|g| under(path, g)));
    tree.values_mut().for_each(|v| *v = canonical(v));
    tree
}

fn files_of(case: &Case, kind: &str) -> BTreeMap<String, Value> {
    let Some(text) = case.fences.get(kind) else {
        return BTreeMap::new();
    };
    match parse_json(&case.name, kind, text) {
        Value::Object(map) => map.into_iter().collect(),
        other => panic!(
            "{}: `{kind}` must map paths to contents: {other}",
            case.name
        ),
    }
}

/// Runs `case` of `action` in `mode`; a description of every difference, if any.
fn run_case(action: &str, case: &Case, mode: Mode) -> Vec<String> {
    let run = Run {
        mode,
        dir: tempfile::tempdir().unwrap(),
    };
    let before = files_of(case, "files");
    let after = files_of(case, "after");
    create_tree(&run, &before);

    let workspace = case
        .fences
        .get("workspace")
        .map(|t| parse_json(&case.name, "workspace", t))
        .unwrap_or(json!({}));
    let prefixes = |kind: &str| -> Vec<PathBuf> {
        workspace["deny"][kind]
            .as_array()
            .map(|a| a.iter().map(|p| run.real(p.as_str().unwrap())).collect())
            .unwrap_or_default()
    };
    let guard = PrefixGuard {
        read: prefixes("read"),
        write: prefixes("write"),
    };
    let paths = match mode {
        Mode::Redirected => PathMap::redirect(Path::new(ROOT), run.dir.path()),
        Mode::Rewritten => PathMap::identity(run.dir.path()),
    };
    let mut ws = Workspace::permissive(&guard, &paths);
    if let Some(max) = workspace["max_file_size"].as_u64() {
        ws.max_file_size = max;
    }

    let params_text = case.fences.get("params").expect("a `params` fence");
    let params = match parse_json(&case.name, "params", &run.user_text(params_text)) {
        Value::Object(map) => map,
        other => panic!("{}: params must be an object: {other}", case.name),
    };
    let outcome = fs_actions::run(action, &params, &ws);

    let mut problems = Vec::new();
    let expected_text = case.fences.get("outcome").expect("an `outcome` fence");
    let expected = parse_json(&case.name, "outcome", &run.user_text(expected_text));
    let actual = serde_json::to_value(&outcome).unwrap();
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap();
    if pretty(&actual) != pretty(&expected) {
        problems.push(format!(
            "outcome\nexpected: {}\nactual:   {}",
            pretty(&expected),
            pretty(&actual)
        ));
    }
    let tree = snapshot(&run);
    let want = expected_tree(&before, &after);
    if tree != want {
        problems.push(format!(
            "tree after\nexpected: {}\nactual:   {}",
            pretty(&json!(want)),
            pretty(&json!(tree))
        ));
    }
    problems
}

#[test]
fn every_action_case_gives_the_expected_outcome_and_tree() {
    let dir = test_data("actions");
    let mut failures = Vec::new();
    let mut count = 0;
    let mut covered = BTreeSet::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(action) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".cases.md"))
            .map(str::to_owned)
        else {
            continue;
        };
        let text = read(&path);
        for case in cases(&text) {
            for mode in [Mode::Redirected, Mode::Rewritten] {
                count += 1;
                for problem in run_case(&action, &case, mode) {
                    failures.push(format!(
                        "--- {action} / {} ({mode:?}): {problem}",
                        case.name
                    ));
                }
            }
        }
        covered.insert(action);
    }
    let missing: Vec<&&str> = fs_actions::ACTIONS
        .iter()
        .filter(|a| !covered.contains(**a))
        .collect();
    assert!(
        missing.is_empty(),
        "actions without a case file: {missing:?}"
    );
    assert!(count > 100, "only {count} runs: are the case files there?");
    assert!(
        failures.is_empty(),
        "{} of {count} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A replace whose text is not in the file shows the closest lines, numbered.
#[test]
fn a_missed_replace_shows_the_closest_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.py");
    fs::write(
        &file,
        "import os\n\n\ndef serve(port):\n    host = os.environ.get(\"HOST\", \"0.0.0.0\")\n    print(f\"listening on {host}:{port}\")\n    run(host, port)\n\n\ndef run(host, port):\n    pass\n",
    )
    .unwrap();
    let paths = PathMap::redirect(Path::new("/repo"), dir.path());
    let ws = Workspace::permissive(&AllowAll, &paths);
    let params = json!({
        "path": "/repo/server.py",
        "old_text": "def serve(port):\n    host = os.getenv(\"HOST\", \"0.0.0.0\")\n    print(f\"listening on {host}:{port}\")",
        "new_text": "x",
    });
    let outcome = fs_actions::run("file_replace_text", params.as_object().unwrap(), &ws);
    assert!(!outcome.success);
    insta::assert_snapshot!(outcome.error.unwrap(), @r#"
    file_replace_text: old_text not found in file; closest match at lines 4-6 (96% similar):
    4: def serve(port):
    5:     host = os.environ.get("HOST", "0.0.0.0")
    6:     print(f"listening on {host}:{port}")
    "#);
}

/// Several matches: every line named, the file untouched.
#[test]
fn an_ambiguous_replace_names_every_match() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.txt");
    let text = "x = 1\ny = 2\nx = 1\nz = x = 1\n";
    fs::write(&file, text).unwrap();
    let paths = PathMap::identity(dir.path());
    let ws = Workspace::permissive(&AllowAll, &paths);
    let params = json!({"path": file, "old_text": "x = 1", "new_text": "x = 2"});
    let outcome: ActionOutcome =
        fs_actions::run("file_replace_text", params.as_object().unwrap(), &ws);
    insta::assert_snapshot!(outcome.error.unwrap(), @"file_replace_text: old_text appears 3 times, must appear exactly once: at lines 1, 3, 4. Include more of the surrounding text to make it unique, or use file_replace_all_text");
    assert_eq!(fs::read_to_string(&file).unwrap(), text);
}

/// More than 1000 matching lines: the first 1000 come back, and the model is asked to narrow
/// the search.
#[test]
fn a_flood_of_grep_matches_is_cut_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("log.txt"), "error here\n".repeat(1005)).unwrap();
    let paths = PathMap::identity(dir.path());
    let ws = Workspace::permissive(&AllowAll, &paths);
    let params = json!({"pattern": "error", "path": dir.path()});
    let outcome = fs_actions::run("grep", params.as_object().unwrap(), &ws);
    assert!(!outcome.success);
    assert_eq!(
        outcome.error.as_deref(),
        Some("grep: more than 1000 matching lines; the first 1000 are returned. Narrow the search")
    );
    let data = outcome.data.unwrap();
    assert_eq!(data.as_array().map(Vec::len), Some(1000));
    assert_eq!(data[999]["line_number"], 1000);
}
