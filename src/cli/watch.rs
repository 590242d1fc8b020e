//! `git loaf watch`: the listener.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{CliError, ErrorKind, Outcome};
use crate::watch::clipboard::{Clipboard, FileClipboard, SystemClipboard};
use crate::watch::{Terminal, WatchError, WatchOptions};

/// Apply each reply once as it is saved or copied, and hand the results back
///
/// Save the model's whole reply into FILE (default `.loaf/reply.md` at the repository root,
/// created if missing and kept out of git by `.git/info/exclude`): as soon as it holds
/// complete NESL blocks not applied before, they run as one ordinary apply (`git loaf undo`
/// and `git loaf squash` work on it as usual). The results go to `results.md` beside FILE
/// and to the clipboard, ready to paste back; the terminal shows one line per apply.
///
/// A reply runs once: re-saving it, an editor saving twice, or restarting the watcher does
/// not run it again (it is known by the hash of its blocks, kept in the operation log);
/// a changed or new block makes it new. Replace the file's content with each new reply, or
/// paste it below the last: the blocks that ran already are not run again.
///
/// Ctrl-C stops after the apply under way. Exits 0 when stopped, 2 when it cannot start,
/// 3 when another watcher runs for the repository.
#[derive(Debug, Args)]
#[command(after_help = super::examples::examples(&[
    (
        "Save each reply into .loaf/reply.md, paste .loaf/results.md back",
        &["git loaf watch"],
    ),
    (
        "Also apply replies copied to the clipboard",
        &["git loaf watch --clipboard"],
    ),
    ("Watch a file of your choice", &["git loaf watch reply.md"]),
]))]
pub struct WatchArgs {
    /// The file to watch [default: .loaf/reply.md at the repository root].
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// Also watch the clipboard: copied text holding complete NESL blocks is applied once
    /// (what it holds when the watcher starts counts too), and the results replace it on the
    /// clipboard; other text is left alone.
    #[arg(long)]
    clipboard: bool,
}

/// Runs `git loaf watch`.
pub fn run(args: &WatchArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    let mut options = WatchOptions::new(&cwd);
    options.file = args.file.clone();
    options.clipboard = args.clipboard;
    // For tests and scripts: stop after N applies or when a file appears; poll faster.
    options.max_applies = env_number("LOAF_WATCH_MAX_APPLIES").map(|n| n as usize);
    options.stop_file = std::env::var_os("LOAF_WATCH_STOP_FILE").map(PathBuf::from);
    if let Some(ms) = env_number("LOAF_WATCH_POLL_MS") {
        options.clipboard_poll = Duration::from_millis(ms);
    }
    // A file standing in for the clipboard (tests; a helper syncing a file with it).
    let mut clipboard: Box<dyn Clipboard> = match std::env::var_os("LOAF_CLIPBOARD_FILE") {
        Some(path) => Box::new(FileClipboard::new(&PathBuf::from(path))),
        None => Box::new(SystemClipboard::default()),
    };
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let terminal = Terminal {
        out: &mut out,
        err: &mut err,
    };
    crate::watch::watch(&options, clipboard.as_mut(), terminal).map_err(cli_error)?;
    Ok(Outcome::Success)
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

fn cli_error(error: WatchError) -> CliError {
    CliError {
        kind: if error.is_refusal() {
            ErrorKind::Refused
        } else {
            ErrorKind::Usage
        },
        hint: Some(error.hint()),
        message: error.to_string(),
    }
}
