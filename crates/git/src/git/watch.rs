//! The reads the engine compares before and after an external worker runs, to find what the
//! worker changed outside its worktree: refs, and a working tree's HEAD and status.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Git, GitError, Untracked};

/// Returns the refs of the repository whose common git directory is `common`, read from its
/// ref files (a loose ref over a packed one), as name → object id (or `ref: …` for a symbolic
/// ref): every ref except those under the prefixes in `skip` (each ending in `/`), whose
/// directories are not even read, plus the refs named in `wanted` whatever `skip` says.
/// Returns `None` when the refs are not kept in files (the reftable format).
///
/// A `git for-each-ref` reads every loose ref; skipping the directories of the refs the
/// engine itself keeps moving (the run's packet branches) makes this cost what the user's own
/// refs cost, however many packets the run has.
pub fn ref_files(
    common: &Path,
    skip: &[&str],
    wanted: &[String],
) -> Option<BTreeMap<String, String>> {
    if common.join("reftable").exists() {
        return None;
    }
    let skipped = |name: &str| skip.iter().any(|s| name.starts_with(s));
    let mut refs = BTreeMap::new();
    if let Ok(packed) = std::fs::read_to_string(common.join("packed-refs")) {
        for line in packed.lines() {
            if line.starts_with('#') || line.starts_with('^') {
                continue;
            }
            if let Some((id, name)) = line.split_once(' ')
                && (!skipped(name) || wanted.iter().any(|w| w == name))
            {
                refs.insert(name.to_string(), id.to_string());
            }
        }
    }
    let mut stack = vec![(common.join("refs"), "refs/".to_string())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let name = format!("{prefix}{file_name}/");
                if !skipped(&name) {
                    stack.push((entry.path(), name));
                }
            } else if !file_name.ends_with(".lock") {
                let name = format!("{prefix}{file_name}");
                if !skipped(&name) {
                    read_loose(&entry.path(), name, &mut refs);
                }
            }
        }
    }
    for name in wanted {
        read_loose(&common.join(name), name.clone(), &mut refs);
    }
    Some(refs)
}

/// Returns the tips of the refs `names` (full names) of the repository whose common git
/// directory is `common`, read from their loose files and, for those that have none, from
/// `packed-refs` (read once); a ref that exists in neither is left out. A symbolic ref's
/// value is its target (`ref: …`).
pub fn ref_tips_named(common: &Path, names: &[&str]) -> BTreeMap<String, String> {
    let mut tips = BTreeMap::new();
    let mut missing = Vec::new();
    for name in names {
        read_loose(&common.join(name), (*name).to_string(), &mut tips);
        if !tips.contains_key(*name) {
            missing.push(*name);
        }
    }
    if !missing.is_empty()
        && let Ok(packed) = std::fs::read_to_string(common.join("packed-refs"))
    {
        for line in packed.lines() {
            if let Some((id, name)) = line.split_once(' ')
                && !line.starts_with(['#', '^'])
                && missing.contains(&name)
            {
                tips.insert(name.to_string(), id.to_string());
            }
        }
    }
    tips
}

/// Reads the loose ref file `path` (the ref `name`) into `refs`, when it exists.
fn read_loose(path: &Path, name: String, refs: &mut BTreeMap<String, String>) {
    if let Ok(text) = std::fs::read_to_string(path) {
        refs.insert(name, text.trim().to_string());
    }
}

impl Git {
    /// Returns every ref with the object it points at, as `(name, id)` pairs in name order,
    /// leaving out those whose name starts with one of `skip`.
    pub fn ref_tips(&self, skip: &[&str]) -> Result<Vec<(String, String)>, GitError> {
        let out = self.run(["for-each-ref", "--format=%(refname) %(objectname)"])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(name, _)| !skip.iter().any(|s| name.starts_with(s)))
            .map(|(name, id)| (name.to_string(), id.to_string()))
            .collect())
    }

    /// Returns the working tree's HEAD (empty when it names no commit) and its
    /// `git status --porcelain` (untracked files listed, ignored ones not).
    pub fn head_and_status(&self) -> Result<(String, String), GitError> {
        let head = self.head_or_unborn()?.unwrap_or_default();
        let status = self.status_porcelain(Untracked::Normal)?;
        Ok((head, status))
    }

    /// Returns the ignored files and directories of the working tree (a wholly ignored
    /// directory as one entry: git stops there), relative to its top, each with whether it is
    /// a directory.
    pub fn ignored_entries(&self) -> Result<Vec<(String, bool)>, GitError> {
        let listed = self.run([
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            "-z",
        ])?;
        Ok(listed
            .split('\0')
            .filter(|e| !e.is_empty())
            .map(|e| (e.trim_end_matches('/').to_string(), e.ends_with('/')))
            .collect())
    }

    /// Returns the working tree's HEAD and a status of it, with one more line per ignored file
    /// (not directory: build output changes with every build) — `!! <path> <size> <mtime>` —
    /// so a planted or edited `.env` shows as a change.
    ///
    /// One `git status --ignored=matching -z` lists the changes, the untracked files and the
    /// ignored ones (each ignored file, a directory only when a pattern ignores it whole): the
    /// walk of the untracked files that finds them is done once, not again by an `ls-files`.
    /// Paths are shown unquoted; the lines are compared between two calls, never parsed.
    pub fn head_status_and_ignored_files(&self) -> Result<(String, String), GitError> {
        let head = self.head_or_unborn()?.unwrap_or_default();
        let out = self.finish(
            [
                "status",
                "--porcelain",
                "--untracked-files=normal",
                "--ignored=matching",
                "-z",
            ],
            None,
        )?;
        if !out.success() {
            return Err(out.into_error());
        }
        // A repository may hold names that are not UTF-8: shown lossily, still compared.
        let listed = String::from_utf8_lossy(&out.stdout);
        let mut fields = listed.split('\0').filter(|f| !f.is_empty());
        let mut status = String::new();
        while let Some(entry) = fields.next() {
            let (code, path) = (
                entry.get(..2).unwrap_or(entry),
                entry.get(3..).unwrap_or(""),
            );
            if code.starts_with(['R', 'C']) {
                // A rename's or copy's source follows as a field of its own.
                let from = fields.next().unwrap_or_default();
                status.push_str(&format!("{code} {from} -> {path}\n"));
            } else if code != "!!" {
                status.push_str(&format!("{entry}\n"));
            } else if !path.ends_with('/') {
                let Ok(meta) = std::fs::symlink_metadata(self.dir().join(path)) else {
                    continue;
                };
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                status.push_str(&format!("!! {path} {} {mtime}\n", meta.len()));
            }
        }
        Ok((head, status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    #[test]
    fn one_status_lists_the_changes_and_the_ignored_files_ls_files_lists() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join(".gitignore"), "*.log\nbuild/\n.env\n").unwrap();
        std::fs::write(repo.join("a"), "a\n").unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-q", "-m", "i"]);
        for dir in ["d", "build/sub", "e/f"] {
            std::fs::create_dir_all(repo.join(dir)).unwrap();
        }
        for file in ["d/x.log", "d/y", "build/o", "e/f/z.log", ".env", "top.log"] {
            std::fs::write(repo.join(file), "x").unwrap();
        }
        std::fs::write(repo.join("a"), "changed\n").unwrap();
        let g = Git::new(repo);
        let (head, status) = g.head_status_and_ignored_files().unwrap();
        assert_eq!(head, g.head().unwrap());
        let ignored: Vec<&str> = status
            .lines()
            .filter_map(|l| l.strip_prefix("!! "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        let mut listed: Vec<String> = g
            .ignored_entries()
            .unwrap()
            .into_iter()
            .filter(|(_, dir)| !dir)
            .map(|(path, _)| path)
            .collect();
        listed.sort();
        assert_eq!(ignored, listed, "{status}");
        assert_eq!(ignored, [".env", "d/x.log", "e/f/z.log", "top.log"]);
        let rest: Vec<&str> = status.lines().filter(|l| !l.starts_with("!! ")).collect();
        let plain = g.status_porcelain(Untracked::Normal).unwrap();
        assert_eq!(rest, plain.lines().collect::<Vec<_>>());
        // An edited ignored file changes the status.
        std::fs::write(repo.join("e/f/z.log"), "longer").unwrap();
        assert_ne!(g.head_status_and_ignored_files().unwrap().1, status);
    }

    #[test]
    fn ref_files_read_what_for_each_ref_lists_without_the_skipped_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "a"]);
        git(&repo, &["branch", "packed"]);
        git(&repo, &["branch", "orchestra/r1/p1"]);
        git(&repo, &["branch", "orchestra/r1/p2"]);
        git(&repo, &["pack-refs", "--all"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "b"]);
        git(&repo, &["branch", "loose"]);
        git(&repo, &["update-ref", "refs/heads/orchestra/r1/p2", "HEAD"]);
        let common = repo.join(".git");
        let wanted = vec!["refs/heads/orchestra/r1/p2".to_string()];
        let read = ref_files(&common, &["refs/heads/orchestra/r1/"], &wanted).unwrap();
        let listed = Git::new(&repo).ref_tips(&[]).unwrap();
        let expected: BTreeMap<String, String> = listed
            .into_iter()
            .filter(|(n, _)| !n.starts_with("refs/heads/orchestra/r1/") || wanted.contains(n))
            .collect();
        assert_eq!(read, expected);
        assert_eq!(read.len(), 4, "{read:?}");
    }
}
