//! How language servers start: in the agents' sandbox, and from programs outside the
//! repository unless the user trusts it.
//!
//! A language server runs with a worktree as its root, and the worktree is what an agent
//! writes and a clone brings: a git-ignored `node_modules/.bin/pyright-langserver`, a
//! `node_modules/typescript/lib/tsserver.js` that `typescript-language-server` prefers to its
//! own, a relative `PATH` entry (`node_modules/.bin`) that resolves inside it, build scripts and
//! procedural macros rust-analyzer compiles and runs. So, in a repository the user does not
//! trust (`git orchestra trust`), the server's program is looked up only outside the worktree
//! (relative and in-worktree `PATH` entries skipped, for the server and for what it starts),
//! `typescript-language-server` is pointed at the TypeScript installed beside it, and
//! rust-analyzer runs neither build scripts nor procedural macros, with rustup's default
//! toolchain (`RUSTUP_TOOLCHAIN`) over one a `rust-toolchain.toml` names. Whatever runs, runs in the
//! sandbox: its worktree read-only (so a sandboxed server serves that one worktree, not the
//! run's others through workspace folders), a private temporary directory and the user's
//! `[sandbox] writable` caches writable, no network unless the user's `[nav.lsp] network =
//! true`, and gone with the engine. Only the user's `[nav.lsp] sandbox = false` runs servers
//! as the user.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};

/// Returns the command that starts, confined, the server `name` — `program` with `args` —
/// for the worktree `root` (the agents' sandbox builds it, see
/// `agent::sandbox::language_servers`).
pub type Confine = dyn Fn(&Path, &str, &Path, &[String]) -> Command + Send + Sync;

/// How the language servers of one process start.
#[derive(Clone, Default)]
pub struct Launch {
    /// The confinement they run in; `None` runs them as the user (`[nav.lsp] sandbox = false`,
    /// or a caller that asked for no confinement).
    pub confine: Option<Arc<Confine>>,
    /// Whether programs inside the repository may serve it (the user trusts it).
    pub trusted: bool,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("confined", &self.confine.is_some())
            .field("trusted", &self.trusted)
            .finish()
    }
}

impl Launch {
    /// Returns the program `command` names for a server of the worktree at `root`: a path as
    /// given, or the first match on `PATH`; in an untrusted repository never one inside `root`
    /// (nor a relative one, which resolves there).
    pub fn program(&self, command: &str, root: &Path) -> Result<PathBuf, String> {
        let refused = || {
            format!(
                "{command} is inside the repository; language servers from the repository run only in a repository you trust (`git orchestra trust`)"
            )
        };
        if command.contains('/') {
            let path = Path::new(command);
            let inside = path.is_relative() || path.starts_with(root);
            if inside && !self.trusted {
                return Err(refused());
            }
            let path = root.join(path);
            return executable(&path)
                .then_some(path)
                .ok_or_else(|| format!("{command} is not an executable file"));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let found = self
            .search_path(&path, root)
            .into_iter()
            .map(|dir| dir.join(command))
            .find(|p| executable(p));
        found.ok_or_else(|| {
            let anywhere = std::env::split_paths(&path)
                .map(|d| root.join(d).join(command))
                .any(|p| executable(&p));
            if anywhere {
                refused()
            } else {
                format!("{command} is not installed (not on PATH); see `git orchestra nav status`")
            }
        })
    }

    /// Returns the directories of `path` programs may come from for the worktree at `root`:
    /// all of them (relative ones resolved in `root`) when the repository is trusted, else the
    /// absolute ones outside `root`.
    fn search_path(&self, path: &std::ffi::OsStr, root: &Path) -> Vec<PathBuf> {
        std::env::split_paths(path)
            .filter(|d| !d.as_os_str().is_empty())
            .filter_map(|d| match self.trusted {
                true => Some(root.join(d)),
                false => (d.is_absolute() && !d.starts_with(root)).then_some(d),
            })
            .collect()
    }

    /// Returns the command that starts `program args` as the server `name` of the worktree at
    /// `root`: confined unless servers run as the user; in an untrusted repository with a
    /// `PATH` that reaches nothing inside the worktree.
    pub fn command(&self, name: &str, program: &Path, args: &[String], root: &Path) -> Command {
        let mut cmd = match &self.confine {
            Some(confine) => confine(root, name, program, args),
            None => {
                let mut cmd = Command::new(program);
                cmd.args(args);
                cmd
            }
        };
        if !self.trusted {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let kept = std::env::join_paths(self.search_path(&path, root))
                .unwrap_or_else(|_| OsString::from("/usr/bin:/bin"));
            cmd.env("PATH", kept);
            // A `rust-toolchain.toml` in the worktree may name a toolchain by `path`, inside
            // it: rustup's proxies (`rust-analyzer`, the `cargo` it runs) then take the
            // user's own default instead.
            if std::env::var_os("RUSTUP_TOOLCHAIN").is_none()
                && let Some(toolchain) = default_toolchain(&rustup_home())
            {
                cmd.env("RUSTUP_TOOLCHAIN", toolchain);
            }
        }
        cmd
    }

    /// Returns the `initializationOptions` of the server `program` for the worktree at `root`,
    /// or why it must not start: in an untrusted repository `typescript-language-server` is
    /// pointed at the TypeScript installed with it (refused when there is none and the
    /// worktree has its own), and rust-analyzer runs no build script and no procedural macro.
    pub fn initialization_options(
        &self,
        program: &Path,
        root: &Path,
    ) -> Result<Option<Value>, String> {
        if self.trusted {
            return Ok(None);
        }
        let name = program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        match name.as_deref() {
            Some("typescript-language-server") => match bundled_tsserver(program) {
                Some(tsserver) => Ok(Some(json!({"tsserver": {"path": tsserver}}))),
                None if root.join("node_modules/typescript").exists() => Err(format!(
                    "{} would run the repository's own node_modules/typescript (no TypeScript is installed beside it); that runs only in a repository you trust (`git orchestra trust`)",
                    program.display()
                )),
                None => Ok(None),
            },
            Some("rust-analyzer") => Ok(Some(json!({
                "cargo": {"buildScripts": {"enable": false}},
                "procMacro": {"enable": false},
                "checkOnSave": false,
            }))),
            _ => Ok(None),
        }
    }
}

/// Returns the `tsserver.js` of the TypeScript installed with the `typescript-language-server`
/// at `program` (its own dependency, or a package beside it), if there is one.
fn bundled_tsserver(program: &Path) -> Option<PathBuf> {
    let real = fs_err::canonicalize(program).ok()?;
    let package = real.ancestors().find(|a| {
        a.file_name()
            .is_some_and(|n| n == "typescript-language-server")
    })?;
    [
        package.join("node_modules/typescript/lib/tsserver.js"),
        package.parent()?.join("typescript/lib/tsserver.js"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Returns rustup's home: `$RUSTUP_HOME`, else `~/.rustup`.
fn rustup_home() -> PathBuf {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
        .unwrap_or_default()
}

/// Returns the default toolchain rustup's settings in `home` name, if any.
fn default_toolchain(home: &Path) -> Option<String> {
    let text = fs_err::read_to_string(home.join("settings.toml")).ok()?;
    let settings: toml::Table = toml::from_str(&text).ok()?;
    settings
        .get("default_toolchain")?
        .as_str()
        .map(str::to_string)
}

/// Returns true if and only if `path` is a file someone may execute.
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn untrusted() -> Launch {
        Launch::default()
    }

    #[test]
    fn an_untrusted_repository_serves_no_program_of_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("wt");
        let bin = root.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let planted = bin.join("planted-server");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            &planted,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let refused = untrusted()
            .program("node_modules/.bin/planted-server", &root)
            .unwrap_err();
        assert!(refused.contains("trust"), "{refused}");
        assert!(
            untrusted()
                .program(planted.to_str().unwrap(), &root)
                .is_err()
        );
        let trusted = Launch {
            trusted: true,
            ..Launch::default()
        };
        assert_eq!(
            trusted.program("node_modules/.bin/planted-server", &root),
            Ok(planted.clone())
        );
        // PATH entries: relative ones and those inside the worktree are skipped.
        let path =
            std::ffi::OsString::from(format!("node_modules/.bin:{}:/usr/bin", bin.display()));
        assert_eq!(
            untrusted().search_path(&path, &root),
            [PathBuf::from("/usr/bin")]
        );
        assert_eq!(trusted.search_path(&path, &root)[0], bin);
    }

    #[test]
    fn rustups_default_toolchain_is_read_from_its_settings() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(default_toolchain(home.path()), None);
        std::fs::write(
            home.path().join("settings.toml"),
            "version = \"12\"\ndefault_toolchain = \"stable-x86_64-unknown-linux-gnu\"\n",
        )
        .unwrap();
        assert_eq!(
            default_toolchain(home.path()).as_deref(),
            Some("stable-x86_64-unknown-linux-gnu")
        );
        let untrusted = untrusted().command("rust-analyzer", Path::new("/x"), &[], home.path());
        let path = untrusted
            .get_envs()
            .find(|(k, _)| *k == "PATH")
            .and_then(|(_, v)| v);
        assert!(path.is_some(), "an untrusted server's PATH is set");
    }

    #[test]
    fn typescript_language_server_is_pointed_at_its_own_typescript_when_untrusted() {
        let tmp = tempfile::tempdir().unwrap();
        let modules = tmp.path().join("lib/node_modules");
        let cli = modules.join("typescript-language-server/lib/cli.mjs");
        let tsserver = modules.join("typescript/lib/tsserver.js");
        for f in [&cli, &tsserver] {
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join("typescript-language-server");
        std::os::unix::fs::symlink(&cli, &program).unwrap();
        let root = tmp.path().join("wt");
        std::fs::create_dir_all(root.join("node_modules/typescript")).unwrap();
        let options = untrusted()
            .initialization_options(&program, &root)
            .unwrap()
            .unwrap();
        assert_eq!(
            options["tsserver"]["path"],
            fs_err::canonicalize(&tsserver)
                .unwrap()
                .display()
                .to_string()
        );
        // None installed beside it while the worktree has its own: refused.
        std::fs::remove_file(&tsserver).unwrap();
        assert!(untrusted().initialization_options(&program, &root).is_err());
        let ra = untrusted()
            .initialization_options(Path::new("/x/rust-analyzer"), &root)
            .unwrap()
            .unwrap();
        assert_eq!(ra["procMacro"]["enable"], false);
    }
}
