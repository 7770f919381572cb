//! `git orchestra lsp`: the symbol graph over the Language Server Protocol on standard input
//! and output, for editors.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::lsp::tier::render;
use git_orchestra::lsp::{Outcome, Query, Settings, Tier, serve_stdio};
use git_orchestra::nav::tools::title_of;
use git_orchestra::nav::{At, Index, PlaceOptions};

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

/// Returns the language-server settings of the repository containing `cwd`.
fn settings(cwd: &Path) -> Result<Settings, CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    Ok(git_orchestra::agent::sandbox::language_server_settings(
        &config,
        &repo.common_dir,
    ))
}

/// `git orchestra nav status`: the configured language servers and whether each is installed.
pub(super) fn nav_status(cwd: &Path, json: bool) -> Result<String, CommandError> {
    let s = settings(cwd)?;
    let servers = s.status();
    if json {
        return Ok(serde_json::json!({
            "mode": if s.enabled { "auto" } else { "off" },
            "max_servers": s.max_servers,
            "memory_mb": s.memory_mb,
            "startup_timeout": s.startup_timeout.as_secs(),
            "request_timeout": s.request_timeout.as_secs(),
            "servers": servers,
            "unknown_languages": s.unknown_languages(),
        })
        .to_string());
    }
    let mut out = format!(
        "language servers: mode {} (max_servers {}, memory_mb {}, startup_timeout {} s, request_timeout {} s)\n",
        if s.enabled {
            "auto"
        } else {
            "off: the symbol graph answers alone"
        },
        s.max_servers,
        s.memory_mb,
        s.startup_timeout.as_secs(),
        s.request_timeout.as_secs()
    );
    for v in &servers {
        let command = std::iter::once(v.command.as_str())
            .chain(v.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let origin = if v.configured {
            "configured"
        } else {
            "default"
        };
        let found = match &v.found {
            Some(p) => format!("found at {}", p.display()),
            None => "not found on PATH: the graph answers".to_string(),
        };
        out.push_str(&format!(
            "  {:<11} {command} ({origin}) — {found}\n",
            v.language
        ));
    }
    for l in s.unknown_languages() {
        out.push_str(&format!(
            "warning: [nav.lsp.servers.{l}] is not a language navigation knows (python, rust, typescript, javascript, go)\n"
        ));
    }
    Ok(out)
}

/// What `nav --precise` made of a query.
pub(super) enum Precise {
    /// The server's answer, rendered.
    Answered(String),
    /// The graph answers; the notice says why the server did not (already said on stderr).
    Graph(Option<String>),
}

/// Answers a `nav --precise` query from the file's language server, waiting for it up to
/// `startup_timeout`; or says on stderr why the graph answers.
pub(super) fn precise(
    cwd: &Path,
    index: &mut Index,
    query: Query,
    (symbol, from): (Option<&str>, Option<&At>),
    opts: PlaceOptions,
) -> Result<Precise, CommandError> {
    let settings = settings(cwd)?;
    let wait = settings.startup_timeout;
    let tier = Tier::new(settings);
    let outcome = tier.query(index, query, symbol, from, wait);
    tier.shutdown();
    Ok(match outcome {
        Outcome::Lsp { server, locations } => {
            let what = title_of(symbol, from);
            Precise::Answered(render(query, &server, &what, &locations, opts))
        }
        Outcome::Graph(notice) => {
            let why = notice.clone().unwrap_or_else(|| {
                "no language server answers this query (it needs a position or one definition, in a language with a server)".into()
            });
            eprintln!("[graph] {why}; answered from the symbol graph");
            Precise::Graph(notice)
        }
    })
}
