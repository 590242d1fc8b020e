//! Processes a killed git-loaf left behind in the fallback (code run without namespaces,
//! [`super::fallback`]): the running process group is recorded under the git common dir with
//! its leader's start time, so that the next command's crash recovery ends it
//! ([`kill_recorded`]) and removes the placeholders the run had moved aside. An isolated run
//! needs none of this: its init dies with git-loaf ([`super::namespaces`]).

use std::fs;
use std::io;
use std::path::Path;

/// Where the running exec's process group is recorded, under the git common dir.
pub(super) const RECORD: &str = "loaf/exec-pgid";

/// Removes the folders where a killed fallback run kept its placeholders (the stage's reset
/// makes them again).
fn remove_left_aside(loaf_dir: &Path) {
    let Ok(entries) = fs::read_dir(loaf_dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(b"placeholders-")
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Ends the process group a killed git-loaf left running (recorded in the fallback), and
/// removes the record and the folders of placeholders a killed run left. Call it on crash
/// recovery, before touching the stage. The group is killed only when it is the recorded
/// one: its leader has the recorded start time, or, with the leader gone, every member
/// started after it (a process group id cannot be reused while any member lives). Returns
/// whether a group was killed.
pub fn kill_recorded(git_common_dir: &Path) -> io::Result<bool> {
    remove_left_aside(&git_common_dir.join("loaf"));
    let path = git_common_dir.join(RECORD);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let killed = parse_record(&text).is_some_and(|(pgid, start)| kill_if_ours(pgid, start));
    match fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(killed),
    }
}

fn parse_record(text: &str) -> Option<(u32, u64)> {
    let mut words = text.split_whitespace();
    let pgid = words.next()?.parse().ok()?;
    let start = words.next()?.parse().ok()?;
    Some((pgid, start))
}

fn kill_if_ours(pgid: u32, start: u64) -> bool {
    let members = group_members(pgid);
    let ours = match members.iter().find(|(pid, _)| *pid == pgid) {
        Some((_, leader_start)) => *leader_start == start,
        None => !members.is_empty() && members.iter().all(|(_, s)| *s >= start),
    };
    let Some(group) = rustix::process::Pid::from_raw(pgid as i32) else {
        return false;
    };
    ours && rustix::process::kill_process_group(group, rustix::process::Signal::KILL).is_ok()
}

/// Live processes of group `pgid`, each with its start time.
fn group_members(pgid: u32) -> Vec<(u32, u64)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let (group, start) = stat_fields(pid)?;
            (group == pgid).then_some((pid, start))
        })
        .collect()
}

/// A process's start time (clock ticks since boot), which tells it from a later process
/// that reuses its id.
pub(super) fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid).map(|(_, start)| start)
}

/// The process group and start time from `/proc/<pid>/stat` (fields 5 and 22); None for a
/// process that is gone or a zombie.
pub(super) fn stat_fields(pid: u32) -> Option<(u32, u64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields
        .first()
        .is_some_and(|state| *state == "Z" || *state == "X")
    {
        return None;
    }
    Some((fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}
