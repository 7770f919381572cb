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

/// Returns whether the commit-graph of the repository whose common git directory is
/// `common_dir` (its single file or any layer of its chain) holds commit `oid` (hex).
pub fn commit_graph_holds(common_dir: &Path, oid: &str) -> bool {
    let raw: Vec<u8> = (0..oid.len() / 2)
        .filter_map(|i| u8::from_str_radix(oid.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    let info = common_dir.join("objects/info");
    let mut files = vec![info.join("commit-graph")];
    if let Ok(layers) = std::fs::read_dir(info.join("commit-graphs")) {
        files.extend(layers.flatten().map(|e| e.path()));
    }
    files
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        .any(|bytes| {
            bytes.starts_with(b"CGPH") && bytes.windows(raw.len()).any(|w| w == raw.as_slice())
        })
}

/// Makes a repository `<tmp>/r` with one commit (`a.txt`) and a worktree of it on a new branch
/// `p` at `<tmp>/<worktree>`; returns the temporary directory (canonical paths), the
/// repository and the worktree's path. For this crate's own tests (`tempfile` is a dev
/// dependency).
#[cfg(test)]
pub fn repo_with_worktree(
    worktree: &str,
) -> (tempfile::TempDir, super::RepoInfo, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let top = tmp
        .path()
        .canonicalize()
        .expect("a canonical temporary path");
    let main = top.join("r");
    std::fs::create_dir(&main).expect("the repository's directory");
    git(&main, &["init", "-q", "-b", "main"]);
    std::fs::write(main.join("a.txt"), "a\n").expect("a.txt written");
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-q", "-m", "a"]);
    let wt = top.join(worktree);
    let path = wt.to_str().expect("a UTF-8 path");
    git(&main, &["worktree", "add", "-q", "-b", "p", path]);
    let repo = super::RepoInfo::discover(&main).expect("the repository");
    (tmp, repo, wt)
}

/// Makes `path` executable by everyone.
pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)) {
        panic!("cannot make {} executable: {e}", path.display());
    }
}
