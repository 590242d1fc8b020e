//! What the `instructions` answer for a repository: the text a model needs to write
//! replies, for the same root and the loaf.yml (the one the user accepted) that `apply`
//! uses, so that the text matches what apply accepts (docs/nesl.md).

use std::path::Path;

use super::OpError;

/// The instructions for the repository (or folder) containing `cwd`.
pub fn render(cwd: &Path) -> Result<String, OpError> {
    let cwd = cwd.to_path_buf();
    // The same root and configuration `apply` uses, so the text matches what it accepts.
    let root = crate::git::worktree_root(&cwd).unwrap_or(cwd);
    // The loaf.yml the user accepted: a wider one a reply wrote is not in force yet.
    let config = super::config::load_or_explain(&root)?;
    Ok(crate::instructions::render(&root, &config))
}
