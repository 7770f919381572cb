//! Steering without a browser: a person's comments sent through the view reach an external
//! worker through `ORCHESTRA_FIXES_FILE` in one more fix round; `git orchestra diff` shows a
//! packet's change in the terminal.

use std::time::{Duration, Instant};

use crate::support::{TestRepo, git, orchestra, packet, text};

/// Sends `method path` to the view at `url` (as printed) the way its page does — its cookie,
/// and for a POST its token header, origin and JSON `body` — and returns the status and the
/// whole answer.
fn as_page(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let session = crate::web::view::session(url);
    let addr = &session.addr;
    let changes = if method == "POST" {
        format!(
            "Origin: http://{addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        )
    } else {
        String::new()
    };
    crate::web::view::send(
        addr,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\n{changes}Connection: close\r\n\r\n{body}",
            session.cookie, session.key
        ),
    )
}

/// POSTs `body` to the view at `url` (as printed) the way its page does.
pub(crate) fn post_as_page(url: &str, path: &str, body: &str) -> (u16, String) {
    as_page(url, "POST", path, body)
}

/// GETs `path` from the view at `url` (as printed) with the page's cookie.
fn get_as_page(url: &str, path: &str) -> (u16, String) {
    as_page(url, "GET", path, "")
}

/// The demo's sample repository and a scripted model serving `scripts` for its runs.
struct Sample {
    tmp: tempfile::TempDir,
    repo: std::path::PathBuf,
    model: git_orchestra::demo::MockModel,
}

impl Sample {
    fn new(scripts: &serde_json::Value) -> Sample {
        crate::support::hermetic();
        let tmp = tempfile::tempdir().unwrap();
        let repo = git_orchestra::demo::create_sample(&tmp.path().join("greeter")).unwrap();
        let model = git_orchestra::demo::MockModel::start(
            git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
        )
        .unwrap();
        Sample { tmp, repo, model }
    }

    /// The environment that points our agents at the scripted model.
    fn vars(&self) -> [(&str, &str); 3] {
        [
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", self.model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ]
    }

    /// Returns `start <flags> --worktree-root <beside the repository> <objective>`.
    fn start_args(&self, flags: &[&str], objective: &str) -> Vec<String> {
        let mut args: Vec<String> = std::iter::once("start")
            .chain(flags.iter().copied())
            .map(String::from)
            .collect();
        args.push("--worktree-root".into());
        args.push(self.tmp.path().join("worktrees").display().to_string());
        args.push(objective.into());
        args
    }

    /// Runs `start` with `flags` to its end.
    fn start(&self, flags: &[&str], objective: &str) -> std::process::Output {
        let args = self.start_args(flags, objective);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::support::orchestra_with_env(&self.repo, &args, &self.vars())
    }

    /// Starts `git orchestra ui` on the repository, with the scripted model's environment for
    /// the runs it resumes.
    fn ui(&self) -> crate::web::view::Ui {
        crate::web::view::ui_with(&self.repo, &self.vars())
    }
}

#[test]
fn comments_from_the_view_reach_an_external_worker_as_required_fixes() {
    let repo = TestRepo::new();
    let release = repo.scratch().join("release");
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"notes\"\n\n{}",
            packet(
                "p1",
                "\"notes.txt\", \"fixes.txt\"",
                "",
                &format!(
                    "\"while [ ! -e {} ]; do sleep 0.1; done\"",
                    release.display()
                )
            )
        ),
    );
    // The worker writes notes, and copies the required fixes it was given, if any.
    let worker = "echo notes >> notes.txt; if [ -n \"$ORCHESTRA_FIXES_FILE\" ]; then cp \"$ORCHESTRA_FIXES_FILE\" fixes.txt; fi";
    let root = repo.scratch().join("wt");
    let mut run = crate::support::orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let ui = crate::web::view::ui(&repo.path);
    // Once p1 waits in validation, the comment goes in.
    let deadline = Instant::now() + Duration::from_secs(120);
    let run_id = loop {
        let status = crate::support::status_json(&repo.path);
        if status["packets"][0]["phase"] == "validate" {
            break status["run"]["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "p1 never validated: {status}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let body = r#"{"packet":"p1","comments":[{"file":"notes.txt","line":1,"code":"notes","text":"Say which notes these are"}]}"#;
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run_id}/comments"), body);
    assert_eq!(status, 200, "{answer}");
    std::fs::write(&release, "").unwrap();
    assert!(run.wait().unwrap().success());
    let branch = format!("orchestra/{run_id}/p1");
    let fixes = git(&repo.path, &["show", &format!("{branch}:fixes.txt")]);
    assert!(
        fixes.contains("notes.txt line 1") && fixes.contains("Say which notes these are"),
        "{fixes}"
    );
    // Sent once, taken once: the fix round's commit replaced the first one.
    assert_eq!(
        git(&repo.path, &["show", &format!("{branch}:notes.txt")]),
        "notes\nnotes"
    );
    // A packet that is done takes no more comments.
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run_id}/comments"), body);
    assert_eq!(status, 409, "{answer}");

    // `diff` shows the packet's change against its start.
    let out = orchestra(&repo.path, &["diff", &run_id, "p1"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.starts_with("# p1 (succeeded)"), "{shown}");
    assert!(
        shown.contains("+++ b/notes.txt") && shown.contains("+notes"),
        "{shown}"
    );
    let out = orchestra(&repo.path, &["diff", &run_id, "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("its packets: p1"),
        "{}",
        text(&out)
    );
}

/// The scripted model's planner: a plan of one packet `id` writing `file`.
fn one_packet_plan(id: &str, file: &str) -> String {
    format!(
        "```toml\n[[packet]]\nid = \"{id}\"\ntitle = \"Write {id}\"\ndescription = \"d\"\nfiles = [\"{file}\"]\n```"
    )
}

/// Waits until `path` holds `needle` (a detached command's log), or fails after two minutes.
fn wait_for_log(path: &std::path::Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let log = std::fs::read_to_string(path).unwrap_or_default();
        if log.contains(needle) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "never {needle:?} in {}: {log}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_plan_sent_back_from_the_view_is_revised_with_the_feedback_then_approved_and_run() {
    use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};
    let feedback = "Put the notes in notes.txt instead";
    let scripts = serde_json::json!([
        // Only a planner that was given the person's feedback plans notes.txt.
        {"name": "revised", "match": ["# Planner", feedback], "replies": [{"text": one_packet_plan("p2", "notes.txt")}]},
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": one_packet_plan("p1", "p1.txt")}]},
        {"name": "p2", "match": ["# Coder", "# Write p2"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "notes.txt", "content": "notes\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote notes"}}]}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let sample = Sample::new(&scripts);
    let repo = &sample.repo;
    // Without a terminal, `start` stops with the plan waiting for approval.
    let out = sample.start(&["--no-clarify"], "Write notes");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("p1 — Write p1"), "{}", text(&out));

    let ui = sample.ui();
    let common = repo.join(".git");
    let run = StartJournal::runs(&common).unwrap()[0].clone();
    let log = git_orchestra::exec::run_dir(&common, &run).join("ui-resume.log");

    // The approval panel carries the plan's forecast: no history yet, so the defaults.
    let (status, page) = get_as_page(&ui.url, &format!("/api/run/{run}"));
    assert_eq!(status, 200, "{page}");
    let body = page
        .split_once("\r\n\r\n")
        .map_or(page.as_str(), |(_, b)| b);
    let page: serde_json::Value = serde_json::from_str(body).unwrap();
    let forecast = &page["approval"]["forecast"];
    assert!(
        forecast["packets"]["p1"]
            .as_str()
            .is_some_and(|t| t.ends_with("(no history: defaults)")),
        "{forecast}"
    );
    assert!(
        forecast["total"]
            .as_str()
            .is_some_and(|t| t.contains("tokens")),
        "{forecast}"
    );

    let (status, answer) = post_as_page(
        &ui.url,
        &format!("/api/run/{run}/revise"),
        r#"{"feedback": "  "}"#,
    );
    assert_eq!(status, 400, "empty feedback is refused: {answer}");
    let body = serde_json::json!({"feedback": feedback}).to_string();
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run}/revise"), &body);
    assert_eq!(status, 200, "{answer}");
    // The planner revises; the new plan waits for approval again.
    let shown = wait_for_log(&log, "Approve it with");
    assert!(shown.contains("p2 — Write p2"), "{shown}");
    let events: Vec<WorkflowEvent> = StartJournal::open(&common, &run)
        .unwrap()
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, WorkflowEvent::PlanSentBack { feedback: f } if f == feedback)),
        "{events:#?}"
    );

    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run}/approve"), "{}");
    assert_eq!(status, 200, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while git_orchestra::status::start_state(&common, &run).map(|s| s.phase)
        != Some(git_orchestra::orchestrator::WorkflowState::Completed)
    {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(Instant::now() < deadline, "the run never completed: {log}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let branch = format!("orchestra/{run}/p2");
    assert_eq!(
        git(repo, &["show", &format!("{branch}:notes.txt")]),
        "notes"
    );
    assert!(
        git(repo, &["branch", "--list", &format!("orchestra/{run}/p1")]).is_empty(),
        "the first plan never ran"
    );
}

/// Waits until run `run` of `repo` is in `phase`, or fails after two minutes.
fn wait_for_phase(
    repo: &std::path::Path,
    run: &str,
    phase: git_orchestra::orchestrator::WorkflowState,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = git_orchestra::status::start_state(&repo.join(".git"), run).map(|s| s.phase);
        if now == Some(phase) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "run {run} never reached {phase}: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Checks the finished run `run`'s page data on the view at `url`: its reviews, its merge,
/// its spend over time and its report.
fn assert_page_shows_gates_and_report(url: &str, run: &str) {
    // The report is written just after the run's `completed` is journaled: look again until
    // it is there (or the deadline passes and the assertion below says what the page holds).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let body = loop {
        let (status, answer) = get_as_page(url, &format!("/api/run/{run}"));
        assert_eq!(status, 200, "{answer}");
        let body: serde_json::Value =
            serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or("")).unwrap();
        let written = body["report"]
            .as_str()
            .is_some_and(|r| r.starts_with("# Report"));
        if written || std::time::Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let reviews = body["gates"]["reviews"].as_array().unwrap();
    assert!(
        reviews
            .iter()
            .any(|r| r["event"]["packet"] == "p1" && r["event"]["approved"] == true),
        "{body}"
    );
    assert!(
        body["gates"]["merge"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["event"]["type"] == "packet_integrated" && m["event"]["packet"] == "p1"),
        "{body}"
    );
    let spend = body["gates"]["spend"].as_array().unwrap();
    assert!(spend.len() >= 2, "{body}");
    assert!(
        spend
            .windows(2)
            .all(|w| w[0][1].as_u64() <= w[1][1].as_u64()),
        "cumulative: {body}"
    );
    assert!(
        body["report"].as_str().unwrap().starts_with("# Report"),
        "{body}"
    );
}

#[test]
fn pause_resume_and_cancel_from_the_view_reach_the_running_start() {
    use git_orchestra::orchestrator::{StartJournal, WorkflowState as S};
    // The coder takes a few seconds before each first answer: time to press the buttons.
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": one_packet_plan("p1", "p1.txt")}]},
        {"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": "p1\n"}}], "delay_ms": 4000},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1"}}]}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let sample = Sample::new(&scripts);
    let repo = &sample.repo;
    let start = |objective: &str| {
        let args = sample.start_args(&["--yes", "--merge", "--no-clarify"], objective);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::support::orchestra_command(repo, &args)
            .envs(sample.vars())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let ui = sample.ui();
    let common = repo.join(".git");

    // Pause while the packet's agent waits for its model; resume finishes the run.
    let mut first = start("Write notes");
    let run = loop {
        if let Some(r) = StartJournal::runs(&common).unwrap().first() {
            break r.clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    wait_for_phase(repo, &run, S::Executing);
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run}/pause"), "{}");
    assert_eq!(status, 200, "{answer}");
    first.wait().unwrap();
    wait_for_phase(repo, &run, S::Paused);
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run}/resume"), "{}");
    assert_eq!(status, 200, "{answer}");
    wait_for_phase(repo, &run, S::Completed);
    assert_eq!(
        git(repo, &["show", &format!("orchestra/{run}/p1:p1.txt")]),
        "p1"
    );
    assert_page_shows_gates_and_report(&ui.url, &run);

    // Cancel a running one: it ends cancelled.
    let mut second = start("Write more notes");
    let other = loop {
        if let Some(r) = StartJournal::runs(&common)
            .unwrap()
            .into_iter()
            .find(|r| *r != run)
        {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    wait_for_phase(repo, &other, S::Executing);
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{other}/cancel"), "{}");
    assert_eq!(status, 200, "{answer}");
    second.wait().unwrap();
    wait_for_phase(repo, &other, S::Cancelled);
}

#[test]
fn retry_from_the_view_works_a_finished_runs_failed_packet_again() {
    // p1's check passes only once the test has made the release file: its first work fails.
    let marks = tempfile::tempdir().unwrap();
    let release = marks.path().join("release");
    let plan = format!(
        "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -e {}\"]\n```",
        release.display()
    );
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": "p1\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote p1"}}]}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    let sample = Sample::new(&scripts);
    let repo = &sample.repo;
    std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
    std::fs::write(
        repo.join(".orchestra/config.toml"),
        "[run]\nfix_rounds = 0\nretries = 0\n",
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "no fix rounds"]);
    let out = sample.start(&["--yes", "--no-clarify"], "Write notes");
    assert!(!out.status.success(), "p1 fails its check: {}", text(&out));
    let state = |repo: &std::path::Path| {
        crate::support::status_json(repo)["packets"][0]["state"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(state(repo), "failed");

    let ui = sample.ui();
    let run =
        git_orchestra::orchestrator::StartJournal::runs(&repo.join(".git")).unwrap()[0].clone();
    std::fs::write(&release, "").unwrap();
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run}/retry"), "{}");
    assert_eq!(status, 200, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while state(repo) != "succeeded" {
        assert!(
            Instant::now() < deadline,
            "the retried packet never succeeded: {}",
            crate::support::status_json(repo)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        git(repo, &["show", &format!("orchestra/{run}/p1:p1.txt")]),
        "p1"
    );
}
