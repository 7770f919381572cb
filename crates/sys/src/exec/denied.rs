//! Recognises a confined command that failed because the sandbox denied it a path, so its
//! failure names the path and the setting that grants it instead of a bare "Permission denied".
//!
//! The engine does not see the launcher's rules (the confinement is an opaque prefix), so this
//! is a best-effort reading of the command's output: a path reported as "Permission denied"
//! that this process itself may read, outside the tree the command ran in, was most likely
//! refused by the sandbox rather than by the file's permissions.

use std::path::{Path, PathBuf};

/// Where the user configuration that may grant reading lives, as the hint spells it.
const USER_CONFIG: &str = "~/.config/git-orchestra/config.toml";

/// Returns the first path `tail` (a confined command's output) reports as "Permission denied"
/// that the sandbox most likely denied: it exists, this process may read it, and it lies
/// outside `dir` (the tree the command ran in, which the sandbox grants). Hidden paths of the
/// home directory and paths under `/etc` are never returned: the sandbox keeps credentials there on purpose, and
/// a command's output must not talk the user into granting them.
pub fn denied_path(tail: &str, dir: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    denied_path_in(tail, dir, home.as_deref())
}

/// Returns what [`denied_path`] does, with `home` as the home directory.
fn denied_path_in(tail: &str, dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    tail.lines()
        .filter_map(path_in_line)
        .find(|p| likely_sandboxed(p, dir, home))
}

/// Returns the hint for a command the sandbox denied `path`: what happened and the
/// `[sandbox] read` entry of the user configuration that allows it.
pub fn hint(path: &Path) -> String {
    let grant = match path.is_dir() {
        true => path,
        false => path.parent().unwrap_or(path),
    };
    format!(
        "likely cause: the sandbox denied reading `{}`, which lies outside what sandboxed commands may read (their tree, the system, the toolchains, the home directory's non-secret entries); to allow it, add `[sandbox] read = [\"{}\"]` to your user configuration, {USER_CONFIG}",
        path.display(),
        grant.display()
    )
}

/// Returns the absolute path one output line reports as "Permission denied", in the forms
/// shells and tools print: `sh: 1: /p: Permission denied`, `cat: /p: Permission denied`,
/// `sh: 1: cannot open /p: Permission denied`, `… Permission denied: '/p'`.
fn path_in_line(line: &str) -> Option<PathBuf> {
    let at = line.find("Permission denied")?;
    let (before, after) = (&line[..at], &line[at + "Permission denied".len()..]);
    let after = after.trim_start_matches([':', ' ']);
    let candidates = before
        .trim_end_matches([':', ' '])
        .rsplit(": ")
        .next()
        .into_iter()
        .flat_map(str::split_whitespace)
        .rev()
        .chain(after.split_whitespace().take(1));
    candidates
        .map(|t| t.trim_matches(|c| matches!(c, '\'' | '"' | '`' | '(' | ')' | ',')))
        .find(|t| t.starts_with('/'))
        .map(PathBuf::from)
}

/// Returns true if and only if `path` is one the sandbox, not the file's permissions, most
/// likely refused (see [`denied_path`]).
fn likely_sandboxed(path: &Path, dir: &Path, home: Option<&Path>) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let hidden = home
        .and_then(|h| path.strip_prefix(h).ok())
        .is_some_and(|rest| {
            rest.components()
                .any(|c| c.as_os_str().as_bytes().starts_with(b"."))
        });
    if hidden || path.starts_with("/etc") || path.starts_with(dir) {
        return false;
    }
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads a NUL-terminated path this function owns.
    unsafe { libc::access(c.as_ptr(), libc::R_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_in_the_forms_shells_and_tools_print() {
        for line in [
            "sh: 1: /opt/x/run.sh: Permission denied",
            "bash: line 1: /opt/x/run.sh: Permission denied",
            "sh: 1: cannot open /opt/x/run.sh: Permission denied",
            "PermissionError: [Errno 13] Permission denied: '/opt/x/run.sh'",
        ] {
            assert_eq!(
                path_in_line(line),
                Some(PathBuf::from("/opt/x/run.sh")),
                "{line}"
            );
        }
        assert_eq!(path_in_line("sh: 1: run.sh: Permission denied"), None);
        assert_eq!(path_in_line("/opt/x/run.sh: not found"), None);
    }

    #[test]
    fn only_a_readable_path_outside_the_tree_and_no_secret_is_blamed_on_the_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("run.sh"), "").unwrap();
        let tree = dir.path().join("tree");
        let line = |p: &Path| format!("out\nsh: 1: {}: Permission denied\n", p.display());
        let run = tools.join("run.sh");
        assert_eq!(denied_path(&line(&run), &tree), Some(run.clone()));
        assert_eq!(denied_path(&line(&run), dir.path()), None);
        assert_eq!(denied_path(&line(&tools.join("missing")), &tree), None);
        assert_eq!(denied_path(&line(Path::new("/etc/shadow")), &tree), None);
        // A credential of the home directory, however readable, is never suggested.
        let secret = dir.path().join(".ssh/id");
        std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
        std::fs::write(&secret, "").unwrap();
        assert_eq!(
            denied_path_in(&line(&secret), &tree, Some(dir.path())),
            None
        );
        assert_eq!(
            denied_path_in(&line(&secret), &tree, Some(&tree)),
            Some(secret)
        );
        let hint = hint(&run);
        assert!(hint.contains(&format!("[sandbox] read = [\"{}\"]", tools.display())));
        assert!(hint.contains("config.toml") && hint.contains("sandbox denied"));
    }
}
