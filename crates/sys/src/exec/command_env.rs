//! The environment a command run on behalf of a plan or a model starts with: an allow-list.
//!
//! The engine's own environment holds whatever the user's shell exported — `GITHUB_TOKEN`,
//! `AWS_SECRET_ACCESS_KEY`, `NPM_TOKEN`, `*_PASSWORD`, `SSH_AUTH_SOCK` — and a worker, setup or
//! validation command (or an agent's `run_command`) is written by a model or a cloned
//! repository. So such a command inherits only the variables tools need to run (paths, locale,
//! terminal, toolchains, git's identity), the names the user's configuration adds
//! (`[sandbox] env`, see [`allow`]), and what its spec hands over explicitly (the run's
//! `ORCHESTRA_*` contract variables, the worker's API keys). Everything else is dropped.

use std::ffi::OsString;
use std::process::Command;
use std::sync::Mutex;

/// Variables a command keeps from the engine's environment.
const KEEP: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
    "CI",
    "SOURCE_DATE_EPOCH",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    // Git's identity and configuration files (no credential helper or askpass program).
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_TERMINAL_PROMPT",
    // Toolchains.
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "NODE_PATH",
    "NVM_DIR",
    "PNPM_HOME",
    "DOTNET_ROOT",
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
];

/// Prefixes of variable names a command keeps (the locale's categories).
const KEEP_PREFIXES: &[&str] = &["LC_"];

/// Names the user's configuration adds to [`KEEP`] (`[sandbox] env`).
static EXTRA: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Adds `names` (the user's `[sandbox] env`) to the variables every command started from now
/// on keeps from the engine's environment; a variable holding a key the engine keeps for
/// itself stays withheld all the same.
pub fn allow<'a>(names: impl IntoIterator<Item = &'a str>) {
    if let Ok(mut extra) = EXTRA.lock() {
        for name in names {
            if !extra.iter().any(|n| n == name) {
                extra.push(name.to_string());
            }
        }
    }
}

/// Returns true if and only if a command keeps the variable `name` from the engine's
/// environment.
pub fn is_allowed(name: &str) -> bool {
    KEEP.contains(&name)
        || KEEP_PREFIXES.iter().any(|p| name.starts_with(p))
        || EXTRA
            .lock()
            .is_ok_and(|extra| extra.iter().any(|n| n == name))
}

/// Returns the variables of the engine's environment a command keeps.
pub fn inherited() -> Vec<(OsString, OsString)> {
    let withheld = crate::exec::secret_env::withheld();
    std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|n| is_allowed(n) && !withheld.iter().any(|w| w == n))
        })
        .collect()
}

/// Gives `cmd` only the allowed part of the engine's environment ([`inherited`]); what the
/// caller sets afterwards is added to it.
pub fn scrub(cmd: &mut Command) {
    cmd.env_clear();
    cmd.envs(inherited());
}

/// Returns the variables of the engine's environment that configure a model provider's
/// client without being a key (`ANTHROPIC_BASE_URL`, `OPENAI_ORG_ID`, `CLAUDE_CODE_…`): the
/// worker command, an agent CLI usually, gets them back with its keys.
pub fn provider_settings() -> Vec<(String, String)> {
    let withheld = crate::exec::secret_env::withheld();
    std::env::vars()
        .filter(|(name, _)| {
            crate::exec::secret_env::names_provider(name) && !withheld.iter().any(|w| w == name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tools_variables_and_the_configured_ones_are_kept() {
        for kept in [
            "PATH",
            "HOME",
            "LC_ALL",
            "LC_TIME",
            "CARGO_HOME",
            "GIT_AUTHOR_NAME",
        ] {
            assert!(is_allowed(kept), "{kept}");
        }
        for dropped in [
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "NPM_TOKEN",
            "DB_PASSWORD",
            "SSH_AUTH_SOCK",
            "GIT_ASKPASS",
            "HTTPS_PROXY",
            "ORCHESTRA_REMOTE_TOKEN",
        ] {
            assert!(!is_allowed(dropped), "{dropped}");
        }
        allow(["MY_CONFIGURED_VAR"]);
        assert!(is_allowed("MY_CONFIGURED_VAR"));
    }
}
