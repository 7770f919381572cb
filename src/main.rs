//! The `git-orchestra` binary: parses arguments, runs one command, renders its output.

mod commands;

fn main() -> std::process::ExitCode {
    // Re-executed as the run_command sandbox launcher (see `agent::sandbox`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some(git_orchestra::agent::sandbox::LAUNCHER_ARG) {
        let err = git_orchestra::agent::sandbox::exec_sandboxed(&args[2..]);
        eprintln!("git-orchestra: {err}");
        return std::process::ExitCode::from(126);
    }
    // First, while the process has one thread: API keys out of the environment, and the
    // process's memory and environment closed to other processes of the same user.
    // SAFETY: nothing has started a thread yet.
    unsafe { git_orchestra::exec::secret_env::take_from_environment() };
    git_orchestra::exec::secret_env::make_undumpable();
    commands::main()
}
