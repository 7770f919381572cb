//! `git orchestra start` and `demo`: the whole flow against the scripted model, kill -9 and
//! resume at many points, and the refusals of bad input.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Instant;

use git_orchestra::demo;

use crate::support::{git, hermetic, orchestra, orchestra_with_env, text};

const FINAL_CORE: &str = "from .config import PUNCTUATION\n\n\ndef greet(name):\n    return \"Hello, \" + name + PUNCTUATION\n\n\ndef farewell(name):\n    return \"Goodbye, \" + name + PUNCTUATION\n";

fn assert_fsck_clean(dir: &Path) {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["fsck", "--no-dangling", "--no-progress"])
        .output()
        .unwrap();
    assert!(out.status.success(), "git fsck: {}", text(&out));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "git fsck: {}",
        text(&out)
    );
}

#[test]
fn demo_runs_the_whole_flow_offline_in_under_a_minute() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let began = Instant::now();
    let out = orchestra(tmp.path(), &["demo", "--dir", dir.to_str().unwrap()]);
    let elapsed = began.elapsed();
    assert!(out.status.success(), "{}", text(&out));
    assert!(elapsed.as_secs() < 60, "demo took {elapsed:?}");
    let report = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "completed: all 4 packets succeeded",
        "## Assumptions",
        "farewell() ends with the same PUNCTUATION",
        "plan review 1: p4-docs has no validation",
        "p3-farewell conflicted with the integration branch in greeter/core.py",
        "p3-farewell: conflicts in greeter/core.py resolved by its agent",
        "validation `sh tests/check.sh`: exit 0",
        "| coder | openai-compatible:scripted |",
        "- executing:",
        "- integrating:",
        "Use PUNCTUATION in any new message function",
        "p3-farewell rejected by reviewer:openai-compatible:scripted: [blocker] correctness greeter/__init__.py:1",
        "| reviewer | openai-compatible:scripted |",
        "## Packet time per phase\n\n- worktree: ",
        "- worker: ",
        "- validation: ",
        "- checks: ",
        "- integration: ",
    ] {
        assert!(report.contains(needle), "missing `{needle}` in\n{report}");
    }
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains(
            "[p3-farewell] review by reviewer:openai-compatible:scripted (fix round 1): approved"
        ),
        "{progress}"
    );
    let repo = dir.join("greeter");
    // The review's required fix (export farewell) landed with the rest.
    assert_eq!(
        std::fs::read_to_string(repo.join("greeter/__init__.py")).unwrap(),
        "from .core import farewell, greet\n"
    );
    // The target branch (checked out) holds every packet's work, conflict resolved.
    assert_eq!(
        std::fs::read_to_string(repo.join("greeter/core.py")).unwrap(),
        FINAL_CORE
    );
    assert!(repo.join("docs/usage.md").exists());
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_fsck_clean(&repo);
    let shown = orchestra(&repo, &["status", "--report"]);
    assert!(shown.status.success(), "{}", text(&shown));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("## Tokens and cost"));
    let status = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("phase     completed"),
        "{}",
        text(&status)
    );
}

/// Regression: with no git identity anywhere, the conflict-resolution merge was refused by git,
/// taken for a conflict, and farewell() never reached `main` while the demo said all packets
/// succeeded.
#[test]
fn demo_without_any_git_identity_lands_every_packet_on_main() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let dir = tmp.path().join("demo");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_git-orchestra"));
    cmd.current_dir(tmp.path())
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        // No identity from the host name either, whatever machine this runs on.
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "user.useConfigOnly")
        .env("GIT_CONFIG_VALUE_0", "true");
    for key in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
    ] {
        cmd.env_remove(key);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let repo = dir.join("greeter");
    let core = git(&repo, &["show", "main:greeter/core.py"]);
    assert!(
        core.contains("def farewell"),
        "main has no farewell():\n{core}\n{}",
        text(&out)
    );
    assert_eq!(format!("{core}\n"), FINAL_CORE);
}

/// Runs `start` on a fresh sample repository against the scripted model, killing the process
/// after `first`, then `first + 1`, `first + 2`, … durable steps of each attempt and starting
/// it again, until it completes. (A resumed process spends a few steps taking the run over, so
/// a fixed small step would never finish.)
fn kill_chain(first: u64) -> (u32, u64) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let model = demo::serve().unwrap();
    let root = tmp.path().join("worktrees");
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let args = [
        "start",
        "--yes",
        "--merge",
        "--worktree-root",
        root.to_str().unwrap(),
        demo::OBJECTIVE,
    ];
    let mut kills = 0;
    loop {
        let step_text = (first + u64::from(kills)).to_string();
        let mut with_crash = env.to_vec();
        with_crash.push(("ORCHESTRA_CRASH_AFTER_STEPS", &step_text));
        let out = orchestra_with_env(&repo, &args, &with_crash);
        if out.status.signal() == Some(9) {
            kills += 1;
            assert!(kills < 300, "no progress after {kills} kills");
            continue;
        }
        assert!(out.status.success(), "after {kills} kills: {}", text(&out));
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            report.contains("completed: all 4 packets succeeded"),
            "{report}"
        );
        break;
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("greeter/core.py")).unwrap(),
        FINAL_CORE
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_fsck_clean(&repo);
    // Starting again finds the completed run and only shows its report.
    let before = model.requests();
    let again = orchestra_with_env(&repo, &args, &env);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(
        model.requests(),
        before,
        "a completed run asked the model again"
    );
    (kills, model.requests())
}

/// Model requests of one uninterrupted demo run.
const DEMO_REQUESTS: u64 = 25;

#[test]
fn kill_9_at_every_few_steps_then_start_again_completes_without_redoing_turns() {
    // A clean run makes DEMO_REQUESTS model requests. Each kill may lose the turns in flight at that
    // moment (at most one per running agent), never a journaled one.
    let mut points = 0;
    for first in [1, 4] {
        let (kills, requests) = kill_chain(first);
        points += kills;
        eprintln!("chain from {first}: {kills} kills, {requests} model requests");
        assert!(
            requests <= DEMO_REQUESTS + 4 * u64::from(kills),
            "chain from {first}: {requests} requests after {kills} kills"
        );
    }
    assert!(points >= 20, "only {points} crash points");
}

#[test]
fn start_refuses_bad_input_and_missing_profiles_without_changing_anything() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let refs = git(&repo, &["for-each-ref"]);
    let out = orchestra(&repo, &["start", "  "]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("objective is empty"));
    let out = orchestra_with_env(
        &repo,
        &["start", "--yes", "Do something"],
        &[("ORCHESTRA_PROVIDER", "")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no model profile"), "{}", text(&out));
    assert_eq!(git(&repo, &["for-each-ref"]), refs);
    assert!(!repo.join(".git/orchestra/orchestra.db").exists());
    let out = orchestra(&repo, &["answer", "p1", "yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// A sample repository with the scripted model served for it, and the environment that
/// points `start` at that model.
struct Scripted {
    _tmp: tempfile::TempDir,
    repo: std::path::PathBuf,
    root: std::path::PathBuf,
    model: demo::MockModel,
}

impl Scripted {
    fn new() -> Scripted {
        hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
        Scripted {
            root: tmp.path().join("worktrees"),
            _tmp: tmp,
            repo,
            model: demo::serve().unwrap(),
        }
    }

    /// The environment that points `start` at the scripted model, plus `extra`.
    fn env<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut env = vec![
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", self.model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ];
        env.extend_from_slice(extra);
        env
    }

    /// Gives the sample a bare `origin` beside the worktrees, with `main` pushed to it when
    /// `push_main`, and points it at the fake GitHub at `api_url` as `acme/greeter`; returns
    /// the bare repository.
    fn github_remote(&self, api_url: &str, push_main: bool) -> std::path::PathBuf {
        let bare = self.root.with_extension("remote.git");
        git(
            &self.repo,
            &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
        );
        let url = format!("file://{}", bare.display());
        let mut steps = vec![vec!["remote", "add", "origin", url.as_str()]];
        if push_main {
            steps.push(vec!["push", "-q", "origin", "main"]);
        }
        steps.extend([
            vec!["config", "orchestra.forge.type", "github"],
            vec!["config", "orchestra.forge.apiUrl", api_url],
            vec!["config", "orchestra.forge.repo", "acme/greeter"],
        ]);
        for args in steps {
            git(&self.repo, &args);
        }
        bare
    }

    /// Runs `start --yes --pr` with `extra` after `--pr`, the GitHub token set.
    fn start_pr(&self, extra: &[&str]) -> std::process::Output {
        let mut args = vec!["start", "--yes", "--pr"];
        args.extend_from_slice(extra);
        args.extend([
            "--worktree-root",
            self.root.to_str().unwrap(),
            demo::OBJECTIVE,
        ]);
        orchestra_with_env(
            &self.repo,
            &args,
            &self.env(&[("GH_TOKEN", "ghp_startTOKEN0123456789")]),
        )
    }

    fn start(&self, extra: &[&str]) -> std::process::Output {
        let mut args = vec![
            "start",
            "--yes",
            "--merge",
            "--worktree-root",
            self.root.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(demo::OBJECTIVE);
        orchestra_with_env(&self.repo, &args, &self.env(&[]))
    }
}

#[test]
fn an_exhausted_token_budget_stops_cleanly_keeps_the_work_and_a_larger_one_finishes() {
    let s = Scripted::new();
    let out = s.start(&["--budget-tokens", "18000"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("token budget exhausted"), "{all}");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("failed:") && report.contains("packets succeeded so far"),
        "{report}"
    );
    assert!(report.contains("## Next steps"), "{report}");
    let before = s.model.requests();
    // The same objective with a larger budget resumes and finishes; the turns already paid
    // for are not asked again.
    let out = s.start(&["--budget-tokens", "200000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("completed: all 4 packets succeeded"));
    assert!(
        s.model.requests() - before <= DEMO_REQUESTS - 5,
        "{} more requests",
        s.model.requests() - before
    );
    assert_eq!(
        std::fs::read_to_string(s.repo.join("greeter/core.py")).unwrap(),
        FINAL_CORE
    );
    assert_fsck_clean(&s.repo);
}

#[test]
fn answer_journals_the_reply_to_a_waiting_question() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let common = repo.join(".git");
    let j = git_orchestra::orchestrator::StartJournal::open(&common, "run-1").unwrap();
    use git_orchestra::orchestrator::WorkflowEvent;
    j.append(&WorkflowEvent::Asked {
        packet: "p1".into(),
        question: "Which limiter?".into(),
    })
    .unwrap();
    let out = orchestra(&repo, &["answer", "p2", "the bucket"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no agent of packet `p2`"));
    let out = orchestra(
        &repo,
        &["answer", "p1", "the token bucket in src/limits.rs"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Which limiter?"));
    let answered = j.entries().unwrap().into_iter().any(|e| {
        e.event
            == WorkflowEvent::Answered {
                packet: "p1".into(),
                text: "the token bucket in src/limits.rs".into(),
            }
    });
    assert!(answered);
}

#[test]
fn pause_stops_a_running_start_resume_continues_it_and_pausing_a_finished_run_is_refused() {
    let s = Scripted::new();
    let mark = s._tmp.path().join("go");
    let worker = format!("[ -f {} ] || sleep 30", mark.display());
    let mut args = vec![
        "start".to_string(),
        "--yes".into(),
        "--no-clarify".into(),
        "--worktree-root".into(),
        s.root.to_str().unwrap().into(),
        "--worker-cmd".into(),
        worker,
        demo::OBJECTIVE.into(),
    ];
    let mut cmd = crate::support::orchestra_command(&s.repo, &[]);
    cmd.args(&args)
        .env("ORCHESTRA_PROVIDER", "openai-compatible")
        .env("ORCHESTRA_BASE_URL", &s.model.url)
        .env("ORCHESTRA_MODEL", "scripted")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    // Wait until the packets run, then pause.
    let began = Instant::now();
    loop {
        let status = orchestra(&s.repo, &["status"]);
        if String::from_utf8_lossy(&status.stdout).contains("phase     executing") {
            break;
        }
        assert!(
            began.elapsed().as_secs() < 30,
            "never reached executing: {}",
            text(&status)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = orchestra(&s.repo, &["pause"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        began.elapsed().as_secs() < 25,
        "pause took {:?}",
        began.elapsed()
    );
    let status = orchestra(&s.repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("phase     paused"),
        "{}",
        text(&status)
    );
    // Resume continues the workflow from execution (the model is not asked again).
    std::fs::write(&mark, "").unwrap();
    let before = s.model.requests();
    let out = orchestra(&s.repo, &["resume"]);
    assert_eq!(s.model.requests(), before);
    // The external worker writes nothing, so validations fail: the run completes with failures.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("completed with"),
        "{}",
        text(&out)
    );
    let out = orchestra(&s.repo, &["pause"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    args.clear();
}

#[test]
fn cancel_stops_a_running_start_for_good_and_saves_its_packets_work() {
    let s = Scripted::new();
    let worker = "echo half-done > wip.txt; sleep 30".to_string();
    let mut cmd = crate::support::orchestra_command(&s.repo, &[]);
    cmd.args([
        "start",
        "--yes",
        "--no-clarify",
        "--worktree-root",
        s.root.to_str().unwrap(),
        "--worker-cmd",
        &worker,
        demo::OBJECTIVE,
    ])
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &s.model.url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let began = Instant::now();
    loop {
        let status = orchestra(&s.repo, &["status"]);
        let shown = String::from_utf8_lossy(&status.stdout).to_string();
        if shown.contains("phase     executing") && shown.contains("running") {
            break;
        }
        assert!(
            began.elapsed().as_secs() < 30,
            "never ran: {}",
            text(&status)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = orchestra(&s.repo, &["cancel"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let status = orchestra(&s.repo, &["status"]);
    let shown = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(shown.contains("phase     cancelled"), "{}", text(&status));
    let backups = git(&s.repo, &["for-each-ref", "refs/orchestra/backup"]);
    assert!(
        !backups.is_empty(),
        "no backup of the running packets' work"
    );
    // Starting the cancelled objective again does not resurrect it.
    let out = s.start(&[]);
    assert!(!text(&out).contains("→ executing"), "{}", text(&out));
}

/// Serves scripts where the planner's first plan is invalid (an unknown dependency) and, when
/// `fixes` is true, its second (answering the validation errors) is valid.
pub(crate) fn invalid_first_plan(
    fixes: bool,
) -> (tempfile::TempDir, std::path::PathBuf, demo::MockModel) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let packet = |deps: &str| {
        format!(
            "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write notes\"\ndescription = \"d\"\nfiles = [\"NOTES.md\"]\ndepends_on = [{deps}]\n```"
        )
    };
    let second = if fixes {
        packet("")
    } else {
        packet("\"ghost\"")
    };
    let scripts = serde_json::json!([
        {"name": "fixed", "match": ["# Planner", "Fix these problems", "ghost"], "replies": [{"text": second}]},
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": packet("\"ghost\"")}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]},
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "NOTES.md", "content": "notes\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote notes"}}]}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    (tmp, repo, model)
}

pub(crate) fn start_plain(repo: &Path, model: &demo::MockModel) -> std::process::Output {
    orchestra_with_env(
        repo,
        &["start", "--yes", "--no-clarify", "Write notes"],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    )
}

#[test]
fn an_invalid_plan_goes_back_to_the_planner_with_its_errors() {
    let (_tmp, repo, model) = invalid_first_plan(true);
    let out = start_plain(&repo, &model);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("planning, round 2"), "{}", text(&out));
    let runs = git_orchestra::orchestrator::StartJournal::runs(&repo.join(".git")).unwrap();
    let j = git_orchestra::orchestrator::StartJournal::open(&repo.join(".git"), &runs[0]).unwrap();
    let proposals: Vec<Vec<String>> = j
        .entries()
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            git_orchestra::orchestrator::WorkflowEvent::PlanProposed { issues, .. } => Some(issues),
            _ => None,
        })
        .collect();
    assert_eq!(proposals.len(), 2, "{proposals:?}");
    assert!(
        proposals[0].iter().any(|i| i.contains("ghost")),
        "{proposals:?}"
    );
    assert!(proposals[1].is_empty());
}

#[test]
fn a_planner_that_never_fixes_its_plan_fails_after_bounded_rounds() {
    let (_tmp, repo, model) = invalid_first_plan(false);
    let out = start_plain(&repo, &model);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("did not produce a valid plan in 3 rounds") && all.contains("ghost"),
        "{all}"
    );
    assert_eq!(model.requests(), 3, "one request per bounded round");
    assert_eq!(
        git(&repo, &["for-each-ref", "refs/heads"]).lines().count(),
        1,
        "no branch was made"
    );
    let status = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("is failed"),
        "{}",
        text(&status)
    );
    // The run that never got packets is found by its id too, with its phase and spend.
    let runs = git_orchestra::orchestrator::StartJournal::runs(&repo.join(".git")).unwrap();
    let status = orchestra(&repo, &["status", &runs[0]]);
    assert!(status.status.success(), "{}", text(&status));
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown.contains(&format!("run {} (Write notes) is failed", runs[0])),
        "{shown}"
    );
    assert!(shown.contains("phase     failed"), "{shown}");
    let status = orchestra(&repo, &["status", &runs[0], "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["planning"]["id"], runs[0].as_str(), "{v}");
    // The failed run has a report that says why.
    let report = orchestra(&repo, &["status", "--report"]);
    assert!(report.status.success(), "{}", text(&report));
    let shown = String::from_utf8_lossy(&report.stdout);
    assert!(shown.contains("failed"), "{shown}");
    // Trying again asks the planner again: the failed rounds are not replayed from the journal.
    let out = start_plain(&repo, &model);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(model.requests(), 6, "the retry asked the model again");
}

#[test]
fn start_pr_local_writes_one_stacked_pull_request_per_packet_with_its_report_section() {
    let s = Scripted::new();
    let out = orchestra_with_env(
        &s.repo,
        &[
            "start",
            "--yes",
            "--pr=local",
            "--worktree-root",
            s.root.to_str().unwrap(),
            demo::OBJECTIVE,
        ],
        &s.env(&[("GH_TOKEN", "never-used")]),
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("completed: all 4 packets succeeded"),
        "{stdout}"
    );
    assert!(stdout.contains("branches ready to push"), "{stdout}");
    let runs = s.repo.join(".git/orchestra/runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("pr").is_dir())
        .expect("a run with pull request files");
    let files: Vec<_> = std::fs::read_dir(run.join("pr"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 4, "{files:?}");
    for f in &files {
        let body = std::fs::read_to_string(f).unwrap();
        assert!(body.contains("## From the run report"), "{body}");
        assert!(body.contains("- validation `"), "{body}");
        assert!(
            body.trim_end().ends_with("-->"),
            "the marker must stay last:\n{body}"
        );
    }
    // The stack: p2 depends on p1, so its pull request targets p1's branch.
    let run_id = run.file_name().unwrap().to_string_lossy().to_string();
    let p2 = std::fs::read_to_string(run.join("pr/p2-greet-punctuation.md")).unwrap();
    assert!(
        p2.contains(&format!("base: orchestra/{run_id}/p1-config")),
        "{p2}"
    );
    // Nothing was integrated: the target branch still holds the sample as created.
    assert_ne!(
        std::fs::read_to_string(s.repo.join("greeter/core.py")).unwrap(),
        FINAL_CORE
    );
}

#[test]
fn a_second_start_of_the_same_objective_is_refused_while_another_process_drives_it() {
    let s = Scripted::new();
    let repo = git_orchestra::git::RepoInfo::discover(&s.repo).unwrap();
    let (run, _) = git_orchestra::orchestrator::locate(&repo, demo::OBJECTIVE).unwrap();
    // This test process plays the first driver: it holds the run's lock.
    let held = git_orchestra::orchestrator::driver_lock(&repo, &run).unwrap();
    let out = s.start(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is being driven by another git-orchestra process"),
        "{}",
        text(&out)
    );
    assert_eq!(s.model.requests(), 0, "the refused process asked the model");
    assert!(
        git_orchestra::orchestrator::StartJournal::runs(&repo.common_dir)
            .unwrap()
            .is_empty(),
        "the refused process journaled a run"
    );
    drop(held);
    let out = s.start(&[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("completed: all 4 packets succeeded"));
}

#[test]
fn docs_and_tests_phases_run_as_packets_after_integration_and_are_journaled() {
    let s = Scripted::new();
    let out = s.start(&["--docs", "--tests"]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("→ documenting: integrated"), "{all}");
    assert!(all.contains("→ testing: documentation integrated"), "{all}");
    assert!(all.contains("→ completed: test integrated"), "{all}");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("all 6 packets succeeded"), "{report}");
    assert!(report.contains("### docs — "), "{report}");
    assert!(report.contains("### tests — "), "{report}");
    // Both phases' work is on the target branch, on top of the plan's packets.
    assert_eq!(
        std::fs::read_to_string(s.repo.join("greeter/core.py")).unwrap(),
        FINAL_CORE
    );
    assert!(s.repo.join("docs/changes.md").exists());
    assert!(s.repo.join("tests/farewell_test.sh").exists());
    assert_eq!(git(&s.repo, &["status", "--porcelain"]), "");
    assert_fsck_clean(&s.repo);
    // Without the flags the phases are skipped: the plain run never enters them.
    let plain = Scripted::new();
    let out = plain.start(&[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("→ completed: integrated"),
        "{}",
        text(&out)
    );
    assert!(!plain.repo.join("docs/changes.md").exists());
}

#[test]
fn start_config_turns_on_the_documenting_phase_and_prices_the_status() {
    let s = Scripted::new();
    std::fs::create_dir_all(s.repo.join(".orchestra")).unwrap();
    std::fs::write(
        s.repo.join(".orchestra/config.toml"),
        "[start]\ndocs = true\n[prices.scripted]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
    )
    .unwrap();
    git(&s.repo, &["add", ".orchestra/config.toml"]);
    git(
        &s.repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "config",
        ],
    );
    let out = s.start(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("→ documenting: integrated"), "{all}");
    assert!(!all.contains("→ testing"), "{all}");
    assert!(s.repo.join("docs/changes.md").exists());
    assert!(!s.repo.join("tests/farewell_test.sh").exists());
    // `status` prices the run's tokens with `[prices]`.
    let status = String::from_utf8_lossy(&orchestra(&s.repo, &["status"]).stdout).to_string();
    let cost = status
        .lines()
        .find_map(|l| l.strip_prefix("cost      $"))
        .unwrap_or_else(|| panic!("no cost line in {status}"));
    assert!(cost.parse::<f64>().unwrap() > 0.0, "{status}");
}

#[test]
fn kill_9_inside_the_documenting_and_testing_phases_then_start_again_completes() {
    let s = Scripted::new();
    let crash_env = |step: &str| {
        s.env(&[("ORCHESTRA_CRASH_AFTER_STEPS", step)])
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    let args = [
        "start",
        "--yes",
        "--merge",
        "--docs",
        "--tests",
        "--worktree-root",
        s.root.to_str().unwrap(),
        demo::OBJECTIVE,
    ];
    // Long strides through the earlier phases, then early kills of each resumed process, so
    // that several kills hit each finishing phase.
    let (mut step, mut killed_in) = (30u64, Vec::new());
    let out = loop {
        let env = crash_env(&step.to_string());
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let out = orchestra_with_env(&s.repo, &args, &env);
        if out.status.signal() != Some(9) {
            break out;
        }
        let status = String::from_utf8_lossy(&orchestra(&s.repo, &["status"]).stdout).to_string();
        let phase = status
            .lines()
            .find_map(|l| l.strip_prefix("phase"))
            // A killed driver's run reads `interrupted while <phase>`.
            .map(|p| {
                let p = p.trim_start();
                let p = p.strip_prefix("interrupted while ").unwrap_or(p);
                p.split_whitespace().next().unwrap_or("").to_string()
            })
            .unwrap_or_default();
        killed_in.push(phase);
        let finishing = killed_in
            .iter()
            .filter(|p| ["integrating", "documenting", "testing"].contains(&p.as_str()))
            .count() as u64;
        // A resumed process counts its steps from zero: from integration on, kill it early, a
        // little later each time (it spends its first steps taking the run over).
        step = if finishing > 0 {
            2 + finishing
        } else {
            step + 6
        };
        assert!(killed_in.len() < 80, "no progress: {killed_in:?}");
    };
    eprintln!("kills in phases: {killed_in:?}");
    assert!(
        out.status.success(),
        "after kills in {killed_in:?}: {}",
        text(&out)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("all 6 packets succeeded"), "{report}");
    for phase in ["documenting", "testing"] {
        let n = killed_in.iter().filter(|p| *p == phase).count();
        assert!(n >= 2, "only {n} kills while {phase}: {killed_in:?}");
    }
    // Nothing lost and nothing done twice: both phases' files landed once, the tree is clean.
    assert_eq!(
        std::fs::read_to_string(s.repo.join("greeter/core.py")).unwrap(),
        FINAL_CORE
    );
    assert!(s.repo.join("docs/changes.md").exists());
    assert!(s.repo.join("tests/farewell_test.sh").exists());
    let docs_commits = git(&s.repo, &["log", "--oneline", "--", "docs/changes.md"]);
    assert_eq!(docs_commits.lines().count(), 1, "{docs_commits}");
    assert_eq!(git(&s.repo, &["status", "--porcelain"]), "");
    assert_fsck_clean(&s.repo);
}

#[test]
fn a_start_pr_run_killed_before_publishing_publishes_on_resume() {
    let s = Scripted::new();
    let env = s.env(&[]);
    let crashing = s.env(&[("ORCHESTRA_CRASH_AT", "publish")]);
    let out = orchestra_with_env(
        &s.repo,
        &[
            "start",
            "--yes",
            "--pr=local",
            "--worktree-root",
            s.root.to_str().unwrap(),
            demo::OBJECTIVE,
        ],
        &crashing,
    );
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let status = String::from_utf8_lossy(&orchestra(&s.repo, &["status"]).stdout).to_string();
    assert!(status.contains("phase     completed"), "{status}");
    assert!(!status.contains("\npr "), "published already: {status}");
    let run = status
        .lines()
        .find_map(|l| l.strip_prefix("run"))
        .unwrap()
        .trim()
        .to_string();
    // Killed after completing, before publishing: resume publishes and journals where.
    let out = orchestra_with_env(&s.repo, &["resume", &run], &env);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("branches ready to push"),
        "{}",
        text(&out)
    );
    let status = String::from_utf8_lossy(&orchestra(&s.repo, &["status", &run]).stdout).to_string();
    let prs: Vec<&str> = status.lines().filter(|l| l.starts_with("pr ")).collect();
    assert_eq!(prs.len(), 4, "{status}");
    assert!(prs[0].contains(&format!("runs/{run}/pr/")), "{status}");
}

#[test]
fn start_pr_opens_stacked_pull_requests_on_the_forge_with_the_report_sections() {
    use crate::workflow::forge_mock::{FakeForge, Flavour};
    let forge = FakeForge::start(Flavour::GitHub);
    let s = Scripted::new();
    s.github_remote(&forge.url, false);
    let out = s.start_pr(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 4, "{pulls:?}");
    let p2 = pulls
        .iter()
        .find(|p| {
            p["head"]["ref"]
                .as_str()
                .is_some_and(|h| h.ends_with("/p2-greet-punctuation"))
        })
        .expect("p2's pull request");
    assert!(
        p2["base"]["ref"].as_str().unwrap().ends_with("/p1-config"),
        "{p2}"
    );
    for p in &pulls {
        let body = p["body"].as_str().unwrap();
        assert!(body.contains("## From the run report"), "{body}");
        assert!(body.trim_end().ends_with("-->"), "{body}");
    }
    assert!(!text(&out).contains("ghp_startTOKEN"));
}

#[test]
fn start_pr_land_opens_the_stacked_pull_requests_then_lands_them_all_parents_first() {
    use crate::workflow::forge_mock::{FakeForge, Flavour};
    let forge = FakeForge::start(Flavour::GitHub);
    let s = Scripted::new();
    let bare = s.github_remote(&forge.url, true);
    std::fs::create_dir_all(s.repo.join(".orchestra")).unwrap();
    std::fs::write(
        s.repo.join(".orchestra/config.toml"),
        "[land]\npoll_secs = 1\n",
    )
    .unwrap();
    forge.follow_git(&bare);
    let out = s.start_pr(&["--land"]);
    assert!(out.status.success(), "{}", text(&out));
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 4, "{pulls:?}");
    let all = text(&out);
    // p2 and p3 both change greeter/core.py: once p3 landed, p2 conflicts with main; the
    // conflict goes to p2's agent, whose resolution fails the packet's checks in each of the
    // `[land] max_rounds` (3) rounds, so nothing is pushed and p2 waits for a person; the other
    // three landed, p1 (p2's parent) included, every one on main.
    let merged: Vec<&str> = pulls
        .iter()
        .filter(|p| p["merged"] == true)
        .map(|p| p["head"]["ref"].as_str().unwrap())
        .collect();
    assert_eq!(merged.len(), 3, "{all}");
    assert!(
        merged.iter().any(|h| h.ends_with("/p1-config")),
        "{merged:?}"
    );
    assert!(
        all.contains(
            "p2-greet-punctuation #2: waits for a person: restacking it onto `main` conflicts \
             in `greeter/core.py`; fix round 3 did not resolve it: the gate rejected"
        ),
        "{all}"
    );
    assert!(
        pulls.iter().all(|p| p["base"]["ref"] == "main"),
        "{pulls:?}"
    );
    assert!(git(&bare, &["show", "main:greeter/config.py"]).contains("PUNCTUATION"));
    assert!(!all.contains("ghp_startTOKEN"));
    // The report, written before landing began, ends with where landing left each one.
    let report = text(&orchestra_with_env(
        &s.repo,
        &["status", "--report"],
        &s.env(&[]),
    ));
    assert!(report.contains("## Pull requests"), "{report}");
    assert!(
        report.contains(
            "- p2-greet-punctuation #2: open, waiting for a person: restacking it onto `main` \
             conflicts in `greeter/core.py`"
        ),
        "{report}"
    );
    assert!(
        report.contains("  - mergeable: no (conflicts with its base)"),
        "{report}"
    );
    assert!(report.contains("- p1-config #1: merged"), "{report}");
}

/// Serves a planner whose two packets each pass in their own worktree but not together: p2's
/// validation fails once p1's file is merged.
fn packets_that_break_together() -> (tempfile::TempDir, std::path::PathBuf, demo::MockModel) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Two\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\nvalidation = [\"test ! -e p1.txt\"]\n```";
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    (tmp, repo, model)
}

#[test]
fn a_packet_the_merge_sends_back_is_reported_as_not_landed_and_the_run_exits_1() {
    let (_tmp, repo, model) = packets_that_break_together();
    let out = orchestra_with_env(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--worker-cmd",
            "echo done > \"$ORCHESTRA_PACKET.txt\"",
            "Two files",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    // What is on main decides: p1's work landed, p2's did not.
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "done");
    assert!(
        !git(&repo, &["ls-tree", "--name-only", "main"]).contains("p2.txt"),
        "{all}"
    );
    assert!(
        all.contains("completed with failures: 1 of 2 packets landed"),
        "{all}"
    );
    assert!(!all.contains("completed: all"), "{all}");
    let p2 = all
        .lines()
        .find(|l| l.contains("packet p2 is not_landed"))
        .unwrap_or_else(|| panic!("no line names p2 as not landed: {all}"));
    assert!(p2.contains("sent back by the merge"), "{p2}");
    assert!(p2.contains("orchestra/") && p2.contains("/p2"), "{p2}");
    assert!(p2.contains("git orchestra merge"), "{p2}");
    // status says the same as the report.
    let status = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout)
            .contains("outcome   completed with failures: 1 of 2 packets landed"),
        "{}",
        text(&status)
    );
}

/// Starts "One file" in `repo` with an external worker, the planner answering one packet only
/// to a prompt that contains every one of `planner_sees`; returns the output.
fn start_one_file(repo: &Path, planner_sees: &[&str]) -> std::process::Output {
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n```";
    let mut planner_match = vec!["# Planner"];
    planner_match.extend_from_slice(planner_sees);
    let scripts = serde_json::json!([
        {"name": "planner", "match": planner_match, "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    orchestra_with_env(
        repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--worker-cmd",
            "echo done > \"$ORCHESTRA_PACKET.txt\"",
            "One file",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    )
}

#[test]
fn the_planner_is_told_which_roles_packets_can_use_and_gets_no_foreign_example() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    // The planner answers only a prompt that lists the roles with their write scopes.
    let out = start_one_file(
        &repo,
        &["## Roles for packets", "- coder: ", "(may write: "],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "done");
    // The template the planner gets has placeholders, not another project's files or commands.
    let guidance = git_orchestra::orchestrator::planning::PLAN_GUIDANCE;
    assert!(!guidance.contains("cargo test") && !guidance.contains("src/a.rs"));
}

#[test]
fn the_planner_is_told_what_earlier_runs_learned() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    // An earlier run's agent learned this (see the agent tests for how it is kept).
    let store = git_orchestra::store::Store::open(&repo.join(".git")).unwrap();
    store
        .add_learning("earlier-run", "p1", "tests/check.sh needs python3 on PATH")
        .unwrap();
    drop(store);
    let out = start_one_file(
        &repo,
        &[
            "Learned in earlier runs",
            "tests/check.sh needs python3 on PATH",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "done");
}

#[test]
fn with_a_worker_command_a_validation_the_merge_broke_goes_back_to_the_command_and_lands() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    // Each packet passes alone; p2's check fails once p1's file is there, until p2 says so.
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Two\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\nvalidation = [\"test ! -e p1.txt || grep -q 'knows p1' p2.txt\"]\n```";
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    // The command answers the fixes file (which names the broken command) by saying so.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then grep -q "grep -q 'knows p1' p2.txt" "$ORCHESTRA_FIXES_FILE" && echo "p2 knows p1" > "$ORCHESTRA_PACKET.txt"; else echo done > "$ORCHESTRA_PACKET.txt"; fi"#;
    let out = orchestra_with_env(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--worker-cmd",
            worker,
            "Two files",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("its worker command fixes it"), "{all}");
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "done");
    assert_eq!(git(&repo, &["show", "main:p2.txt"]), "p2 knows p1");
}

#[test]
fn start_with_the_ssh_executor_works_its_packets_on_a_host_and_reviews_and_merges_them_here() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let homes = tmp.path().join("hosts");
    std::fs::create_dir_all(homes.join("h1")).unwrap();
    let ssh = crate::support::fake_ssh(tmp.path());
    let config = repo.join(".orchestra/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let mut text_now = std::fs::read_to_string(&config).unwrap_or_default();
    text_now.push_str(&format!(
        "\n[executor.ssh]\nhosts = [\"h1\"]\nssh_command = \"{}\"\n",
        ssh.display()
    ));
    std::fs::write(&config, text_now).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "hosts"]);
    crate::support::trust(&repo);
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n```";
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let path = crate::support::path_with_binary();
    let out = orchestra_with_env(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--executor",
            "ssh",
            "--worker-cmd",
            "echo remote > \"$ORCHESTRA_PACKET.txt\"",
            "One file",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
            ("FAKE_HOSTS", homes.to_str().unwrap()),
            ("PATH", path.as_str()),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(git(&repo, &["show", "main:p1.txt"]), "remote");
    // Worked on the host: its repository has the branch, and the events came back.
    let on_host = git(
        &homes.join("h1/.cache/git-orchestra/remote"),
        &["for-each-ref", "--format=%(refname)", "refs/heads/"],
    );
    assert!(on_host.contains("/p1"), "{on_host}");
    let status = orchestra(&repo, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["hosts"][0]["host"], "h1", "{v}");
    assert_eq!(v["hosts"][0]["packet"], "p1", "{v}");
}
