//! `git orchestra mcp`: the navigation tools over MCP on standard input and output.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::lsp::Tier;
use git_orchestra::nav::Index;
use git_orchestra::nav::mcp::{NavServer, serve_stdio, serve_stdio_with};

use super::CommandError;

/// Serves the navigation tools (nav_def, nav_refs, nav_callers, nav_outline, …) over MCP on
/// stdin/stdout for other agents, scoped to the worktree containing the current directory.
/// Register it in an MCP client as the command `git orchestra mcp`. Language servers
/// found for the worktree's languages ([nav.lsp], `git orchestra nav status`) start in the
/// background and answer def, refs, impls, callers and callees once ready, marked `[lsp]`;
/// until then, and whenever one fails, the graph answers with a `[graph]` notice.
#[derive(Debug, Args)]
pub struct McpArgs {}

/// Opens the worktree's index, then serves it until the client disconnects.
pub fn cmd_mcp(cwd: &Path, _args: &McpArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let mut index = Index::open(cwd)?;
    let settings =
        git_orchestra::agent::sandbox::language_server_settings(&config, &repo.common_dir);
    if !settings.enabled {
        serve_stdio(index)?;
        return Ok(());
    }
    // The language servers start now, in the background; the graph answers until they are
    // ready. They stop when the session ends.
    index.refresh()?;
    let tier = Tier::new(settings);
    for notice in tier.start(&index) {
        tracing::info!(notice, "language server not used");
    }
    serve_stdio_with(NavServer::new(index).with_precise(Box::new(tier)))?;
    Ok(())
}
