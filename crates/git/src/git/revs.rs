//! Reads revisions: what a name points at, a commit's tree, merge-bases, ancestry, upstreams,
//! trailers and objects.
//!
//! A revision given by a user or a plan is always passed after `--end-of-options` as its own
//! argument, so a name that starts with `-` can never be read as an option.

use super::{FailureKind, Git, GitError};

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
        Ok(specs
            .iter()
            .map(|s| {
                if sendable(s) {
                    answers.next().flatten()
                } else {
                    None
                }
            })
            .collect())
    }

    /// Returns the full commit id `spec` names (peeling tags), or `None` when it names no commit.
    pub fn resolve_commit(&self, spec: &str) -> Result<Option<String>, GitError> {
        self.resolve(&format!("{spec}^{{commit}}"))
    }

    /// Returns the id of the tree of `commit`; an unknown commit is a `NotFound` failure.
    pub fn tree_of(&self, commit: &str) -> Result<String, GitError> {
        let spec = format!("{commit}^{{tree}}");
        self.resolve(&spec)?.ok_or_else(|| GitError::Failed {
            args: format!("rev-parse --verify {spec}"),
            code: 128,
            stderr: format!("`{commit}` does not name a commit"),
            kind: FailureKind::NotFound,
        })
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
