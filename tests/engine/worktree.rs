//! Packet worktrees: creation checked against plain git, resume, `.worktreeinclude`, backups
//! and removal that never loses work.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git_orchestra::git::{
    self, Created, RepoInfo, Reuse, WorktreeError, WorktreeRequest, backup, copy_includes, create,
    remove, validate,
};

use crate::support::{TestRepo, git};

const BRANCH: &str = "orchestra/run-1/p1";

/// A repository with an executable, a symlink, nested directories and an ignore file.
fn sample_repo() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("README.md", "# sample\n"),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
        ),
        ("src/deep/nested/mod.rs", "pub mod x;\n"),
        ("scripts/run.sh", "#!/bin/sh\necho hi\n"),
        (".gitignore", ".env\n*.log\nsecrets/\ntarget/\n"),
    ]);
    let script = repo.path.join("scripts/run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/lib.rs", repo.path.join("lib-link.rs")).unwrap();
    std::os::unix::fs::symlink("src/deep", repo.path.join("deep-dir")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "modes and links"]);
    repo
}

fn info(repo: &TestRepo) -> RepoInfo {
    RepoInfo::discover(&repo.path).unwrap()
}

fn request<'a>(info: &'a RepoInfo, path: &'a Path) -> WorktreeRequest<'a> {
    WorktreeRequest {
        repo: info,
        path,
        branch: BRANCH,
        base: &info.head,
        reuse: Reuse::ReportDirty,
    }
}

fn worktree_path(repo: &TestRepo) -> PathBuf {
    repo.scratch().join("worktrees").join("p1")
}

/// Returns the paths `git worktree list --porcelain` shows, with their branch lines.
fn listed(repo: &TestRepo) -> String {
    repo.git(&["worktree", "list", "--porcelain"])
}

/// Asserts that every entry of HEAD's tree is on disk in `wt` with the right kind, mode and bytes.
fn assert_matches_tree(wt: &Path) {
    let tree = git(wt, &["ls-tree", "-r", "-z", "HEAD"]);
    let mut count = 0;
    for entry in tree.split('\0').filter(|e| !e.is_empty()) {
        let (meta, path) = entry.split_once('\t').unwrap();
        let fields: Vec<&str> = meta.split(' ').collect();
        let (mode, id) = (fields[0], fields[2]);
        let blob = git(wt, &["cat-file", "blob", id]);
        let on_disk = wt.join(path);
        let stat = std::fs::symlink_metadata(&on_disk).unwrap();
        match mode {
            "120000" => {
                assert!(stat.file_type().is_symlink(), "{path} should be a symlink");
                assert_eq!(std::fs::read_link(&on_disk).unwrap(), PathBuf::from(&blob));
            }
            "100755" | "100644" => {
                assert!(stat.is_file(), "{path} should be a file");
                let exec = stat.permissions().mode() & 0o111 != 0;
                assert_eq!(exec, mode == "100755", "{path} executable bit");
                let text = std::fs::read_to_string(&on_disk).unwrap();
                assert_eq!(text.trim_end(), blob, "{path} contents");
            }
            other => panic!("unexpected mode {other} for {path}"),
        }
        count += 1;
    }
    assert_eq!(count, 7, "every tracked file is checked");
}

#[test]
fn fresh_worktree_is_listed_clean_matches_the_tree_and_plain_git_removes_it() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    let (wt, created) = create(&request(&info, &path)).unwrap();
    assert_eq!(created, Created::Fresh);
    assert_eq!(wt.head, info.head);
    assert_eq!(wt.branch, BRANCH);

    let list = listed(&repo);
    let real = path.canonicalize().unwrap();
    assert!(
        list.contains(&format!(
            "worktree {}\nHEAD {}\nbranch refs/heads/{BRANCH}",
            real.display(),
            info.head
        )),
        "{list}"
    );
    let entries = git::list(&info).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].branch_name(), Some(BRANCH));
    assert_eq!(git(&path, &["status", "--porcelain", "--ignored"]), "");
    assert_eq!(git(&path, &["diff", "HEAD", "--stat"]), "");
    assert_eq!(
        git(&path, &["symbolic-ref", "HEAD"]),
        format!("refs/heads/{BRANCH}")
    );
    assert_matches_tree(&path);
    // The index carries stat data: git sees nothing to refresh.
    assert_eq!(git(&path, &["diff-files", "--name-only"]), "");
    assert!(!validate(&info, &path, BRANCH).unwrap().dirty());
    repo.git(&["fsck", "--no-progress"]);

    repo.git(&["worktree", "remove", real.to_str().unwrap()]);
    assert!(!path.exists());
    // Compare whole paths: a random temp-dir name may contain "p1" too.
    assert!(!listed(&repo).contains(&format!("worktree {}\n", real.display())));
    repo.git(&["fsck", "--no-progress"]);
}

#[test]
fn creating_twice_reuses_and_reports_dirtiness() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    let (_, again) = create(&request(&info, &path)).unwrap();
    assert_eq!(again, Created::Reused { dirty: false });

    std::fs::write(path.join("src/lib.rs"), "changed\n").unwrap();
    let (_, dirty) = create(&request(&info, &path)).unwrap();
    assert_eq!(dirty, Created::Reused { dirty: true });
    assert_eq!(
        std::fs::read_to_string(path.join("src/lib.rs")).unwrap(),
        "changed\n"
    );

    let strict = WorktreeRequest {
        reuse: Reuse::RequireClean,
        ..request(&info, &path)
    };
    assert!(matches!(
        create(&strict),
        Err(WorktreeError::Dirty { changed: 1, .. })
    ));
    assert_eq!(git::list(&info).unwrap().len(), 2, "no duplicate worktree");
}

#[test]
fn existing_branch_with_commits_is_recreated_at_its_tip() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    std::fs::write(path.join("new.txt"), "work\n").unwrap();
    git(&path, &["add", "new.txt"]);
    git(&path, &["commit", "-q", "-m", "packet work"]);
    let tip = git(&path, &["rev-parse", "HEAD"]);
    std::fs::remove_dir_all(&path).unwrap();

    let (wt, created) = create(&request(&info, &path)).unwrap();
    assert_eq!(created, Created::Recreated);
    assert_eq!(wt.head, tip);
    assert_eq!(repo.git(&["rev-parse", BRANCH]), tip, "branch not reset");
    assert_eq!(
        std::fs::read_to_string(path.join("new.txt")).unwrap(),
        "work\n"
    );
    assert_eq!(git(&path, &["status", "--porcelain"]), "");
    assert_eq!(git::list(&info).unwrap().len(), 2);
}

#[test]
fn occupied_destination_is_refused_and_left_untouched() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("precious.txt"), "mine\n").unwrap();

    let err = create(&request(&info, &path)).unwrap_err();
    assert!(matches!(err, WorktreeError::PathOccupied { .. }), "{err}");
    assert!(err.to_string().contains("move it away"), "{err}");
    assert_eq!(
        std::fs::read_to_string(path.join("precious.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 1);
    assert_eq!(git::list(&info).unwrap().len(), 1);
    assert!(
        repo.git(&["branch", "--list", BRANCH]).is_empty(),
        "no branch created"
    );

    // An empty directory, in contrast, is a fine destination.
    let empty = repo.scratch().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (_, created) = create(&WorktreeRequest {
        path: &empty,
        ..request(&info, &path)
    })
    .unwrap();
    assert_eq!(created, Created::Fresh);
}

#[test]
fn bad_requests_change_nothing() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    let bad_branch = WorktreeRequest {
        branch: "bad..name",
        ..request(&info, &path)
    };
    assert!(matches!(
        create(&bad_branch),
        Err(WorktreeError::InvalidBranch { .. })
    ));
    let bad_base = WorktreeRequest {
        base: "0123456789012345678901234567890123456789",
        ..request(&info, &path)
    };
    assert!(matches!(
        create(&bad_base),
        Err(WorktreeError::UnknownBase { .. })
    ));
    let checked_out = WorktreeRequest {
        branch: "main",
        ..request(&info, &path)
    };
    let err = create(&checked_out).unwrap_err();
    assert!(
        matches!(err, WorktreeError::BranchCheckedOut { .. }),
        "{err}"
    );
    assert!(!path.exists());
    assert_eq!(repo.git(&["branch", "--list"]), "* main");
    assert_eq!(git::list(&info).unwrap().len(), 1);
    // A base given by name (not a full id) is resolved by git.
    let by_name = WorktreeRequest {
        base: "main~1",
        ..request(&info, &path)
    };
    let (wt, _) = create(&by_name).unwrap();
    assert_eq!(wt.head, repo.git(&["rev-parse", "main~1"]));
    assert!(matches!(
        validate(&info, &repo.path.join("src"), "main"),
        Err(WorktreeError::NotAWorktree { .. })
    ));
}

#[test]
fn worktreeinclude_copies_only_ignored_matching_files() {
    let repo = sample_repo();
    repo.write(
        ".worktreeinclude",
        "# local settings\n.env\nsecrets/\nREADME.md\nnotes.txt\n",
    );
    repo.write(".env", "TOKEN=abc\n");
    repo.write("secrets/db/key.pem", "key\n");
    repo.write("debug.log", "noise\n");
    repo.write("target/debug/big.bin", "build output\n");
    repo.write("notes.txt", "untracked but not ignored\n");
    repo.write("README.md", "# edited in main, not committed\n");
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();

    let copied = copy_includes(&repo.path, &path).unwrap();
    assert_eq!(
        copied,
        vec![PathBuf::from(".env"), PathBuf::from("secrets/db/key.pem")]
    );
    assert_eq!(
        std::fs::read_to_string(path.join(".env")).unwrap(),
        "TOKEN=abc\n"
    );
    assert!(!path.join("debug.log").exists());
    assert!(!path.join("target").exists());
    assert!(!path.join("notes.txt").exists());
    assert_eq!(
        std::fs::read_to_string(path.join("README.md")).unwrap(),
        "# sample\n"
    );
    assert_eq!(
        git(&path, &["status", "--porcelain"]),
        "",
        "copies are ignored"
    );

    // A second copy leaves the worktree's own edits alone.
    std::fs::write(path.join(".env"), "TOKEN=packet\n").unwrap();
    assert!(copy_includes(&repo.path, &path).unwrap().is_empty());
    assert_eq!(
        std::fs::read_to_string(path.join(".env")).unwrap(),
        "TOKEN=packet\n"
    );
}

/// Makes a modification, a deletion, an untracked and an ignored file in `wt`.
fn make_mess(wt: &Path) {
    std::fs::write(wt.join("src/lib.rs"), "modified\n").unwrap();
    std::fs::remove_file(wt.join("README.md")).unwrap();
    std::fs::create_dir_all(wt.join("docs")).unwrap();
    std::fs::write(wt.join("docs/new.md"), "untracked\n").unwrap();
    std::fs::write(wt.join("debug.log"), "ignored\n").unwrap();
}

#[test]
fn backup_saves_exactly_the_worktree_state_without_touching_it() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    assert_eq!(
        backup(&pinned(&info, &path), "refs/orchestra/backup/run-1/p1", "m").unwrap(),
        None
    );

    make_mess(&path);
    git(&path, &["add", "src/lib.rs"]); // a staged change stays staged
    let git_dir = PathBuf::from(git(&path, &["rev-parse", "--absolute-git-dir"]));
    let index_before = std::fs::read(git_dir.join("index")).unwrap();
    let status_before = git(&path, &["status", "--porcelain"]);

    let refname = "refs/orchestra/backup/run-1/p1";
    let id = backup(&pinned(&info, &path), refname, "backup p1")
        .unwrap()
        .unwrap();
    assert_eq!(repo.git(&["rev-parse", refname]), id);
    assert_eq!(repo.git(&["rev-parse", &format!("{id}^1")]), info.head);
    let files = repo.git(&["ls-tree", "-r", "--name-only", &id]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        vec![
            ".gitignore",
            "deep-dir",
            "docs/new.md",
            "lib-link.rs",
            "scripts/run.sh",
            "src/deep/nested/mod.rs",
            "src/lib.rs",
        ]
    );
    assert_eq!(repo.git(&["show", &format!("{id}:src/lib.rs")]), "modified");
    assert_eq!(repo.git(&["log", "-1", "--format=%s", &id]), "backup p1");

    assert_eq!(std::fs::read(git_dir.join("index")).unwrap(), index_before);
    assert_eq!(git(&path, &["status", "--porcelain"]), status_before);
    assert_eq!(
        std::fs::read_to_string(path.join("debug.log")).unwrap(),
        "ignored\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&git_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("orchestra"))
        .collect();
    assert!(leftovers.is_empty(), "temporary index removed");

    assert!(matches!(
        backup(&pinned(&info, &path), "orchestra/backup/x", "m"),
        Err(WorktreeError::InvalidRef { .. })
    ));
}

#[test]
fn a_second_backup_keeps_the_first_reachable() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    let refname = "refs/orchestra/backup/run-1/p1";
    make_mess(&path);
    let first = backup(&pinned(&info, &path), refname, "first")
        .unwrap()
        .unwrap();
    assert_eq!(
        backup(&pinned(&info, &path), refname, "same").unwrap(),
        Some(first.clone()),
        "an unchanged state is not saved twice"
    );
    std::fs::write(path.join("docs/new.md"), "more\n").unwrap();
    let second = backup(&pinned(&info, &path), refname, "second")
        .unwrap()
        .unwrap();
    assert_ne!(first, second);
    assert_eq!(repo.git(&["rev-parse", &format!("{second}^2")]), first);
    repo.git(&["merge-base", "--is-ancestor", &first, refname]);
    assert_eq!(
        repo.git(&["show", &format!("{refname}:docs/new.md")]),
        "more"
    );
}

#[test]
fn remove_refuses_unsaved_work_and_succeeds_after_a_backup() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    make_mess(&path);

    let err = remove(&info, &path).unwrap_err();
    assert!(matches!(err, WorktreeError::UnsavedWork { .. }), "{err}");
    assert!(path.join("docs/new.md").exists(), "nothing deleted");
    assert_eq!(git::list(&info).unwrap().len(), 2);

    let refname = "refs/orchestra/backup/run-1/p1";
    backup(&pinned(&info, &path), refname, "before removal")
        .unwrap()
        .unwrap();
    remove(&info, &path).unwrap();
    assert!(!path.exists());
    assert_eq!(git::list(&info).unwrap().len(), 1);
    assert!(!listed(&repo).contains(&format!("{}\n", path.display())));
    assert_eq!(
        repo.git(&["show", &format!("{refname}:docs/new.md")]),
        "untracked"
    );
    assert!(matches!(
        remove(&info, &path),
        Err(WorktreeError::NotAWorktree { .. })
    ));
    assert!(matches!(
        remove(&info, &repo.path),
        Err(WorktreeError::MainWorktree { .. })
    ));
    repo.git(&["fsck", "--no-progress"]);
}

#[test]
fn clean_worktree_removes_without_backup_and_stale_registrations_are_pruned() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    assert_eq!(
        backup(&pinned(&info, &path), "refs/orchestra/backup/r/p", "m").unwrap(),
        None
    );
    remove(&info, &path).unwrap();
    assert_eq!(git::list(&info).unwrap().len(), 1);

    // A registration whose directory vanished is pruned by remove.
    let other = repo.scratch().join("gone");
    create(&WorktreeRequest {
        path: &other,
        branch: "orchestra/run-1/p2",
        ..request(&info, &path)
    })
    .unwrap();
    std::fs::remove_dir_all(&other).unwrap();
    remove(&info, &other).unwrap();
    assert_eq!(git::list(&info).unwrap().len(), 1);
}

#[test]
fn branches_are_deleted_only_when_merged_or_backed_up() {
    let repo = sample_repo();
    let info = info(&repo);
    let path = worktree_path(&repo);
    create(&request(&info, &path)).unwrap();
    std::fs::write(path.join("new.txt"), "work\n").unwrap();
    git(&path, &["add", "new.txt"]);
    git(&path, &["commit", "-q", "-m", "packet work"]);

    let err = git::delete_branch(&info, BRANCH, "main").unwrap_err();
    assert!(
        matches!(err, WorktreeError::BranchCheckedOut { .. }),
        "{err}"
    );
    remove(&info, &path).unwrap();
    let err = git::delete_branch(&info, BRANCH, "main").unwrap_err();
    assert!(matches!(err, WorktreeError::UnmergedBranch { .. }), "{err}");
    assert!(!repo.git(&["branch", "--list", BRANCH]).is_empty());

    repo.git(&["merge", "-q", "--ff-only", BRANCH]);
    git::delete_branch(&info, BRANCH, "main").unwrap();
    assert!(repo.git(&["branch", "--list", BRANCH]).is_empty());
}

/// Returns the engine's pinned git runner for the worktree at `path`.
fn pinned(info: &RepoInfo, path: &Path) -> git_orchestra::git::Git {
    git_orchestra::git::Git::pinned(&info.common_dir, path).unwrap()
}
