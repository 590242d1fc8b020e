//! `git loaf completions` and `git loaf install-man-pages` as a user meets them: the scripts
//! complete `git-loaf` and `git loaf` in a real bash, and after installing the pages into a
//! fresh install root, `man git-loaf` and `git loaf --help` open the manual.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::scratch::ENV;
use crate::support::git_loaf;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run_ok(args: &[&str]) -> String {
    let out = git_loaf().args(args).output().expect("git-loaf runs");
    assert!(
        out.status.success(),
        "git-loaf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

/// Whether `program` can be started (if not, the check is
/// skipped with the reason printed, or failed when `CI` is set).
fn have(program: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        crate::support::unavailable(&format!("`{program}` is not installed"));
    }
    found
}

#[test]
fn every_shell_script_names_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let script = run_ok(&["completions", shell]);
        assert!(script.contains("git-loaf"), "{shell}: {script}");
        for name in ["apply", "step-back", "squash", "install-man-pages"] {
            assert!(script.contains(name), "{shell} lacks {name}: {script}");
        }
    }
    let out = git_loaf()
        .args(["completions", "tcsh"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

/// What bash completes for `words` (the last one is being typed) after sourcing the script,
/// through `complete_with` (a shell snippet that fills COMPREPLY).
fn bash_completes(script: &Path, setup: &str, words: &[&str], complete_with: &str) -> String {
    let line = words.join(" ");
    let program = format!(
        "{setup}\nsource '{}'\nCOMP_WORDS=({line}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n{complete_with}\necho \"${{COMPREPLY[*]}}\"\n",
        script.display(),
        words.len() - 1,
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .envs(ENV)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out).trim().to_owned()
}

#[test]
fn bash_completes_subcommands_and_their_options_as_git_loaf_and_git_loaf() {
    if !have("bash") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("git-loaf.bash");
    std::fs::write(&script, run_ok(&["completions", "bash"])).expect("write");

    let direct =
        "_git__loaf git-loaf \"${COMP_WORDS[COMP_CWORD]}\" \"${COMP_WORDS[COMP_CWORD-1]}\"";
    assert_eq!(
        bash_completes(&script, "", &["git-loaf", "step-"], direct),
        "step-back step-forward"
    );
    // A subcommand's own options (clap_complete alone gets these wrong for hyphenated names).
    assert_eq!(
        bash_completes(&script, "", &["git-loaf", "squash", "--d"], direct),
        "--days --dry-run"
    );
    // `git loaf …` as git's completion hands it over, `git -C dir loaf …` included.
    assert_eq!(
        bash_completes(&script, "", &["git", "loaf", "squash", "--d"], "_git_loaf"),
        "--days --dry-run"
    );
    assert_eq!(
        bash_completes(
            &script,
            "__git_cmd_idx=3",
            &["git", "-C", "x", "loaf", "step-"],
            "_git_loaf"
        ),
        "step-back step-forward"
    );
    // And through git's own bash completion, where it is installed.
    let git_completion = Path::new("/usr/share/bash-completion/completions/git");
    if git_completion.exists() {
        let setup = format!("source '{}'", git_completion.display());
        assert_eq!(
            bash_completes(
                &script,
                &setup,
                &["git", "loaf", "squash", "--d"],
                "__git_wrap__git_main"
            ),
            "--days --dry-run"
        );
    } else {
        crate::support::unavailable(&format!(
            "git's bash completion is not installed ({})",
            git_completion.display()
        ));
    }
}

/// A fresh install root with the built binary in `bin/`, as `cargo install --root` makes it.
fn install_root(dir: &Path) -> PathBuf {
    let bin = dir.join("root").join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let exe = bin.join("git-loaf");
    // A hard link opens nothing for writing; a copy's open file can be inherited by a child
    // another test thread forks at that moment, and running it then fails "text file busy".
    if std::fs::hard_link(env!("CARGO_BIN_EXE_git-loaf"), &exe).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_git-loaf"), &exe).expect("copy the binary");
        // Wait until no forked child holds the copy open for writing.
        for _ in 0..50 {
            match Command::new(&exe).arg("--version").output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                _ => break,
            }
        }
    }
    exe
}

#[test]
fn install_man_pages_writes_a_roff_page_per_command_into_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let man1 = dir.path().join("man").join("man1");
    let printed = run_ok(&["install-man-pages", "--dir", &man1.to_string_lossy()]);
    for name in [
        "git-loaf",
        "git-loaf-apply",
        "git-loaf-step-back",
        "git-loaf-squash",
    ] {
        let path = man1.join(format!("{name}.1"));
        let page =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
        assert!(
            printed.contains(&path.to_string_lossy().into_owned()),
            "{printed}"
        );
    }
    assert!(printed.contains("man git-loaf"), "{printed}");

    if !have("man") {
        return;
    }
    let out = Command::new("man")
        .args(["-P", "cat", "git-loaf"])
        .env("MANPATH", dir.path().join("man"))
        .env("MANWIDTH", "80")
        .output()
        .expect("man runs");
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("step-back"), "{text}");
    assert!(text.contains("git-loaf-apply(1)"), "{text}");
}

#[test]
fn after_installing_into_a_fresh_root_git_loaf_help_opens_the_manual() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = install_root(dir.path());
    let out = Command::new(&exe)
        .arg("install-man-pages")
        .envs(ENV)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let man1 = dir
        .path()
        .join("root")
        .join("share")
        .join("man")
        .join("man1");
    assert!(man1.join("git-loaf.1").is_file(), "{}", stdout(&out));
    assert!(man1.join("git-loaf-apply.1").is_file());

    if !have("man") {
        return;
    }
    // Only the install root's bin on PATH before the system's, no MANPATH: man finds
    // `../share/man` beside it, and git turns `git loaf --help` into `man git-loaf`.
    let path = format!(
        "{}:{}",
        exe.parent().expect("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("git")
        .args(["loaf", "--help"])
        .current_dir(dir.path())
        .envs(ENV)
        .env("PATH", &path)
        .env_remove("MANPATH")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .expect("git runs");
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("git-loaf-step-back(1)"), "{text}");
}
