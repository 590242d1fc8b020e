//! `git loaf mcp`: git-loaf as a Model Context Protocol server on stdio (docs/mcp.md), a front
//! door beside the command line and `watch`.
//!
//! The tools are the user's operations (`apply`, `undo`, `redo`, `log`, `show`, `squash`,
//! `status`, `instructions`), each answered with the text the command line prints and, where it has
//! one, its JSON form as structured content: the server builds each operation's request and
//! calls the same `answer` of [`crate::ops`] the command line calls. Each call takes the
//! repository's operation lock as the command does, so `git loaf` and `watch` work beside
//! it.
//!
//! Nothing but the protocol may reach stdout: [`serve`] keeps a private copy of stdout for
//! the transport and points file descriptor 1 at stderr, so a stray print (ours, a git
//! hook's, a library's) lands in the log instead of corrupting the stream.

mod actions;
mod answer;
mod line_limit;
mod server;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use actions::{ActionsError, block_id, to_blocks};
pub use line_limit::MAX_LINE_BYTES;
pub use server::LoafServer;

/// Why the server could not run or stopped abnormally (bad input never ends it: each call
/// answers for itself).
#[derive(Debug, Error)]
pub enum ServeError {
    /// The runtime or the standard streams could not be set up.
    #[error("cannot start the MCP server: {0}")]
    Setup(#[from] std::io::Error),
    /// The protocol handshake with the client failed.
    #[error("the MCP client's handshake failed: {0}")]
    Handshake(String),
    /// The connection ended with an error.
    #[error("the MCP connection failed: {0}")]
    Connection(String),
}

/// Serves the repository containing `repo` on stdin/stdout until the client disconnects.
///
/// The runtime lives here and only here: the rest of git-loaf is synchronous, and each tool
/// runs its operation on a blocking thread.
pub fn serve(repo: &Path) -> Result<(), ServeError> {
    crate::exec::descriptors::withhold_inherited();
    let out = protocol_stdout()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(repo.to_path_buf(), out))
}

async fn run(repo: PathBuf, out: std::fs::File) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let transport = line_limit::Limited::new(tokio::io::stdin(), tokio::fs::File::from_std(out));
    let service = LoafServer::new(repo)
        .serve(transport)
        .await
        .map_err(|e| ServeError::Handshake(e.to_string()))?;
    service
        .waiting()
        .await
        .map_err(|e| ServeError::Connection(e.to_string()))?;
    Ok(())
}

/// A private handle on the real stdout for the protocol; file descriptor 1 then points at
/// stderr, so that anything else written "to stdout" goes to the log.
fn protocol_stdout() -> std::io::Result<std::fs::File> {
    // Close-on-exec: code run by a tool call must not find the protocol stream open.
    let protocol = rustix::io::fcntl_dupfd_cloexec(std::io::stdout(), 3)?;
    rustix::stdio::dup2_stdout(std::io::stderr())?;
    Ok(std::fs::File::from(protocol))
}
