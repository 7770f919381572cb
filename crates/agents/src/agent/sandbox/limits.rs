//! The resource limits a sandboxed command runs under (set by `supervise` on Linux).

/// Resource limits of a sandboxed command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes the command may run at once beyond those its user already has
    /// (`RLIMIT_NPROC`), and in all where a pids cgroup bounds it (see `cgroup`).
    pub processes: u64,
    /// Data memory (heap and private mappings) per process, in MiB; `None`: three quarters of
    /// the machine's memory.
    pub memory_mb: Option<u64>,
    /// Largest file a process may write, in MiB.
    pub file_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            processes: orchestra_core::config::DEFAULT_MAX_PROCESSES,
            memory_mb: None,
            file_mb: orchestra_core::config::DEFAULT_MAX_FILE_MB,
        }
    }
}

impl Limits {
    /// Returns the limits `[sandbox]` configures, defaults where it says nothing.
    pub fn from_config(config: &orchestra_core::config::SandboxConfig) -> Limits {
        let d = Limits::default();
        Limits {
            processes: config.max_processes.unwrap_or(d.processes),
            memory_mb: config.max_memory_mb.or(d.memory_mb),
            file_mb: config.max_file_mb.unwrap_or(d.file_mb),
        }
    }
}
