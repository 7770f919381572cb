//! The run_command sandbox: on Linux with Landlock, a command may write only inside its
//! worktree and a private temporary directory, reads everything else, and opens no TCP
//! connection unless its role allows the network.
//!
//! Landlock restricts the calling thread and everything it then executes, so the restriction
//! is applied in a fresh process: `git-orchestra __sandbox …` (this binary, re-executed as a
//! small launcher) applies the ruleset and then `exec`s the command. The engine itself is
//! never restricted. Git metadata of a packet worktree lives in the common git directory,
//! outside both writable trees, so `.git/config` and hooks are read-only to the command.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

/// The hidden subcommand that turns the binary into the launcher.
pub const LAUNCHER_ARG: &str = "__sandbox";

/// What to do where Landlock is not available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfUnavailable {
    /// Refuse to run the command (the default).
    Refuse,
    /// Run it unrestricted; the caller warns.
    Allow,
}

/// How to start sandboxed commands.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The `git-orchestra` executable that acts as launcher.
    pub launcher: PathBuf,
    /// The command's private temporary directory (writable, set as TMPDIR).
    pub tmp: PathBuf,
    pub if_unavailable: IfUnavailable,
}

impl Sandbox {
    /// Returns the command that runs `sh -c <script>` in `worktree` under the sandbox.
    pub fn command(&self, worktree: &Path, script: &str, network: bool) -> Command {
        let mut cmd = Command::new(&self.launcher);
        cmd.arg(LAUNCHER_ARG)
            .arg("--worktree")
            .arg(worktree)
            .arg("--tmp")
            .arg(&self.tmp);
        if network {
            cmd.arg("--network");
        }
        if self.if_unavailable == IfUnavailable::Allow {
            cmd.arg("--allow-unsandboxed");
        }
        cmd.arg("--").arg("sh").arg("-c").arg(script);
        cmd
    }
}

/// Why the launcher could not run the command.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox launcher: {0}")]
    Usage(String),
    #[error("Landlock unavailable on this kernel; refusing to run the command unsandboxed")]
    Unavailable,
    #[error("cannot apply the Landlock ruleset: {0}")]
    Ruleset(String),
    #[error("cannot execute `{program}`: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
    },
}

/// Applies the sandbox described by `args` (the launcher's arguments after `__sandbox`) to
/// this process and executes the command; returns only on failure.
pub fn exec_sandboxed(args: &[OsString]) -> SandboxError {
    let mut worktree = None;
    let mut tmp = None;
    let mut network = false;
    let mut allow = false;
    let mut it = args.iter();
    let mut rest: Vec<OsString> = Vec::new();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--worktree") => worktree = it.next().map(PathBuf::from),
            Some("--tmp") => tmp = it.next().map(PathBuf::from),
            Some("--network") => network = true,
            Some("--allow-unsandboxed") => allow = true,
            Some("--") => {
                rest = it.by_ref().cloned().collect();
                break;
            }
            _ => return SandboxError::Usage(format!("unexpected argument {a:?}")),
        }
    }
    let (Some(worktree), Some(tmp)) = (worktree, tmp) else {
        return SandboxError::Usage("--worktree and --tmp are required".into());
    };
    let Some((program, program_args)) = rest.split_first() else {
        return SandboxError::Usage("no command after --".into());
    };
    match restrict(&worktree, &tmp, network) {
        Ok(true) => {}
        Ok(false) if allow => {}
        Ok(false) => return SandboxError::Unavailable,
        Err(e) => return e,
    }
    let err = Command::new(program)
        .args(program_args)
        .current_dir(&worktree)
        .env("TMPDIR", &tmp)
        .exec();
    SandboxError::Exec {
        program: program.to_string_lossy().into_owned(),
        source: err,
    }
}

/// Restricts this process; returns whether Landlock enforced the file-system rules.
fn restrict(worktree: &Path, tmp: &Path, network: bool) -> Result<bool, SandboxError> {
    let e = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
    let abi = ABI::V5;
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(e)?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(e)?;
    }
    let devices = ["/dev/null", "/dev/zero", "/dev/tty", "/dev/full"];
    let status = ruleset
        .create()
        .map_err(e)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(e)?
        .add_rules(path_beneath_rules([worktree, tmp], AccessFs::from_all(abi)))
        .map_err(e)?
        .add_rules(path_beneath_rules(
            devices.iter().filter(|d| Path::new(d).exists()),
            AccessFs::WriteFile | AccessFs::ReadFile,
        ))
        .map_err(e)?
        .restrict_self()
        .map_err(e)?;
    Ok(status.ruleset != RulesetStatus::NotEnforced)
}
