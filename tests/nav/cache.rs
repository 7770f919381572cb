//! The blob cache: a second worktree of the same commit parses nothing; an edit re-parses only
//! the edited file; deleted and untracked files enter and leave the view.

use git_orchestra::nav::{Index, RefreshStats};

use crate::support::TestRepo;

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        ("a.py", "def alpha():\n    return beta()\n"),
        ("b.py", "def beta():\n    return 1\n"),
        ("c.rs", "fn gamma() {}\n"),
        ("README.md", "# not indexed\n"),
    ])
}

#[test]
fn cold_index_parses_every_source_file_once() {
    let repo = repo();
    let mut idx = Index::open(&repo.path).unwrap();
    let stats = idx.refresh().unwrap();
    assert_eq!(
        stats,
        RefreshStats {
            files: 3,
            parsed: 3,
            cached: 0,
            reused: 0,
            removed: 0
        }
    );
    let again = idx.refresh().unwrap();
    assert_eq!(
        again,
        RefreshStats {
            files: 3,
            parsed: 0,
            cached: 0,
            reused: 3,
            removed: 0
        }
    );
    assert!(repo.path.join(".git/orchestra/nav.db").is_file());
}

#[test]
fn a_second_worktree_of_the_same_commit_parses_nothing() {
    let repo = repo();
    Index::open(&repo.path).unwrap().refresh().unwrap();
    let wt = repo.scratch().join("wt2");
    repo.git(&["worktree", "add", "-q", "-b", "other", wt.to_str().unwrap()]);
    let mut idx = Index::open(&wt).unwrap();
    let stats = idx.refresh().unwrap();
    assert_eq!(stats.parsed, 0, "{stats:?}");
    assert_eq!(stats.cached, 3, "{stats:?}");
    assert_eq!(idx.lookup("beta").len(), 1);
    // References come from the cache on first use.
    let callers = idx.callers("beta").unwrap();
    assert_eq!(crate::nav::places(&callers), vec!["a.py:2"]);
}

#[test]
fn an_edit_reparses_only_the_edited_file_and_deletions_leave_the_view() {
    let repo = repo();
    let mut idx = Index::open(&repo.path).unwrap();
    idx.refresh().unwrap();
    repo.write(
        "b.py",
        "def beta():\n    return 2\n\ndef delta():\n    pass\n",
    );
    let stats = idx.refresh().unwrap();
    assert_eq!((stats.parsed, stats.reused), (1, 2), "{stats:?}");
    assert_eq!(idx.lookup("delta").len(), 1);
    // A fresh process sees the same facts from the cache without parsing.
    let mut other = Index::open(&repo.path).unwrap();
    assert_eq!(other.refresh().unwrap().parsed, 0);
    std::fs::remove_file(repo.path.join("c.rs")).unwrap();
    repo.write("new.go", "package x\n\nfunc Epsilon() {}\n");
    let stats = idx.refresh().unwrap();
    assert_eq!(
        (stats.files, stats.parsed, stats.removed),
        (3, 1, 1),
        "{stats:?}"
    );
    assert!(idx.lookup("gamma").is_empty());
    assert_eq!(idx.lookup("Epsilon").len(), 1);
}

#[test]
fn outside_a_repository_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::hermetic();
    let err = Index::open(dir.path()).err().unwrap().to_string();
    assert!(err.contains("not inside a git repository"), "{err}");
}
