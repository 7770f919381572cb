//! Clean attempt repositories: an attempt prepared at a task's base cannot reach the task's
//! solution, a later commit, or any ref of the source, by any git route or object file.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use git_orchestra::eval::attempt;
use git_orchestra::git::RepoInfo;

use crate::support::{TestRepo, git};

/// The solution's unique content.
const SOLUTION: &str = "sub() { echo $(($1 - $2)); } # the answer\n";

/// Returns (repo, base, solution commit, solution blob): the solution is planted in the
/// commit after the base, reached by a later commit, a tag, a branch, a note, an orchestra
/// ref and FETCH_HEAD, and everything is packed.
fn planted() -> (TestRepo, String, String, String) {
    let repo = TestRepo::with_files(&[("src/calc.sh", "add() { echo $(($1 + $2)); }\n")]);
    repo.write("README.md", "# calc\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Document"]);
    let base = repo.git(&["rev-parse", "HEAD"]);
    repo.write("src/sub.sh", SOLUTION);
    repo.write(
        "tests/test_sub.sh",
        ". ./src/sub.sh\n[ \"$(sub 5 3)\" = 2 ]\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add subtraction"]);
    let solution = repo.git(&["rev-parse", "HEAD"]);
    let blob = repo.git(&["rev-parse", "HEAD:src/sub.sh"]);
    repo.write("README.md", "# calc\n\nadd, sub\n");
    repo.git(&["commit", "-q", "-am", "Later"]);
    repo.git(&["tag", "v1", &solution]);
    repo.git(&["branch", "attempt-of-another-arm", &solution]);
    repo.git(&["notes", "add", "-m", "see src/sub.sh", &solution]);
    repo.git(&["update-ref", "refs/orchestra/runs/x", &solution]);
    repo.git(&["fetch", "-q", ".", "refs/tags/v1"]);
    repo.git(&["gc", "-q"]);
    (repo, base, solution, blob)
}

/// Returns true if and only if `git <args>` succeeds in `dir`.
fn succeeds(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
        .status
        .success()
}

/// Returns every file under `dir`, recursively.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Returns every object id the attempt's object files hold: loose objects and pack indexes.
fn stored_objects(git_dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    files(&git_dir.join("objects"), &mut all);
    let mut ids = Vec::new();
    for f in &all {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let parent = f.parent().unwrap().file_name().unwrap().to_string_lossy();
        if parent.len() == 2 && name.len() == 38 {
            ids.push(format!("{parent}{name}"));
        }
        if name.ends_with(".idx") {
            let out = Command::new("git")
                .args(["show-index"])
                .stdin(std::fs::File::open(f).unwrap())
                .output()
                .unwrap();
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                ids.push(line.split_whitespace().nth(1).unwrap().to_string());
            }
        }
    }
    ids
}

#[test]
fn an_attempt_repository_holds_nothing_after_the_base() {
    let (repo, base, solution, blob) = planted();
    let info = RepoInfo::discover(&repo.path).unwrap();
    let path = attempt::eval_dir(&info.common_dir, "e1").join("a1");
    let made = attempt::prepare(&info, &base, &path).unwrap();
    let dir = made.toplevel.clone();
    // Beside the source, never inside its working tree or `.git`: nothing walks up into it.
    assert!(!dir.starts_with(&repo.path), "{}", dir.display());
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), base);
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
    assert!(!dir.join("src/sub.sh").exists());
    // Neither the solution's commit nor its content can be read by id.
    for id in [&solution, &blob] {
        assert!(!succeeds(&dir, &["cat-file", "-e", id]), "{id} is readable");
    }
    // No ref, reflog, note or FETCH_HEAD names anything but the base.
    assert_eq!(
        git(&dir, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        format!("refs/heads/main {base}")
    );
    let all = git(&dir, &["log", "--all", "--reflog", "--format=%H"]);
    assert!(!all.contains(&solution));
    assert_eq!(all.lines().count(), 2, "{all}");
    assert_eq!(git(&dir, &["reflog", "show", "--all"]), "");
    assert_eq!(git(&dir, &["stash", "list"]), "");
    assert!(!succeeds(&dir, &["notes", "list", &solution]));
    let git_dir = dir.join(".git");
    assert!(!git_dir.join("FETCH_HEAD").exists());
    assert!(
        !git_dir.join("packed-refs").exists()
            || !std::fs::read_to_string(git_dir.join("packed-refs"))
                .unwrap()
                .contains(&solution)
    );
    // Nothing unreachable or dangling hides in the object store, which shares no file (no
    // alternates, no hardlinked pack) with the source.
    let fsck = git(
        &dir,
        &[
            "fsck",
            "--unreachable",
            "--dangling",
            "--no-reflogs",
            "--full",
        ],
    );
    assert_eq!(fsck, "");
    let stored = stored_objects(&git_dir);
    assert!(!stored.is_empty());
    for id in [&solution, &blob] {
        assert!(!stored.contains(id), "{id} is stored in the attempt");
    }
    assert!(!git_dir.join("objects/info/alternates").exists());
    let mut all_files = Vec::new();
    files(&git_dir, &mut all_files);
    for f in &all_files {
        assert_eq!(
            std::fs::metadata(f).unwrap().nlink(),
            1,
            "{} is shared",
            f.display()
        );
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("the answer"),
            "{}",
            f.display()
        );
    }
    // The source is as it was, and preparing again replaces an unfinished attempt.
    assert_eq!(repo.git(&["rev-parse", "v1^{commit}"]), solution);
    std::fs::write(dir.join("left-over"), "x").unwrap();
    let again = attempt::prepare(&info, &base, &path).unwrap();
    assert!(!again.toplevel.join("left-over").exists());
}
