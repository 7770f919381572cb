//! Test support for the unit tests of the crates above git: plain git commands in a temporary
//! repository, still started only from here.

use std::path::Path;

use super::Git;

/// Runs `git <args>` in `dir` with no user or system configuration, as the engine's identity,
/// and returns its stdout; panics with git's message when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let result = Git::new(dir)
        .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
        .with_env("GIT_CONFIG_NOSYSTEM", "1")
        .writing()
        .run(args);
    match result {
        Ok(out) => out,
        Err(e) => panic!("git {args:?} in {}: {e}", dir.display()),
    }
}
