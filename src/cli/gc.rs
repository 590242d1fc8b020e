//! `git loaf gc`: drop old operation-log entries and pack what git-loaf wrote.

use clap::Args;

use super::{CliError, Outcome};
use crate::ops::gc::{self, Collected};

/// Drop old operation-log entries and pack what git-loaf wrote
///
/// Entries older than the limit go, the loose objects only git-loaf's refs reach are
/// packed, and the packs git-loaf wrote for your uncommitted work (one per recording of many
/// changed files) are merged into one. Undo and redo of every kept entry still work. Kept commits (`git loaf take` / `drop`)
/// are never dropped; refs a forced undo saved go with its entry. Nothing your branches,
/// tags or remotes reach is removed, and nothing their tips hold is repacked; objects
/// nothing reaches any more are left to `git gc`. A `gc` section in loaf.yml sets the
/// limit and makes git-loaf prune by itself, at most once a day.
#[derive(Debug, Args)]
#[command(after_help = super::examples::examples(&[
    ("See what would go, then do it", &["git loaf gc --dry-run", "git loaf gc"]),
    ("Keep only the last week of operations", &["git loaf gc --keep-days 7"]),
]))]
pub struct GcArgs {
    /// Keep entries from the last N days (default: loaf.yml's gc.keep-days, else 90).
    #[arg(long, value_name = "N")]
    keep_days: Option<u64>,
    /// Only say what would be dropped, packed and merged.
    #[arg(long)]
    dry_run: bool,
}

/// Runs `git loaf gc`.
pub fn run(args: &GcArgs) -> Result<Outcome, CliError> {
    let collected = gc::gc(&super::current_dir()?, args.keep_days, args.dry_run)?;
    super::print_out(&render(&collected)).map(|()| Outcome::Success)
}

/// What gc did, for people.
pub fn render(c: &Collected) -> String {
    let (drop, pack) = if c.dry_run {
        ("would drop", "would pack")
    } else {
        ("dropped", "packed")
    };
    let mut out = format!(
        "{drop} {} operation-log {} older than {} days ({} kept)\n",
        c.dropped.len(),
        if c.dropped.len() == 1 {
            "entry"
        } else {
            "entries"
        },
        c.keep_days,
        c.kept
    );
    if !c.held.is_empty() {
        let n = c.held.len();
        out.push_str(&format!(
            "kept {n} older {} that a pending operation needs:\n",
            if n == 1 { "entry" } else { "entries" }
        ));
        for held in &c.held {
            out.push_str(&format!(
                "  {} {} ({}): {}\n",
                held.entry.id,
                held.entry.kind.command(),
                held.entry.summary,
                held.why
            ));
        }
    }
    for name in &c.saved_dropped {
        out.push_str(&format!("{drop} {name} (saved by a forced undo)\n"));
    }
    if c.reports_dropped > 0 {
        out.push_str(&format!(
            "{drop} the full reports (outputs included) of {} commit(s) those entries made\n",
            c.reports_dropped
        ));
    }
    out.push_str(&format!(
        "{pack} {} loose {} git-loaf wrote",
        c.packed.objects,
        if c.packed.objects == 1 {
            "object"
        } else {
            "objects"
        }
    ));
    match &c.packed.pack {
        Some(pack) => out.push_str(&format!(
            " into {}\n",
            pack.file_name().unwrap_or_default().to_string_lossy()
        )),
        None => out.push('\n'),
    }
    let merged = c.packed.merged;
    if merged.packs > 0 {
        let merge = if c.dry_run { "would merge" } else { "merged" };
        out.push_str(&format!(
            "{merge} {} packs git-loaf wrote ({} objects) into one\n",
            merged.packs, merged.objects
        ));
    }
    out
}
