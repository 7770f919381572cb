//! `git orchestra agents`: the roles, the model profile each uses, its tools and write scope.

use std::path::Path;

use clap::Args;
use git_orchestra::agent::cli::CliStatus;
use git_orchestra::agent::{Role, Roles, profiles};
use git_orchestra::config::RepoConfig;
use git_orchestra::git::RepoInfo;

use super::CommandError;

/// Lists the agent roles: their model profile, tools and write scope; then the agent CLIs
/// (claude, codex, gemini, opencode, qwen and any [agents.cli.<name>]): installed or not,
/// their versions, and whether they are usable as workers (`--agent <name>`).
///
/// Roles come from the built-in defaults, `.claude/agents/*.md`, `.github/agents/*.agent.md`
/// and `.orchestra/agents/*.md` (later ones override earlier ones). Profiles come from
/// `[profiles.*]`/`[roles.*]` in .orchestra/config.toml, or from ORCHESTRA_PROVIDER,
/// ORCHESTRA_BASE_URL, ORCHESTRA_MODEL and ORCHESTRA_API_KEY_ENV.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// Print JSON: `{"roles": [...], "clis": [...]}` (with --clis, only `"clis"`).
    #[arg(long)]
    json: bool,
    /// Show only the agent CLIs: installed or not, versions, usable or not.
    #[arg(long)]
    clis: bool,
}

/// Prints every role with its resolved profile (or why there is none), then the agent CLIs.
pub fn cmd_agents(cwd: &Path, args: &AgentsArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let roles =
        Roles::load_with_trust(&repo.toplevel, config.trusted).map_err(CommandError::user)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut rows = Vec::new();
    let mut out = String::new();
    if !args.clis {
        for role in roles.by_name.values() {
            let chain = profiles::resolve(&config, role, &env);
            let key_error = match chain.as_ref().map(|c| c.first().map(|p| p.api_key())) {
                Ok(Some(Err(e))) => Some(e.to_string()),
                _ => None,
            };
            if args.json {
                rows.push(serde_json::json!({
                    "role": role,
                    "profiles": chain.as_ref().ok(),
                    "profile_error": chain.as_ref().err().map(|e| e.to_string()),
                    "key_error": key_error,
                }));
                continue;
            }
            let profile = match &chain {
                Ok(chain) => chain
                    .iter()
                    .map(|p| format!("{} ({})", p.name, p.label()))
                    .collect::<Vec<_>>()
                    .join(" → "),
                Err(e) => format!("none — {e}"),
            };
            out.push_str(&role_text(role, &profile, key_error.as_deref()));
        }
    }
    let clis = git_orchestra::agent::cli::probe(&config);
    if args.json {
        // One shape for scripts: the same "clis" with or without --clis.
        let value = if args.clis {
            serde_json::json!({ "clis": clis })
        } else {
            serde_json::json!({ "roles": rows, "clis": clis })
        };
        let text = serde_json::to_string_pretty(&value).map_err(CommandError::internal)?;
        println!("{text}");
    } else {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&clis_text(&config, &clis));
        print!("{out}");
    }
    Ok(())
}

/// Returns the text block of one role.
fn role_text(role: &Role, profile: &str, key_error: Option<&str>) -> String {
    let mut out = format!("{}  {}\n", role.name, role.description);
    out.push_str(&format!("  profile:     {profile}\n"));
    if let Some(k) = key_error {
        out.push_str(&format!("  key:         {k}\n"));
    }
    out.push_str(&format!("  tools:       {}\n", role.tools.join(", ")));
    out.push_str(&format!(
        "  write scope: {}\n",
        if role.write_scope.is_empty() {
            "(read-only)".to_string()
        } else {
            role.write_scope.join(", ")
        }
    ));
    out.push_str(&format!(
        "  limits:      {} turns, {}s, stalled after {}s without output\n",
        role.max_turns, role.timeout_secs, role.stall_timeout_secs
    ));
    let source = match &role.source {
        git_orchestra::agent::RoleSource::Builtin => "built in".to_string(),
        git_orchestra::agent::RoleSource::Orchestra(p)
        | git_orchestra::agent::RoleSource::Claude(p)
        | git_orchestra::agent::RoleSource::Github(p) => p.display().to_string(),
    };
    out.push_str(&format!("  from:        {source}\n"));
    for note in &role.notes {
        out.push_str(&format!("  note:        {note}\n"));
    }
    out
}

/// Returns the text list of the agent CLIs, with the roles each works.
fn clis_text(config: &RepoConfig, clis: &[CliStatus]) -> String {
    let mut out =
        String::from("Agent CLIs (--agent <name>, or [roles.<role>] agent = \"<name>\"):\n");
    for c in clis {
        let role_uses: Vec<&str> = config
            .roles
            .iter()
            .filter(|(_, r)| r.agent.as_deref() == Some(c.name.as_str()))
            .map(|(n, _)| n.as_str())
            .collect();
        out.push_str(&format!(
            "{:<9} {:<8} {}{}{}\n",
            c.name,
            if c.usable { "usable" } else { "unusable" },
            match (&c.path, &c.version) {
                (Some(p), Some(v)) => format!("{v} at {}", p.display()),
                (Some(p), None) => format!("at {}", p.display()),
                _ => "not installed".to_string(),
            },
            c.tested
                .as_ref()
                .map(|t| format!(" (tested: {t})"))
                .unwrap_or_default(),
            if role_uses.is_empty() {
                String::new()
            } else {
                format!("; works role {}", role_uses.join(", "))
            },
        ));
        if let Some(note) = &c.note {
            out.push_str(&format!("          note: {note}\n"));
        }
    }
    out
}
