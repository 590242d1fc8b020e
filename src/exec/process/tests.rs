use std::time::{Duration, Instant};

use super::*;

fn bash(script: &str, timeout_ms: u64, max_output: usize) -> Job<'static> {
    Job {
        program: "bash",
        args: vec!["-c".into(), script.into()],
        cwd: Path::new("/"),
        env: Vec::new(),
        environment: &crate::exec::environment::DEFAULT_ENVIRONMENT,
        path: None,
        timeout: Duration::from_millis(timeout_ms),
        max_output,
        sandbox: None,
    }
}

/// Whether a process is still running two seconds from now, at the latest. (SIGKILL is
/// delivered asynchronously; a killed process may linger as a zombie nobody reaps.)
pub(crate) fn is_running(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while is_running_now(pid) {
        if Instant::now() > deadline {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn is_running_now(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// The first line of the output as a pid.
pub(crate) fn first_pid(text: &str) -> u32 {
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

#[test]
fn captures_exit_code_and_both_streams() {
    let done = run(&bash("echo out; echo err >&2; exit 3", 5000, 1024)).unwrap();
    assert_eq!(done.ending, Ending::Exited(3));
    assert_eq!(done.stdout.text, "out\n");
    assert_eq!(done.stderr.text, "err\n");
    assert!(!done.stdout.truncated);
}

#[test]
fn timeout_kills_the_whole_group_with_its_background_children() {
    let started = Instant::now();
    let done = run(&bash("sleep 30 & echo $!; sleep 30", 300, 1024)).unwrap();
    assert_eq!(done.ending, Ending::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(3));
    let grandchild = first_pid(&done.stdout.text);
    assert!(!is_running(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn a_background_child_left_behind_neither_blocks_nor_survives() {
    let started = Instant::now();
    let done = run(&bash("sleep 30 & echo $!", 10_000, 1024)).unwrap();
    assert_eq!(done.ending, Ending::Exited(0));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(!is_running(first_pid(&done.stdout.text)));
}

#[test]
fn a_process_that_left_the_group_is_not_waited_for_past_the_grace() {
    let started = Instant::now();
    let done = run(&bash("echo before; setsid sleep 3; true", 200, 1024)).unwrap();
    assert_eq!(done.ending, Ending::TimedOut);
    assert_eq!(done.stdout.text, "before\n");
    assert!(started.elapsed() < Duration::from_millis(200) + PIPE_GRACE * 3);
}

#[test]
fn output_past_the_cap_is_read_counted_and_dropped() {
    // 200 KiB through a 64 KiB pipe: the child finishes only if we keep reading.
    let done = run(&bash("head -c 204800 /dev/zero | tr '\\0' a", 5000, 1000)).unwrap();
    assert_eq!(done.ending, Ending::Exited(0));
    assert_eq!(done.stdout.text.len(), 1000);
    assert_eq!(done.stdout.total_bytes, 204_800);
    assert!(done.stdout.truncated);
    let marked = done.stdout.marked(1000);
    assert!(marked.ends_with("a\n… [output truncated at 1000 bytes]"));
}

#[test]
fn a_character_cut_by_the_cap_is_dropped_whole() {
    let done = run(&bash("printf 'ab\\xc3\\xa9cd'", 5000, 3)).unwrap();
    assert_eq!(done.stdout.text, "ab");
    assert!(done.stdout.truncated);
}

#[test]
fn invalid_utf8_is_decoded_lossily() {
    let done = run(&bash("printf 'a\\xffb'", 5000, 1024)).unwrap();
    assert_eq!(done.stdout.text, "a\u{fffd}b");
}

#[test]
fn a_signal_is_named() {
    let done = run(&bash("kill -SEGV $$", 5000, 1024)).unwrap();
    assert_eq!(
        done.ending,
        Ending::Signalled(SignalName(Signal::SEGV.as_raw()))
    );
    assert_eq!(SignalName(Signal::SEGV.as_raw()).to_string(), "SIGSEGV");
    assert_eq!(SignalName(99).to_string(), "signal 99");
}

#[test]
fn a_missing_program_says_so() {
    let empty = tempfile::tempdir().unwrap();
    let mut job = bash("true", 5000, 1024);
    job.path = Some(empty.path().into());
    let err = run(&job).unwrap_err();
    assert_eq!(err.to_string(), "bash not found in PATH (ENOENT)");
}

#[test]
fn seconds_read_like_the_seed() {
    assert_eq!(seconds(Duration::from_secs(30)), "30s");
    assert_eq!(seconds(Duration::from_millis(1500)), "1.5s");
}
