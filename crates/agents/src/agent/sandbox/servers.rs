//! The sandbox of language servers: how `lsp::launch` starts them for a repository.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{IfUnavailable, Limits, Sandbox};
use orchestra_core::config::RepoConfig;
use orchestra_nav::lsp::Settings;
use orchestra_nav::lsp::launch::Launch;

/// The CPU time a server process may use: servers live as long as a run.
const LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);

/// Returns how language servers start for the repository whose common git directory is
/// `common_dir`, as `config` says: in the agents' sandbox — the worktree read-only, a private
/// temporary directory under the state directory and the user's `[sandbox] writable` caches
/// writable, the network only with the user's `[nav.lsp] network = true` — unless the user's
/// `[nav.lsp] sandbox = false`; programs inside the repository only when it is trusted.
/// Without this program to act as launcher, servers are refused rather than run unconfined.
pub fn language_servers(config: &RepoConfig, common_dir: &Path) -> Launch {
    let confine = (config.nav.lsp.sandbox != Some(false)).then(|| {
        let launcher =
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/nonexistent/git-orchestra"));
        let sandbox = Sandbox {
            launcher,
            tmp: orchestra_sys::exec::state_dir(common_dir).join("lsp-tmp"),
            read: Sandbox::server_reads(Some(common_dir), &config.sandbox),
            write: Sandbox::writes(&config.sandbox),
            limits: Limits::from_config(&config.sandbox),
            if_unavailable: IfUnavailable::from_config(config.sandbox.if_unavailable),
        };
        let network = config.nav.lsp.network == Some(true);
        Arc::new(
            move |root: &Path, name: &str, program: &Path, args: &[String]| {
                let clean: String = name
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect();
                let mut tmp = sandbox.tmp.join(&clean);
                if fs_err::create_dir_all(&tmp).is_err() {
                    // Started in a sandbox itself (`git orchestra mcp` as an agent's server):
                    // its own temporary directory takes the server's.
                    tmp = std::env::temp_dir().join(format!("lsp-{clean}"));
                    let _ = fs_err::create_dir_all(&tmp);
                }
                Sandbox {
                    tmp,
                    ..sandbox.clone()
                }
                .server_command(root, program, args, false, network, LIFETIME)
            },
        ) as Arc<orchestra_nav::lsp::launch::Confine>
    });
    Launch {
        confine,
        trusted: config.trusted,
    }
}

/// Returns the language-server settings `config` gives for the repository whose common git
/// directory is `common_dir`, the servers started as [`language_servers`] says.
pub fn language_server_settings(config: &RepoConfig, common_dir: &Path) -> Settings {
    Settings {
        launch: language_servers(config, common_dir),
        ..Settings::from_config(&config.nav.lsp)
    }
}
