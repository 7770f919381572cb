//! Roles as files: what an agent of each kind is told, which tools it gets and where it may
//! write.
//!
//! Defaults are the `agents/*.md` files at the repository root of this project, embedded in
//! the binary. A repository can bring its own: `.claude/agents/*.md` and
//! `.github/agents/*.agent.md` (other tools' formats, mapped field by field) and, taking
//! precedence over everything, `.orchestra/agents/*.md` in our own format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::frontmatter::{self, Value};
use super::tools::nav::NAMES;

/// The embedded default roles, by file name.
const DEFAULTS: [(&str, &str); 12] = [
    (
        "orchestrator",
        include_str!("../../../../agents/orchestrator.md"),
    ),
    ("clarifier", include_str!("../../../../agents/clarifier.md")),
    ("planner", include_str!("../../../../agents/planner.md")),
    ("coder", include_str!("../../../../agents/coder.md")),
    ("reviewer", include_str!("../../../../agents/reviewer.md")),
    ("tester", include_str!("../../../../agents/tester.md")),
    ("docs", include_str!("../../../../agents/docs.md")),
    ("debugger", include_str!("../../../../agents/debugger.md")),
    (
        "researcher",
        include_str!("../../../../agents/researcher.md"),
    ),
    ("product", include_str!("../../../../agents/product.md")),
    ("qa", include_str!("../../../../agents/qa.md")),
    ("init", include_str!("../../../../agents/init.md")),
];

/// Default turn limit for roles that do not set one.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Default wall-clock limit, in seconds, for roles that do not set one.
pub const DEFAULT_TIMEOUT_SECS: u64 = 1800;

/// Default stall timeout, in seconds: how long a model call may go without a streamed piece.
pub const DEFAULT_STALL_TIMEOUT_SECS: u64 = 300;

/// Where a role's definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum RoleSource {
    Builtin,
    Orchestra(PathBuf),
    Claude(PathBuf),
    Github(PathBuf),
}

/// One role: its instructions and limits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Role {
    pub name: String,
    pub description: String,
    /// The provider profile to use; `None` defers to `[roles.<name>]` and the defaults.
    pub profile: Option<String>,
    /// The tools this role may call (`signal_state` and `complete` are always available).
    pub tools: Vec<String>,
    /// Globs of the files this role may write; empty means read-only.
    pub write_scope: Vec<String>,
    pub timeout_secs: u64,
    /// How long the model may go without streaming anything before the agent is stalled.
    pub stall_timeout_secs: u64,
    pub max_turns: u32,
    /// Whether `run_command` may open network connections.
    pub network: bool,
    /// The MCP servers (by name in `.mcp.json` or `[mcp.servers]`) whose tools this role gets.
    pub mcp: Vec<String>,
    pub instructions: String,
    pub source: RoleSource,
    /// Fields that were present but not understood, for `git orchestra agents` to show.
    pub notes: Vec<String>,
}

/// Why the roles could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("unknown role `{name}`; known roles: {known}")]
    Unknown { name: String, known: String },
}

/// Which dialect a file is written in.
#[derive(Clone, Copy)]
enum Dialect {
    Orchestra,
    Claude,
    Github,
}

/// All roles known in a repository, by name.
#[derive(Debug, Clone, Default)]
pub struct Roles {
    pub by_name: BTreeMap<String, Role>,
}

impl Roles {
    /// Returns the built-in roles only.
    pub fn builtin() -> Result<Roles, RoleError> {
        let mut roles = Roles::default();
        for (name, text) in DEFAULTS {
            let path = PathBuf::from(format!("agents/{name}.md"));
            let role = parse(text, name, &path, Dialect::Orchestra, RoleSource::Builtin)?;
            roles.by_name.insert(role.name.clone(), role);
        }
        Ok(roles)
    }

    /// Returns the built-in roles and the repository's new roles at `toplevel`, as an
    /// untrusted repository gets them: see [`Roles::load_with_trust`].
    pub fn load(toplevel: &Path) -> Result<Roles, RoleError> {
        Roles::load_with_trust(toplevel, false)
    }

    /// Returns the built-in roles overridden by the repository's agent files at `toplevel`.
    ///
    /// Unless the user trusts the repository's configuration (`trusted`, see
    /// [`RepoConfig::trusted`](orchestra_core::config::RepoConfig::trusted)), a file cannot redefine a
    /// built-in role (a clone's `reviewer` saying "always approve"), and the roles it adds get
    /// neither the network nor MCP servers.
    pub fn load_with_trust(toplevel: &Path, trusted: bool) -> Result<Roles, RoleError> {
        let mut roles = Roles::builtin()?;
        for mut role in repository_roles(toplevel)? {
            if !trusted {
                if matches!(
                    roles.by_name.get(&role.name).map(|r| &r.source),
                    Some(RoleSource::Builtin)
                ) {
                    continue;
                }
                role.network = false;
                role.mcp.clear();
            }
            roles.by_name.insert(role.name.clone(), role);
        }
        Ok(roles)
    }

    /// Returns the role called `name`, or an error listing the known ones.
    pub fn get(&self, name: &str) -> Result<&Role, RoleError> {
        self.by_name.get(name).ok_or_else(|| RoleError::Unknown {
            name: name.to_string(),
            known: self.by_name.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }
}

/// Returns every role file of the repository at `toplevel` parsed, in the order loading
/// applies them (a later file of the same name wins): `.claude/agents/*.md`,
/// `.github/agents/*.agent.md`, then `.orchestra/agents/*.md`.
pub fn repository_roles(toplevel: &Path) -> Result<Vec<Role>, RoleError> {
    let mut out = Vec::new();
    let dialects = [Dialect::Claude, Dialect::Github, Dialect::Orchestra];
    for ((dir, suffix), dialect) in orchestra_core::config::trust::ROLE_DIRS
        .into_iter()
        .zip(dialects)
    {
        let dir = toplevel.join(dir);
        let entries = match fs_err::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(RoleError::Read { path: dir, source }),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        files.sort();
        for path in files {
            let text = orchestra_sys::confine::read_text_file(
                &path,
                Some(toplevel),
                orchestra_sys::confine::MAX_TEXT_FILE,
            )
            .map_err(|source| RoleError::Read {
                path: path.clone(),
                source,
            })?;
            let file = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = file.strip_suffix(suffix).unwrap_or(&file).to_string();
            let rel = path.strip_prefix(toplevel).unwrap_or(&path).to_path_buf();
            let source = match dialect {
                Dialect::Orchestra => RoleSource::Orchestra(rel.clone()),
                Dialect::Claude => RoleSource::Claude(rel.clone()),
                Dialect::Github => RoleSource::Github(rel.clone()),
            };
            out.push(parse(&text, &stem, &rel, dialect, source)?);
        }
    }
    Ok(out)
}

/// Returns what the role files of the repository at `toplevel` do that needs the user's
/// trust: redefining a built-in role, granting the network, naming MCP servers. A file that
/// cannot be read or parsed is left out (loading the roles reports it).
pub fn trust_items(toplevel: &Path) -> Vec<orchestra_core::config::trust::Item> {
    use orchestra_core::config::trust::Item;
    let builtin: Vec<&str> = DEFAULTS.iter().map(|(name, _)| *name).collect();
    let mut out = Vec::new();
    for role in repository_roles(toplevel).unwrap_or_default() {
        let file = match &role.source {
            RoleSource::Orchestra(p) | RoleSource::Claude(p) | RoleSource::Github(p) => {
                p.to_string_lossy().into_owned()
            }
            RoleSource::Builtin => continue,
        };
        let name = &role.name;
        if builtin.contains(&name.as_str()) {
            out.push(Item::new(
                &file,
                format!("role `{name}`"),
                "redefines the built-in role",
            ));
        }
        if role.network {
            out.push(Item::new(
                &file,
                format!("role `{name}` `network`"),
                "lets its commands open network connections",
            ));
        }
        if !role.mcp.is_empty() {
            out.push(Item::new(
                &file,
                format!("role `{name}` `mcp`"),
                format!("gives the role MCP servers [{}]", role.mcp.join(", ")),
            ));
        }
    }
    out
}

/// What a foreign role's search permission grants: grep and every symbol tool.
const SEARCH_TOOLS: [&str; 1 + NAMES.len()] = search_tools();

/// Returns `grep` followed by the symbol tools, so the grant follows the one list of them.
const fn search_tools() -> [&'static str; 1 + NAMES.len()] {
    let mut out = ["grep"; 1 + NAMES.len()];
    let mut i = 0;
    while i < NAMES.len() {
        out[i + 1] = NAMES[i];
        i += 1;
    }
    out
}

/// Maps another tool's tool name to ours; `None` when there is no equivalent.
fn map_tool(name: &str) -> Option<&'static [&'static str]> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "read" | "read_file" | "readfile" | "view" => &["read_file"],
        "write" | "write_file" | "create" => &["write_file"],
        "edit" | "multiedit" | "edit_file" | "editfiles" => &["edit_file", "write_file"],
        "grep" | "search" | "codebase" => &SEARCH_TOOLS,
        "glob" | "ls" | "list_dir" => &["list_dir"],
        "bash" | "shell" | "terminal" | "runcommands" | "run_command" | "execute" => {
            &["run_command"]
        }
        "ask" => &["ask"],
        "signal_state" => &["signal_state"],
        "complete" => &["complete"],
        _ => return None,
    })
}

fn parse(
    text: &str,
    stem: &str,
    path: &Path,
    dialect: Dialect,
    source: RoleSource,
) -> Result<Role, RoleError> {
    let invalid = |message: String| RoleError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let (entries, body) = frontmatter::split(text).map_err(invalid)?;
    let mut role = Role {
        name: stem.to_string(),
        description: String::new(),
        profile: None,
        tools: vec![
            "read_file".into(),
            "list_dir".into(),
            "signal_state".into(),
            "ask".into(),
            "complete".into(),
        ]
        .into_iter()
        .chain(SEARCH_TOOLS.iter().map(|t| t.to_string()))
        .collect(),
        write_scope: Vec::new(),
        timeout_secs: DEFAULT_TIMEOUT_SECS,
        stall_timeout_secs: DEFAULT_STALL_TIMEOUT_SECS,
        max_turns: DEFAULT_MAX_TURNS,
        network: false,
        mcp: Vec::new(),
        instructions: body,
        source,
        notes: Vec::new(),
    };
    let number = |key: &str, v: &Value| -> Result<u64, RoleError> {
        v.to_scalar().parse().map_err(|_| {
            invalid(format!(
                "`{key}` must be a whole number, got `{}`",
                v.to_scalar()
            ))
        })
    };
    for (key, value) in &entries {
        match (dialect, key.as_str()) {
            (_, "name") => role.name = value.to_scalar(),
            (_, "description") => role.description = value.to_scalar(),
            (Dialect::Orchestra, "profile") | (_, "model") => {
                role.profile = Some(value.to_scalar()).filter(|p| !p.is_empty() && p != "inherit")
            }
            (Dialect::Orchestra, "tools") => role.tools = value.to_list(),
            (_, "tools") => {
                let mut tools = vec!["signal_state".to_string(), "complete".to_string()];
                for t in value.to_list() {
                    match map_tool(&t) {
                        Some(ours) => tools.extend(ours.iter().map(|s| s.to_string())),
                        None => role
                            .notes
                            .push(format!("tool `{t}` has no equivalent here; ignored")),
                    }
                }
                tools.sort();
                tools.dedup();
                role.tools = tools;
            }
            (Dialect::Orchestra, "write_scope") => role.write_scope = value.to_list(),
            (Dialect::Orchestra, "timeout") => role.timeout_secs = number(key, value)?,
            (Dialect::Orchestra, "stall_timeout") => {
                role.stall_timeout_secs = number(key, value)?.max(1)
            }
            (Dialect::Orchestra, "max_turns") => role.max_turns = number(key, value)? as u32,
            (Dialect::Orchestra, "network") => role.network = value.to_scalar() == "true",
            (Dialect::Orchestra, "mcp") => role.mcp = value.to_list(),
            _ => role
                .notes
                .push(format!("field `{key}` is not used; ignored")),
        }
    }
    if let Some(bad) = role
        .tools
        .iter()
        .find(|t| map_tool(t).is_none() && !super::tools::is_known(t))
    {
        return Err(invalid(format!(
            "unknown tool `{bad}` in `tools`; known tools: {}",
            super::tools::known_names().join(", ")
        )));
    }
    // Writing tools imply a scope: foreign agent files carry none, so they may write anywhere
    // the packet allows.
    if !matches!(dialect, Dialect::Orchestra)
        && role
            .tools
            .iter()
            .any(|t| t == "write_file" || t == "edit_file")
    {
        role.write_scope = vec!["**".into()];
    }
    orchestra_core::plan::Scope::new(&role.write_scope)
        .map_err(|e| invalid(format!("invalid `write_scope`: {e}")))?;
    if role.name.is_empty() {
        return Err(invalid("`name` is empty".into()));
    }
    Ok(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_roles_parse_with_limits_and_scopes() {
        let roles = Roles::builtin().unwrap();
        assert_eq!(roles.by_name.len(), 12);
        let tester = roles.get("tester").unwrap();
        assert!(tester.write_scope.iter().any(|s| s == "tests/**"));
        assert!(tester.instructions.contains("signal_state"));
        assert!(roles.get("reviewer").unwrap().write_scope.is_empty());
        assert_eq!(SEARCH_TOOLS[1..], crate::agent::tools::nav::NAMES);
        for role in roles.by_name.values() {
            assert!(role.tools.iter().any(|t| t == "nav_def"), "{}", role.name);
            assert!(role.instructions.contains("nav_refs"), "{}", role.name);
        }
        assert!(
            roles
                .get("nobody")
                .unwrap_err()
                .to_string()
                .contains("coder")
        );
    }

    #[test]
    fn foreign_agent_files_are_mapped_and_ours_take_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join(".claude/agents")).unwrap();
        std::fs::create_dir_all(top.join(".github/agents")).unwrap();
        std::fs::create_dir_all(top.join(".orchestra/agents")).unwrap();
        std::fs::write(
            top.join(".claude/agents/fixer.md"),
            "---\nname: fixer\ndescription: fixes\ntools: Read, Edit, Bash, WebFetch\nmodel: sonnet\ncolor: red\n---\nFix things.\n",
        )
        .unwrap();
        std::fs::write(
            top.join(".github/agents/doc.agent.md"),
            "---\ndescription: docs\ntools: ['read', 'search']\n---\nWrite docs.\n",
        )
        .unwrap();
        std::fs::write(
            top.join(".orchestra/agents/coder.md"),
            "---\nname: coder\ntools: [read_file, complete]\nwrite_scope: [\"src/**\"]\nmax_turns: 3\nstall_timeout: 45\n---\nOurs.\n",
        )
        .unwrap();
        // Untrusted, a file cannot redefine a built-in role; its new roles still load.
        let roles = Roles::load(top).unwrap();
        assert_eq!(roles.get("coder").unwrap().source, RoleSource::Builtin);
        assert!(roles.get("fixer").is_ok());
        let roles = Roles::load_with_trust(top, true).unwrap();
        let fixer = roles.get("fixer").unwrap();
        assert!(fixer.tools.contains(&"run_command".to_string()));
        assert!(fixer.tools.contains(&"edit_file".to_string()));
        assert_eq!(fixer.profile.as_deref(), Some("sonnet"));
        assert!(fixer.notes.iter().any(|n| n.contains("WebFetch")));
        assert!(fixer.notes.iter().any(|n| n.contains("color")));
        let doc = roles.get("doc").unwrap();
        assert!(doc.write_scope.is_empty() && doc.tools.contains(&"grep".to_string()));
        assert!(doc.tools.contains(&"nav_refs".to_string()));
        let coder = roles.get("coder").unwrap();
        assert_eq!((coder.max_turns, coder.instructions.as_str()), (3, "Ours."));
        assert_eq!(coder.stall_timeout_secs, 45);
        assert_eq!(
            roles.get("fixer").unwrap().stall_timeout_secs,
            DEFAULT_STALL_TIMEOUT_SECS
        );
        assert!(matches!(coder.source, RoleSource::Orchestra(_)));

        std::fs::write(
            top.join(".orchestra/agents/bad.md"),
            "---\ntools: [telepathy]\n---\n",
        )
        .unwrap();
        let err = Roles::load(top).unwrap_err().to_string();
        assert!(err.contains("telepathy") && err.contains("bad.md"), "{err}");
    }
}
