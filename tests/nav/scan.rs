//! The worktree scan read in-process: blob ids agree with git's, ignore rules hold, the
//! remembered walk notices new directories and ignore-file edits, same-size edits made in the
//! index's own second are seen, and the name tables follow edits.

use git_orchestra::nav::Index;

use crate::support::TestRepo;

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        (
            "pkg/a.py",
            "from .b import beta\n\ndef alpha():\n    return beta()\n",
        ),
        ("pkg/b.py", "def beta():\n    return 1\n"),
        ("pkg/__init__.py", ""),
        (".gitignore", "build/\n"),
    ])
}

fn oid_of(idx: &Index, path: &str) -> String {
    idx.files()
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not in the view"))
        .oid
        .clone()
}

fn paths(idx: &Index) -> Vec<String> {
    idx.files().iter().map(|f| f.path.clone()).collect()
}

#[test]
fn blob_ids_match_git_for_clean_modified_and_untracked_files() {
    let repo = repo();
    repo.write("pkg/b.py", "def beta():\n    return 22\n");
    repo.write("pkg/new.py", "def fresh():\n    pass\n");
    let mut idx = Index::open(&repo.path).unwrap();
    idx.refresh().unwrap();
    for path in ["pkg/a.py", "pkg/b.py", "pkg/new.py"] {
        assert_eq!(
            oid_of(&idx, path),
            repo.git(&["hash-object", path]),
            "{path}"
        );
    }
    assert_eq!(
        oid_of(&idx, "pkg/a.py"),
        repo.git(&["rev-parse", "HEAD:pkg/a.py"])
    );
}

#[test]
fn ignored_files_stay_out_and_the_remembered_walk_notices_changes() {
    let repo = repo();
    repo.write("build/gen.py", "def generated():\n    pass\n");
    std::fs::write(repo.path.join(".git/info/exclude"), "scratch.py\n").unwrap();
    repo.write("scratch.py", "def scratch():\n    pass\n");
    let mut idx = Index::open(&repo.path).unwrap();
    idx.refresh().unwrap();
    assert_eq!(
        paths(&idx),
        ["pkg/__init__.py", "pkg/a.py", "pkg/b.py"],
        "ignored by .gitignore and info/exclude"
    );
    // Let the walk's timestamps settle so the next scans reuse it.
    std::thread::sleep(std::time::Duration::from_millis(150));
    idx.refresh().unwrap();

    // A file in a new directory: the parent directory's time changes.
    repo.write("pkg/sub/deep.py", "def deep():\n    pass\n");
    idx.refresh().unwrap();
    assert!(paths(&idx).contains(&"pkg/sub/deep.py".to_string()));
    assert_eq!(idx.lookup("deep").len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(150));
    idx.refresh().unwrap();

    // Editing an ignore file, no directory changes: the untracked file leaves the view.
    std::fs::write(repo.path.join(".gitignore"), "build/\npkg/sub/\n").unwrap();
    idx.refresh().unwrap();
    assert!(!paths(&idx).contains(&"pkg/sub/deep.py".to_string()));
    assert!(idx.lookup("deep").is_empty());

    // Un-ignoring brings the other one back.
    std::fs::write(repo.path.join(".gitignore"), "pkg/sub/\n").unwrap();
    idx.refresh().unwrap();
    assert!(paths(&idx).contains(&"build/gen.py".to_string()));
}

#[test]
fn a_same_size_edit_in_the_index_second_is_seen() {
    let repo = repo();
    let mut idx = Index::open(&repo.path).unwrap();
    idx.refresh().unwrap();
    // Same length as the committed text, written right after the commit.
    repo.write("pkg/b.py", "def gamma():\n    return 1\n");
    let stats = idx.refresh().unwrap();
    assert_eq!(stats.parsed, 1, "{stats:?}");
    assert_eq!(idx.lookup("gamma").len(), 1);
    assert!(idx.lookup("beta").is_empty());
}

#[test]
fn name_tables_follow_edits_in_place() {
    let repo = repo();
    let mut idx = Index::open(&repo.path).unwrap();
    idx.refresh().unwrap();
    // Build the reference table before editing.
    assert_eq!(
        crate::nav::places(&idx.callers("beta").unwrap()),
        ["pkg/a.py:4"]
    );
    repo.write(
        "pkg/a.py",
        "from .b import beta\n\ndef alpha():\n    return beta()\n\ndef again():\n    beta()\n    return alpha()\n",
    );
    idx.refresh().unwrap();
    assert_eq!(
        crate::nav::places(&idx.callers("beta").unwrap()),
        ["pkg/a.py:4", "pkg/a.py:7"]
    );
    assert_eq!(idx.lookup("again").len(), 1);
    repo.write("pkg/a.py", "def alpha():\n    return 0\n");
    idx.refresh().unwrap();
    assert!(idx.callers("beta").unwrap().is_empty());
    assert!(idx.lookup("again").is_empty());
    // The patched tables equal freshly built ones.
    let mut fresh = Index::open(&repo.path).unwrap();
    fresh.refresh().unwrap();
    for name in ["alpha", "beta", "again"] {
        assert_eq!(idx.lookup(name), fresh.lookup(name), "{name}");
    }
}
