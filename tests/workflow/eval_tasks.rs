//! `git orchestra eval tasks --from-history`: tasks mined from a small shell project's real
//! history, each candidate judged by running its test command before and after, with the
//! repository left as it was.

use std::path::Path;

use crate::support::{TestRepo, git, orchestra, refs, text};

/// Runs every `tests/test_*.sh`; fails when one fails.
const RUN_TESTS: &str = "fail=0\nfor t in tests/test_*.sh; do sh \"$t\" || { echo \"FAIL $t\"; fail=1; }; done\nexit $fail\n";

/// Returns a repository whose five last commits are one candidate of each kind: a feature with
/// its failing-before test (valid), a README change (no test change), a test-only change (no
/// source change), a refactor whose new assertion already held (tests pass before) and a
/// feature whose test fails at its own commit (tests fail after).
fn history() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("run_tests.sh", RUN_TESTS),
        ("src/calc.sh", "add() { echo $(($1 + $2)); }\n"),
        (
            "tests/test_add.sh",
            ". ./src/calc.sh\n[ \"$(add 1 2)\" = 3 ]\n",
        ),
        ("README.md", "# calc\n"),
    ]);
    let commit = |repo: &TestRepo, files: &[(&str, &str)], message: &str| {
        for (path, body) in files {
            repo.write(path, body);
        }
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", message]);
    };
    commit(
        &repo,
        &[
            (
                "src/calc.sh",
                "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n",
            ),
            (
                "tests/test_mul.sh",
                ". ./src/calc.sh\n[ \"$(mul 2 3)\" = 6 ]\n",
            ),
        ],
        "Add multiplication\n\nmul multiplies its two arguments.",
    );
    commit(
        &repo,
        &[("README.md", "# calc\n\nadd and mul.\n")],
        "Document usage",
    );
    commit(
        &repo,
        &[(
            "tests/test_mul.sh",
            ". ./src/calc.sh\n[ \"$(mul 2 3)\" = 6 ]\n[ \"$(mul 0 3)\" = 0 ]\n",
        )],
        "Test multiplication by zero",
    );
    commit(
        &repo,
        &[
            (
                "src/calc.sh",
                "# Arithmetic.\nadd() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n",
            ),
            (
                "tests/test_add.sh",
                ". ./src/calc.sh\n[ \"$(add 1 2)\" = 3 ]\n[ \"$(add 0 0)\" = 0 ]\n",
            ),
        ],
        "Comment the calculator",
    );
    commit(
        &repo,
        &[
            (
                "src/calc.sh",
                "# Arithmetic.\nadd() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\nsub() { echo $(($1 + $2)); }\n",
            ),
            (
                "tests/test_sub.sh",
                ". ./src/calc.sh\n[ \"$(sub 5 3)\" = 2 ]\n",
            ),
        ],
        "Add subtraction",
    );
    repo
}

/// Returns what a run of `eval tasks` must not change: refs, worktrees, branches, status.
fn state(repo: &Path) -> String {
    format!(
        "{}\n{}\n{}",
        refs(repo),
        git(repo, &["worktree", "list", "--porcelain"]),
        git(repo, &["status", "--porcelain", "--untracked-files=all"])
    )
}

#[test]
fn history_yields_one_valid_task_and_each_invalid_kind_with_the_repository_unchanged() {
    let repo = history();
    let before = state(&repo.path);
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5..HEAD",
            "--test",
            "sh run_tests.sh",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |subject: &str| {
        stdout
            .lines()
            .find(|l| l.ends_with(subject))
            .unwrap_or_else(|| panic!("no line for {subject}: {}", text(&out)))
            .to_string()
    };
    assert!(
        line("Add multiplication").contains(" valid "),
        "{}",
        text(&out)
    );
    assert!(line("Document usage").contains("invalid: no test change"));
    assert!(line("Test multiplication by zero").contains("invalid: no source change"));
    assert!(line("Comment the calculator").contains("invalid: tests pass before"));
    assert!(line("Add subtraction").contains("invalid: tests fail after"));
    // Only the three that change source and tests are checked, each announced.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("5 commits, 3 of them change source and test files"),
        "{err}"
    );
    for n in 1..=3 {
        assert!(err.contains(&format!("[{n}/3] checking ")), "{err}");
    }
    assert!(
        stdout.contains(
            "5 candidates: 1 valid, 1 no test change, 1 no source change, 1 tests pass before, 1 tests fail after"
        ),
        "{}",
        text(&out)
    );
    assert_eq!(state(&repo.path), before, "the repository changed");
    assert_eq!(leftovers(&repo.path), Vec::<String>::new());
}

/// Returns what the checks left in the engine's state directory: scratch checkouts, their
/// private temporary directories, logs.
fn leftovers(repo: &Path) -> Vec<String> {
    let state = repo.join(".git/orchestra");
    let mut left = Vec::new();
    for dir in ["scratch", "tmp", "eval"] {
        if let Ok(entries) = std::fs::read_dir(state.join(dir)) {
            left.extend(
                entries.map(|e| format!("{dir}/{}", e.unwrap().file_name().to_string_lossy())),
            );
        }
    }
    let scratch = git_orchestra::exec::outside_dir(&repo.join(".git"), ".scratch");
    if let Ok(entries) = std::fs::read_dir(&scratch) {
        left.extend(
            entries.map(|e| format!(".scratch/{}", e.unwrap().file_name().to_string_lossy())),
        );
    }
    left
}

/// Fails when a directory above the checkout holds `top-marker`, as pytest's rootdir search,
/// Cargo's workspace search and Node's module lookup would find the user's files there.
const NO_TOP_ABOVE: &str = "d=$(dirname \"$PWD\"); while [ \"$d\" != / ]; do [ -e \"$d/top-marker\" ] && { echo \"found the user's tree at $d\"; exit 1; }; d=$(dirname \"$d\"); done; sh run_tests.sh";

#[test]
fn a_check_walking_up_from_its_checkout_never_reaches_the_user_s_tree() {
    let repo = history();
    repo.write("top-marker", "the user's working tree\n");
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5..HEAD",
            "--test",
            NO_TOP_ABOVE,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("5 candidates: 1 valid,"),
        "{}",
        text(&out)
    );
    assert_eq!(leftovers(&repo.path), Vec::<String>::new());
}

#[test]
fn json_lists_each_task_with_base_objective_and_hidden_tests_using_the_configured_command() {
    let repo = history();
    repo.write(
        ".orchestra/config.toml",
        "[eval]\ntest = \"sh run_tests.sh\"\n",
    );
    repo.trust();
    let before = state(&repo.path);
    let out = orchestra(
        &repo.path,
        &["eval", "tasks", "--from-history", "HEAD~5..HEAD", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 5, "{v}");
    let first = &tasks[0];
    assert_eq!(first["valid"], true);
    assert!(first["reason"].is_null());
    assert_eq!(first["commit"], repo.git(&["rev-parse", "HEAD~4"]));
    assert_eq!(first["base"], repo.git(&["rev-parse", "HEAD~5"]));
    assert_eq!(
        first["objective"],
        "Add multiplication\n\nmul multiplies its two arguments."
    );
    assert_eq!(first["tests"], serde_json::json!(["tests/test_mul.sh"]));
    let reasons: Vec<&str> = tasks
        .iter()
        .map(|t| t["reason"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        reasons,
        [
            "",
            "no_test_change",
            "no_source_change",
            "tests_pass_before",
            "tests_fail_after"
        ]
    );
    assert_eq!(
        v["counts"],
        serde_json::json!({"valid": 1, "no_test_change": 1, "no_source_change": 1,
            "tests_pass_before": 1, "tests_fail_after": 1})
    );
    assert_eq!(state(&repo.path), before, "the repository changed");
}

#[test]
fn an_unreadable_range_or_a_missing_test_command_is_refused_with_what_to_do() {
    let repo = history();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "nope..HEAD",
            "--test",
            "true",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("cannot read the range `nope..HEAD`"),
        "{}",
        text(&out)
    );
    let out = orchestra(
        &repo.path,
        &["eval", "tasks", "--from-history", "HEAD~1..HEAD"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--test <COMMAND>"), "{}", text(&out));
}

#[test]
fn a_check_that_hangs_is_stopped_at_the_timeout_as_setup_failed() {
    let repo = history();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5..HEAD~4",
            "--test",
            "sleep 30",
            "--timeout",
            "1",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("invalid: setup failed"), "{}", text(&out));
    assert!(stdout.contains("timed out after 1s"), "{}", text(&out));
    assert!(
        stdout.contains("1 candidates: 0 valid, 1 setup failed"),
        "{}",
        text(&out)
    );
}

/// Regression: Ctrl-C during a check killed the command with its scratch worktree still
/// registered and checked out.
#[test]
fn ctrl_c_during_a_check_stops_it_and_leaves_no_scratch_worktree() {
    let repo = history();
    let before = state(&repo.path);
    let child = crate::support::orchestra_command(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5..HEAD~4",
            "--test",
            "sleep 30",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while git(&repo.path, &["worktree", "list"]).lines().count() < 2 {
        assert!(std::time::Instant::now() < deadline, "no check started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the check was not stopped"
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(state(&repo.path), before, "the repository changed");
    assert_eq!(leftovers(&repo.path), Vec::<String>::new());
}

/// Regression: a root commit was "setup failed" whatever it changed, though a commit without
/// tests is no task whether or not it has a parent.
#[test]
fn a_root_commit_is_classified_by_its_files_before_its_missing_parent() {
    let repo = TestRepo::with_files(&[("README.md", "# calc\n")]);
    let out = orchestra(
        &repo.path,
        &["eval", "tasks", "--from-history", "HEAD", "--test", "true"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 candidates: 0 valid, 1 no test change"),
        "{}",
        text(&out)
    );
    let repo = history();
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5",
            "--test",
            "true",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("a root commit has no parent to start from"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_untrusted_repository_s_eval_test_command_is_not_run() {
    let repo = history();
    let marker = repo.scratch().join("ran");
    let command = format!("touch {}; sh run_tests.sh", marker.display());
    repo.write(
        ".orchestra/config.toml",
        &format!("[eval]\ntest = \"{command}\"\n"),
    );
    repo.user_config("");
    let out = orchestra(
        &repo.path,
        &["eval", "tasks", "--from-history", "HEAD~5..HEAD"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no test command"), "{}", text(&out));
    assert!(!marker.exists(), "the untrusted command ran");
    let shown = orchestra(&repo.path, &["trust", "--show"]);
    assert!(text(&shown).contains("`[eval] test`"), "{}", text(&shown));
}

#[test]
fn objective_from_model_rewrites_valid_tasks_reading_only_the_base() {
    let repo = history();
    let statement =
        "Multiplying is impossible\n\nThe calculator adds but cannot multiply two numbers.";
    let scripts = serde_json::json!([
        {"name": "init", "match": ["Rewrite this commit message", "Add multiplication"], "replies": [
            {"calls": [{"name": "read_file", "args": {"path": "src/calc.sh"}}]},
            {"text": statement}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let before = state(&repo.path);
    let out = crate::support::orchestra_with_env(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5..HEAD~3",
            "--test",
            "sh run_tests.sh",
            "--objective-from",
            "model",
            "--json",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["tasks"][0]["valid"], true, "{v}");
    assert_eq!(v["tasks"][0]["objective"], statement);
    // An invalid task keeps its message: no model call is spent on it.
    assert_eq!(v["tasks"][1]["objective"], "Document usage");
    // The role read the base, where `mul` does not exist yet, not the working tree.
    let transcript =
        std::fs::read_to_string(repo.path.join(".git/orchestra/eval-objective.log")).unwrap();
    assert!(transcript.contains("add() {"), "{transcript}");
    assert!(!transcript.contains("mul() {"), "{transcript}");
    assert_eq!(state(&repo.path), before, "the repository changed");
    let scratch = std::fs::read_dir(git_orchestra::exec::outside_dir(
        &repo.path.join(".git"),
        ".scratch",
    ))
    .map(|d| d.count())
    .unwrap_or(0);
    assert_eq!(scratch, 0, "a scratch checkout was left behind");
}

#[test]
fn objective_from_model_without_a_model_is_refused_before_any_check() {
    let repo = history();
    let out = crate::support::orchestra_with_env(
        &repo.path,
        &[
            "eval",
            "tasks",
            "--from-history",
            "HEAD~5..HEAD",
            "--test",
            "sh run_tests.sh",
            "--objective-from",
            "model",
        ],
        &[("ORCHESTRA_PROVIDER", ""), ("ORCHESTRA_MODEL", "")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("`--objective-from model` needs a model for the init role"),
        "{}",
        text(&out)
    );
}
