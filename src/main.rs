//! The `git-orchestra` binary: parses arguments, runs one command, renders its output.

mod commands;
mod web;

fn main() -> std::process::ExitCode {
    // Re-executed as the run_command sandbox launcher (see `agent::sandbox`).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some(git_orchestra::agent::sandbox::LAUNCHER_ARG) {
        let err = git_orchestra::agent::sandbox::exec_sandboxed(&args[2..]);
        eprintln!("git-orchestra: {err}");
        return std::process::ExitCode::from(err.exit_status());
    }
    exit_quietly_on_broken_pipe();
    // First, while the process has one thread: API keys out of the environment, and the
    // process's memory and environment closed to other processes of the same user.
    // SAFETY: nothing has started a thread yet.
    unsafe { git_orchestra::exec::secret_env::take_from_environment() };
    git_orchestra::exec::secret_env::make_undumpable();
    let code = commands::main();
    git_orchestra::store::release_kept_stores();
    code
}

/// Makes a write to a closed stdout (`git orchestra status --json | head -1`) end the process
/// quietly with status 0, as a reader that stopped reading means "enough", instead of the
/// panic `println!` raises. Work in progress is journaled, so a run cut off there resumes.
fn exit_quietly_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}
