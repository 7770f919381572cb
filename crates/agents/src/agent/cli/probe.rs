//! Which agent CLIs are installed, their versions, and whether they look usable: found on
//! `PATH`, answering `--version`, and given a way to authenticate in the environment.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use super::adapter;
use orchestra_core::config::RepoConfig;

/// The versions the built-in adapters were tested with (the user guide lists them too, in
/// `docs/src/agents.md`).
pub const TESTED: [(&str, &str); 5] = [
    ("claude", "2.1.331"),
    ("codex", "0.169.0"),
    ("gemini", "0.61.0"),
    ("opencode", "1.18.33"),
    ("qwen", "0.24.4"),
];

/// What `agents` shows of one CLI.
#[derive(Debug, Clone, Serialize)]
pub struct CliStatus {
    /// Its name, as `--agent <name>` takes it.
    pub name: String,
    /// The program run for it.
    pub command: String,
    /// True when the program was found (on `PATH`, or at the path configured).
    pub found: bool,
    /// Where it was found on `PATH`, if it was.
    pub path: Option<PathBuf>,
    /// The first line `--version` printed.
    pub version: Option<String>,
    /// The version the built-in adapter was tested with.
    pub tested: Option<String>,
    /// True when it looks ready to work packets: found, answering `--version`, and given a
    /// way to authenticate.
    pub usable: bool,
    /// Why it is not usable, or what to check.
    pub note: Option<String>,
}

/// The variables that authenticate each built-in CLI without a login under the home
/// directory (which a sandboxed CLI cannot read).
fn auth_vars(name: &str) -> &'static [&'static str] {
    match name {
        "claude" => &[
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_AUTH_TOKEN",
        ],
        "codex" => &["OPENAI_API_KEY", "CODEX_API_KEY"],
        "gemini" => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "qwen" => &["OPENAI_API_KEY", "DASHSCOPE_API_KEY"],
        "opencode" => &[
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENROUTER_API_KEY",
            "GEMINI_API_KEY",
        ],
        _ => &[],
    }
}

/// Returns the status of every built-in CLI and every configured one.
pub fn probe(config: &RepoConfig) -> Vec<CliStatus> {
    let mut names: Vec<String> = adapter::BUILTIN.iter().map(|s| s.to_string()).collect();
    for name in config.agents.cli.keys() {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    let set = |k: &str| {
        orchestra_sys::exec::secret_env::var(k).is_some()
            || std::env::var_os(k).is_some_and(|v| !v.is_empty())
    };
    names.iter().map(|name| one(name, config, &set)).collect()
}

fn one(name: &str, config: &RepoConfig, set: &dyn Fn(&str) -> bool) -> CliStatus {
    let tested = TESTED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_string());
    let adapter = match adapter::adapter(name, config.agents.cli.get(name)) {
        Ok(a) => a,
        Err(e) => {
            return CliStatus {
                name: name.into(),
                command: name.into(),
                found: false,
                path: None,
                version: None,
                tested,
                usable: false,
                note: Some(e.to_string()),
            };
        }
    };
    let path = which(&adapter.command);
    let version = path.as_deref().and_then(version_of);
    let vars = auth_vars(name);
    let note = if path.is_none() {
        Some(format!("`{}` is not on PATH", adapter.command))
    } else if version.is_none() {
        Some(format!("`{} --version` failed", adapter.command))
    } else if !vars.is_empty() && !vars.iter().any(|v| set(v)) {
        Some(format!(
            "no {} in the environment: the CLI runs with a home of its own, so a login under yours is not used",
            vars.join(" or ")
        ))
    } else {
        match (&tested, &version) {
            (Some(t), Some(v)) if !v.contains(t.as_str()) => {
                Some(format!("tested with {t}; flags may differ in this version"))
            }
            _ => None,
        }
    };
    let usable =
        path.is_some() && version.is_some() && (vars.is_empty() || vars.iter().any(|v| set(v)));
    CliStatus {
        name: name.into(),
        command: adapter.command.clone(),
        found: path.is_some(),
        path,
        version,
        tested,
        usable,
        note,
    }
}

/// Returns where `command` is: itself when it names a path, else the first match on `PATH`.
pub fn which(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        let p = PathBuf::from(command);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(command))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Returns the first line `program --version` prints, within a few seconds.
fn version_of(program: &Path) -> Option<String> {
    let stop = AtomicBool::new(false);
    let mut cmd = Command::new(program);
    cmd.arg("--version")
        .env("NO_COLOR", "1")
        .env("DISABLE_AUTOUPDATER", "1");
    let out = orchestra_sys::exec::capture::capture(&mut cmd, Duration::from_secs(20), &stop, 4096)
        .ok()?;
    if !out.status.is_some_and(|s| s.success()) {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}
