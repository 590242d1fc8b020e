//! A loaf.yml a reply or an agent writes waits for the user (DESIGN §2 "Config a reply writes
//! waits for the user", §5 "Which loaf.yml governs"): real replies widen loaf.yml (exec, the
//! network, a writable path, a hook), and the NEXT apply still runs under the accepted one
//! and says a change waits, until `git loaf config accept`; a narrowing, and the user's own
//! edit or commit, govern at once.

use std::net::TcpListener;
use std::time::Duration;

use crate::scratch::{Scratch, block};

const FS_ONLY: &str = "allowed-actions: [defaults]\n";
const EXEC: &str = "allowed-actions: [defaults, exec]\n";
const EXEC_NETWORK: &str = "allowed-actions: [defaults, exec]\nexec:\n  network: true\n";

/// What every report says while a change waits.
const WAITS: &str = "`git loaf config accept` accepts it";

/// A repository whose loaf.yml (`loaf_yml`) the user committed.
fn users_repo(loaf_yml: &str) -> Scratch {
    Scratch::with(&[("loaf.yml", loaf_yml), ("a.txt", "a\n")])
}

/// A reply writing loaf.yml (`/repo` stands for the root: [`Scratch::apply`] fills it in).
fn writes_config(content: &str) -> String {
    block(
        "c1a",
        "file_write",
        &[("path", "/repo/loaf.yml"), ("content", content)],
    )
}

fn exec(code: &str) -> String {
    block("e1a", "exec", &[("lang", "bash"), ("code", code)])
}

fn stdout(s: &Scratch, out: &std::process::Output) -> String {
    s.redact(&out.stdout)
}

/// Whether something connected to `listener` (it is non-blocking: the exec has ended).
fn connected(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::sleep(Duration::from_millis(50));
    listener.accept().is_ok()
}

fn connect_reply(listener: &TcpListener) -> String {
    let port = listener.local_addr().expect("addr").port();
    exec(&format!("echo hello > /dev/tcp/127.0.0.1/{port}"))
}

#[test]
fn a_reply_that_turns_the_network_on_waits_until_the_user_accepts() {
    let s = users_repo(EXEC);
    let written = s.apply(&writes_config(EXEC_NETWORK));
    s.assert_exit(&written, 0);
    // The apply that wrote it says at once that it waits, on the report and on stderr.
    assert!(
        stdout(&s, &written).contains(WAITS),
        "{}",
        stdout(&s, &written)
    );
    assert!(String::from_utf8_lossy(&written.stderr).contains(WAITS));
    assert_eq!(s.read("loaf.yml").as_deref(), Some(EXEC_NETWORK));

    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let next = s.loaf(&["apply", "--json"], &connect_reply(&listener));
    assert!(!connected(&listener), "the next apply had the network");
    let json: serde_json::Value = serde_json::from_slice(&next.stdout).expect("json");
    let pending = json["git"]["configPending"].as_str().unwrap_or_default();
    assert!(pending.contains("exec.network: false → true"), "{json}");
    assert!(pending.contains(WAITS), "{json}");

    let shown = s.loaf(&["config"], "");
    s.assert_exit(&shown, 0);
    let shown = stdout(&s, &shown);
    assert!(
        shown.contains("loaf.yml in force: the one you accepted last"),
        "{shown}"
    );
    assert!(shown.contains("exec.network: false → true"), "{shown}");
    assert!(shown.contains("+  network: true"), "{shown}");

    let accepted = s.loaf(&["config", "accept"], "");
    s.assert_exit(&accepted, 0);
    let accepted = stdout(&s, &accepted);
    assert!(
        accepted.contains("+  network: true"),
        "the difference: {accepted}"
    );
    assert!(accepted.contains("accepted:"), "{accepted}");

    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let after = s.apply(&connect_reply(&listener));
    s.assert_exit(&after, 0);
    assert!(connected(&listener), "accepted, the network is there");
    assert!(
        !stdout(&s, &after).contains(WAITS),
        "{}",
        stdout(&s, &after)
    );
    let shown = stdout(&s, &s.loaf(&["config"], ""));
    assert!(shown.contains("nothing waits for you"), "{shown}");
}

#[test]
fn a_reply_that_enables_exec_leaves_exec_refused_until_accepted() {
    let s = users_repo(FS_ONLY);
    s.assert_exit(&s.apply(&writes_config(EXEC)), 0);
    let refused = s.apply(&exec("echo ran > ran.txt"));
    let report = stdout(&s, &refused);
    assert!(report.contains("not enabled"), "{report}");
    assert!(report.contains("allowed-actions: adds exec"), "{report}");
    assert_eq!(s.read("ran.txt"), None);
    // Told to the model too: `instructions` lists what the accepted loaf.yml allows.
    let instructions = stdout(&s, &s.loaf(&["instructions"], ""));
    assert!(
        !instructions.contains("action = \"exec\""),
        "{instructions}"
    );

    s.assert_exit(&s.loaf(&["config", "accept"], ""), 0);
    s.assert_exit(&s.apply(&exec("echo ran > ran.txt")), 0);
    assert_eq!(s.read("ran.txt").as_deref(), Some("ran\n"));
}

#[test]
fn a_writable_path_a_reply_adds_stays_read_only_until_accepted() {
    let s = users_repo(EXEC);
    let cache = s.sibling("cache");
    std::fs::create_dir(&cache).expect("mkdir");
    let wider = format!("{EXEC}exec:\n  writable: [\"{}\"]\n", cache.display());
    s.assert_exit(&s.apply(&writes_config(&wider)), 0);
    let code = format!("echo cached > {}/entry", cache.display());
    let out = s.apply(&exec(&code));
    assert!(stdout(&s, &out).contains(WAITS), "{}", stdout(&s, &out));
    assert!(
        !cache.join("entry").exists(),
        "written before it was accepted"
    );

    s.assert_exit(&s.loaf(&["config", "accept"], ""), 0);
    s.assert_exit(&s.apply(&exec(&code)), 0);
    assert_eq!(
        std::fs::read_to_string(cache.join("entry")).ok().as_deref(),
        Some("cached\n")
    );
}

#[test]
fn a_hook_a_reply_adds_does_not_run_until_accepted() {
    let s = users_repo(FS_ONLY);
    let hooked = format!("{FS_ONLY}hooks:\n  after:\n    - run: \"echo hook > hooked.txt\"\n");
    s.assert_exit(&s.apply(&writes_config(&hooked)), 0);
    let edit = |content: &str| {
        block(
            "w1a",
            "file_write",
            &[("path", "/repo/a.txt"), ("content", content)],
        )
    };
    let out = s.apply(&edit("b\n"));
    s.assert_exit(&out, 0);
    assert!(stdout(&s, &out).contains("hooks.after: runs `echo hook > hooked.txt`"));
    assert_eq!(
        s.read("hooked.txt"),
        None,
        "the hook ran before it was accepted"
    );

    s.assert_exit(&s.loaf(&["config", "accept"], ""), 0);
    s.assert_exit(&s.apply(&edit("c\n")), 0);
    assert_eq!(s.read("hooked.txt").as_deref(), Some("hook\n"));
}

#[test]
fn a_narrowing_applies_at_once() {
    let s = users_repo(EXEC_NETWORK);
    let written = s.apply(&writes_config(EXEC));
    s.assert_exit(&written, 0);
    assert!(!stdout(&s, &written).contains(WAITS));
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let out = s.apply(&connect_reply(&listener));
    assert!(
        !connected(&listener),
        "the network stayed after the reply took it away"
    );
    assert!(!stdout(&s, &out).contains(WAITS), "{}", stdout(&s, &out));
}

#[test]
fn the_users_own_commit_of_loaf_yml_governs_without_accept() {
    let s = users_repo(EXEC);
    s.assert_exit(&s.apply(&writes_config(FS_ONLY)), 0);
    // The user turns the network on and commits it: theirs, in force at once.
    s.write("loaf.yml", EXEC_NETWORK);
    s.commit_all("allow the network");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let out = s.apply(&connect_reply(&listener));
    s.assert_exit(&out, 0);
    assert!(connected(&listener), "{}", stdout(&s, &out));
    assert!(!stdout(&s, &out).contains(WAITS));
}

#[test]
fn the_users_own_uncommitted_edit_governs_without_accept() {
    let s = users_repo(FS_ONLY);
    s.write("loaf.yml", EXEC);
    let out = s.apply(&exec("echo ran > ran.txt"));
    s.assert_exit(&out, 0);
    assert_eq!(s.read("ran.txt").as_deref(), Some("ran\n"));
    // A reply widening on top of the user's uncommitted edit still waits.
    s.assert_exit(&s.apply(&writes_config(EXEC_NETWORK)), 0);
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let out = s.apply(&connect_reply(&listener));
    assert!(!connected(&listener), "{}", stdout(&s, &out));
    assert!(stdout(&s, &out).contains(WAITS));
}

#[test]
fn an_agents_turn_that_enables_exec_waits_too() {
    let s = users_repo(FS_ONLY);
    s.assert_exit(
        &s.loaf(&["record", "begin", "--prompt", "Enable exec"], ""),
        0,
    );
    s.write("loaf.yml", EXEC);
    // While the turn is recorded the agent's edit is not the user's.
    let during = s.apply(&exec("echo ran > ran.txt"));
    assert!(
        stdout(&s, &during).contains(WAITS),
        "{}",
        stdout(&s, &during)
    );
    s.assert_exit(&s.loaf(&["record", "commit"], ""), 0);
    let after = s.apply(&exec("echo ran > ran.txt"));
    let report = stdout(&s, &after);
    assert!(report.contains("not enabled"), "{report}");
    assert!(report.contains(WAITS), "{report}");
    assert_eq!(s.read("ran.txt"), None);
}

#[test]
fn history_without_a_record_trusts_only_the_users_commits() {
    // A loaf.yml an apply committed before git-loaf kept a record (here: a commit carrying
    // an apply's trailer): the user's older one governs.
    let s = users_repo(FS_ONLY);
    s.write("loaf.yml", EXEC);
    s.git(&["commit", "-qam", "AI: enable exec\n\nLoaf-Apply: abc123"]);
    let out = s.apply(&exec("echo ran > ran.txt"));
    assert!(
        stdout(&s, &out).contains("not enabled"),
        "{}",
        stdout(&s, &out)
    );
    assert_eq!(s.read("ran.txt"), None);
}

#[test]
fn code_cannot_write_the_record_of_what_was_accepted() {
    let s = users_repo(EXEC);
    s.assert_exit(&s.apply(&writes_config(EXEC_NETWORK)), 0);
    let record = s.root.join(".git/loaf/config-accepted.json");
    let before = std::fs::read_to_string(&record).expect("a record");
    let forged = serde_json::json!({"accepted": {"text": EXEC_NETWORK}}).to_string();
    let code = format!(
        "common=$(git rev-parse --git-common-dir)\nprintf '%s' '{forged}' > \"$common/loaf/config-accepted.json\"\nprintf '%s' '{forged}' > {}",
        record.display()
    );
    // Not `s.apply`: the record's path holds `/repo`, which that would rewrite.
    let out = s.loaf(&["apply"], &exec(&code));
    // Whatever the code wrote (a private layer of the git dir, or nothing) is not the record.
    assert_eq!(
        std::fs::read_to_string(&record).ok(),
        Some(before),
        "{}",
        stdout(&s, &out)
    );
    let shown = stdout(&s, &s.loaf(&["config"], ""));
    assert!(shown.contains("exec.network: false → true"), "{shown}");
}

#[test]
fn accept_refuses_a_loaf_yml_that_does_not_load() {
    let s = users_repo(FS_ONLY);
    s.assert_exit(&s.apply(&writes_config("allowed-actions: [nonsense]\n")), 0);
    let out = s.loaf(&["config", "accept"], "");
    s.assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown action 'nonsense'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The accepted one still governs: applies go on.
    s.assert_exit(&s.apply(&writes_config(FS_ONLY)), 0);
}

#[test]
fn taking_a_kept_reply_that_widens_loaf_yml_over_the_users_edit_waits_too() {
    let lines = "# one\n# two\n# three\nvars: {}\n";
    let s = users_repo(&format!("{FS_ONLY}{lines}"));
    let reply = writes_config(&format!("{EXEC}{lines}"));
    // The branch moves while the apply runs: its commit is kept aside, not published.
    let out = s.apply_pausing(&reply, "committed", || {
        s.git(&["commit", "-q", "--allow-empty", "-m", "meanwhile"]);
    });
    s.assert_exit(&out, 3);
    let kept = s.git(&["for-each-ref", "--format=%(refname:lstrip=2)", "refs/loaf/"]);
    let id = kept
        .lines()
        .find(|l| *l != "oplog" && !l.contains('/'))
        .expect("a kept commit")
        .to_owned();
    // The user edits another line of loaf.yml, then takes the reply: the file merges both.
    s.write(
        "loaf.yml",
        &format!("{FS_ONLY}{}", lines.replace("{}", "{ who: me }")),
    );
    let taken = s.loaf(&["take", &id], "");
    s.assert_exit(&taken, 0);
    assert_eq!(
        s.read("loaf.yml"),
        Some(format!("{EXEC}{}", lines.replace("{}", "{ who: me }")))
    );
    assert!(String::from_utf8_lossy(&taken.stderr).contains(WAITS));
    let out = s.apply(&exec("echo ran > ran.txt"));
    assert!(
        stdout(&s, &out).contains("not enabled"),
        "{}",
        stdout(&s, &out)
    );
    assert_eq!(s.read("ran.txt"), None);
}

#[test]
fn a_reply_widening_an_ignored_loaf_yml_waits() {
    // An ignored loaf.yml is never committed: what tells the reply's text from the user's is
    // git-loaf's note of what the apply wrote.
    let s = Scratch::with(&[(".gitignore", "loaf.yml\n"), ("a.txt", "a\n")]);
    s.write("loaf.yml", FS_ONLY);
    s.assert_exit(&s.apply(&writes_config(EXEC)), 0);
    assert_eq!(s.read("loaf.yml").as_deref(), Some(EXEC));
    assert_eq!(s.git(&["ls-files", "loaf.yml"]), "", "not committed");
    let out = s.apply(&exec("echo ran > ran.txt"));
    assert!(
        stdout(&s, &out).contains("not enabled"),
        "{}",
        stdout(&s, &out)
    );
    assert!(stdout(&s, &out).contains(WAITS));
    assert_eq!(s.read("ran.txt"), None);
    // The user's own edit of it afterwards is theirs again.
    s.write("loaf.yml", &format!("{EXEC}# mine\n"));
    s.assert_exit(&s.apply(&exec("echo ran > ran.txt")), 0);
    assert_eq!(s.read("ran.txt").as_deref(), Some("ran\n"));
}

#[test]
fn each_worktree_keeps_its_own_accepted_loaf_yml() {
    let s = users_repo(EXEC);
    let other = s.sibling("other");
    let other_path = other.to_string_lossy().into_owned();
    s.git(&["worktree", "add", "-q", "-b", "other", &other_path]);
    std::fs::write(other.join("loaf.yml"), EXEC_NETWORK).expect("write");
    crate::scratch::git_in(&other, &["commit", "-qam", "the network, on this branch"]);
    s.assert_exit(&s.apply(&writes_config(EXEC_NETWORK)), 0);
    // The other worktree's loaf.yml is the user's there, not here.
    let read = block(
        "r1a",
        "file_read",
        &[("path", &format!("{other_path}/a.txt"))],
    );
    s.assert_exit(&s.loaf_in(&other, &["apply"], &read), 0);
    let out = s.apply(&exec("true"));
    assert!(stdout(&s, &out).contains(WAITS), "{}", stdout(&s, &out));
}
