//! Reads revisions: what a name points at, a commit's tree, merge-bases, ancestry, upstreams,
//! trailers and objects.
//!
//! A revision given by a user or a plan is always passed after `--end-of-options` as its own
//! argument, so a name that starts with `-` can never be read as an option.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use super::{FailureKind, Git, GitError};

/// What git has said of objects in this process: which ids name commits, and each such
/// commit's tree. An object id names the same content in every repository, so what git said
/// once stays true; a branch tip read from its ref file that git has named a commit needs no
/// `rev-parse` to say so again (the merge asks for its target's tip four times).
static SEEN: Mutex<Seen> = Mutex::new(Seen {
    commits: BTreeSet::new(),
    trees: BTreeMap::new(),
});

struct Seen {
    commits: BTreeSet<String>,
    /// Commit → its tree.
    trees: BTreeMap<String, String>,
}

/// Bounds what [`SEEN`] holds: past it, it starts again (a cache, not a record).
const SEEN_LIMIT: usize = 4096;

fn seen() -> std::sync::MutexGuard<'static, Seen> {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.commits.len() + seen.trees.len() > SEEN_LIMIT {
        seen.commits.clear();
        seen.trees.clear();
    }
    seen
}

/// Records that `commit` names a commit whose tree is `tree` (when known).
pub(in crate::git) fn seen_commit(commit: &str, tree: Option<&str>) {
    if !super::head_file::is_object_id(commit) {
        return;
    }
    let mut seen = seen();
    seen.commits.insert(commit.to_string());
    if let Some(tree) = tree.filter(|t| super::head_file::is_object_id(t)) {
        seen.trees.insert(commit.to_string(), tree.to_string());
    }
}

/// Records what a batch's answers say of commits: `<id>^{commit}` naming `<id>` itself makes
/// `<id>` a commit, and `<id>^{tree}` in the same batch its tree.
fn remember_commits(specs: &[&str], answers: &[Option<(String, u64)>]) {
    let answer = |spec: &str| {
        let i = specs.iter().position(|s| *s == spec)?;
        answers.get(i)?.as_ref().map(|(id, _)| id.as_str())
    };
    for spec in specs {
        if let Some(commit) = spec.strip_suffix("^{commit}")
            && answer(spec) == Some(commit)
        {
            seen_commit(commit, answer(&format!("{commit}^{{tree}}")));
        }
    }
}

impl Git {
    /// Returns the full object id `spec` names, or `None` when it names nothing.
    pub fn resolve(&self, spec: &str) -> Result<Option<String>, GitError> {
        let out = self.finish(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", spec],
            None,
        )?;
        if out.success() {
            out.text().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Returns the full object id each of `specs` names, in order (`None` for one that names
    /// nothing), as [`Git::resolve`] would, read by one `git cat-file --batch-check` instead of
    /// one `rev-parse` per name.
    pub fn resolve_all(&self, specs: &[&str]) -> Result<Vec<Option<String>>, GitError> {
        // A name with a line break names nothing and would split the batch's lines.
        let sent: Vec<&str> = specs
            .iter()
            .copied()
            .filter(|s| !s.contains(['\n', '\r']) && !s.is_empty())
            .collect();
        let mut found = Vec::new();
        if !sent.is_empty() {
            let input = sent.join("\n") + "\n";
            let out = self.run_with_stdin(
                ["cat-file", "--batch-check=%(objectname)"],
                Some(input.as_bytes()),
            )?;
            // A name that resolves prints its id alone; one that does not, `<name> missing`
            // (or `ambiguous`), which holds a space.
            found = out
                .lines()
                .map(|l| {
                    (!l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()))
                        .then(|| l.to_string())
                })
                .collect();
        }
        let mut answers = found.into_iter();
        Ok(specs
            .iter()
            .map(|s| {
                if s.contains(['\n', '\r']) || s.is_empty() {
                    None
                } else {
                    answers.next().flatten()
                }
            })
            .collect())
    }

    /// Returns the full object id and size of what each of `specs` names, in order (`None` for
    /// one that names nothing), as [`Git::resolve_all`] does, in one `git cat-file` batch: a
    /// caller that resolves names and sizes blobs pays for one process, not two.
    pub fn resolve_sized(&self, specs: &[&str]) -> Result<Vec<Option<(String, u64)>>, GitError> {
        // A name with a line break names nothing and would split the batch's lines.
        let sendable = |s: &str| !s.contains(['\n', '\r']) && !s.is_empty();
        let sent: Vec<&str> = specs.iter().copied().filter(|s| sendable(s)).collect();
        let mut found = Vec::new();
        if !sent.is_empty() {
            let input = sent.join("\n") + "\n";
            let out = self.run_with_stdin(
                ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
                Some(input.as_bytes()),
            )?;
            // A name that resolves prints `<id> <size>`; one that does not, `<name> missing`
            // (or `ambiguous`), whose last field is no number or whose first is no id.
            found = out
                .lines()
                .map(|l| {
                    let (id, size) = l.split_once(' ')?;
                    let size = size.parse::<u64>().ok()?;
                    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()))
                        .then(|| (id.to_string(), size))
                })
                .collect();
        }
        let mut answers = found.into_iter();
        let answered: Vec<Option<(String, u64)>> = specs
            .iter()
            .map(|s| {
                if sendable(s) {
                    answers.next().flatten()
                } else {
                    None
                }
            })
            .collect();
        remember_commits(specs, &answered);
        Ok(answered)
    }

    /// Returns the full commit id `spec` names (peeling tags), or `None` when it names no commit.
    pub fn resolve_commit(&self, spec: &str) -> Result<Option<String>, GitError> {
        if let Some(tip) = self.branch_tip_from_files(spec)
            && seen().commits.contains(&tip)
        {
            return Ok(Some(tip));
        }
        if self.branch_absent_from_files(spec) {
            return Ok(None);
        }
        let id = self.resolve(&format!("{spec}^{{commit}}"))?;
        if let Some(id) = &id {
            seen_commit(id, None);
        }
        Ok(id)
    }

    /// Returns the object id the ref file of `spec` holds when `spec` is a plain branch name
    /// (`refs/heads/…`) of a repository whose common directory this runner knows, read as
    /// [`super::watch::ref_tips_named`] reads it (loose, else packed; never a reftable).
    fn branch_tip_from_files(&self, spec: &str) -> Option<String> {
        let common = self.plain_branch(spec)?;
        super::watch::ref_tips_named(common, &[spec])
            .remove(spec)
            .filter(|id| super::head_file::is_object_id(id))
    }

    /// Returns true when the ref files say plainly that the branch `spec` (as for
    /// [`Self::branch_tip_from_files`]) does not exist: no loose file, nor a line in a
    /// `packed-refs` that could be read. Anything else (a file that cannot be read, say) is
    /// git's to answer.
    fn branch_absent_from_files(&self, spec: &str) -> bool {
        let Some(common) = self.plain_branch(spec) else {
            return false;
        };
        let gone = |e: std::io::Error| {
            matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            )
        };
        if !std::fs::symlink_metadata(common.join(spec)).is_err_and(gone) {
            return false;
        }
        match std::fs::read_to_string(common.join("packed-refs")) {
            Ok(packed) => !packed
                .lines()
                .filter(|l| !l.starts_with(['#', '^']))
                .any(|l| l.split_once(' ').is_some_and(|(_, name)| name == spec)),
            Err(e) => gone(e),
        }
    }

    /// Returns the common directory to read the ref files of `spec` in, when `spec` is a plain
    /// branch name (`refs/heads/…`) of a repository whose common directory this runner knows
    /// and that keeps its refs in files.
    fn plain_branch(&self, spec: &str) -> Option<&Path> {
        let plain = spec.strip_prefix("refs/heads/").is_some_and(|name| {
            !name.is_empty()
                && !name.contains("..")
                && !name.contains("@{")
                && !name.contains(['^', '~', ':', '?', '*', '[', '\\', ' '])
        });
        let common = self.known_common_dir()?;
        (plain && !common.join("reftable").exists()).then_some(common)
    }

    /// Returns the id of the tree of `commit`; an unknown commit is a `NotFound` failure.
    pub fn tree_of(&self, commit: &str) -> Result<String, GitError> {
        if let Some(tree) = seen().trees.get(commit) {
            return Ok(tree.clone());
        }
        let spec = format!("{commit}^{{tree}}");
        let tree = self.resolve(&spec)?.ok_or_else(|| GitError::Failed {
            args: format!("rev-parse --verify {spec}"),
            code: 128,
            stderr: format!("`{commit}` does not name a commit"),
            kind: FailureKind::NotFound,
        })?;
        seen_commit(commit, Some(&tree));
        Ok(tree)
    }

    /// Returns the best common ancestor of `a` and `b`, or `None` for unrelated histories.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, GitError> {
        match self.run(["merge-base", "--end-of-options", a, b]) {
            Ok(id) => Ok(Some(id)),
            Err(GitError::Failed { code: 1, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Returns which of `commits` are ancestors of (or equal to) commit `tip`: what
    /// [`Git::is_ancestor`] answers for each, with one git process however many there are
    /// (a merge asks it of every packet). Ids that are not full hexadecimal object ids are
    /// asked one by one.
    pub fn ancestors_of(
        &self,
        commits: &[String],
        tip: &str,
    ) -> Result<std::collections::HashSet<String>, GitError> {
        let full =
            |id: &str| matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit());
        let mut found = std::collections::HashSet::new();
        let (listed, asked): (Vec<&String>, Vec<&String>) = if full(tip) {
            commits.iter().partition(|c| full(c))
        } else {
            (Vec::new(), commits.iter().collect())
        };
        for commit in asked {
            if self.is_ancestor(commit, tip)? {
                found.insert(commit.clone());
            }
        }
        if listed.is_empty() {
            return Ok(found);
        }
        // Everything reachable from the commits but not from the tip: a commit listed there
        // is not an ancestor of the tip. Ids on stdin, so none is read as an option.
        let mut input = String::new();
        for commit in &listed {
            input.push_str(commit);
            input.push('\n');
        }
        input.push_str(&format!("^{tip}\n"));
        let out = self.run_with_stdin(["rev-list", "--stdin"], Some(input.as_bytes()))?;
        let outside: std::collections::HashSet<&str> = out.lines().collect();
        let lower = |c: &str| c.to_ascii_lowercase();
        found.extend(
            listed
                .into_iter()
                .filter(|c| !outside.contains(lower(c).as_str()))
                .cloned(),
        );
        Ok(found)
    }

    /// Returns true if and only if commit `a` is an ancestor of (or equal to) commit `b`.
    pub fn is_ancestor(&self, a: &str, b: &str) -> Result<bool, GitError> {
        match self.run(["merge-base", "--is-ancestor", "--end-of-options", a, b]) {
            Ok(_) => Ok(true),
            Err(GitError::Failed { code: 1, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Returns the short name of the upstream of `branch` (e.g. `origin/main`), or `None` when
    /// it has none, when its upstream ref is gone, or when `branch` is a detached HEAD.
    pub fn upstream(&self, branch: &str) -> Result<Option<String>, GitError> {
        let spec = format!("{branch}@{{upstream}}");
        let out = self.finish(
            [
                "rev-parse",
                "--abbrev-ref",
                "--symbolic-full-name",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
            None,
        )?;
        if !out.success() {
            return Ok(None);
        }
        let name = out.text()?;
        Ok((!name.is_empty() && !name.contains('\n')).then_some(name))
    }

    /// Returns the short name a symbolic ref points at (`refs/remotes/origin/HEAD` →
    /// `origin/main`), or `None` when it is not a symbolic ref.
    pub fn symbolic_target(&self, refname: &str) -> Result<Option<String>, GitError> {
        match self.run(["symbolic-ref", "--quiet", "--short", refname]) {
            Ok(name) => Ok(Some(name)),
            Err(GitError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Returns the commits reachable from `tip` but from none of `published` (object ids that
    /// exist here), newest first in topological order.
    pub fn new_to(&self, tip: &str, published: &[String]) -> Result<Vec<String>, GitError> {
        let mut input = format!("{tip}\n");
        for id in published {
            input.push_str(&format!("^{id}\n"));
        }
        let out = self.run_with_stdin(
            ["rev-list", "--topo-order", "--stdin"],
            Some(input.as_bytes()),
        )?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Returns the type of the object `id` (`commit`, `tag`, `tree`, `blob`), `None` when there
    /// is no such object.
    pub fn object_type(&self, id: &str) -> Result<Option<String>, GitError> {
        let out = self.finish(["cat-file", "-t", "--end-of-options", id], None)?;
        if !out.success() {
            return Ok(None);
        }
        Ok(Some(out.text()?))
    }

    /// Returns the annotated tag object `id` as text (headers, a blank line, the message),
    /// decoded lossily.
    pub fn tag_object(&self, id: &str) -> Result<String, GitError> {
        let out = self.finish(["cat-file", "tag", id], None)?;
        if !out.success() {
            return Err(out.into_error());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Returns every entry of the tree of `treeish`, recursively, as (mode, type, path); paths
    /// that are not UTF-8 are decoded lossily.
    pub fn tree_entries(&self, treeish: &str) -> Result<Vec<(String, String, String)>, GitError> {
        let out = self.finish(["ls-tree", "-r", "-z", "--full-tree", treeish], None)?;
        if !out.success() {
            return Err(out.into_error());
        }
        let mut entries = Vec::new();
        for entry in out.stdout.split(|b| *b == 0) {
            let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let meta = String::from_utf8_lossy(&entry[..tab]);
            let mut fields = meta.split(' ');
            if let (Some(mode), Some(kind)) = (fields.next(), fields.next()) {
                let path = String::from_utf8_lossy(&entry[tab + 1..]).into_owned();
                entries.push((mode.to_string(), kind.to_string(), path));
            }
        }
        Ok(entries)
    }

    /// Returns the value of trailer `key` in `commit`'s message (the first when repeated), or
    /// an empty string when it has none.
    pub fn trailer(&self, commit: &str, key: &str) -> Result<String, GitError> {
        let format = format!("--format=%(trailers:key={key},valueonly,separator=%x00)");
        let out = self.run(["log", "-1", &format, commit])?;
        Ok(out.split('\0').next().unwrap_or("").trim().to_string())
    }

    /// Returns the id of the empty tree in this repository's hash (nothing is written).
    pub fn empty_tree(&self) -> Result<String, GitError> {
        self.hash_object("tree", b"", false)
    }

    /// Returns the id of `data` as an object of `kind` (`blob`, `tree`), writing the object
    /// into the repository when `write` is true.
    pub fn hash_object(&self, kind: &str, data: &[u8], write: bool) -> Result<String, GitError> {
        let mut args = vec!["hash-object", "-t", kind, "--stdin"];
        if write {
            args.push("-w");
            return self.writing().run_with_stdin(args, Some(data));
        }
        self.run_with_stdin(args, Some(data))
    }

    /// Returns the bytes of the file `path` at commit `commit`, or `None` when it has no such
    /// file.
    pub fn blob_at(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let out = self.finish(["cat-file", "blob", &format!("{commit}:{path}")], None)?;
        Ok(out.success().then_some(out.stdout))
    }

    /// Returns every symbolic link in the tree of `treeish` with its target, read with one
    /// `ls-tree` and one `cat-file` batch; paths and targets that are not UTF-8 are decoded
    /// lossily.
    pub fn symlinks_at(&self, treeish: &str) -> Result<Vec<(String, String)>, GitError> {
        let out = self.finish(["ls-tree", "-r", "-z", "--full-tree", treeish], None)?;
        if !out.success() {
            return Err(out.into_error());
        }
        // "<mode> <type> <id>\t<path>\0"
        let mut links = Vec::new();
        for entry in out.stdout.split(|b| *b == 0) {
            let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let meta = String::from_utf8_lossy(&entry[..tab]);
            let mut fields = meta.split(' ');
            if fields.next() != Some("120000") {
                continue;
            }
            if let Some(id) = fields.nth(1) {
                let path = String::from_utf8_lossy(&entry[tab + 1..]).into_owned();
                links.push((path, id.to_string()));
            }
        }
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = links.iter().map(|(_, id)| format!("{id}\n")).collect();
        let out = self.finish(["cat-file", "--batch"], Some(input.as_bytes()))?;
        if !out.success() {
            return Err(out.into_error());
        }
        // "<id> blob <size>\n<bytes>\n" per object, in the order asked ("<id> missing\n").
        let mut rest = out.stdout.as_slice();
        let mut targets = Vec::with_capacity(links.len());
        for (path, _) in links {
            let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
                break;
            };
            let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
            rest = &rest[nl + 1..];
            let Some(size) = header
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse::<usize>().ok())
            else {
                continue;
            };
            let body = rest.get(..size).unwrap_or(rest);
            targets.push((path, String::from_utf8_lossy(body).into_owned()));
            rest = rest.get(size + 1..).unwrap_or_default();
        }
        Ok(targets)
    }

    /// Returns the size of each listed object that exists, in one `cat-file` batch.
    pub fn object_sizes(
        &self,
        ids: &[&str],
    ) -> Result<std::collections::HashMap<String, u64>, GitError> {
        let mut map = std::collections::HashMap::new();
        if ids.is_empty() {
            return Ok(map);
        }
        let input = ids.join("\n") + "\n";
        let out = self.run_with_stdin(
            ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
            Some(input.as_bytes()),
        )?;
        for line in out.lines() {
            if let Some((id, size)) = line.split_once(' ')
                && let Ok(size) = size.parse()
            {
                map.insert(id.to_string(), size);
            }
        }
        Ok(map)
    }

    /// Returns the absolute path of `name` inside the git directory (`hooks`, `info/…`),
    /// honouring `core.hooksPath` and per-worktree paths as git does.
    pub fn git_path(&self, name: &str) -> Result<String, GitError> {
        self.run(["rev-parse", "--path-format=absolute", "--git-path", name])
    }
}

#[cfg(test)]
mod tests {
    use crate::git::Git;
    use crate::git::testing::git;

    /// A branch tip git has named a commit is read from its ref file after that, and a commit's
    /// tree once known is not asked again; a tip git has not seen, or a ref naming no commit,
    /// goes to git. A runner whose git can find no repository shows which answers came
    /// without git.
    #[test]
    fn commits_and_trees_git_has_named_are_not_asked_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        // A commit no other test makes: the memo is the process's, and a test that made the
        // same commit (same message, identity and second) could have had git name it.
        let root = format!("a {}", dir.display());
        git(dir, &["commit", "-q", "--allow-empty", "-m", &root]);
        let g = Git::new(dir).in_common_dir(&dir.join(".git"));
        let blind = g.with_env("GIT_DIR", "/nonexistent");
        assert_eq!(blind.resolve_commit("refs/heads/main").unwrap(), None);
        let tip = g.resolve_commit("refs/heads/main").unwrap().unwrap();
        assert_eq!(
            blind.resolve_commit("refs/heads/main").unwrap(),
            Some(tip.clone())
        );
        // Moved to a commit git has not named: asked again.
        git(dir, &["commit", "-q", "--allow-empty", "-m", "b"]);
        assert_eq!(blind.resolve_commit("refs/heads/main").unwrap(), None);
        let moved = g.resolve_commit("refs/heads/main").unwrap().unwrap();
        assert_ne!(moved, tip);
        // A name that is not a plain branch is always git's to answer.
        assert_eq!(blind.resolve_commit("refs/heads/main~0").unwrap(), None);
        // A branch naming a blob is no commit, and a commit's id in its file changes nothing.
        let blob = g.hash_object("blob", b"x", true).unwrap();
        // (git refuses to write it; a hostile repository's file says it anyway)
        std::fs::write(dir.join(".git/refs/heads/odd"), format!("{blob}\n")).unwrap();
        assert_eq!(g.resolve_commit("refs/heads/odd").unwrap(), None);
        // Trees: from the commit git made, and from the first answer.
        let tree = g.tree_of(&moved).unwrap();
        let made = g.commit_tree(&tree, &[&moved], "c").unwrap();
        assert_eq!(blind.tree_of(&made).unwrap(), tree);
        assert_eq!(blind.tree_of(&moved).unwrap(), tree);
        assert!(blind.tree_of(&tip).is_err(), "never asked, so git is");
        // A branch its files say plainly is absent names nothing, without git: here a `git`
        // on `PATH` that names a commit for any name. Packed, it is git's to answer.
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("git"), format!("#!/bin/sh\necho {tip}\n")).unwrap();
        crate::git::testing::make_executable(&bin.join("git"));
        let lying = g.with_env("PATH", bin.to_str().unwrap());
        assert_eq!(lying.resolve_commit("refs/heads/nope").unwrap(), None);
        assert_eq!(lying.resolve_commit("refs/heads/main/x").unwrap(), None);
        git(dir, &["branch", "packed", &moved]);
        git(dir, &["pack-refs", "--all"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "d"]);
        let unseen = git(dir, &["rev-parse", "HEAD"]);
        git(dir, &["update-ref", "refs/heads/packed", &unseen]);
        git(dir, &["pack-refs", "--all"]);
        assert_eq!(
            lying.resolve_commit("refs/heads/packed").unwrap(),
            Some(tip.clone()),
            "asked"
        );
        // A batch that resolves a commit as itself, and its tree, tells both.
        assert!(blind.tree_of(&unseen).is_err());
        let (as_commit, as_tree) = (format!("{unseen}^{{commit}}"), format!("{unseen}^{{tree}}"));
        let sized = g.resolve_sized(&[&as_tree, &as_commit]).unwrap();
        let tree = sized[0].clone().unwrap().0;
        assert_eq!(blind.tree_of(&unseen).unwrap(), tree);
    }

    #[test]
    fn ancestors_of_answers_as_is_ancestor_does_for_each_commit() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| git(dir.path(), args).trim().to_string();
        run(&["init", "--quiet", "-b", "main"]);
        run(&["commit", "--quiet", "--allow-empty", "-m", "a"]);
        let a = run(&["rev-parse", "HEAD"]);
        run(&["commit", "--quiet", "--allow-empty", "-m", "b"]);
        let b = run(&["rev-parse", "HEAD"]);
        run(&["checkout", "--quiet", "-b", "side", &a]);
        run(&["commit", "--quiet", "--allow-empty", "-m", "c"]);
        let c = run(&["rev-parse", "HEAD"]);
        let g = Git::new(dir.path()).with_env("GIT_CONFIG_GLOBAL", "/dev/null");
        let short = a[..10].to_string();
        let commits = [a.clone(), b.clone(), c.clone(), short.clone()];
        let found = g.ancestors_of(&commits, &b).unwrap();
        for commit in &commits {
            assert_eq!(
                found.contains(commit),
                g.is_ancestor(commit, &b).unwrap(),
                "{commit}"
            );
        }
        assert_eq!(found.len(), 3, "a, b and a's short id: {found:?}");
        assert!(g.ancestors_of(&[], &b).unwrap().is_empty());
    }

    #[test]
    fn resolve_all_answers_as_resolve_does_for_each_name_in_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| git(dir.path(), args).trim().to_string();
        run(&["init", "--quiet", "-b", "main"]);
        run(&["commit", "--quiet", "--allow-empty", "-m", "a"]);
        let a = run(&["rev-parse", "HEAD"]);
        let g = Git::new(dir.path()).with_env("GIT_CONFIG_GLOBAL", "/dev/null");
        let specs = [
            format!("{a}^{{tree}}"),
            format!("{a}^{{commit}}"),
            "main".to_string(),
            "no-such-branch^{commit}".to_string(),
            format!("{a}^{{tree}}^{{commit}}"),
            "two\nlines".to_string(),
            String::new(),
            a[..8].to_string(),
        ];
        let refs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let all = g.resolve_all(&refs).unwrap();
        assert_eq!(all.len(), specs.len());
        for (spec, found) in specs.iter().zip(&all) {
            let one = if spec.is_empty() || spec.contains('\n') {
                None
            } else {
                g.resolve(spec).unwrap()
            };
            assert_eq!(found, &one, "{spec:?}");
        }
        assert_eq!(all[1].as_deref(), Some(a.as_str()));
        assert!(all[3].is_none() && all[4].is_none());
        // Names and sizes in one batch: the same ids, and the sizes `object_sizes` reads.
        let sized = g.resolve_sized(&refs).unwrap();
        let ids: Vec<Option<String>> = sized.iter().map(|f| f.clone().map(|(id, _)| id)).collect();
        assert_eq!(ids, all);
        let found: Vec<&str> = all.iter().flatten().map(String::as_str).collect();
        let sizes = g.object_sizes(&found).unwrap();
        for (id, size) in sized.iter().flatten() {
            assert_eq!(sizes.get(id), Some(size), "{id}");
        }
    }
}
