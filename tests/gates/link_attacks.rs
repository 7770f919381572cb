//! Symbolic links that try to get past the review gate's "leads out of the repository" rule:
//! chains of links each harmless on its own, links into the git directory under any case,
//! loops, and a link that turns an older one into an escape. Each is committed to a real
//! repository and reviewed with `git orchestra review`.

use std::os::unix::fs::symlink;

use crate::support::*;

/// Creates the symbolic link `path` → `target` in the working tree (parents made as needed).
fn link(repo: &TestRepo, path: &str, target: &str) {
    let p = repo.path.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    symlink(target, p).unwrap();
}

/// Reviews `main..feature`; returns the output and the files of its symlink findings, sorted.
fn review_links(repo: &TestRepo) -> (String, Vec<String>) {
    let out = orchestra(&repo.path, &["review", "main..feature", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let mut files: Vec<String> = v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["category"] == "symlink")
        .filter_map(|f| f["file"].as_str().map(str::to_string))
        .collect();
    files.sort();
    (text(&out), files)
}

#[test]
fn chained_links_and_links_into_the_git_directory_are_blockers() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    // Each inside on its own reading; `c` climbs out through `a/b`.
    link(&repo, "a/b", "..");
    link(&repo, "c", "a/b/..");
    // Through a chain of links to links.
    link(&repo, "d/one", "../e/two");
    link(&repo, "e/two", "../f");
    link(&repo, "f", "d/..//..");
    // Into the git directory, whatever the case or the detour.
    link(&repo, "g", ".git/hooks");
    link(&repo, "h", ".GIT");
    link(&repo, "i/j", "../k/../.Git/config");
    // A loop resolves nowhere.
    link(&repo, "loop1", "loop2");
    link(&repo, "loop2", "loop1");
    // Harmless ones, through links as well.
    link(&repo, "docs/readme", "../README.md");
    link(&repo, "ok", "a/b/README.md");
    link(&repo, "dotgithub", ".github/workflows");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "links"]);
    let (all, files) = review_links(&repo);
    assert_eq!(
        files,
        vec![
            "c", "d/one", "e/two", "f", "g", "h", "i/j", "loop1", "loop2"
        ],
        "{all}"
    );
}

#[test]
fn a_new_link_that_turns_an_older_one_into_an_escape_is_a_blocker() {
    let repo = TestRepo::new();
    // On main: `z` leads to `x/y/..`, which is `x`, inside.
    link(&repo, "z", "x/y/..");
    repo.write("x/keep", "x\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "z"]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    // `x/y` → `..` is inside on its own, but makes `z` lead to the top's parent.
    link(&repo, "x/y", "..");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "y"]);
    let (all, files) = review_links(&repo);
    assert!(files.contains(&"z".to_string()), "{all}");
    assert!(all.contains("x/y"), "{all}");
}
