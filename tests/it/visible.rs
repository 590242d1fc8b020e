//! Ignored files visible in the stage (issue 8 item 2, DESIGN §2 "Stage", §5 `stage.isolate`):
//! file actions run in the stage see the user's `.venv`, `.env`…, never a stale copy, and
//! never what `stage.isolate` keeps out.
//!
//! The library-level tests run the actions in a real stage with the [`PathMap`] a transaction
//! builds; the binary tests (`apply_*`) need `ops/apply.rs` to hand that map to the actions
//! and to publish the extras, and are ignored until it does.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use git_loaf::config::Config;
use git_loaf::exec::PathMap;
use git_loaf::report::ExecutionResult;
use git_loaf::tx::stage::{Stage, Touched};
use git_loaf::tx::visible_ignored::{Visibility, ignored_entries, isolate_set};
use serde_json::Value;

use crate::scratch::{Scratch, block};

/// A committed repository ignoring `.venv/` and `.env`, with both on disk, and a loaf.yml
/// that isolates nothing (the built-in list would keep `.env` out: these tests are about
/// what is visible).
fn project() -> Scratch {
    let s = Scratch::with(&[
        (".gitignore", ".venv/\n.env\n"),
        ("app.py", "print(1)\n"),
        ("loaf.yml", "stage:\n  isolate: []\n"),
    ]);
    s.write(".venv/pyvenv.cfg", "home = /usr/bin\n");
    s.write(".venv/lib/site.py", "# site\n");
    s.write(".env", "PASSWORD=1\n");
    s
}

/// The stage of `s`'s repository at HEAD, and the map a transaction runs actions with.
fn staged(s: &Scratch, config: &Config) -> (Stage, PathMap, Rc<Visibility>) {
    let repo = git2::Repository::open(&s.root).expect("open");
    let head = repo.head().and_then(|h| h.peel_to_commit()).expect("head");
    let stage = Stage::open_or_create(&repo, head.id()).expect("stage");
    stage.reset_to(head.id(), false).expect("reset");
    let view = Rc::new(Visibility::new(
        &s.root,
        isolate_set(&config.stage.isolate).expect("globs"),
    ));
    let paths = PathMap::redirect(&s.root, stage.path()).showing(view.clone());
    (stage, paths, view)
}

fn run(s: &Scratch, config: &Config, paths: &PathMap, blocks: &[String]) -> ExecutionResult {
    git_loaf::execute(&s.reply(&blocks.concat()), config, paths)
}

/// Action `i`'s data, failing the test with its error.
fn data(result: &ExecutionResult, i: usize) -> &Value {
    let r = &result.results[i];
    assert!(r.success, "{} failed: {:?}", r.action, r.error);
    r.data.as_ref().expect("data")
}

fn names(listing: &Value) -> Vec<String> {
    listing
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn file_actions_read_and_list_the_users_ignored_files() {
    let s = project();
    let config = Config::load(&s.root).expect("config");
    let (stage, paths, _) = staged(&s, &config);
    assert!(
        !stage.path().join(".venv").exists(),
        "the stage itself holds nothing ignored"
    );
    let result = run(
        &s,
        &config,
        &paths,
        &[
            block("r1", "file_read", &[("path", "/repo/.venv/pyvenv.cfg")]),
            block("r2", "ls", &[("path", "/repo")]),
            block("r3", "ls", &[("path", "/repo/.venv")]),
            block(
                "r4",
                "grep",
                &[("pattern", "site"), ("path", "/repo/.venv")],
            ),
            block("r5", "files_read", &[("paths", "/repo/.env\n/repo/app.py")]),
        ],
    );
    assert_eq!(data(&result, 0)["content"], "home = /usr/bin\n");
    assert_eq!(
        names(data(&result, 1)),
        [".env", ".gitignore", ".venv", "app.py", "loaf.yml"]
    );
    assert_eq!(names(data(&result, 2)), ["lib", "pyvenv.cfg"]);
    let found = data(&result, 3).to_string();
    assert_eq!(
        s.redact(found.as_bytes()),
        r##"[{"file":"/repo/.venv/lib/site.py","line_number":1,"line":"# site"}]"##
    );
    assert_eq!(data(&result, 4)["content"][0], "PASSWORD=1\n");
    let text = s.redact(result.to_text().as_bytes());
    assert!(!text.contains(".git/loaf"), "no stage path shows: {text}");
}

#[test]
fn isolate_keeps_an_ignored_file_out() {
    let s = project();
    let config = Config::parse("stage:\n  isolate: [\".env\"]\n", &s.root).expect("config");
    let (_stage, paths, _) = staged(&s, &config);
    let result = run(
        &s,
        &config,
        &paths,
        &[
            block("r1", "file_read", &[("path", "/repo/.env")]),
            block("r2", "ls", &[("path", "/repo")]),
            block("r3", "file_read", &[("path", "/repo/.venv/pyvenv.cfg")]),
        ],
    );
    let error = result.results[0].error.clone().unwrap_or_default();
    assert!(
        s.redact(error.as_bytes()).contains(
            "'/repo/.env' is kept from replies by stage.isolate in loaf.yml (pattern `.env`)"
        ),
        "{error}"
    );
    assert!(!names(data(&result, 1)).contains(&".env".to_owned()));
    assert_eq!(data(&result, 2)["content"], "home = /usr/bin\n");
}

#[test]
fn writes_go_to_a_copy_in_the_stage_that_wins_for_the_rest_of_the_run() {
    let s = project();
    let config = Config::load(&s.root).expect("config");
    let (stage, paths, view) = staged(&s, &config);
    let result = run(
        &s,
        &config,
        &paths,
        &[
            block(
                "w1",
                "file_replace_text",
                &[
                    ("path", "/repo/.env"),
                    ("old_text", "PASSWORD=1"),
                    ("new_text", "PASSWORD=2"),
                ],
            ),
            block("r1", "file_read", &[("path", "/repo/.env")]),
            block(
                "w2",
                "file_write",
                &[("path", "/repo/.venv/new.txt"), ("content", "n\n")],
            ),
            block("r2", "ls", &[("path", "/repo/.venv")]),
            block("d1", "file_delete", &[("path", "/repo/.env")]),
            block("r3", "file_read", &[("path", "/repo/.env")]),
            block("m1", "dir_create", &[("path", "/repo/newdir")]),
        ],
    );
    data(&result, 0);
    assert_eq!(data(&result, 1)["content"], "PASSWORD=2\n");
    assert_eq!(names(data(&result, 3)), ["lib", "new.txt", "pyvenv.cfg"]);
    data(&result, 4);
    assert!(
        !result.results[5].success,
        "deleted in the run: not the user's again"
    );
    data(&result, 6);
    assert_eq!(
        s.read(".env").as_deref(),
        Some("PASSWORD=1\n"),
        "the user's file untouched"
    );
    assert_eq!(s.read(".venv/new.txt"), None);
    assert!(stage.path().join("newdir").is_dir());
    assert!(view.copied().contains(Path::new(".env")));
}

#[cfg(unix)]
#[test]
fn a_symlink_in_an_ignored_folder_is_judged_where_it_leads() {
    let s = project();
    let outside = s.sibling("outside.txt");
    std::fs::write(&outside, "secret\n").expect("write");
    std::os::unix::fs::symlink(&outside, s.root.join(".venv/link")).expect("symlink");
    std::os::unix::fs::symlink("pyvenv.cfg", s.root.join(".venv/inside")).expect("symlink");
    let config = Config::load(&s.root).expect("config");
    let (_stage, paths, _) = staged(&s, &config);
    let result = run(
        &s,
        &config,
        &paths,
        &[
            block("r1", "file_read", &[("path", "/repo/.venv/link")]),
            block("r2", "file_read", &[("path", "/repo/.venv/inside")]),
        ],
    );
    let error = result.results[0].error.clone().unwrap_or_default();
    assert!(error.contains("fs-guard violation"), "{error}");
    assert_eq!(data(&result, 1)["content"], "home = /usr/bin\n");
}

#[test]
fn a_stale_stage_copy_is_never_served() {
    let s = project();
    let config = Config::load(&s.root).expect("config");
    let (stage, paths, _) = staged(&s, &config);
    let head = git2::Oid::from_str(&s.head()).expect("oid");
    let write = block(
        "w1",
        "file_write",
        &[("path", "/repo/.venv/x"), ("content", "run\n")],
    );
    assert!(run(&s, &config, &paths, &[write]).results[0].success);
    stage
        .snapshot(
            &Touched::Paths(vec![PathBuf::from(".venv/x")]),
            &git2::Repository::open(&s.root).expect("open"),
        )
        .expect("snapshot");
    // The user then writes the file by hand; the next run starts with a reset.
    s.write(".venv/x", "mine\n");
    stage.reset_to(head, false).expect("reset");
    let read = block("r1", "file_read", &[("path", "/repo/.venv/x")]);
    let result = run(&s, &config, &paths, &[read]);
    assert_eq!(data(&result, 0)["content"], "mine\n");
}

/// The cost of listing the visible entries on a 20,000-file repository (run with
/// `cargo test --release --test it visible_cost -- --ignored --nocapture`).
#[test]
#[ignore = "a measurement: builds a 20,000-file repository"]
fn visible_cost_on_20000_files() {
    let s = Scratch::empty();
    s.write(".gitignore", ".venv/\nnode_modules/\n*.log\n");
    for i in 0..20_000 {
        s.write(
            &format!("d{:02}/d{:02}/f{i:05}.txt", i / 1000, (i / 100) % 10),
            &format!("file {i}\n"),
        );
    }
    for i in 0..2_000 {
        s.write(&format!("node_modules/p{:03}/f{i}.js", i / 10), "x\n");
    }
    s.write(".venv/pyvenv.cfg", "home\n");
    s.commit_all("big");
    s.git(&["status", "--porcelain"]);
    let repo = git2::Repository::open(&s.root).expect("open");
    let none = isolate_set(&[]).expect("globs");
    let mut times = Vec::new();
    let mut entries = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        entries = ignored_entries(&repo, &none).expect("entries");
        times.push(start.elapsed());
    }
    times.sort();
    eprintln!(
        "ignored_entries on 20,000 files: median {:?} (min {:?}), {} entries",
        times[3],
        times[0],
        entries.len()
    );
    assert_eq!(entries.len(), 2);
}

fn apply_ok(s: &Scratch, blocks: &[String]) -> String {
    let out = s.apply(&blocks.concat());
    s.assert_exit(&out, 0);
    s.redact(&out.stdout)
}

#[test]
fn apply_reads_and_lists_the_users_virtualenv() {
    let s = project();
    let report = apply_ok(
        &s,
        &[
            block("r1", "file_read", &[("path", "/repo/.venv/pyvenv.cfg")]),
            block("r2", "ls", &[("path", "/repo")]),
        ],
    );
    assert!(report.contains("home = /usr/bin"), "{report}");
    // The listing itself (r1's path names `.venv` too): the ignored folder is in it.
    let listing = report
        .split_once("[r2] ls /repo:\n")
        .map(|(_, after)| after)
        .unwrap_or_default();
    assert!(listing.lines().any(|line| line == ".venv/"), "{report}");
    assert!(!report.contains(".git/loaf"), "{report}");
}

#[test]
fn apply_never_serves_a_stale_copy() {
    let s = project();
    apply_ok(
        &s,
        &[block(
            "w1",
            "file_write",
            &[("path", "/repo/.venv/x"), ("content", "run\n")],
        )],
    );
    s.write(".venv/x", "mine\n");
    let report = apply_ok(
        &s,
        &[block("r1", "file_read", &[("path", "/repo/.venv/x")])],
    );
    assert!(report.contains("mine"), "{report}");
    assert!(!report.contains("run\n"), "{report}");
}

#[test]
fn apply_with_isolate_does_not_find_the_env_file() {
    let s = project();
    s.write("loaf.yml", "stage:\n  isolate: [\".env\"]\n");
    s.commit_all("config");
    let out = s.apply(&block("r1", "file_read", &[("path", "/repo/.env")]));
    s.assert_exit(&out, 1);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains("kept from replies by stage.isolate"),
        "{report}"
    );
    assert!(!report.contains("PASSWORD"), "{report}");
}

#[test]
fn apply_writes_ignored_files_and_folders_to_the_user_and_undo_restores() {
    let s = project();
    std::fs::create_dir_all(s.root.join(".venv/mine")).expect("mkdir");
    apply_ok(
        &s,
        &[
            block(
                "w1",
                "file_replace_text",
                &[
                    ("path", "/repo/.env"),
                    ("old_text", "PASSWORD=1"),
                    ("new_text", "PASSWORD=2"),
                ],
            ),
            block(
                "w2",
                "file_write",
                &[("path", "/repo/.venv/new/a.py"), ("content", "a\n")],
            ),
            block("m1", "dir_create", &[("path", "/repo/newdir")]),
            block("m2", "dir_create", &[("path", "/repo/.venv/mine")]),
        ],
    );
    assert_eq!(s.read(".env").as_deref(), Some("PASSWORD=2\n"));
    assert_eq!(s.read(".venv/new/a.py").as_deref(), Some("a\n"));
    assert!(s.root.join("newdir").is_dir());
    assert_eq!(
        s.git(&["status", "--porcelain"]),
        "",
        "nothing ignored committed"
    );
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read(".env").as_deref(), Some("PASSWORD=1\n"));
    assert!(!s.root.join(".venv/new").exists());
    assert!(!s.root.join("newdir").exists());
    assert!(
        s.root.join(".venv/mine").is_dir(),
        "the user's folder stays"
    );
    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read(".env").as_deref(), Some("PASSWORD=2\n"));
}

/// `undo --to` takes back what the applies wrote outside git too, and the redo of that walk
/// writes it again (its entry turned around, what happened outside git included).
#[test]
fn redo_after_undo_to_writes_the_ignored_files_again() {
    let s = project();
    let env = |n: &str| {
        block(
            &format!("w{n}"),
            "file_write",
            &[
                ("path", "/repo/.env"),
                ("content", &format!("PASSWORD={n}\n")),
            ],
        )
    };
    let app = |n: &str| {
        block(
            &format!("a{n}"),
            "file_write",
            &[
                ("path", "/repo/app.py"),
                ("content", &format!("print({n})\n")),
            ],
        )
    };
    apply_ok(&s, &[env("2"), app("2")]);
    apply_ok(&s, &[env("3"), app("3")]);
    s.assert_exit(&s.loaf(&["undo", "--to", "2"], ""), 0);
    assert_eq!(s.read(".env").as_deref(), Some("PASSWORD=1\n"));
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.read("app.py").as_deref(), Some("print(3)\n"));
    assert_eq!(s.read(".env").as_deref(), Some("PASSWORD=3\n"));
}

/// An apply that wrote only ignored files made no commit: a redo refused because HEAD moved
/// since has no AI commit to cherry-pick, and does not offer one.
#[test]
fn redo_of_an_apply_without_a_commit_offers_no_cherry_pick() {
    let s = project();
    let head = s.head();
    apply_ok(
        &s,
        &[block(
            "w1",
            "file_write",
            &[("path", "/repo/.env"), ("content", "PASSWORD=2\n")],
        )],
    );
    assert_eq!(s.head(), head, "nothing committed");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    s.write("mine.txt", "mine\n");
    s.commit_all("mine");
    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HEAD moved"), "{err}");
    assert!(!err.contains("cherry-pick"), "{err}");
}

/// After code ran (the user's entries mounted over empty placeholders in the stage), the
/// file actions still see the user's ignored files, never the empty placeholder left there.
#[test]
fn apply_reads_the_users_ignored_file_after_an_exec() {
    reads_the_users_ignored_file_after_an_exec(None);
}

/// Without namespaces the placeholders give way to symlinks during the run and must come
/// back as the same files for the file actions to know them.
#[test]
fn apply_reads_the_users_ignored_file_after_an_exec_without_namespaces() {
    reads_the_users_ignored_file_after_an_exec(Some("off"));
}

fn reads_the_users_ignored_file_after_an_exec(sandbox: Option<&str>) {
    let s = project();
    s.write(
        "loaf.yml",
        "allowed-actions: [file_read, exec]\nstage:\n  isolate: []\n",
    );
    s.commit_all("config");
    let reply = [
        block("e1", "exec", &[("lang", "bash"), ("code", "true")]),
        block("r1", "file_read", &[("path", "/repo/.env")]),
    ]
    .concat();
    let out = crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .envs(sandbox.map(|v| ("LOAF_SANDBOX", v)))
        .arg("apply")
        .write_stdin(s.reply(&reply))
        .output()
        .expect("git-loaf runs");
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    let read = report
        .split_once("[r1] file_read /repo/.env:\n")
        .map(|(_, after)| after)
        .unwrap_or_default();
    assert!(read.starts_with("PASSWORD=1\n"), "{report}");
    assert_eq!(s.read(".env").as_deref(), Some("PASSWORD=1\n"));
}
