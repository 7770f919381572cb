//! The `git-orchestra` binary: parses arguments, runs one command, renders its output.

mod commands;

fn main() -> std::process::ExitCode {
    commands::main()
}
