//! `git orchestra mcp`: the navigation tools over MCP on standard input and output.

use std::path::Path;

use clap::Args;
use git_orchestra::nav::Index;
use git_orchestra::nav::mcp::serve_stdio;

use super::CommandError;

/// Serves the navigation tools (nav_def, nav_refs, nav_callers, nav_outline, …) over MCP on
/// stdin/stdout for other agents, scoped to the worktree containing the current directory.
/// Register it in an MCP client as the command `git orchestra mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {}

/// Opens the worktree's index, then serves it until the client disconnects.
pub fn cmd_mcp(cwd: &Path, _args: &McpArgs) -> Result<(), CommandError> {
    let index = Index::open(cwd)?;
    serve_stdio(index)?;
    Ok(())
}
