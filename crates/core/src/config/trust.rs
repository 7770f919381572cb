//! Whether the user trusts a repository's configuration, as `git orchestra trust` recorded it.
//!
//! A cloned repository's files are anyone's: what in them runs code, sends keys or data
//! elsewhere, or weakens the gates — commands, servers, URLs, key variable names, webhooks,
//! executor settings, built-in role overrides, role files granting the network — applies only
//! once the user has seen it and pinned a hash of those files' bytes in their own
//! configuration directory (`trust.toml` beside `config.toml`), keyed by the repository's
//! canonical top-level path, as direnv's `allow` or mise's `trust` do. A change to any of the
//! files makes the repository untrusted again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{McpServerConfig, RepoConfig};

/// The file of pins, beside the user's `config.toml`.
pub const TRUST_FILE: &str = "trust.toml";

/// Where the repository keeps MCP servers in the format other agents read.
pub const MCP_JSON: &str = ".mcp.json";

/// Directories of role files, with the ending a role file there has.
pub const ROLE_DIRS: [(&str, &str); 3] = [
    (".claude/agents", ".md"),
    (".github/agents", ".agent.md"),
    (".orchestra/agents", ".md"),
];

/// How the user's pins stand towards a repository's configuration now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// Pinned, and the files are what was pinned.
    Trusted,
    /// Never pinned (or the pin was revoked).
    Untrusted,
    /// Pinned, but a file changed since.
    Changed,
}

/// Why the pins could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a valid trust file ({message}); remove it and run `git orchestra trust` again"
    )]
    Parse { path: PathBuf, message: String },
}

/// One setting that needs the user's trust, for notices and `git orchestra trust` to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The file it is in, relative to the repository's top.
    pub file: String,
    /// The key or role, as the user would look for it (`[worktree] setup`).
    pub setting: String,
    /// What it does (`runs `make``).
    pub detail: String,
}

impl Item {
    /// Returns an item of `file` for `setting` doing `detail`.
    pub fn new(file: &str, setting: impl Into<String>, detail: impl Into<String>) -> Item {
        Item {
            file: file.to_string(),
            setting: setting.into(),
            detail: detail.into(),
        }
    }

    /// Returns the one-line notice that this item was ignored, saying what to do about it.
    pub fn notice(&self, state: TrustState) -> String {
        let why = match state {
            TrustState::Changed => {
                "the repository's configuration changed since you trusted it; review it with `git orchestra trust --show`, then run `git orchestra trust` again"
            }
            _ => {
                "the repository's configuration is not trusted; review it with `git orchestra trust --show`, then allow it with `git orchestra trust`"
            }
        };
        format!("ignoring {} in {}: {why}", self.setting, self.file)
    }
}

/// The pins, as stored in `trust.toml`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pins {
    #[serde(default)]
    repos: BTreeMap<String, Pin>,
}

/// One repository's pin.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pin {
    /// The hash of the trust-relevant files, see [`fingerprint`].
    sha256: String,
    /// The files the hash covers, for a person reading the file.
    files: Vec<String>,
}

/// Returns the trust file beside the user configuration file `user_config`.
pub fn trust_file(user_config: &Path) -> PathBuf {
    user_config.with_file_name(TRUST_FILE)
}

/// Returns true if and only if the repository path `path` (with `/` separators) is a file
/// whose content needs trust: the configuration file, `.mcp.json`, or anything in a
/// directory of role files.
pub fn is_trust_relevant(path: &str) -> bool {
    path == ".orchestra/config.toml"
        || path == MCP_JSON
        || ROLE_DIRS
            .iter()
            .any(|(dir, _)| path.strip_prefix(dir).is_some_and(|r| r.starts_with('/')))
}

/// Returns the trust-relevant files of the repository at `toplevel` that exist, relative and
/// sorted: the ones configuration and role loading read.
pub fn relevant_files(toplevel: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for file in [".orchestra/config.toml", MCP_JSON] {
        if toplevel.join(file).is_file() {
            out.push(file.to_string());
        }
    }
    for (dir, ending) in ROLE_DIRS {
        let Ok(entries) = fs_err::read_dir(toplevel.join(dir)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(ending) {
                out.push(format!("{dir}/{name}"));
            }
        }
    }
    out.sort();
    out
}

/// Returns the sha256 (hex) over the trust-relevant files of `toplevel`: each one's path, a
/// NUL, its length and its bytes, in path order; a file that cannot be read counts as absent
/// with a marker, so it never matches a pin.
pub fn fingerprint(toplevel: &Path) -> String {
    let mut hash = Sha256::new();
    for file in relevant_files(toplevel) {
        hash.update(file.as_bytes());
        hash.update([0]);
        let read = orchestra_sys::confine::read_text_file(
            &toplevel.join(&file),
            Some(toplevel),
            orchestra_sys::confine::MAX_TEXT_FILE,
        );
        match read.map(String::into_bytes) {
            Ok(bytes) => {
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(&bytes);
            }
            Err(_) => hash.update(b"\xffunreadable"),
        }
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Returns the key a repository is pinned under: its canonical top-level path.
fn key(toplevel: &Path) -> String {
    fs_err::canonicalize(toplevel)
        .unwrap_or_else(|_| toplevel.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Reads the pins at `path`; none when the file does not exist.
fn read_pins(path: &Path) -> Result<Pins, TrustError> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pins::default()),
        Err(source) => {
            return Err(TrustError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    toml::from_str(&text).map_err(|e| TrustError::Parse {
        path: path.to_path_buf(),
        message: e.to_string().trim().to_string(),
    })
}

/// Writes `pins` to `path`, creating its directory.
fn write_pins(path: &Path, pins: &Pins) -> Result<(), TrustError> {
    let write = |source| TrustError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = toml::to_string(pins).map_err(|e| write(std::io::Error::other(e.to_string())))?;
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(write)?;
    }
    let body = format!(
        "# Repositories whose configuration you allowed with `git orchestra trust`.\n{text}"
    );
    fs_err::write(path, body).map_err(write)
}

/// Returns how the user's pins (beside `user_config`) stand towards the repository at
/// `toplevel` now.
pub fn state(toplevel: &Path, user_config: &Path) -> Result<TrustState, TrustError> {
    let pins = read_pins(&trust_file(user_config))?;
    Ok(match pins.repos.get(&key(toplevel)) {
        None => TrustState::Untrusted,
        Some(pin) if pin.sha256 == fingerprint(toplevel) => TrustState::Trusted,
        Some(_) => TrustState::Changed,
    })
}

/// Pins the repository at `toplevel`'s trust-relevant files as they are now in the trust file
/// beside `user_config`, and returns the hash pinned.
pub fn pin(toplevel: &Path, user_config: &Path) -> Result<String, TrustError> {
    let path = trust_file(user_config);
    let mut pins = read_pins(&path)?;
    let sha256 = fingerprint(toplevel);
    pins.repos.insert(
        key(toplevel),
        Pin {
            sha256: sha256.clone(),
            files: relevant_files(toplevel),
        },
    );
    write_pins(&path, &pins)?;
    Ok(sha256)
}

/// Removes the repository at `toplevel`'s pin; returns true if and only if there was one.
pub fn revoke(toplevel: &Path, user_config: &Path) -> Result<bool, TrustError> {
    let path = trust_file(user_config);
    let mut pins = read_pins(&path)?;
    let had = pins.repos.remove(&key(toplevel)).is_some();
    if had {
        write_pins(&path, &pins)?;
    }
    Ok(had)
}

/// Returns `.mcp.json`'s `mcpServers` at `toplevel` (servers of other transports than
/// standard input and output are left out with a note); none when there is no such file.
pub fn mcp_json(toplevel: &Path) -> (BTreeMap<String, McpServerConfig>, Vec<String>) {
    let mut found = BTreeMap::new();
    let mut notes = Vec::new();
    let path = toplevel.join(MCP_JSON);
    let text = match orchestra_sys::confine::read_text_file(
        &path,
        Some(toplevel),
        orchestra_sys::confine::MAX_TEXT_FILE,
    ) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (found, notes),
        Err(e) => {
            notes.push(format!(".mcp.json cannot be read ({e}); not used"));
            return (found, notes);
        }
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => {
            for (name, spec) in v["mcpServers"].as_object().into_iter().flatten() {
                match serde_json::from_value::<McpServerConfig>(spec.clone()) {
                    Ok(s) if !s.command.trim().is_empty() => {
                        // The file travels with the repository: it cannot loosen the sandbox.
                        let (s, dropped) = s.confined(name, &path);
                        notes.extend(dropped);
                        found.insert(name.clone(), s);
                    }
                    _ => notes.push(format!(
                        ".mcp.json: server `{name}` has no `command` (only servers started as a command are supported); not used"
                    )),
                }
            }
        }
        Err(e) => notes.push(format!(".mcp.json is not valid JSON ({e}); not used")),
    }
    (found, notes)
}

/// Returns a command and its arguments as one quoted line.
fn command_line(command: &str, args: &[String]) -> String {
    let mut line = command.to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    format!("runs `{line}`")
}

/// Returns the settings of `.mcp.json` at `toplevel` that need trust: every server.
pub fn mcp_json_items(toplevel: &Path) -> Vec<Item> {
    let (servers, _) = mcp_json(toplevel);
    servers
        .iter()
        .map(|(name, s)| {
            Item::new(
                MCP_JSON,
                format!("MCP server `{name}`"),
                command_line(&s.command, &s.args),
            )
        })
        .collect()
}

/// Returns the settings of the repository's configuration file `config` (as read, nothing
/// left out) that need trust, in the file's order of tables.
pub fn config_items(config: &RepoConfig) -> Vec<Item> {
    const FILE: &str = ".orchestra/config.toml";
    let mut out = Vec::new();
    let mut add = |setting: String, detail: String| out.push(Item::new(FILE, setting, detail));
    if let Some(setup) = &config.worktree.setup {
        add("`[worktree] setup`".into(), format!("runs `{setup}`"));
    }
    if let Some(test) = &config.eval.test {
        add("`[eval] test`".into(), format!("runs `{test}`"));
    }
    for (name, p) in &config.profiles {
        if let Some(url) = &p.base_url {
            add(
                format!("`[profiles.{name}] base_url`"),
                format!("sends requests to {url}"),
            );
        }
        if let Some(var) = &p.api_key_env {
            add(
                format!("`[profiles.{name}] api_key_env`"),
                format!("sends the key in ${var}"),
            );
        }
    }
    for (name, r) in &config.roles {
        if let Some(mcp) = &r.mcp {
            add(
                format!("`[roles.{name}] mcp`"),
                format!("gives the role MCP servers [{}]", mcp.join(", ")),
            );
        }
    }
    for (name, cli) in &config.agents.cli {
        let command = cli.command.clone().unwrap_or_else(|| name.clone());
        let mut detail = command_line(&command, cli.args.as_deref().unwrap_or_default());
        if let Some(env) = &cli.env {
            let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            detail.push_str(&format!(" with {}", vars.join(" ")));
        }
        add(format!("`[agents.cli.{name}]`"), detail);
    }
    for (name, s) in &config.nav.lsp.servers {
        add(
            format!("`[nav.lsp.servers.{name}]`"),
            command_line(&s.command, &s.args),
        );
    }
    if let Some(url) = &config.notify.webhook {
        add(
            "`[notify] webhook`".into(),
            format!("posts run events to {url}"),
        );
    }
    if let Some(addr) = &config.land.webhook {
        add(
            "`[land] webhook`".into(),
            format!("listens for webhook events on {addr}"),
        );
    }
    if let Some(var) = &config.land.webhook_secret_env {
        add(
            "`[land] webhook_secret_env`".into(),
            format!("checks webhook events against ${var}"),
        );
    }
    for (name, s) in &config.mcp.servers {
        add(
            format!("`[mcp.servers.{name}]`"),
            command_line(&s.command, &s.args),
        );
    }
    executor_items(config, &mut add);
    out
}

/// Adds the `[executor]` settings of `config` that need trust: every one but `kind = "local"`.
fn executor_items(config: &RepoConfig, add: &mut dyn FnMut(String, String)) {
    let e = &config.executor;
    if let Some(kind) = e.kind.filter(|k| *k != super::ExecutorKind::Local) {
        add(
            "`[executor] kind`".into(),
            format!("runs packets {}", kind.as_str()),
        );
    }
    if let Some(hosts) = &e.ssh.hosts {
        add(
            "`[executor.ssh] hosts`".into(),
            format!("sends the code to {}", hosts.join(", ")),
        );
    }
    if let Some(ssh) = &e.ssh.ssh_command {
        add(
            "`[executor.ssh] ssh_command`".into(),
            format!("runs `{ssh}`"),
        );
    }
    if let Some(dir) = &e.ssh.remote_dir {
        add(
            "`[executor.ssh] remote_dir`".into(),
            format!("writes {dir} on the hosts"),
        );
    }
    let a = &e.github_actions;
    if let Some(url) = &a.remote_url {
        add(
            "`[executor.github-actions] remote_url`".into(),
            format!("pushes to {url}"),
        );
    }
    if let Some(w) = &a.workflow {
        add(
            "`[executor.github-actions] workflow`".into(),
            format!("runs workflow {w}"),
        );
    }
    if let Some(r) = &a.git_ref {
        add(
            "`[executor.github-actions] ref`".into(),
            format!("runs the workflow of {r}"),
        );
    }
}

/// Returns `config` (a repository's, untrusted) with every setting [`config_items`] names
/// left out.
pub fn without_trusted_settings(mut config: RepoConfig) -> RepoConfig {
    config.worktree.setup = None;
    config.eval.test = None;
    for p in config.profiles.values_mut() {
        p.base_url = None;
        p.api_key_env = None;
    }
    for r in config.roles.values_mut() {
        r.mcp = None;
    }
    config.agents.cli.clear();
    config.nav.lsp.servers.clear();
    config.notify.webhook = None;
    config.land.webhook = None;
    config.land.webhook_secret_env = None;
    config.mcp.servers.clear();
    let kind = config
        .executor
        .kind
        .filter(|k| *k == super::ExecutorKind::Local);
    config.executor = super::ExecutorConfig {
        kind,
        ..Default::default()
    };
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_land_webhook_and_its_secret_variable_are_named_and_left_out() {
        let mut config = RepoConfig::default();
        config.land.webhook = Some("0.0.0.0:8787".into());
        config.land.webhook_secret_env = Some("AWS_SECRET_ACCESS_KEY".into());
        config.land.poll_secs = Some(5);
        let named: Vec<String> = config_items(&config)
            .iter()
            .map(|i| format!("{i:?}"))
            .collect();
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(named[0].contains("0.0.0.0:8787"), "{named:?}");
        assert!(named[1].contains("AWS_SECRET_ACCESS_KEY"), "{named:?}");
        let kept = without_trusted_settings(config);
        assert_eq!(
            (
                kept.land.webhook,
                kept.land.webhook_secret_env,
                kept.land.poll_secs
            ),
            (None, None, Some(5))
        );
    }

    #[test]
    fn only_configuration_mcp_and_role_files_are_trust_relevant() {
        for path in [
            ".orchestra/config.toml",
            ".mcp.json",
            ".orchestra/agents/reviewer.md",
            ".claude/agents/x.md",
            ".github/agents/y.agent.md",
        ] {
            assert!(is_trust_relevant(path), "{path}");
        }
        for path in [
            ".orchestra/notes.md",
            "src/.mcp.json",
            ".claude/agentsx/y.md",
            "README.md",
        ] {
            assert!(!is_trust_relevant(path), "{path}");
        }
    }

    #[test]
    fn a_pin_holds_until_a_file_changes_or_is_added_and_revoke_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("repo");
        let user = dir.path().join("home/git-orchestra/config.toml");
        std::fs::create_dir_all(top.join(".orchestra")).unwrap();
        std::fs::write(
            top.join(".orchestra/config.toml"),
            "[worktree]\nsetup = \"make\"\n",
        )
        .unwrap();
        assert_eq!(state(&top, &user).unwrap(), TrustState::Untrusted);
        pin(&top, &user).unwrap();
        assert_eq!(state(&top, &user).unwrap(), TrustState::Trusted);
        assert!(trust_file(&user).is_file());
        std::fs::write(top.join(".mcp.json"), "{}").unwrap();
        assert_eq!(state(&top, &user).unwrap(), TrustState::Changed);
        pin(&top, &user).unwrap();
        std::fs::write(
            top.join(".orchestra/config.toml"),
            "[worktree]\nsetup = \"curl\"\n",
        )
        .unwrap();
        assert_eq!(state(&top, &user).unwrap(), TrustState::Changed);
        assert!(revoke(&top, &user).unwrap());
        assert!(!revoke(&top, &user).unwrap());
        assert_eq!(state(&top, &user).unwrap(), TrustState::Untrusted);
        std::fs::write(trust_file(&user), "repos = 1\n").unwrap();
        let err = state(&top, &user).unwrap_err().to_string();
        assert!(
            err.contains("trust.toml") && err.contains("git orchestra trust"),
            "{err}"
        );
    }
}
