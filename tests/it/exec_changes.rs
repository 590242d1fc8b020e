//! The report names what each exec block created, changed and deleted (DESIGN §2, issue 22):
//! on the line under the block in the text report, in its JSON data, and in the commit's
//! subject, always as the user's paths, never the stage's. What exec writes in ignored
//! folders (build caches) is not named: it is neither committed nor undone.

use serde_json::Value;

use crate::scratch::{Scratch, block};

fn exec(id: &str, code: &str) -> String {
    block(id, "exec", &[("lang", "bash"), ("code", code)])
}

/// A repository allowing exec, with a visible ignored build folder.
fn scratch() -> Scratch {
    let s = Scratch::with(&[
        ("a.txt", "one\n"),
        ("old.txt", "old\n"),
        ("keep.txt", "keep\n"),
        (".gitignore", "build/\n"),
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
    ]);
    s.write("build/cache.o", "cache\n");
    s
}

const CHANGES: &str = "printf 'note\\n' > exec_note.txt && printf 'two\\n' > a.txt && rm old.txt && printf 'x\\n' > build/cache.o && printf 'y\\n' > build/new.o";

/// The stage's path must never show: it is inside the git dir, named `loaf-stage`.
fn assert_no_stage_path(text: &str) {
    assert!(
        !text.contains("loaf-stage") && !text.contains("/.git/"),
        "the stage's path shows: {text}"
    );
}

#[test]
fn the_report_names_what_an_exec_created_changed_and_deleted() {
    names_what_an_exec_changed("on");
}

#[test]
fn without_namespaces_too_the_report_names_what_an_exec_changed() {
    names_what_an_exec_changed("off");
}

fn names_what_an_exec_changed(sandbox: &str) {
    let s = scratch();
    let out = crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("LOAF_SANDBOX", sandbox)
        .arg("apply")
        .write_stdin(s.reply(&exec("e1a", CHANGES)))
        .output()
        .expect("git-loaf runs");
    s.assert_exit(&out, 0);
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_no_stage_path(&raw);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains(
            "e1a ✅ exec bash\n    created /repo/exec_note.txt; changed /repo/a.txt; deleted /repo/old.txt\n"
        ),
        "{report}"
    );
    assert!(
        !report.contains("build/"),
        "ignored files are not named: {report}"
    );
    let subject = s.git(&["log", "-1", "--format=%s"]);
    assert_eq!(subject, "AI: exec bash exec_note.txt a.txt old.txt\n");
    assert_eq!(s.read("exec_note.txt").as_deref(), Some("note\n"));
}

#[test]
fn the_json_result_carries_the_users_paths_of_what_an_exec_changed() {
    let s = scratch();
    let out = s.loaf(&["apply", "--json"], &s.reply(&exec("e1a", CHANGES)));
    s.assert_exit(&out, 0);
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_no_stage_path(&raw);
    let json: Value = serde_json::from_str(&raw).expect("JSON");
    let data = &json["results"][0]["data"];
    let root = s.root.display().to_string();
    let list = |kind: &str| -> Vec<String> {
        data[kind]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(list("created"), [format!("{root}/exec_note.txt")]);
    assert_eq!(list("changed"), [format!("{root}/a.txt")]);
    assert_eq!(list("deleted"), [format!("{root}/old.txt")]);
    assert_eq!(data["exit_code"], 0);
}

#[test]
fn each_exec_block_names_only_its_own_changes_and_many_are_summed_up() {
    let s = scratch();
    let mut reply = exec(
        "e1a",
        "mkdir gen && for i in $(seq 1 150); do echo $i > gen/f$i.txt; done",
    );
    reply.push_str(&block(
        "w2b",
        "file_write",
        &[
            ("path", "/repo/keep.txt"),
            ("content", "by the fs action\n"),
        ],
    ));
    reply.push_str(&exec("e3c", "printf 'x\\n' >> a.txt"));
    reply.push_str(&exec("e4d", "rm gen/f1.txt"));
    let out = s.loaf(&["apply", "--json"], &s.reply(&reply));
    s.assert_exit(&out, 0);
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let data = |i: usize| json["results"][i]["data"].clone();
    assert_eq!(data(0)["created"].as_array().map(Vec::len), Some(100));
    assert_eq!(data(0)["created_more"], 50);
    assert!(data(0).get("changed").is_none(), "{}", data(0));
    let root = s.root.display().to_string();
    assert_eq!(
        data(2)["changed"],
        serde_json::json!([format!("{root}/a.txt")])
    );
    assert!(
        data(2).get("created").is_none(),
        "keep.txt was the fs action's"
    );
    assert_eq!(
        data(3)["deleted"],
        serde_json::json!([format!("{root}/gen/f1.txt")])
    );

    // The text report sums many up.
    let s = scratch();
    let out = s.apply(&exec(
        "e1a",
        "mkdir gen && for i in $(seq 1 12); do echo $i > gen/f$i.txt; done",
    ));
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains(
            "e1a ✅ exec bash\n    created 12 files: /repo/gen/f1.txt, /repo/gen/f10.txt, /repo/gen/f11.txt, …\n"
        ),
        "{report}"
    );
}

#[test]
fn an_exec_that_changes_nothing_names_nothing() {
    let s = scratch();
    let out = s.apply(&exec(
        "e1a",
        "cat a.txt > /dev/null && echo hi > build/cache.o",
    ));
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert!(report.contains("e1a ✅ exec bash\n=== OUTPUTS"), "{report}");
}

/// After the first exec block the stage is read again only where its stat data changed: a
/// file rewritten in place with content of the same size, one made and then removed, an
/// edit by an fs action between blocks, a new folder — each block still names exactly its
/// own changes, and the commit holds exactly what the stage holds at the end.
#[test]
fn later_exec_blocks_see_every_change_of_the_stage() {
    let s = scratch();
    let reply = block(
        "w0z",
        "file_write",
        &[("path", "/repo/pre.txt"), ("content", "pre\n")],
    ) + &exec("e1a", "printf 'AAA\\n' > a.txt; printf 'tmp\\n' > gone.txt")
        + &exec(
            "e2b",
            "printf 'BBB\\n' > a.txt; rm gone.txt; mkdir -p new/deep; printf 'n\\n' > new/deep/n.txt",
        )
        + &block(
            "w3c",
            "file_write",
            &[("path", "/repo/keep.txt"), ("content", "kept by write\n")],
        )
        + &exec("e4d", "printf 'k2\\n' >> keep.txt; rm old.txt");
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    let line_after = |id: &str| -> String {
        let mut lines = report.lines().skip_while(|l| !l.starts_with(id));
        lines.next();
        lines.next().unwrap_or_default().to_owned()
    };
    assert!(
        line_after("e1a").contains("created /repo/gone.txt"),
        "{report}"
    );
    assert!(
        line_after("e1a").contains("changed /repo/a.txt"),
        "{report}"
    );
    // What the write before it wrote is not the code's.
    assert!(!line_after("e1a").contains("pre.txt"), "{report}");
    assert_eq!(s.git(&["show", "HEAD:pre.txt"]), "pre\n");
    let e2 = line_after("e2b");
    assert!(e2.contains("changed /repo/a.txt"), "{report}");
    assert!(e2.contains("deleted /repo/gone.txt"), "{report}");
    assert!(e2.contains("created /repo/new/deep/n.txt"), "{report}");
    let e4 = line_after("e4d");
    assert!(e4.contains("changed /repo/keep.txt"), "{report}");
    assert!(e4.contains("deleted /repo/old.txt"), "{report}");
    assert!(!e4.contains("a.txt"), "{report}");
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "BBB\n");
    assert_eq!(s.git(&["show", "HEAD:keep.txt"]), "kept by write\nk2\n");
    assert_eq!(s.git(&["show", "HEAD:new/deep/n.txt"]), "n\n");
    let files = s.git(&["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        !files.contains("old.txt") && !files.contains("gone.txt"),
        "{files}"
    );
}
