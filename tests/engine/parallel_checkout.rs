//! A fresh worktree is the same whichever checkout populated it: gix's on a small tree, git's
//! parallel one (`checkout.workers=0`) from `PARALLEL_CHECKOUT_FILES` files on.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git_orchestra::git::{
    CheckoutMethod, Created, PARALLEL_CHECKOUT_FILES, RepoInfo, Reuse, WorktreeRequest,
    add_checked_out, add_checked_out_by, create, validate,
};

use crate::support::{TestRepo, git};

/// A repository with an executable, symlinks, nested and empty-named directories, a file with
/// CRLF and one under an attribute that converts line endings on checkout.
fn varied_repo() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("README.md", "# sample\n"),
        ("src/lib.rs", "pub fn add() {}\n"),
        ("src/deep/nested/mod.rs", "pub mod x;\n"),
        ("scripts/run.sh", "#!/bin/sh\necho hi\n"),
        ("windows.txt", "one\r\ntwo\r\n"),
        (".gitattributes", "*.crlf text eol=crlf\n"),
        ("notes.crlf", "first\nsecond\n"),
        (".gitignore", "target/\n"),
    ]);
    let script = repo.path.join("scripts/run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/lib.rs", repo.path.join("lib-link.rs")).unwrap();
    std::os::unix::fs::symlink("src/deep", repo.path.join("deep-dir")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "modes, links and attributes"]);
    repo
}

/// Returns every path under `dir` but `.git`, with its kind, executable bit and bytes (a link's
/// target for a symlink).
fn snapshot(dir: &Path) -> BTreeMap<String, (String, bool, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let value = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                (
                    "link".into(),
                    false,
                    target.into_os_string().into_encoded_bytes(),
                )
            } else if meta.is_dir() {
                pending.push(path.clone());
                ("dir".into(), false, Vec::new())
            } else {
                let exec = meta.permissions().mode() & 0o111 != 0;
                ("file".into(), exec, std::fs::read(&path).unwrap())
            };
            out.insert(rel, value);
        }
    }
    out
}

/// Asserts that `wt` is on `branch`, stat-clean (nothing to refresh, nothing changed or
/// untracked) and valid for the engine.
fn assert_clean_on(info: &RepoInfo, wt: &Path, branch: &str) {
    assert_eq!(
        git(wt, &["symbolic-ref", "HEAD"]),
        format!("refs/heads/{branch}")
    );
    // `diff-files` does not refresh the index: a missing or wrong stat shows up here.
    assert_eq!(
        git(wt, &["diff-files", "--name-only"]),
        "",
        "{}",
        wt.display()
    );
    assert_eq!(
        git(
            wt,
            &[
                "status",
                "--porcelain",
                "--ignored",
                "--untracked-files=all"
            ]
        ),
        ""
    );
    assert!(!validate(info, wt, branch).unwrap().dirty());
}

#[test]
fn gix_and_git_parallel_checkouts_leave_identical_stat_clean_worktrees() {
    let repo = varied_repo();
    let info = RepoInfo::discover(&repo.path).unwrap();
    let root = repo.scratch().join("worktrees");
    let mut snapshots = Vec::new();
    for (name, method) in [
        ("gix", CheckoutMethod::Gix),
        ("git", CheckoutMethod::GitParallel),
    ] {
        let branch = format!("orchestra/r/{name}");
        repo.git(&["branch", &branch, &info.head]);
        let path = root.join(name);
        let stats = add_checked_out_by(&info.toplevel, &path, &branch, method).unwrap();
        assert_eq!(stats.method, method);
        // git counts every index entry, gix the regular files it wrote (not the 2 links).
        let expected = if method == CheckoutMethod::Gix { 8 } else { 10 };
        assert_eq!(
            stats.files, expected,
            "{name}: every tracked file is written"
        );
        assert!(stats.bytes > 0);
        assert_clean_on(&info, &path, &branch);
        assert_eq!(git(&path, &["rev-parse", "HEAD"]), info.head);
        // The registration is finished: no "initializing" lock is left behind.
        let list = repo.git(&["worktree", "list", "--porcelain"]);
        let real = path.canonicalize().unwrap();
        assert!(
            list.contains(&format!("worktree {}\n", real.display())),
            "{list}"
        );
        assert!(!list.contains("locked"), "{list}");
        snapshots.push(snapshot(&path));
    }
    assert_eq!(
        std::fs::read(root.join("git/notes.crlf")).unwrap(),
        b"first\r\nsecond\r\n",
        "git applies the attributes too"
    );
    assert_eq!(snapshots[0], snapshots[1]);
    assert!(snapshots[0].len() >= 10);
    repo.git(&["fsck", "--no-progress"]);
}

#[test]
fn a_tree_at_the_threshold_is_checked_out_by_git_and_a_smaller_one_by_gix() {
    let repo = TestRepo::with_files(&[("README.md", "# many\n")]);
    for i in 0..PARALLEL_CHECKOUT_FILES {
        let path = repo.path.join(format!("d{:02}/f{i:05}.txt", i % 40));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("file {i}\n")).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "many files"]);
    let info = RepoInfo::discover(&repo.path).unwrap();
    let root = repo.scratch().join("worktrees");

    // The engine's own path: `create` picks git's parallel checkout and validates it clean.
    let path = root.join("large");
    let req = WorktreeRequest {
        repo: &info,
        path: &path,
        branch: "orchestra/r/large",
        base: &info.head,
        reuse: Reuse::RequireClean,
    };
    let (wt, created) = create(&req).unwrap();
    assert_eq!(created, Created::Fresh);
    assert_eq!(wt.head, info.head);
    assert_clean_on(&info, &path, "orchestra/r/large");
    assert_eq!(snapshot(&path), snapshot_tracked(&repo.path));

    repo.git(&["branch", "orchestra/r/auto", &info.head]);
    let stats = add_checked_out(&info.toplevel, &root.join("auto"), "orchestra/r/auto").unwrap();
    assert_eq!(stats.method, CheckoutMethod::GitParallel);
    assert_eq!(stats.files, PARALLEL_CHECKOUT_FILES + 1);

    // One file fewer than the threshold: gix's.
    repo.git(&["rm", "-q", "README.md", "d00/f00000.txt"]);
    repo.git(&["commit", "-q", "-m", "fewer"]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["branch", "orchestra/r/small", &head]);
    let path = root.join("small");
    let stats = add_checked_out(&info.toplevel, &path, "orchestra/r/small").unwrap();
    assert_eq!(stats.method, CheckoutMethod::Gix);
    assert_eq!(stats.files, PARALLEL_CHECKOUT_FILES - 1);
    assert_clean_on(&info, &path, "orchestra/r/small");
}

/// Returns `snapshot` of the main worktree without anything untracked (the test's own files).
fn snapshot_tracked(dir: &Path) -> BTreeMap<String, (String, bool, Vec<u8>)> {
    let tracked = git(dir, &["ls-files"]);
    let tracked: Vec<&str> = tracked.lines().collect();
    snapshot(dir)
        .into_iter()
        .filter(|(path, (kind, _, _))| {
            tracked.contains(&path.as_str())
                || (kind == "dir" && tracked.iter().any(|t| t.starts_with(&format!("{path}/"))))
        })
        .collect()
}
