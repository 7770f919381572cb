//! The run_command sandbox: on Linux with Landlock, a command may write only inside its
//! worktree and a private temporary directory, read only those, the repository's git
//! directory, the system and the toolchains (no credentials under `$HOME` or in `/etc`, see
//! `reads`), and open no connection unless its role allows the network (TCP by Landlock, every
//! other socket by `seccomp`); it signals and reaches abstract sockets of no process outside
//! its own sandbox, and it runs without any capability and with `no_new_privs` (see
//! `privileges`), root or not.
//!
//! Landlock restricts the calling thread and everything it then executes, so the restriction
//! is applied in a fresh process: `git-orchestra __sandbox …` (this binary, re-executed as a
//! small launcher) applies the ruleset and then `exec`s the command. The engine itself is
//! never restricted. Git metadata of a packet worktree lives in the common git directory,
//! outside both writable trees, so `.git/config` and hooks are read-only to the command.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, path_beneath_rules,
};

#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
mod cgroup;
mod limits;
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
mod privileges;
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
mod reads;
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
mod seccomp;
mod servers;
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
mod supervise;

pub use limits::Limits;
pub use servers::{language_server_settings, language_servers};

/// The hidden subcommand that turns the binary into the launcher.
pub const LAUNCHER_ARG: &str = "__sandbox";

/// The launcher's exit status when the sandbox denied executing the command's program, apart
/// from 126 (any other reason the launcher could not run it) and the command's own statuses.
pub const DENIED_STATUS: u8 = 125;

/// What to do where Landlock is not available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfUnavailable {
    /// Refuse to run the command (the default).
    Refuse,
    /// Run it unrestricted; the caller warns.
    Allow,
}

/// Returns the Landlock ABI version the running kernel supports, or `None` when it has no
/// Landlock (not built in, or disabled at boot).
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
pub fn landlock_abi() -> Option<i32> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag, the call only reports the
    // ABI version; it creates nothing and touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v as i32)
}

/// Returns `None`: this build has no sandbox (it is the Linux build's, by Landlock).
#[cfg(not(all(target_os = "linux", not(orchestra_no_landlock))))]
pub fn landlock_abi() -> Option<i32> {
    None
}

impl IfUnavailable {
    /// Returns the launcher policy for the configured `policy` (default: refuse).
    pub fn from_config(policy: Option<orchestra_core::config::SandboxPolicy>) -> IfUnavailable {
        match policy {
            Some(orchestra_core::config::SandboxPolicy::Warn) => IfUnavailable::Allow,
            Some(orchestra_core::config::SandboxPolicy::Refuse) | None => IfUnavailable::Refuse,
        }
    }

    /// Returns what to tell the user once when Landlock is not `available`, or `None` when
    /// it is.
    pub fn notice(self, available: bool) -> Option<String> {
        if available {
            return None;
        }
        Some(match self {
            IfUnavailable::Refuse => "Landlock is unavailable on this kernel: agents' run_command calls will be refused (set `[sandbox] if_unavailable = \"warn\"` in the configuration to run them unconfined)".to_string(),
            IfUnavailable::Allow => "warning: Landlock is unavailable on this kernel: agents' run_command calls run UNCONFINED, as `[sandbox] if_unavailable = \"warn\"` allows".to_string(),
        })
    }
}

/// How to start sandboxed commands.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The `git-orchestra` executable that acts as launcher.
    pub launcher: PathBuf,
    /// The command's private temporary directory (writable, set as TMPDIR).
    pub tmp: PathBuf,
    /// Paths the command may read besides the worktree, the system and the home directory's
    /// non-secret entries: the repository's git directory, the configured `[sandbox] read`.
    pub read: Vec<PathBuf>,
    /// Paths the command may write besides the worktree and `tmp`: the configured
    /// `[sandbox] writable` (tool caches); empty for agents' commands.
    pub write: Vec<PathBuf>,
    /// Resource limits of the command and everything it starts.
    pub limits: Limits,
    pub if_unavailable: IfUnavailable,
}

impl Sandbox {
    /// Returns the paths to grant reading besides the defaults: the repository's common git
    /// directory (git in the worktree needs it) and the configured `[sandbox] read` entries,
    /// `~/` expanded to the home directory.
    pub fn reads(
        common_dir: Option<&Path>,
        config: &orchestra_core::config::SandboxConfig,
    ) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = common_dir.map(Path::to_path_buf).into_iter().collect();
        out.extend(expand_home(config.read.iter().flatten()));
        out
    }

    /// Returns what a server (MCP or language server) may read besides the defaults: what
    /// [`Sandbox::reads`] grants, and this program's user configuration directory
    /// (`$XDG_CONFIG_HOME/git-orchestra`), which `git orchestra mcp` as a server reads and which
    /// may lie outside the home directory.
    pub fn server_reads(
        common_dir: Option<&Path>,
        config: &orchestra_core::config::SandboxConfig,
    ) -> Vec<PathBuf> {
        let mut out = Sandbox::reads(common_dir, config);
        let env = |k: &str| std::env::var(k).ok();
        if let Some(dir) = orchestra_core::config::user_config_path(&env)
            .as_deref()
            .and_then(Path::parent)
            .filter(|d| d.is_dir())
        {
            out.push(dir.to_path_buf());
        }
        out
    }

    /// Returns the configured `[sandbox] writable` paths, `~/` expanded; those that do not
    /// exist yet are created (a tool cache a first build would make), so they can be granted.
    pub fn writes(config: &orchestra_core::config::SandboxConfig) -> Vec<PathBuf> {
        let paths = expand_home(config.writable.iter().flatten());
        for p in &paths {
            let _ = fs_err::create_dir_all(p);
        }
        paths
    }

    /// Returns the command that runs `sh -c <script>` in `worktree` under the sandbox, for at
    /// most `timeout` (which bounds its processes' CPU time too).
    pub fn command(
        &self,
        worktree: &Path,
        script: &str,
        network: bool,
        timeout: std::time::Duration,
    ) -> Command {
        let prefix = self.prefix(worktree, network, timeout);
        let mut cmd = Command::new(&self.launcher);
        cmd.args(&prefix[1..]).arg("sh").arg("-c").arg(script);
        cmd
    }

    /// Returns the confinement for commands our agents did not run but a model may have
    /// written — validation commands of a plan or a subtask: this sandbox without the network,
    /// its temporary directory `tmp` (created when needed).
    pub fn confinement(self) -> Box<orchestra_sys::exec::process::Confine> {
        Box::new(move |dir: &Path, timeout| {
            let _ = fs_err::create_dir_all(&self.tmp);
            self.prefix(dir, false, timeout)
        })
    }

    /// Returns the confinement of commands that run in a tree of their own — a worktree, a
    /// merge's scratch tree: this sandbox, with the network if `network`, each tree's
    /// commands given a private temporary directory under `tmp` (created when needed).
    pub fn per_tree(self, network: bool) -> std::sync::Arc<orchestra_sys::exec::process::Confine> {
        std::sync::Arc::new(move |dir: &Path, timeout| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            dir.hash(&mut h);
            let name = dir.file_name().map_or_else(
                || "tree".to_string(),
                |n| n.to_string_lossy().chars().take(40).collect(),
            );
            let tmp = self.tmp.join(format!("{name}-{:08x}", h.finish() as u32));
            let _ = fs_err::create_dir_all(&tmp);
            Sandbox {
                tmp,
                ..self.clone()
            }
            .prefix(dir, network, timeout)
        })
    }

    /// Returns the confinement of an agent CLI working a packet: this sandbox with the network
    /// (the CLI talks to its provider), writable in the worktree and its temporary directory
    /// `tmp` (created when needed).
    pub fn worker_confinement(self) -> Box<orchestra_sys::exec::process::Confine> {
        Box::new(move |dir: &Path, timeout| {
            let _ = fs_err::create_dir_all(&self.tmp);
            self.prefix(dir, true, timeout)
        })
    }

    /// Returns the command that starts the long-running server `program args` (an MCP or a
    /// language server) for the tree `dir` under this sandbox: `dir` writable only when
    /// `write_dir` (else readable), the network only when `network`, each process's CPU time
    /// bounded by `lifetime`. The program's own file is granted reading, so a server the user
    /// installed outside the granted trees still starts.
    pub fn server_command(
        &self,
        dir: &Path,
        program: &Path,
        args: &[String],
        write_dir: bool,
        network: bool,
        lifetime: std::time::Duration,
    ) -> Command {
        let mut prefix = self.prefix(dir, network, lifetime);
        let dashes = prefix.pop();
        if !write_dir {
            prefix.push("--read-only".into());
        }
        if program.is_absolute() {
            prefix.extend(["--read".into(), program.as_os_str().to_owned()]);
        }
        prefix.extend(dashes);
        let mut cmd = Command::new(&self.launcher);
        cmd.args(&prefix[1..]).arg(program).args(args);
        cmd
    }

    /// Returns the launcher and its arguments up to `--`, after which comes the command.
    fn prefix(
        &self,
        worktree: &Path,
        network: bool,
        timeout: std::time::Duration,
    ) -> Vec<OsString> {
        let mut cmd = Command::new(&self.launcher);
        cmd.arg(LAUNCHER_ARG)
            .arg("--worktree")
            .arg(worktree)
            .arg("--tmp")
            .arg(&self.tmp);
        for path in &self.read {
            cmd.arg("--read").arg(path);
        }
        for path in &self.write {
            cmd.arg("--write").arg(path);
        }
        // The command may be given another home (an agent CLI's private one): the launcher
        // keeps the credentials of the engine's home out all the same.
        if let Some(home) = std::env::var_os("HOME") {
            cmd.arg("--user-home").arg(home);
        }
        // A process cannot use more CPU time than the wall time times the cores.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        cmd.arg("--max-processes")
            .arg(self.limits.processes.to_string())
            .arg("--max-file-mb")
            .arg(self.limits.file_mb.to_string())
            .arg("--cpu-secs")
            .arg((timeout.as_secs() * cores + 60).to_string());
        if let Some(mb) = self.limits.memory_mb {
            cmd.arg("--max-memory-mb").arg(mb.to_string());
        }
        if network {
            cmd.arg("--network");
        }
        if self.if_unavailable == IfUnavailable::Allow {
            cmd.arg("--allow-unsandboxed");
        }
        cmd.arg("--");
        std::iter::once(cmd.get_program().to_owned())
            .chain(cmd.get_args().map(ToOwned::to_owned))
            .collect()
    }
}

impl Sandbox {
    /// Returns the sandbox `config` describes for commands run on behalf of the repository at
    /// `common_dir` (workers, setup and validation commands, agent CLIs), launched by
    /// `launcher`, with `tmp` as the parent of their private temporary directories.
    pub fn from_config(
        launcher: PathBuf,
        common_dir: &Path,
        config: &orchestra_core::config::SandboxConfig,
        tmp: PathBuf,
    ) -> Sandbox {
        Sandbox {
            launcher,
            tmp,
            read: Sandbox::reads(Some(common_dir), config),
            write: Sandbox::writes(config),
            limits: Limits::from_config(config),
            if_unavailable: IfUnavailable::from_config(config.if_unavailable),
        }
    }
}

/// Returns the confinements of the commands a plan or a person names — external worker
/// commands, setup and validation commands — in the repository whose common git directory is
/// `common_dir`, as `config` says: writes only in the command's tree, a private temporary
/// directory and the `writable` caches; reads as for agents' commands; the network for the
/// kinds `network` lists. `workers = "off"` runs them all as the user.
pub fn command_sandboxes(
    common_dir: &Path,
    config: &orchestra_core::config::SandboxConfig,
) -> orchestra_sys::exec::process::Sandboxes {
    use orchestra_core::config::{NetworkUse, WorkersSandbox};
    if config.workers == Some(WorkersSandbox::Off) {
        tracing::warn!(
            "[sandbox] workers = \"off\": worker, setup and validation commands run unconfined"
        );
        return orchestra_sys::exec::process::Sandboxes::default();
    }
    let launcher = match std::env::current_exe() {
        Ok(l) => l,
        Err(e) => {
            // Without a launcher nothing can run confined: refuse every command rather than
            // run it as the user.
            tracing::warn!(error = %e, "cannot find this program to launch sandboxed commands");
            PathBuf::from("/nonexistent/git-orchestra")
        }
    };
    let sandbox = Sandbox::from_config(
        launcher,
        common_dir,
        config,
        orchestra_sys::exec::state_dir(common_dir).join("tmp"),
    );
    if let Some(notice) = process_limit_notice() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| tracing::warn!("{notice}"));
    }
    let network = config.network_uses();
    let worker_contained = contains_writes(&sandbox.write, common_dir, landlock_abi());
    let confine = |kind| Some(sandbox.clone().per_tree(network.contains(&kind)));
    orchestra_sys::exec::process::Sandboxes {
        worker: confine(NetworkUse::Worker),
        setup: confine(NetworkUse::Setup),
        validation: confine(NetworkUse::Validation),
        worker_contained,
    }
}

/// The Landlock ABI whose file-system rights the sandbox asks for (see `restrict`): a kernel
/// with an older one enforces only some of them (truncating, for one, came with ABI 3).
const FULL_ABI: i32 = 5;

/// Returns whether a confined command cannot write the main checkout of the repository whose
/// common git directory is `common_dir`: the kernel's Landlock (`abi`) enforces every right
/// the sandbox asks for, and none of the granted `writable` caches lies in that checkout or
/// holds it.
fn contains_writes(writable: &[PathBuf], common_dir: &Path, abi: Option<i32>) -> bool {
    let top = common_dir
        .file_name()
        .is_some_and(|n| n == ".git")
        .then(|| common_dir.parent())
        .flatten();
    let overlaps = |w: &PathBuf| top.is_none_or(|t| t.starts_with(w) || w.starts_with(t));
    abi.is_some_and(|v| v >= FULL_ABI) && !writable.iter().any(overlaps)
}

/// Returns what to tell the user where `[sandbox] max_processes` cannot be enforced: running
/// as root (which `RLIMIT_NPROC` does not bound) without a writable pids cgroup; `None` where
/// it holds.
pub fn process_limit_notice() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    #[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
    let bounded = cgroup::pids_parent().is_some();
    #[cfg(not(all(target_os = "linux", not(orchestra_no_landlock))))]
    let bounded = false;
    (root && !bounded).then(|| {
        "warning: running as root without a writable pids cgroup: `[sandbox] max_processes` is not enforced for sandboxed commands (the kernel does not apply RLIMIT_NPROC to root); run as another user, or give this process a cgroup with the pids controller".to_string()
    })
}

/// Returns `entries` with a leading `~/` replaced by the home directory (entries naming the
/// home directory are dropped when `HOME` is unset).
fn expand_home<'a>(entries: impl Iterator<Item = &'a String>) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    entries
        .filter_map(|entry| match (entry.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => Some(home.join(rest)),
            (Some(_), None) => None,
            (None, _) => Some(PathBuf::from(entry)),
        })
        .collect()
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
    #[error("cannot drop the command's privileges: {0}")]
    Privileges(String),
    #[error("cannot install the system call filter: {0}")]
    Seccomp(String),
    #[error("cannot execute `{program}`: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
    },
    #[error(
        "the sandbox denied executing `{}`: it lies outside what sandboxed commands may read; to allow it, add `[sandbox] read = [\"{}\"]` to your user configuration, ~/.config/git-orchestra/config.toml",
        program.display(),
        program.parent().unwrap_or(program).display()
    )]
    Denied { program: PathBuf },
}

impl SandboxError {
    /// Returns the launcher's exit status for this failure: [`DENIED_STATUS`] when the sandbox
    /// denied the program, 126 otherwise.
    pub fn exit_status(&self) -> u8 {
        match self {
            SandboxError::Denied { .. } => DENIED_STATUS,
            _ => 126,
        }
    }
}

/// The launcher's arguments, parsed.
struct LaunchArgs {
    worktree: PathBuf,
    tmp: PathBuf,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    user_home: Option<PathBuf>,
    network: bool,
    allow: bool,
    /// The worktree is only read (`--read-only`): a server of a role that may not write.
    read_only: bool,
    limits: Limits,
    cpu_secs: Option<u64>,
    command: Vec<OsString>,
}

/// Parses the launcher's arguments (see [`Sandbox::command`]).
fn parse(args: &[OsString]) -> Result<LaunchArgs, SandboxError> {
    let (mut worktree, mut tmp, mut cpu_secs, mut user_home) = (None, None, None, None);
    let (mut network, mut allow, mut read_only) = (false, false, false);
    let (mut read, mut write) = (Vec::new(), Vec::new());
    let mut limits = Limits::default();
    let mut command = Vec::new();
    let mut it = args.iter();
    let number = |v: Option<&OsString>| -> Result<u64, SandboxError> {
        v.and_then(|v| v.to_str()?.parse().ok())
            .ok_or_else(|| SandboxError::Usage("a limit needs a number".into()))
    };
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--worktree") => worktree = it.next().map(PathBuf::from),
            Some("--tmp") => tmp = it.next().map(PathBuf::from),
            Some("--read") => read.extend(it.next().map(PathBuf::from)),
            Some("--write") => write.extend(it.next().map(PathBuf::from)),
            Some("--user-home") => user_home = it.next().map(PathBuf::from),
            Some("--network") => network = true,
            Some("--allow-unsandboxed") => allow = true,
            Some("--read-only") => read_only = true,
            Some("--max-processes") => limits.processes = number(it.next())?,
            Some("--max-memory-mb") => limits.memory_mb = Some(number(it.next())?),
            Some("--max-file-mb") => limits.file_mb = number(it.next())?,
            Some("--cpu-secs") => cpu_secs = Some(number(it.next())?),
            Some("--") => {
                command = it.by_ref().cloned().collect();
                break;
            }
            _ => return Err(SandboxError::Usage(format!("unexpected argument {a:?}"))),
        }
    }
    let (Some(worktree), Some(tmp)) = (worktree, tmp) else {
        return Err(SandboxError::Usage(
            "--worktree and --tmp are required".into(),
        ));
    };
    if command.is_empty() {
        return Err(SandboxError::Usage("no command after --".into()));
    }
    Ok(LaunchArgs {
        worktree,
        tmp,
        read,
        write,
        user_home,
        network,
        allow,
        read_only,
        limits,
        cpu_secs,
        command,
    })
}

/// Runs the command `args` describes (the launcher's arguments after `__sandbox`) where this
/// build has no sandbox: only where `if_unavailable = "warn"` allows it (`--allow-unsandboxed`),
/// after saying loudly on stderr that it runs unconfined; returns only on failure.
#[cfg(not(all(target_os = "linux", not(orchestra_no_landlock))))]
pub fn exec_sandboxed(args: &[OsString]) -> SandboxError {
    use std::os::unix::process::CommandExt;
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if !a.allow {
        return SandboxError::Unavailable;
    }
    eprintln!(
        "warning: this build of git-orchestra has no sandbox (Landlock is Linux's): `{}` runs UNCONFINED, as `[sandbox] if_unavailable = \"warn\"` allows",
        a.command.join(std::ffi::OsStr::new(" ")).to_string_lossy()
    );
    let _ = (
        &a.read,
        &a.write,
        &a.user_home,
        a.network,
        a.read_only,
        &a.limits,
        a.cpu_secs,
    );
    let err = Command::new(&a.command[0])
        .args(&a.command[1..])
        .current_dir(&a.worktree)
        .env("TMPDIR", &a.tmp)
        .exec();
    SandboxError::Exec {
        program: a.command[0].to_string_lossy().into_owned(),
        source: err,
    }
}

/// Applies the sandbox described by `args` (the launcher's arguments after `__sandbox`) to
/// this process, runs the command under its supervision and exits as the command did; returns
/// only on failure.
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
pub fn exec_sandboxed(args: &[OsString]) -> SandboxError {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return e,
    };
    // Before Landlock closes the cgroup file system: a pids cgroup bounds the command's
    // processes where RLIMIT_NPROC does not (root); the launcher counts as one.
    if let Some(parent) = cgroup::pids_parent() {
        let _ = cgroup::join_bounded(&parent, a.limits.processes.saturating_add(1));
    }
    let (writable_tree, mut read) = match a.read_only {
        true => (None, vec![a.worktree.clone()]),
        false => (Some(a.worktree.as_path()), Vec::new()),
    };
    let writable: Vec<&Path> = writable_tree
        .into_iter()
        .chain([a.tmp.as_path()])
        .chain(a.write.iter().map(PathBuf::as_path))
        .collect();
    read.extend(a.read.iter().cloned());
    match restrict(&writable, &read, a.user_home.as_deref(), a.network) {
        Ok(true) => {}
        Ok(false) if a.allow => {}
        Ok(false) => return SandboxError::Unavailable,
        Err(e) => return e,
    }
    // Whether or not Landlock is there: limits set, no capability survives into the command,
    // and the system call filter holds.
    let confined = supervise::set_limits(&a.limits, a.cpu_secs)
        .and_then(|()| privileges::drop_all())
        .and_then(|()| seccomp::install(a.network))
        .and_then(|()| seccomp::protect(std::process::id() as libc::pid_t));
    let protect = match confined {
        Ok(protect) => protect,
        Err(e) => return e,
    };
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..])
        .current_dir(&a.worktree)
        .env("TMPDIR", &a.tmp);
    supervise::run(cmd, protect)
}

/// Restricts this process to writing `writable` (the worktree, the temporary directory, the
/// granted caches) and reading `read` besides the defaults; returns whether Landlock enforced
/// the file-system rules.
#[cfg(all(target_os = "linux", not(orchestra_no_landlock)))]
fn restrict(
    writable: &[&Path],
    read: &[PathBuf],
    user_home: Option<&Path>,
    network: bool,
) -> Result<bool, SandboxError> {
    let e = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
    // `FULL_ABI`: the engine trusts a kernel of this ABI to refuse every write outside.
    let abi = ABI::V5;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let path = std::env::var("PATH").ok();
    let readable = reads::readable(read, home.as_deref(), user_home, path.as_deref(), network);
    // Scopes (Landlock ABI 6, applied where the kernel has them): no signal to, and no
    // abstract UNIX socket of, a process outside this sandbox — the engine included.
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(e)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(e)?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(e)?;
    }
    // Not `/dev/tty`: the command has no controlling terminal (see `supervise`).
    let devices = ["/dev/null", "/dev/zero", "/dev/full"];
    let status = ruleset
        .create()
        .map_err(e)?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(abi)))
        .map_err(e)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::config::SandboxPolicy;

    /// The engine skips the main checkout's status around a confined worker only where the
    /// kernel enforces every right asked for and no granted cache reaches into that checkout.
    #[test]
    fn writes_are_contained_only_by_a_full_landlock_and_caches_outside_the_checkout() {
        let common = Path::new("/home/u/repo/.git");
        let caches = [PathBuf::from("/home/u/.cargo"), PathBuf::from("/tmp/c")];
        assert!(contains_writes(&caches, common, Some(FULL_ABI)));
        assert!(contains_writes(&caches, common, Some(FULL_ABI + 2)));
        // An older kernel leaves truncating (ABI 3) or device ioctls (ABI 5) unchecked.
        assert!(!contains_writes(&caches, common, Some(FULL_ABI - 1)));
        assert!(!contains_writes(&caches, common, None));
        // A cache inside the checkout, or one holding it, lets the worker write there.
        for cache in ["/home/u/repo/build", "/home/u", "/"] {
            let granted = [PathBuf::from(cache)];
            assert!(
                !contains_writes(&granted, common, Some(FULL_ABI)),
                "{cache}"
            );
        }
        // A bare repository (or one whose git directory is elsewhere) has no checkout to
        // place: nothing is assumed.
        assert!(!contains_writes(
            &caches,
            Path::new("/srv/r.git"),
            Some(FULL_ABI)
        ));
    }

    #[test]
    fn the_configured_policy_decides_and_is_announced_only_when_landlock_is_missing() {
        assert_eq!(IfUnavailable::from_config(None), IfUnavailable::Refuse);
        let warn = IfUnavailable::from_config(Some(SandboxPolicy::Warn));
        assert_eq!(warn, IfUnavailable::Allow);
        assert!(warn.notice(true).is_none());
        assert!(warn.notice(false).unwrap().contains("UNCONFINED"));
        let refuse = IfUnavailable::Refuse.notice(false).unwrap();
        assert!(
            refuse.contains("refused") && refuse.contains("if_unavailable"),
            "{refuse}"
        );
        // The probe agrees with what the launcher finds: either a version or nothing.
        assert!(landlock_abi().is_none_or(|v| v >= 1));
    }
}
