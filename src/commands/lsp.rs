//! `git orchestra lsp`: the symbol graph over the Language Server Protocol on standard input
//! and output, for editors.

use std::path::Path;

use clap::Args;
use git_orchestra::lsp::serve_stdio;
use git_orchestra::nav::Index;

use super::CommandError;

/// Serves the navigation graph of the worktree containing the current directory to an editor
/// over the Language Server Protocol on stdin/stdout: definition, references, implementation,
/// hover, document and workspace symbols, call hierarchy; open documents count with their
/// unsaved contents. Configure it in the editor as the command `git orchestra lsp`.
#[derive(Debug, Args)]
pub struct LspArgs {
    /// Accepted for editors that pass it; standard input and output are the only transport.
    #[arg(long)]
    pub stdio: bool,
}

/// Opens the worktree's index, then serves it until the editor sends `exit` or closes the
/// input; ending without `shutdown` first exits 1, as the protocol says.
pub fn cmd_lsp(cwd: &Path, _args: &LspArgs) -> Result<(), CommandError> {
    let index = Index::open(cwd)?;
    if serve_stdio(index)? {
        Ok(())
    } else {
        Err(CommandError::failed(
            "the language client ended the session without a shutdown request",
        ))
    }
}
