use super::*;
use crate::exec::ShowThrough as _;
use crate::git::testing::{git, init_repo, write_file};

/// A repository whose `.gitignore` ignores `.venv/`, `.env`, `*.log`, `build/` and
/// `secrets/`, with one commit (`src/a.txt`, and `build/keep.txt` tracked though ignored) and
/// ignored content of every kind on disk.
pub(crate) fn repo() -> (tempfile::TempDir, Repository) {
    let dir = init_repo();
    let root = dir.path();
    write_file(
        root,
        ".gitignore",
        ".venv/\n.env\n*.log\nbuild/\nsecrets/\n",
    );
    write_file(root, "src/a.txt", "a\n");
    write_file(root, "build/keep.txt", "tracked though ignored\n");
    git(root, &["add", ".gitignore", "src/a.txt"]);
    git(root, &["add", "-f", "build/keep.txt"]);
    git(root, &["commit", "-q", "-m", "first"]);
    write_file(root, ".venv/pyvenv.cfg", "home = /usr/bin\n");
    write_file(root, ".venv/lib/site.py", "# site\n");
    write_file(root, ".env", "PASSWORD=1\n");
    write_file(root, "top.log", "log\n");
    write_file(root, "build/out.o", "object\n");
    write_file(root, "new/notes.txt", "untracked\n");
    write_file(root, "new/run.log", "ignored in an untracked folder\n");
    write_file(root, "src/secrets/key", "k\n");
    let repo = Repository::open(root).expect("open");
    (dir, repo)
}

fn entry(path: &str, is_dir: bool) -> Entry {
    Entry {
        path: path.into(),
        is_dir,
    }
}

#[test]
fn ignored_entries_are_the_topmost_ones_as_git_status_lists_them() {
    let (dir, repo) = repo();
    let none = isolate_set(&[]).expect("globs");
    let entries = ignored_entries(&repo, &none).expect("entries");
    assert_eq!(
        entries,
        [
            entry(".env", false),
            entry(".venv", true),
            entry("build/out.o", false),
            entry("new/run.log", false),
            entry("src/secrets", true),
            entry("top.log", false),
        ]
    );
    // What git itself lists (folders end with `/`).
    let listed = git(dir.path(), &["status", "--porcelain", "--ignored"]);
    let ours: Vec<String> = entries
        .iter()
        .map(|e| e.path.display().to_string() + if e.is_dir { "/" } else { "" })
        .collect();
    let gits: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("!! "))
        .collect();
    assert_eq!(ours, gits, "{listed}");
    let isolate = isolate_set(&[".env".into(), "**/secrets/**".into()]).expect("globs");
    let kept: Vec<PathBuf> = ignored_entries(&repo, &isolate)
        .expect("entries")
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(
        kept,
        [".venv", "build/out.o", "new/run.log", "top.log"].map(PathBuf::from)
    );
}

#[test]
fn entries_inside_a_submodule_are_left_out() {
    let (dir, repo) = repo();
    let sub = init_repo();
    write_file(sub.path(), ".gitignore", "*.log\n");
    git(sub.path(), &["add", "-A"]);
    git(sub.path(), &["commit", "-q", "-m", "sub"]);
    let url = sub.path().display().to_string();
    git(
        dir.path(),
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &url,
            "lib/sub",
        ],
    );
    write_file(&dir.path().join("lib/sub"), "inner.log", "x\n");
    let none = isolate_set(&[]).expect("globs");
    let entries = ignored_entries(&repo, &none).expect("entries");
    assert!(
        entries.iter().all(|e| !e.path.starts_with("lib")),
        "{entries:?}"
    );
    assert!(entries.contains(&entry(".venv", true)));
}

#[test]
fn isolate_globs_are_relative_and_a_folder_pattern_covers_the_folder() {
    let set =
        isolate_set(&["secrets/**".into(), "**/*.pem".into(), "./.env".into()]).expect("globs");
    assert!(isolated(&set, Path::new("secrets")));
    assert!(isolated(&set, Path::new("secrets/a/b")));
    assert!(isolated(&set, Path::new("certs/x.pem")));
    assert!(isolated(&set, Path::new(".env")));
    assert!(!isolated(&set, Path::new("a/.env")), "relative to the root");
    assert!(!isolated(&set, Path::new("a/secrets")));
    assert!(!isolated(
        &isolate_set(&[]).expect("globs"),
        Path::new(".env")
    ));
    let error = isolate_set(&["a[".into()]).expect_err("bad glob");
    assert!(error.to_string().contains("'a['"), "{error}");
}

#[test]
fn placeholders_fill_only_empty_places_and_go_away_unless_written() {
    let stage = tempfile::tempdir().expect("tempdir");
    write_file(stage.path(), "build/keep.txt", "tracked\n");
    let placed = place(
        stage.path(),
        &[
            entry(".venv", true),
            entry(".env", false),
            entry("build/out.o", false),
            entry("build/keep.txt", false),
        ],
    )
    .expect("placed");
    let made: Vec<&Path> = placed.entries().map(|e| e.path.as_path()).collect();
    assert_eq!(made, [".venv", ".env", "build/out.o"].map(Path::new));
    assert!(stage.path().join(".venv").is_dir());
    assert_eq!(std::fs::read(stage.path().join(".env")).ok(), Some(vec![]));
    assert!(placed.holds(Path::new(".env")));
    assert!(!placed.holds(Path::new("build/keep.txt")), "not ours");
    // A run wrote `.env` (by a rename: another file) and into `.venv`.
    write_file(stage.path(), ".env.tmp", "");
    std::fs::rename(stage.path().join(".env.tmp"), stage.path().join(".env")).expect("mv");
    write_file(stage.path(), ".venv/x", "x\n");
    assert!(!placed.holds(Path::new(".env")), "replaced");
    assert!(!placed.holds(Path::new(".venv")), "not empty");
    let kept = placed.remove();
    assert_eq!(kept, [".env", ".venv"].map(PathBuf::from));
    assert!(!stage.path().join("build/out.o").exists());
    assert_eq!(
        std::fs::read_to_string(stage.path().join("build/keep.txt"))
            .ok()
            .as_deref(),
        Some("tracked\n")
    );
}

#[test]
fn ignored_untracked_unisolated_paths_show_through() {
    let (dir, _repo) = repo();
    let view = Visibility::new(
        dir.path(),
        isolate_set(&["**/secrets/**".into()]).expect("globs"),
    );
    for shown in [
        ".env",
        ".venv",
        ".venv/pyvenv.cfg",
        "top.log",
        "build/out.o",
        "new/run.log",
    ] {
        assert!(view.shows(Path::new(shown)), "{shown}");
    }
    for hidden in [
        "src/a.txt",
        "src",
        "new/notes.txt",
        "build/keep.txt",
        "build",
        "src/secrets/key",
        ".git/config",
        ".GIT/config",
        "",
    ] {
        assert!(!view.shows(Path::new(hidden)), "{hidden}");
    }
    view.copy_made(Path::new(".env"));
    assert!(!view.shows(Path::new(".env")), "the stage's copy rules now");
    assert_eq!(view.copied(), BTreeSet::from([PathBuf::from(".env")]));
}

#[test]
fn ignored_entries_match_git_for_untracked_folders_negations_and_nested_repositories() {
    let (dir, repo) = repo();
    let root = dir.path();
    write_file(
        root,
        ".gitignore",
        ".venv/\n.env\n*.log\nbuild/\nsecrets/\ncache/*\n!cache/keep\n",
    );
    write_file(root, "logs/a.log", "only ignored inside: one entry\n");
    write_file(root, "logs/deep/b.log", "x\n");
    write_file(root, "cache/drop", "ignored\n");
    write_file(root, "cache/keep", "negated: untracked\n");
    write_file(root, "mixed/c.log", "ignored\n");
    write_file(root, "mixed/notes.md", "untracked\n");
    std::fs::create_dir_all(root.join("empty")).expect("mkdir");
    git(&root.join("mixed"), &["init", "-q", "nested"]);
    write_file(
        root,
        "mixed/nested/inner.log",
        "inside another repository\n",
    );
    let none = isolate_set(&[]).expect("globs");
    let ours: Vec<String> = ignored_entries(&repo, &none)
        .expect("entries")
        .iter()
        .map(|e| e.path.display().to_string() + if e.is_dir { "/" } else { "" })
        .collect();
    let listed = git(root, &["status", "--porcelain", "--ignored"]);
    let gits: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("!! "))
        .collect();
    assert_eq!(ours, gits, "{listed}");
    assert!(ours.contains(&"logs/".to_owned()), "{ours:?}");
    // An isolated file keeps its folder from becoming one entry.
    let isolate = isolate_set(&["logs/a.log".into()]).expect("globs");
    let kept: Vec<PathBuf> = ignored_entries(&repo, &isolate)
        .expect("entries")
        .into_iter()
        .map(|e| e.path)
        .filter(|p| p.starts_with("logs"))
        .collect();
    assert_eq!(kept, [PathBuf::from("logs/deep")]);
}

/// A folder that holds a tracked file only deep down (here one tracked though ignored) is
/// the stage's, never one ignored entry: exec would otherwise get the user's whole folder
/// mounted over the stage's and write the tracked file in the user's tree directly.
#[test]
fn a_folder_with_a_deeply_tracked_file_is_not_an_ignored_entry() {
    let (dir, repo) = repo();
    let root = dir.path();
    write_file(root, "lib/inner/keep.log", "tracked though ignored\n");
    git(root, &["add", "-f", "lib/inner/keep.log"]);
    write_file(root, "lib/x.log", "ignored\n");
    let none = isolate_set(&[]).expect("globs");
    let ours: Vec<PathBuf> = ignored_entries(&repo, &none)
        .expect("entries")
        .into_iter()
        .map(|e| e.path)
        .filter(|p| p.starts_with("lib"))
        .collect();
    assert_eq!(ours, [PathBuf::from("lib/x.log")]);
}

/// A placeholder file written in place (the same file, no longer empty) holds what was
/// written: the file actions read it, not the user's file it stood for, and it is kept.
#[test]
fn a_placeholder_written_in_place_is_no_longer_a_placeholder() {
    let stage = tempfile::tempdir().expect("tempdir");
    let placed = place(stage.path(), &[entry(".env", false)]).expect("placed");
    std::fs::write(stage.path().join(".env"), "WRITTEN=1\n").expect("write in place");
    assert!(!placed.holds(Path::new(".env")));
    assert_eq!(placed.remove(), [PathBuf::from(".env")]);
}
