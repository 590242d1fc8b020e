//! `git loaf install-man-pages`: roff manual pages rendered from the clap definitions, one for
//! `git-loaf` and one per subcommand (`git-loaf-apply.1`, …), because git turns
//! `git loaf --help` into `man git-loaf` and has no other way to show our help.

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};

use super::examples::examples;
use super::{Cli, CliError, Outcome};

/// Write the manual pages, so that `git loaf --help` and `man git-loaf` open them.
///
/// One page for `git-loaf`, one per command (`git-loaf-apply.1`, …). By default they go to
/// `share/man/man1` beside the folder of the running executable: man searches `../share/man`
/// next to every folder on PATH, so after `cargo install --path . --root ~/.local` the pages
/// land in `~/.local/share/man/man1`.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("Beside the installed binary, then read them", &["git loaf install-man-pages", "git loaf --help"]),
    ("Into a folder of your choosing", &["git loaf install-man-pages --dir ~/.local/share/man/man1"]),
]))]
pub struct InstallManPagesArgs {
    /// The folder to write the pages to (created if missing).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Runs `git loaf install-man-pages`.
pub fn run(args: &InstallManPagesArgs) -> Result<Outcome, CliError> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => default_dir()?,
    };
    let written = install(&dir)?;
    let mut out = format!(
        "Wrote {} manual pages to {}:\n",
        written.len(),
        dir.display()
    );
    for path in &written {
        out.push_str(&format!("  {}\n", path.display()));
    }
    out.push_str("Check with `man git-loaf` (or `git loaf --help`).\n");
    if args.dir.is_some() {
        // A folder of our choosing is only searched if man knows it: say how.
        if let Some(root) = dir.parent() {
            out.push_str(&format!(
                "If man does not find it, add {} to MANPATH (e.g. `export MANPATH={}:`).\n",
                root.display(),
                root.display()
            ));
        }
    }
    super::print_out(&out).map(|()| Outcome::Success)
}

/// `<dir of the executable>/../share/man/man1`.
fn default_dir() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe().map_err(|e| {
        CliError::usage(
            format!("cannot find the running executable: {e}"),
            "give the folder with --dir",
        )
    })?;
    // `parent` of a file, then of its folder: `bin/git-loaf` → `bin` → the install root.
    let root = exe.parent().and_then(Path::parent).ok_or_else(|| {
        CliError::usage(
            format!("{} has no install root above it", exe.display()),
            "give the folder with --dir",
        )
    })?;
    Ok(root.join("share").join("man").join("man1"))
}

/// Writes every page into `dir` and returns the paths written, `git-loaf.1` first.
fn install(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let cannot = |what: &str, path: &Path, e: std::io::Error| {
        CliError::usage(
            format!("cannot {what} {}: {e}", path.display()),
            "give a writable folder with --dir",
        )
    };
    std::fs::create_dir_all(dir).map_err(|e| cannot("create", dir, e))?;
    let mut written = Vec::new();
    for (name, page) in pages().map_err(|e| cannot("render the pages for", dir, e))? {
        let path = dir.join(name);
        std::fs::write(&path, page).map_err(|e| cannot("write", &path, e))?;
        written.push(path);
    }
    Ok(written)
}

/// Every page as (file name, roff), the top-level page first, then the subcommands in the
/// order `--help` lists them.
fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    // Building sets each subcommand's display name (`git-loaf-apply`), which names its page,
    // and its bin name (`git loaf apply`), which its synopsis shows. The `help` subcommand
    // has no page: `git loaf help <cmd>` is what these pages replace.
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    let mut commands = vec![cli.clone()];
    commands.extend(cli.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    commands
        .into_iter()
        .map(|command| {
            Ok((
                clap_mangen::Man::new(command.clone()).get_filename(),
                page(command)?,
            ))
        })
        .collect()
}

/// One page: clap_mangen's sections in its order, except that the help's examples become an
/// EXAMPLES section with each command on a line of its own (clap_mangen would fill them into
/// one paragraph under "EXTRA").
fn page(command: clap::Command) -> std::io::Result<Vec<u8>> {
    let after_help = command
        .get_after_long_help()
        .or_else(|| command.get_after_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    let has_arguments = command.get_arguments().any(|a| !a.is_hide_set());
    let has_subcommands = command.get_subcommands().any(|s| !s.is_hide_set());
    let has_version = command.get_version().is_some();
    let man = clap_mangen::Man::new(command);
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if has_arguments {
        man.render_options_section(&mut page)?;
    }
    if has_subcommands {
        man.render_subcommands_section(&mut page)?;
    }
    page.extend_from_slice(super::examples::roff_section(&after_help).as_bytes());
    if has_version {
        man.render_version_section(&mut page)?;
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_page_per_subcommand_named_as_git_looks_for_it() {
        let pages = pages().expect("renders");
        let names: Vec<&str> = pages.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names[0], "git-loaf.1");
        for name in [
            "git-loaf-apply.1",
            "git-loaf-step-back.1",
            "git-loaf-completions.1",
        ] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        assert!(!names.contains(&"git-loaf-help.1"), "{names:?}");
        for (name, page) in &pages {
            let text = String::from_utf8_lossy(page);
            assert!(text.contains(".TH"), "{name}: {text}");
            assert!(text.contains(".SH EXAMPLES\n"), "{name}: {text}");
            assert!(!text.contains("EXTRA"), "{name}: {text}");
        }
    }

    #[test]
    fn a_subcommand_page_shows_the_git_loaf_usage() {
        let pages = pages().expect("renders");
        let (_, apply) = pages
            .iter()
            .find(|(name, _)| name == "git-loaf-apply.1")
            .expect("apply page");
        let text = String::from_utf8_lossy(apply);
        assert!(text.contains("git loaf apply"), "{text}");
    }
}
