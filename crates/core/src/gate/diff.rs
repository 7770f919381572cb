//! Reads what a commit range adds: the changed files with their blob sizes and every added
//! line with its line number in the new version — and, commit by commit, what each commit of
//! the range added, its message and the paths it touched.
//!
//! The checks only look at added lines, so a conflict marker or a key that was already in the
//! base is not blamed on the range. `git diff -U0` gives exactly those lines; hunk headers give
//! their numbers. The history matters because only the net diff reaches the tip: a credential
//! added by one commit and removed by the next is in neither the tip nor the net diff, but it
//! is in the history that a merge or a push publishes.

use super::GateError;
use orchestra_git::git::Git;

/// One file the range changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Repository-relative path in the new version (the old one for deletions).
    pub path: String,
    /// `A`dded, `M`odified, `D`eleted, `T`ype changed (git's status letter).
    pub status: char,
    /// Size of the old blob in bytes, `None` when the file is new or not a blob.
    pub old_size: Option<u64>,
    /// Size of the new blob in bytes, `None` when deleted or not a blob (a submodule).
    pub new_size: Option<u64>,
    /// Where the new version points when it is a symbolic link (lossily decoded).
    pub symlink: Option<String>,
}

/// One line the range added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedLine {
    pub path: String,
    /// 1-based line number in the new version of the file.
    pub line: u32,
    pub text: String,
}

/// One commit of a range, as the history checks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryCommit {
    pub commit: String,
    pub message: String,
    /// The paths its patch names (a merge's: only those no parent had as the merge has them).
    pub paths: Vec<String>,
    /// The lines it added (a merge's: only those no parent had).
    pub added: Vec<AddedLine>,
}

/// Everything the deterministic checks need to know about a range.
#[derive(Debug, Clone, Default)]
pub struct RangeDiff {
    pub files: Vec<ChangedFile>,
    pub added: Vec<AddedLine>,
    /// Every commit of the range, oldest first.
    pub history: Vec<HistoryCommit>,
    /// Every symbolic link in the tip's tree and its target, read only when the range adds or
    /// changes a link: a link is resolved through the others.
    pub links: std::collections::BTreeMap<String, String>,
}

impl RangeDiff {
    /// Returns the changed paths (both sides of a rename are listed, renames are not detected).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }
}

/// Returns the files and added lines between `base` and `tip` (both commit or tree ids).
pub fn read_diff(git: &Git, base: &str, tip: &str) -> Result<RangeDiff, GateError> {
    let base_commit = git.resolve_commit(base)?;
    read_diff_with(git, (base, base_commit.as_deref()), tip)
}

/// Does what [`read_diff`] does with `base` already resolved to its commit (`None` for a tree
/// or a name of no commit), for a caller that resolved it with other names in one process.
pub fn read_diff_with(
    git: &Git,
    (base, base_commit): (&str, Option<&str>),
    tip: &str,
) -> Result<RangeDiff, GateError> {
    let entries = raw_entries(git, base, tip)?;
    let ids = blob_ids(&entries);
    let sizes = git.object_sizes(&ids)?;
    let files = sized_files(git, tip, entries, &sizes)?;
    read_rest(git, (base, base_commit), tip, files)
}

/// A range's diff with the tip's tree, which a review resolves beside it.
#[derive(Debug, Clone)]
pub struct ResolvedDiff {
    /// The tip's tree id (`None` when the tip names no commit or tree).
    pub tree: Option<String>,
    /// What changed from base to tip, and the history between them.
    pub diff: RangeDiff,
}

/// Returns what [`read_diff`] returns with the tip's tree, in as few git
/// processes as the range allows: the raw listing, then one batch that resolves both names and
/// sizes the changed blobs, then the history — whose patch is the range's own when the range is
/// one commit on `base`, so no second patch is read for the common packet of one commit.
pub fn read_diff_resolving(git: &Git, base: &str, tip: &str) -> Result<ResolvedDiff, GateError> {
    let entries = match raw_entries(git, base, tip) {
        Ok(entries) => entries,
        Err(e) => {
            // A tip that names no commit is reported as such, as the review always did.
            git.tree_of(tip)?;
            return Err(e);
        }
    };
    let (tree_spec, base_spec) = (format!("{tip}^{{tree}}"), format!("{base}^{{commit}}"));
    // The tip as a commit too, in the same batch: git then knows its tree for the merge.
    let tip_spec = format!("{tip}^{{commit}}");
    let mut specs = vec![tree_spec.as_str(), base_spec.as_str(), tip_spec.as_str()];
    specs.extend(blob_ids(&entries));
    let mut resolved = git.resolve_sized(&specs)?.into_iter();
    let tree = resolved.next().flatten().map(|(id, _)| id);
    let base_commit = resolved.next().flatten().map(|(id, _)| id);
    resolved.next();
    let sizes = resolved.flatten().collect();
    let files = sized_files(git, tip, entries, &sizes)?;
    let diff = read_rest(git, (base, base_commit.as_deref()), tip, files)?;
    Ok(ResolvedDiff { tree, diff })
}

/// Reads the added lines, the history and the links of `base..tip` whose `files` are known.
fn read_rest(
    git: &Git,
    (base, base_commit): (&str, Option<&str>),
    tip: &str,
    files: Vec<ChangedFile>,
) -> Result<RangeDiff, GateError> {
    let log = parse_log(&git.log_patches(base_commit, tip)?);
    // One commit whose only parent is the base: its patch (read with the same options) is the
    // range's patch.
    let added = match (log.as_slice(), base_commit) {
        ([(only, parents)], Some(base_commit)) if parents.as_slice() == [base_commit] => {
            only.added.clone()
        }
        // A diff with bytes that are not UTF-8 is read lossily.
        _ => parse_added(&git.diff_zero_context(base, tip, &[])?),
    };
    let links = if files.iter().any(|f| f.symlink.is_some()) {
        git.symlinks_at(tip)?.into_iter().collect()
    } else {
        Default::default()
    };
    Ok(RangeDiff {
        files,
        added,
        history: log.into_iter().map(|(commit, _)| commit).collect(),
        links,
    })
}

/// Returns every commit of `base..tip`, oldest first (all of `tip`'s history when `base` is a
/// tree, the empty one of unrelated histories).
pub fn read_history(git: &Git, base: &str, tip: &str) -> Result<Vec<HistoryCommit>, GateError> {
    let base = git.resolve_commit(base)?;
    let log = git.log_patches(base.as_deref(), tip)?;
    Ok(parse_log(&log).into_iter().map(|(c, _)| c).collect())
}

/// Parses [`Git::log_patches`] output into commits, each with its parents' ids.
fn parse_log(log: &str) -> Vec<(HistoryCommit, Vec<String>)> {
    let mut out = Vec::new();
    for chunk in log.split("\u{1}commit ").skip(1) {
        let (head, patch) = chunk.split_once("\u{1}end").unwrap_or((chunk, ""));
        let (commit, rest) = head.split_once('\n').unwrap_or((head, ""));
        let (parents, message) = rest.split_once('\n').unwrap_or((rest, ""));
        let parents = parents.split_whitespace().map(str::to_string).collect();
        let added = parse_added(patch);
        let mut paths: Vec<String> = Vec::new();
        for line in patch.lines() {
            let named = line
                .strip_prefix("diff --cc ")
                .or_else(|| line.strip_prefix("diff --combined "))
                .map(unquote)
                .or_else(|| {
                    line.strip_prefix("diff --git a/")
                        .and_then(|rest| rest.split_once(" b/").map(|(_, b)| unquote(b)))
                });
            if let Some(path) = named
                && !paths.contains(&path)
            {
                paths.push(path);
            }
        }
        let commit = HistoryCommit {
            commit: commit.trim().to_string(),
            message: message.trim_end().to_string(),
            paths,
            added,
        };
        out.push((commit, parents));
    }
    out
}

/// One `diff --raw` entry: path, status letter, old and new blob ids, and the path again when
/// the new version is a symbolic link.
type RawEntry = (String, char, Option<String>, Option<String>, Option<String>);

/// Lists the changed files of `base..tip` with `diff --raw`.
fn raw_entries(git: &Git, base: &str, tip: &str) -> Result<Vec<RawEntry>, GateError> {
    let raw = git.diff_raw(base, tip)?;
    let mut parts = raw.split('\0').filter(|s| !s.is_empty());
    let mut entries = Vec::new();
    while let (Some(meta), Some(path)) = (parts.next(), parts.next()) {
        // ":100644 100644 <old> <new> M"
        let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if fields.len() < 5 {
            continue;
        }
        let blob = |mode: &str, id: &str| {
            (mode.starts_with("100") || mode == "120000") && !id.bytes().all(|b| b == b'0')
        };
        let old = blob(fields[0], fields[2]).then(|| fields[2].to_string());
        let new = blob(fields[1], fields[3]).then(|| fields[3].to_string());
        let status = fields[4].chars().next().unwrap_or('M');
        let link = (fields[1] == "120000" && new.is_some()).then_some(path.to_string());
        entries.push((path.to_string(), status, old, new, link));
    }
    Ok(entries)
}

/// Returns every blob id the entries name, old and new.
fn blob_ids(entries: &[RawEntry]) -> Vec<&str> {
    entries
        .iter()
        .flat_map(|(_, _, o, n, _)| [o.as_deref(), n.as_deref()])
        .flatten()
        .collect()
}

/// Returns the changed files of the entries with their blobs' `sizes` and links' targets.
fn sized_files(
    git: &Git,
    tip: &str,
    entries: Vec<RawEntry>,
    sizes: &std::collections::HashMap<String, u64>,
) -> Result<Vec<ChangedFile>, GateError> {
    let mut files = Vec::with_capacity(entries.len());
    for (path, status, old, new, link) in entries {
        let symlink = match link {
            Some(p) => git
                .blob_at(tip, &p)?
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            None => None,
        };
        files.push(ChangedFile {
            path,
            status,
            old_size: old.and_then(|id| sizes.get(&id).copied()),
            new_size: new.and_then(|id| sizes.get(&id).copied()),
            symlink,
        });
    }
    Ok(files)
}

/// Parses a `-U0` patch into added lines, counting each hunk's new lines so that an added line
/// which itself starts with `++` is never mistaken for a file header. Combined diffs (a merge's,
/// `@@@` hunks with a column per parent) count too: a line is in the result unless a column
/// says `-`, and added only when every column says `+` (no parent had it).
fn parse_added(patch: &str) -> Vec<AddedLine> {
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let mut next_line = 0u32;
    let mut remaining = 0u32;
    // Columns of markers before each line: 1 in a plain diff, one per parent in a combined one.
    let mut columns = 1usize;
    for line in patch.lines() {
        if remaining > 0 {
            let (marks, text) = split_columns(line, columns);
            if marks.starts_with('\\') || marks.contains('-') {
                // Removed lines and "\ No newline" markers do not count against new lines.
                continue;
            }
            if marks.chars().all(|c| c == '+')
                && let Some(p) = &path
            {
                out.push(AddedLine {
                    path: p.clone(),
                    line: next_line,
                    text: text.to_string(),
                });
            }
            next_line += 1;
            remaining -= 1;
            continue;
        }
        if let Some(rest) = line.strip_prefix("+++ ") {
            path = if rest == "/dev/null" {
                None
            } else {
                Some(unquote(rest.strip_prefix("b/").unwrap_or(rest)))
            };
        } else if line.starts_with("@@") {
            // "@@ -a,b +c,d @@", or "@@@ -a,b -c,d +e,f @@@" for a merge with two parents.
            columns = line
                .bytes()
                .take_while(|b| *b == b'@')
                .count()
                .saturating_sub(1)
                .max(1);
            if let Some(new) = line.split(' ').find(|s| s.starts_with('+')) {
                let new = &new[1..];
                let (start, count) = match new.split_once(',') {
                    Some((s, c)) => (s.parse().unwrap_or(0), c.parse().unwrap_or(0)),
                    None => (new.parse().unwrap_or(0), 1),
                };
                next_line = start;
                remaining = count;
            }
        }
    }
    out
}

/// Splits a hunk line into its `columns` marker characters and its text.
fn split_columns(line: &str, columns: usize) -> (&str, &str) {
    let cut = line
        .char_indices()
        .nth(columns)
        .map_or(line.len(), |(i, _)| i);
    line.split_at(cut)
}

/// Removes git's C-style quoting from a path it had to quote (tabs, newlines, quotes).
fn unquote(p: &str) -> String {
    let Some(inner) = p.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return p.to_string();
    };
    let inner = inner.strip_prefix("b/").unwrap_or(inner);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_carry_new_line_numbers() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -2,0 +3,2 @@ fn\n++++ odd\n+two\n@@ -9 +10 @@\n-old\n+new\ndiff --git a/gone b/gone\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
        let added = parse_added(patch);
        let got: Vec<(&str, u32, &str)> = added
            .iter()
            .map(|a| (a.path.as_str(), a.line, a.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("x", 3, "+++ odd"), ("x", 4, "two"), ("x", 10, "new")]
        );
    }

    #[test]
    fn combined_diffs_count_lines_no_parent_had() {
        let patch = "diff --cc m.txt\n--- a/m.txt\n+++ b/m.txt\n@@@ -1,1 -1,1 +1,3 @@@\n- ours\n -theirs\n++evil\n +from theirs\n+ from ours\n";
        let added = parse_added(patch);
        let got: Vec<(u32, &str)> = added.iter().map(|a| (a.line, a.text.as_str())).collect();
        assert_eq!(got, vec![(1, "evil")]);
    }

    #[test]
    fn history_is_read_commit_by_commit() {
        let log = "\u{1}commit aaa\n\nfirst\n\nbody\n\u{1}end\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+one\n\u{1}commit bbb\naaa\nsecond\n\u{1}end\n";
        let (h, parents): (Vec<_>, Vec<_>) = parse_log(log).into_iter().unzip();
        assert_eq!(parents, [vec![], vec!["aaa".to_string()]]);
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].commit, "aaa");
        assert_eq!(h[0].message, "first\n\nbody");
        assert_eq!(h[0].paths, vec!["x"]);
        assert_eq!(h[0].added[0].text, "one");
        assert!(h[1].added.is_empty());
    }

    /// Reads `base..tip` both ways: in one batch with the patch taken from a one-commit history,
    /// and with a `diff -U0` of its own.
    fn both_reads(git: &Git, base: &str, tip: &str) -> (RangeDiff, Vec<AddedLine>) {
        let read = read_diff_resolving(git, base, tip).unwrap();
        assert_eq!(read.tree, Some(git.tree_of(tip).unwrap()));
        let own = parse_added(&git.diff_zero_context(base, tip, &[]).unwrap());
        (read.diff, own)
    }

    #[test]
    fn a_one_commit_range_reads_the_added_lines_its_own_diff_reads() {
        use orchestra_git::git::{Identity, commit};
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("a.txt", "one\ntwo\n");
        let base = commit::init_with_files(dir.path(), "main", "base", &Identity::ENGINE).unwrap();
        let git = Git::new(dir.path());
        let commit_all = commit::commit_all;
        write("a.txt", "one\nnew\ntwo\n+++ odd\n");
        write("b.bin", "bin\0ary\nkey\n");
        let one = commit_all(&git, "one").unwrap().unwrap();
        let (read, own) = both_reads(&git, &base, &one);
        assert_eq!(read.added, own);
        assert_eq!(read.added.len(), 4, "{:?}", read.added);
        assert_eq!(read.history.len(), 1);
        let sizes: Vec<_> = read
            .files
            .iter()
            .map(|f| (f.old_size, f.new_size))
            .collect();
        assert_eq!(sizes, [(Some(8), Some(20)), (None, Some(12))]);
        // Two commits, and one commit on another base: the range's own diff.
        std::fs::remove_file(dir.path().join("b.bin")).unwrap();
        write("c.txt", "c\n");
        let two = commit_all(&git, "two").unwrap().unwrap();
        for (from, to) in [(&base, &two), (&base, &one), (&one, &two)] {
            let (read, own) = both_reads(&git, from, to);
            assert_eq!(read.added, own, "{from}..{to}");
        }
        let (read, _) = both_reads(&git, &base, &two);
        assert_eq!(read.history.len(), 2);
        assert!(read.added.iter().any(|a| a.path == "c.txt"));
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        assert_eq!(unquote("\"b/a\\tb\""), "a\tb");
        assert_eq!(unquote("plain"), "plain");
    }
}
