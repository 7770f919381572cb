//! `gc` and `cancel` save what a backup ref cannot hold before removing a worktree: git
//! repositories nested in it (as bundles) and its ignored files (as a tar archive), or refuse.

use std::path::{Path, PathBuf};

use crate::support::*;

/// Makes a nested repository `vendor/lib` with one commit and an uncommitted file, and an
/// ignored file `build/out.bin` holding bytes that are not text.
const NESTING_WORKER: &str = r#"set -e
mkdir -p vendor/lib build
cd vendor/lib
git init -q
echo one > a.txt
git add a.txt
git -c user.name=w -c user.email=w@x commit -qm nested-commit
echo dirty > wip.txt
cd ../..
printf 'bin\001\377data' > build/out.bin
echo ok > out.txt"#;

fn repo_ignoring_build() -> TestRepo {
    TestRepo::with_files(&[("README.md", "# sample\n"), (".gitignore", "build/\n")])
}

fn one_packet_plan(repo: &TestRepo) -> PathBuf {
    repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Nest\"\n\n{}",
            packet("p1", "\"out.txt\"", "", "")
        ),
    )
}

/// Asserts that the nested repository and the ignored file of [`NESTING_WORKER`]'s worktree
/// were saved to the run store and that the output says where.
fn assert_saved(repo: &TestRepo, run: &str, shown: &str) {
    let saved = repo
        .path
        .join(format!(".git/orchestra/runs/{run}/p1/saved"));
    let bundle = saved.join("vendor%lib.bundle");
    assert!(shown.contains(&bundle.display().to_string()), "{shown}");
    let archive = saved.join("ignored.tar");
    assert!(shown.contains(&archive.display().to_string()), "{shown}");
    let bundle_text = bundle.to_str().unwrap();
    repo.git(&["bundle", "verify", "--quiet", bundle_text]);
    // The nested commit and the uncommitted file come back from the bundle.
    let restored = repo.scratch().join("restored");
    git(
        repo.scratch().as_path(),
        &["init", "-q", "--bare", restored.to_str().unwrap()],
    );
    git(&restored, &["fetch", "-q", bundle_text, "+refs/*:refs/*"]);
    assert_eq!(
        git(&restored, &["log", "--format=%s", "refs/orchestra/head"]),
        "nested-commit"
    );
    assert_eq!(
        git(&restored, &["show", "refs/orchestra/head:a.txt"]),
        "one"
    );
    assert_eq!(
        git(&restored, &["show", "refs/orchestra/uncommitted:wip.txt"]),
        "dirty"
    );
    assert_eq!(tar_member(&archive, "build/out.bin"), b"bin\x01\xffdata");
}

/// Returns the bytes of `member` in the tar archive `archive`.
fn tar_member(archive: &Path, member: &str) -> Vec<u8> {
    let out = std::process::Command::new("tar")
        .arg("-xOf")
        .arg(archive)
        .arg(member)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn gc_bundles_a_nested_repository_and_archives_ignored_files() {
    let repo = repo_ignoring_build();
    let plan = one_packet_plan(&repo);
    repo.run_plan(&plan, NESTING_WORKER, &[]);
    let run = run_id(&repo.path);
    let wt = repo.scratch().join("wt").join(&run).join("p1");
    assert!(wt.join("vendor/lib/.git").is_dir(), "the worker ran");
    let dry = orchestra(&repo.path, &["gc", "--dry-run"]);
    let dry_text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry_text.contains("would save the nested git repository vendor/lib")
            && dry_text.contains("would archive 1 ignored path(s)"),
        "{}",
        text(&dry)
    );
    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!wt.exists());
    assert_saved(&repo, &run, &String::from_utf8_lossy(&out.stdout));
}

#[test]
fn cancel_bundles_a_nested_repository_and_archives_ignored_files() {
    let repo = repo_ignoring_build();
    let plan = one_packet_plan(&repo);
    // Crash right after the worker finished, before its commit: the run is left interrupted.
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            NESTING_WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[("ORCHESTRA_CRASH_AFTER_EVENTS", "6")],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let out = orchestra(&repo.path, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(status_json(&repo.path)["run"]["state"], "cancelled");
    assert!(!root.join(&run).join("p1").exists());
    assert_saved(&repo, &run, &String::from_utf8_lossy(&out.stdout));
}

#[test]
fn gc_refuses_a_worktree_holding_a_repository_it_cannot_save_and_removes_nothing() {
    let repo = repo_ignoring_build();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Empty nest\"\n\n{}{}",
            packet("p1", "\"out.txt\"", "", ""),
            packet("p2", "\"other.txt\"", "", "")
        ),
    );
    let worker = r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then git init -q empty; echo w > empty/f; fi
echo ok > out.txt; echo ok > other.txt"#;
    repo.run_plan(&plan, worker, &[]);
    let run = run_id(&repo.path);
    let root = repo.scratch().join("wt").join(&run);
    let before = refs(&repo.path);
    let out = orchestra(&repo.path, &["gc"]);
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("empty is a git repository with no commit")
            && err.contains("nothing was removed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("p1/empty/f")).unwrap(),
        "w\n"
    );
    assert!(
        root.join("p2").exists(),
        "another worktree of the run was removed"
    );
    assert_eq!(refs(&repo.path), before);
}

#[test]
fn gc_leaves_a_directory_git_does_not_know_as_a_worktree_and_cleans_the_rest() {
    let repo = TestRepo::new();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Cut short\"\n\n{}{}{}",
            packet("p1", "\"out.txt\"", "", ""),
            packet("p2", "\"other.txt\"", "", ""),
            packet("p3", "\"third.txt\"", "", "")
        ),
    );
    repo.run_plan(
        &plan,
        "echo ok > out.txt; echo ok > other.txt; echo ok > third.txt",
        &[],
    );
    let run = run_id(&repo.path);
    let p1 = repo.scratch().join("wt").join(&run).join("p1");
    let p2 = p1.with_file_name("p2");
    // What a crash while creating p1 leaves: a directory with no registration; and while
    // creating p2: a registration gix still holds locked as "initializing".
    for admin in std::fs::read_dir(repo.path.join(".git/worktrees")).unwrap() {
        let admin = admin.unwrap().path();
        let gitdir = std::fs::read_to_string(admin.join("gitdir")).unwrap();
        if Path::new(gitdir.trim()).starts_with(&p1) {
            std::fs::remove_dir_all(&admin).unwrap();
        } else if Path::new(gitdir.trim()).starts_with(&p2) {
            std::fs::write(admin.join("locked"), "initializing").unwrap();
        }
    }
    let out = orchestra(&repo.path, &["gc"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("left {} in place", p1.display())),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("left {} in place", p2.display())),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(p1.join("out.txt")).unwrap(), "ok\n");
    assert_eq!(
        std::fs::read_to_string(p2.join("other.txt")).unwrap(),
        "ok\n"
    );
    assert!(
        !p1.with_file_name("p3").exists(),
        "the run's registered worktree was not cleaned up"
    );
    let listed = repo.git(&["worktree", "list"]);
    assert!(!listed.contains("/p2"), "{listed}");
}

#[test]
fn a_merged_packets_worktree_is_removed_with_its_ignored_files_saved_but_not_its_build_output() {
    let repo = TestRepo::with_files(&[
        ("README.md", "# sample\n"),
        (".gitignore", ".env.local\ntarget/\n"),
    ]);
    let plan = one_packet_plan(&repo);
    let worker = "echo ok > out.txt; echo 'TOKEN=local' > .env.local; mkdir -p target/debug; echo obj > target/debug/app.o";
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let wt = repo.scratch().join("wt").join(&run).join("p1");
    assert!(!wt.exists(), "the integrated packet's worktree was removed");
    let archive = repo
        .path
        .join(format!(".git/orchestra/runs/{run}/p1/saved/ignored.tar"));
    assert_eq!(tar_member(&archive, ".env.local"), b"TOKEN=local\n");
    let listed = std::process::Command::new("tar")
        .arg("-tf")
        .arg(&archive)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains("target"), "{listed}");
}

#[test]
fn gc_leaves_build_output_out_of_the_archive_and_says_so() {
    let repo = TestRepo::with_files(&[
        ("README.md", "# sample\n"),
        (".gitignore", "notes.txt\nnode_modules/\n"),
    ]);
    let plan = one_packet_plan(&repo);
    let worker = "echo ok > out.txt; echo mine > notes.txt; mkdir -p node_modules/x; echo js > node_modules/x/i.js";
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("build output not saved: node_modules"),
        "{shown}"
    );
    let archive = repo
        .path
        .join(format!(".git/orchestra/runs/{run}/p1/saved/ignored.tar"));
    assert_eq!(tar_member(&archive, "notes.txt"), b"mine\n");
}

/// The apparent size of the sparse file planted among a worktree's ignored files.
const PLANTED_SPARSE: u64 = 100 << 30;

#[test]
fn gc_does_not_archive_a_planted_sparse_file_and_says_what_it_left_out() {
    let repo = repo_ignoring_build();
    let plan = one_packet_plan(&repo);
    let worker = "echo ok > out.txt; mkdir -p build; echo small > build/small.txt";
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    // What an unconfined worker can leave (the sandbox's file size limit stops a confined
    // one): a sparse file that takes no disk but reads as 100 GiB.
    let wt = repo.scratch().join("wt").join(&run).join("p1");
    std::fs::File::create(wt.join("build/huge.img"))
        .unwrap()
        .set_len(PLANTED_SPARSE)
        .unwrap();
    let started = std::time::Instant::now();
    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("not saved") && shown.contains("build/huge.img"),
        "{shown}"
    );
    let archive = repo
        .path
        .join(format!(".git/orchestra/runs/{run}/p1/saved/ignored.tar"));
    assert!(
        std::fs::metadata(&archive).unwrap().len() < 10 * 1024 * 1024,
        "the archive holds the planted file"
    );
    assert_eq!(tar_member(&archive, "build/small.txt"), b"small\n");
}

/// A removal renames a worktree aside and deletes its files after releasing the registration
/// lock; a crash in between leaves the renamed directory, which `gc` deletes, while a user's
/// directory that merely shares the name prefix stays.
#[test]
fn gc_deletes_a_worktree_a_crashed_removal_set_aside_and_nothing_else() {
    let repo = TestRepo::new();
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Set aside\"\n\n{}",
            packet("p1", "\"out.txt\"", "", "")
        ),
    );
    repo.run_plan(&plan, "echo ok > out.txt", &[]);
    let run = run_id(&repo.path);
    let p1 = repo.scratch().join("wt").join(&run).join("p1");
    assert!(p1.join("out.txt").exists());
    // What a crash between the unregistering and the deletion leaves.
    let aside = p1.with_file_name(".orchestra-removing-p1-4242-0");
    std::fs::rename(&p1, &aside).unwrap();
    for admin in std::fs::read_dir(repo.path.join(".git/worktrees")).unwrap() {
        let admin = admin.unwrap().path();
        let gitdir = std::fs::read_to_string(admin.join("gitdir")).unwrap();
        if Path::new(gitdir.trim()).starts_with(&p1) {
            std::fs::remove_dir_all(&admin).unwrap();
        }
    }
    let mine = p1.with_file_name(".orchestra-removing-mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep\n").unwrap();
    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!aside.exists(), "the set-aside worktree was left behind");
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "keep\n"
    );
}
