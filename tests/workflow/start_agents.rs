//! `start` with agents that go beyond their packet: subtasks spawned as child packets,
//! consultations between roles, and a provider's rate limits shrinking the shared
//! concurrency — end to end against the scripted model over loopback HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use git_orchestra::demo;
use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};
use serde_json::{Value, json};

use crate::support::{git, hermetic, orchestra_with_env, text};

/// A sample repository, a scripted model and where the worktrees go.
struct Setup {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    root: PathBuf,
    model: demo::MockModel,
}

fn plan(packets: &[(&str, &[&str])]) -> String {
    let mut t = String::from("```toml\n");
    for (id, files) in packets {
        t.push_str(&format!(
            "[[packet]]\nid = \"{id}\"\ntitle = \"Write {id}\"\ndescription = \"d\"\nfiles = {}\n\n",
            json!(files)
        ));
    }
    t.push_str("```");
    t
}

fn setup(plan_text: &str, mut scripts: Vec<Value>, config: Option<&str>) -> Setup {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    if let Some(config) = config {
        std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
        std::fs::write(repo.join(".orchestra/config.toml"), config).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "configure"]);
        crate::support::trust(&repo);
    }
    scripts.extend([
        json!({"name": "planner", "match": ["# Planner"], "replies": [{"text": plan_text}]}),
        json!({"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}),
        json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}),
    ]);
    let model =
        demo::MockModel::start(demo::parse_scripts(&Value::Array(scripts).to_string()).unwrap())
            .unwrap();
    Setup {
        root: tmp.path().join("worktrees"),
        _tmp: tmp,
        repo,
        model,
    }
}

impl Setup {
    fn start_with(&self, url: &str, env: &[(&str, &str)]) -> std::process::Output {
        let mut vars = vec![
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", url),
            ("ORCHESTRA_MODEL", "scripted"),
        ];
        vars.extend_from_slice(env);
        orchestra_with_env(
            &self.repo,
            &self.start_args(&["--yes", "--no-clarify"]),
            &vars,
        )
    }

    /// Returns `start <flags> --worktree-root <root> "Write notes"`.
    fn start_args<'a>(&'a self, flags: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["start"];
        args.extend_from_slice(flags);
        args.extend([
            "--worktree-root",
            self.root.to_str().unwrap(),
            "Write notes",
        ]);
        args
    }

    /// Runs `git orchestra <args>` in the repository against the scripted model.
    fn orchestra(&self, args: &[&str]) -> std::process::Output {
        orchestra_with_env(
            &self.repo,
            args,
            &[
                ("ORCHESTRA_PROVIDER", "openai-compatible"),
                ("ORCHESTRA_BASE_URL", self.model.url.as_str()),
                ("ORCHESTRA_MODEL", "scripted"),
            ],
        )
    }

    /// Runs `start` with `flags` against the scripted model.
    fn start_flags(&self, flags: &[&str]) -> std::process::Output {
        self.orchestra(&self.start_args(flags))
    }

    fn start(&self) -> std::process::Output {
        self.start_with(&self.model.url, &[])
    }

    fn journal(&self) -> Vec<WorkflowEvent> {
        let common = self.repo.join(".git");
        let runs = StartJournal::runs(&common).unwrap();
        let j = StartJournal::open(&common, &runs[0]).unwrap();
        j.entries().unwrap().into_iter().map(|e| e.event).collect()
    }

    /// Returns the run's directory of logs.
    fn run_dir(&self) -> PathBuf {
        let runs = StartJournal::runs(&self.repo.join(".git")).unwrap();
        self.repo.join(".git/orchestra/runs").join(&runs[0])
    }

    /// Returns the content of `path` at revision `rev`.
    fn show(&self, rev: &str, path: &str) -> String {
        git(&self.repo, &["show", &format!("{rev}:{path}")])
    }

    fn branch(&self, name: &str) -> String {
        let runs = StartJournal::runs(&self.repo.join(".git")).unwrap();
        format!("orchestra/{}/{name}", runs[0])
    }
}

/// The script of packet `id`'s coder: it writes `<id>.txt` holding its id, then completes.
fn writes(id: &str) -> Value {
    json!({"name": id, "match": ["# Coder", format!("# Write {id}")], "replies": [
        call("write_file", json!({"path": format!("{id}.txt"), "content": format!("{id}\n")})),
        call("complete", json!({"summary": format!("wrote {id}")}))]})
}

fn call(name: &str, args: Value) -> Value {
    json!({"calls": [{"name": name, "args": args}]})
}

/// Returns the tool calls of an agent transcript: (name, ok, summary).
fn tool_calls(log: &Path) -> Vec<(String, bool, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "tool_call")
        .map(|v| {
            (
                v["name"].as_str().unwrap_or("").to_string(),
                v["ok"].as_bool().unwrap_or(false),
                v["summary"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn subtask_scripts() -> Vec<Value> {
    vec![
        json!({"name": "child", "match": ["# Coder", "# Write the child file"], "replies": [
            call("spawn_subtask", json!({"title": "Grandchild", "description": "x", "files": ["child.txt"]})),
            call("write_file", json!({"path": "child.txt", "content": "from the child\n"})),
            call("complete", json!({"summary": "wrote child.txt"}))]}),
        json!({"name": "parent", "match": ["# Coder", "# Write p1"], "replies": [
            call("write_file", json!({"path": "NOTES.md", "content": "notes\n"})),
            call("spawn_subtask", json!({"title": "Write the child file", "description": "Create child.txt",
                "files": ["child.txt"], "validation": ["test -f child.txt"]})),
            call("complete", json!({"summary": "notes written with a subtask"}))]}),
    ]
}

#[test]
fn a_subtask_runs_as_a_child_packet_and_its_work_lands_in_the_parents_commit() {
    let s = setup(
        &plan(&[("p1", &["NOTES.md", "child.txt"])]),
        subtask_scripts(),
        None,
    );
    let out = s.start();
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("all 1 packets succeeded"), "{report}");
    assert!(
        report.contains(&format!(
            "- subtask p1.s1 (completed, branch {}): wrote child.txt",
            s.branch("p1-s1")
        )),
        "{report}"
    );
    // The child's branch holds its own commit, made by the engine with its trailers.
    let child = s.branch("p1-s1");
    let message = git(&s.repo, &["log", "-1", "--format=%an%n%B", &child]);
    assert!(
        message.starts_with("git-orchestra\nWrite the child file"),
        "{message}"
    );
    assert!(message.contains("Orchestra-Packet: p1.s1"), "{message}");
    assert_eq!(s.show(&child, "child.txt"), "from the child");
    // The parent's final commit contains the child's file and its own, and descends from the
    // child's commit.
    let parent = s.branch("p1");
    assert_eq!(s.show(&parent, "child.txt"), "from the child");
    assert_eq!(s.show(&parent, "NOTES.md"), "notes");
    git(&s.repo, &["merge-base", "--is-ancestor", &child, &parent]);
    // The child, a subtask itself, could not spawn another: a depth-limit tool error.
    let dir = s.run_dir().join("p1");
    let child_calls = tool_calls(&dir.join("p1-s1/worker.log"));
    assert_eq!(child_calls[0].0, "spawn_subtask");
    assert!(
        !child_calls[0].1 && child_calls[0].2.starts_with("depth limit"),
        "{child_calls:?}"
    );
    // The parent waited for it in state waiting_for_subtask.
    let parent_log = std::fs::read_to_string(dir.join("worker-1.log")).unwrap();
    assert!(
        parent_log.contains(
            "\"to\":\"waiting_for_subtask\",\"reason\":\"subtask: Write the child file\""
        ),
        "{parent_log}"
    );
    let events = s.journal();
    let spawned = events
        .iter()
        .filter(|e| matches!(e, WorkflowEvent::SubtaskSpawned { .. }))
        .count();
    assert_eq!(spawned, 1);
    let status = orchestra_with_env(&s.repo, &["status"], &[]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("subtask   p1.s1 of p1: completed"),
        "{}",
        text(&status)
    );
    // gc knows the child's worktree although no packet record names it: unsaved work there
    // goes to a backup ref first.
    let listed = git(&s.repo, &["worktree", "list", "--porcelain"]);
    let child_wt = listed
        .split("\n\n")
        .find(|e| e.contains(&format!("branch refs/heads/{child}")))
        .and_then(|e| e.lines().next())
        .and_then(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no worktree on {child}: {listed}"));
    std::fs::write(child_wt.join("unsaved.txt"), "keep me\n").unwrap();
    let gc = orchestra_with_env(&s.repo, &["gc"], &[]);
    assert!(gc.status.success(), "{}", text(&gc));
    assert!(!child_wt.exists(), "{}", text(&gc));
    let runs = StartJournal::runs(&s.repo.join(".git")).unwrap();
    let backup = format!("refs/orchestra/backup/{}/p1-s1", runs[0]);
    let saved = git(&s.repo, &["ls-tree", "-r", "--name-only", &backup]);
    assert!(saved.lines().any(|l| l == "unsaved.txt"), "{saved}");
}

#[test]
fn subtasks_outside_the_parents_files_or_beyond_the_count_limit_are_tool_errors() {
    let scripts = vec![
        json!({"name": "child", "match": ["# Coder", "# First part"], "replies": [
            call("write_file", json!({"path": "a.txt", "content": "a\n"})),
            call("complete", json!({"summary": "wrote a.txt"}))]}),
        json!({"name": "parent", "match": ["# Coder", "# Write p1"], "replies": [
            call("spawn_subtask", json!({"title": "Elsewhere", "description": "x", "files": ["README.md"]})),
            call("spawn_subtask", json!({"title": "Glob", "description": "x", "files": ["*.md"]})),
            call("spawn_subtask", json!({"title": "First part", "description": "x", "files": ["a.txt"]})),
            call("spawn_subtask", json!({"title": "Second part", "description": "x", "files": ["b.txt"]})),
            call("write_file", json!({"path": "b.txt", "content": "b\n"})),
            call("complete", json!({"summary": "done"}))]}),
    ];
    let s = setup(
        &plan(&[("p1", &["a.txt", "b.txt"])]),
        scripts,
        Some("[agents]\nsubtasks_per_packet = 1\n"),
    );
    let out = s.start();
    assert!(out.status.success(), "{}", text(&out));
    let calls = tool_calls(&s.run_dir().join("p1/worker-1.log"));
    let spawns: Vec<_> = calls.iter().filter(|c| c.0 == "spawn_subtask").collect();
    assert_eq!(spawns.len(), 4, "{calls:?}");
    assert!(
        !spawns[0].1
            && spawns[0]
                .2
                .contains("README.md are outside your packet's files"),
        "{spawns:?}"
    );
    assert!(
        !spawns[1].1 && spawns[1].2.contains("*.md are outside"),
        "{spawns:?}"
    );
    assert!(spawns[2].1, "{spawns:?}");
    assert!(
        !spawns[3].1 && spawns[3].2.starts_with("subtask limit"),
        "{spawns:?}"
    );
    // Only the allowed subtask has a branch; the refused ones changed nothing.
    let branches = git(
        &s.repo,
        &[
            "branch",
            "--list",
            "orchestra/*",
            "--format=%(refname:short)",
        ],
    );
    assert_eq!(
        branches.lines().collect::<Vec<_>>(),
        [s.branch("p1"), s.branch("p1-s1")],
        "{branches}"
    );
    let parent = s.branch("p1");
    assert_eq!(s.show(&parent, "a.txt"), "a");
    assert_eq!(s.show(&parent, "b.txt"), "b");
}

#[test]
fn killed_during_and_after_a_subtask_resume_neither_reruns_it_nor_loses_its_work() {
    let s = setup(
        &plan(&[("p1", &["NOTES.md", "child.txt"])]),
        subtask_scripts(),
        None,
    );
    let mut kills = 0u64;
    let mut step = 8u64;
    loop {
        let crash = step.to_string();
        let out = s.start_with(
            &s.model.url,
            &[("ORCHESTRA_CRASH_AFTER_STEPS", crash.as_str())],
        );
        if std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(9) {
            kills += 1;
            step += 3;
            assert!(kills < 60, "no progress after {kills} kills");
            continue;
        }
        assert!(out.status.success(), "after {kills} kills: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("all 1 packets succeeded"));
        break;
    }
    assert!(
        kills > 2,
        "the run was killed along the way ({kills} times)"
    );
    let events = s.journal();
    let finished = events
        .iter()
        .filter(|e| matches!(e, WorkflowEvent::SubtaskFinished { .. }))
        .count();
    assert_eq!(finished, 1, "the subtask finished once");
    // One commit on the child's branch beyond the parent's work in progress: it was not
    // redone, and its work is in the parent.
    let child = s.branch("p1-s1");
    let parent = s.branch("p1");
    let own = git(
        &s.repo,
        &["rev-list", "--count", &format!("{parent}~1..{child}")],
    );
    assert!(own == "1" || own == "0", "{own}");
    assert_eq!(s.show(&parent, "child.txt"), "from the child");
    assert_eq!(s.show(&parent, "NOTES.md"), "notes");
}

#[test]
fn a_consulted_role_that_only_names_tools_is_refused_to_the_asker_not_passed_on() {
    let scripts = vec![
        json!({"name": "reviewer-consulted", "match": ["# Reviewer", "Question: Which file"], "replies": [
            call("complete", json!({"summary": "read_file, list_dir, grep"}))]}),
        json!({"name": "coder", "match": ["# Coder", "# Write p1"], "replies": [
            call("ask", json!({"to": "reviewer", "question": "Which file should hold the notes?"})),
            call("write_file", json!({"path": "NOTES.md", "content": "notes\n"})),
            call("complete", json!({"summary": "wrote notes"}))]}),
    ];
    let s = setup(&plan(&[("p1", &["NOTES.md"])]), scripts, None);
    let out = s.start();
    assert!(out.status.success(), "{}", text(&out));
    let coder = tool_calls(&s.run_dir().join("p1/worker-1.log"));
    assert!(
        !coder[0].1
            && coder[0].2.starts_with("reviewer could not answer")
            && coder[0].2.contains("only names tools"),
        "{coder:?}"
    );
    assert!(
        !s.journal()
            .iter()
            .any(|e| matches!(e, WorkflowEvent::Consulted { .. })),
        "a non-answer is not kept as the answer"
    );
}

#[test]
fn consultations_are_bounded_read_only_loops_refusing_cycles_and_depth_and_cached_per_run() {
    let q = "Which file should hold the notes?";
    let scripts = vec![
        json!({"name": "reviewer-consulted", "match": ["# Reviewer", "Question: Which file should hold"], "replies": [
            call("ask", json!({"to": "coder", "question": "which file should hold the notes"})),
            call("ask", json!({"to": "researcher", "question": "What do notes usually contain?"})),
            call("read_file", json!({"path": "README.md"})),
            call("complete", json!({"summary": "Use NOTES.md"}))]}),
        json!({"name": "researcher-consulted", "match": ["# Researcher", "Question: What do notes usually"], "replies": [
            call("ask", json!({"to": "product", "question": "Who reads them?"})),
            call("complete", json!({"summary": "Decisions and open questions"}))]}),
        json!({"name": "coder", "match": ["# Coder", "# Write p1"], "replies": [
            call("ask", json!({"to": "reviewer", "question": q})),
            call("ask", json!({"to": "reviewer", "question": "which file should hold the NOTES"})),
            call("write_file", json!({"path": "NOTES.md", "content": "notes\n"})),
            call("complete", json!({"summary": "wrote notes"}))]}),
    ];
    let s = setup(&plan(&[("p1", &["NOTES.md"])]), scripts, None);
    let out = s.start();
    assert!(out.status.success(), "{}", text(&out));
    let dir = s.run_dir().join("p1");
    let coder = tool_calls(&dir.join("worker-1.log"));
    assert_eq!(
        (coder[0].1, coder[0].2.as_str()),
        (true, "Use NOTES.md"),
        "{coder:?}"
    );
    assert_eq!(
        (coder[1].1, coder[1].2.as_str()),
        (
            true,
            "[cached answer: you asked reviewer this before] Use NOTES.md"
        ),
        "{coder:?}"
    );
    let logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("consult-")
        })
        .collect();
    let log_of = |role: &str| {
        logs.iter()
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("consult-{role}-"))
            })
            .unwrap_or_else(|| panic!("no consult log for {role} in {logs:?}"))
    };
    let reviewer = tool_calls(log_of("reviewer"));
    assert!(
        !reviewer[0].1
            && reviewer[0]
                .2
                .starts_with("consultation cycle refused: coder → reviewer → coder"),
        "{reviewer:?}"
    );
    assert_eq!(
        (reviewer[1].1, reviewer[1].2.as_str()),
        (true, "Decisions and open questions")
    );
    assert!(
        reviewer[2].0 == "read_file" && reviewer[2].1,
        "{reviewer:?}"
    );
    let researcher = tool_calls(log_of("researcher"));
    assert!(
        !researcher[0].1
            && researcher[0]
                .2
                .starts_with("depth limit: coder → reviewer → researcher"),
        "{researcher:?}"
    );
    // Each answer was journaled once, under the role and the normalised question.
    let consulted: Vec<(String, String)> = s
        .journal()
        .into_iter()
        .filter_map(|e| match e {
            WorkflowEvent::Consulted { role, key, .. } => Some((role, key)),
            _ => None,
        })
        .collect();
    assert_eq!(
        consulted,
        [
            (
                "researcher".to_string(),
                "researcher\nwhat do notes usually contain".to_string()
            ),
            (
                "reviewer".to_string(),
                "reviewer\nwhich file should hold the notes".to_string()
            ),
        ]
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!("p1: coder consulted reviewer: {q}")),
        "{report}"
    );
    // A second start of the finished run asks no model again.
    let before = s.model.requests();
    assert!(s.start().status.success());
    assert_eq!(s.model.requests(), before);
}

/// A proxy in front of the scripted model that answers 429 while another request is in
/// flight, and holds each request it forwards for `hold`, like a provider with one slot.
struct OneSlot {
    url: String,
    refused: Arc<Mutex<usize>>,
}

fn one_slot(upstream: &str, hold: Duration) -> OneSlot {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let upstream = upstream
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    let busy = Arc::new(Mutex::new(0usize));
    let refused = Arc::new(Mutex::new(0usize));
    let r = refused.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (busy, refused, upstream) = (busy.clone(), r.clone(), upstream.clone());
            std::thread::spawn(move || relay(stream, &upstream, hold, &busy, &refused));
        }
    });
    OneSlot { url, refused }
}

fn relay(
    mut stream: TcpStream,
    upstream: &str,
    hold: Duration,
    busy: &Mutex<usize>,
    refused: &Mutex<usize>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some((k, v)) = line.trim_end().split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
        if line.trim_end().is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    {
        let mut b = busy.lock().unwrap();
        if *b > 0 {
            *refused.lock().unwrap() += 1;
            let msg = "{\"error\": {\"message\": \"one request at a time\"}}";
            let _ = write!(
                stream,
                "HTTP/1.1 429 Too Many\r\nretry-after: 0\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{msg}",
                msg.len()
            );
            return;
        }
        *b += 1;
    }
    std::thread::sleep(hold);
    let mut up = TcpStream::connect(upstream).unwrap();
    up.write_all(head.as_bytes()).unwrap();
    up.write_all(&body).unwrap();
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    *busy.lock().unwrap() -= 1;
    let _ = stream.write_all(&answer);
}

#[test]
fn a_rate_limited_profile_runs_its_packets_at_lower_concurrency_and_the_report_says_so() {
    let scripts = ["p1", "p2", "p3"]
        .iter()
        .map(|id| {
            json!({"name": id, "match": ["# Coder", format!("# Write {id}")], "replies": [
                call("write_file", json!({"path": format!("{id}.txt"), "content": "x\n"})),
                call("complete", json!({"summary": format!("wrote {id}")}))]})
        })
        .collect();
    let s = setup(
        &plan(&[
            ("p1", &["p1.txt"]),
            ("p2", &["p2.txt"]),
            ("p3", &["p3.txt"]),
        ]),
        scripts,
        None,
    );
    let proxy = one_slot(&s.model.url, Duration::from_millis(300));
    let out = s.start_with(&proxy.url, &[("ORCHESTRA_CONCURRENCY", "4")]);
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("all 3 packets succeeded"), "{report}");
    assert!(
        *proxy.refused.lock().unwrap() > 0,
        "the packets did collide"
    );
    assert!(
        report.contains("env: concurrency 4 → 2 after rate limit"),
        "{report}"
    );
    let status = orchestra_with_env(&s.repo, &["status"], &[]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("limit     env: concurrency"),
        "{}",
        text(&status)
    );
}

#[test]
fn an_agent_waits_for_a_human_answer_given_with_answer_from_another_process() {
    let s = setup(
        &plan(&[("p1", &["NOTES.md"])]),
        vec![
            json!({"name": "asker", "match": ["# Coder", "# Write p1"], "replies": [
                call("ask", json!({"question": "Which heading should the notes start with?"})),
                call("write_file", json!({"path": "NOTES.md", "content": "# Decisions\n"})),
                call("complete", json!({"summary": "notes written as answered"}))]}),
        ],
        None,
    );
    let mut child = crate::support::orchestra_command(
        &s.repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--worktree-root",
            s.root.to_str().unwrap(),
            "Write notes",
        ],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &s.model.url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // `status` shows the waiting question and how to answer it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status = orchestra_with_env(&s.repo, &["status"], &[]);
        let shown = String::from_utf8_lossy(&status.stdout).to_string();
        if shown.contains("question  p1: Which heading should the notes start with?") {
            assert!(shown.contains("git orchestra answer p1"), "{shown}");
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "start ended without asking"
        );
        assert!(std::time::Instant::now() < deadline, "no question: {shown}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let answered = orchestra_with_env(&s.repo, &["answer", "p1", "Start with # Decisions"], &[]);
    assert!(answered.status.success(), "{}", text(&answered));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The agent got the answer as its tool result, then finished the packet.
    let calls = tool_calls(&s.run_dir().join("p1/worker-1.log"));
    assert_eq!(calls[0].0, "ask");
    assert!(
        calls[0].1 && calls[0].2.contains("Start with # Decisions"),
        "{calls:?}"
    );
    let branch = s.branch("p1");
    assert_eq!(s.show(&branch, "NOTES.md"), "# Decisions");
    // Once answered, the question is no longer listed.
    let status = orchestra_with_env(&s.repo, &["status"], &[]);
    assert!(!String::from_utf8_lossy(&status.stdout).contains("question  p1"));
}

#[test]
fn a_validation_the_merge_broke_goes_back_to_the_packets_agent_and_its_fix_lands() {
    // Each packet passes alone; p2's check fails once p1's file is there, until p2 says so.
    let plan_text = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Write p2\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\nvalidation = [\"test ! -e p1.txt || grep -q 'knows p1' p2.txt || { echo p2.txt does not know p1; exit 5; }\"]\n```";
    let s = setup(
        plan_text,
        vec![
            json!({"name": "fix", "match": ["# Coder", "# Fix the merged tree"], "replies": [
                call("write_file", json!({"path": "p2.txt", "content": "p2 knows p1\n"})),
                call("complete", json!({"summary": "p2 knows p1 now"}))]}),
            writes("p1"),
            writes("p2"),
        ],
        None,
    );
    let out = s.start_flags(&["--yes", "--no-clarify", "--merge"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("p2 broke `test ! -e p1.txt"),
        "the progress says what broke: {all}"
    );
    assert_eq!(s.show("main", "p1.txt"), "p1");
    assert_eq!(s.show("main", "p2.txt"), "p2 knows p1");
}

#[test]
fn retry_of_a_start_run_reopens_its_failed_packet_with_the_note_and_its_work_lands() {
    // p1's check needs ok.txt, which its agent only writes once a person says so.
    let plan_text = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"d\"\nfiles = [\"p1.txt\", \"ok.txt\"]\nvalidation = [\"test -f ok.txt\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Write p2\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\n```";
    let complete = || call("complete", json!({"summary": "wrote p1"}));
    let s = setup(
        plan_text,
        vec![
            json!({"name": "retried", "match": ["# Coder", "please create ok.txt"], "replies": [
                call("write_file", json!({"path": "ok.txt", "content": "ok\n"})),
                call("complete", json!({"summary": "wrote ok.txt"}))]}),
            json!({"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
                call("write_file", json!({"path": "p1.txt", "content": "p1\n"})),
                complete(), complete(), complete(), complete(), complete(), complete()]}),
            writes("p2"),
        ],
        None,
    );
    let first = s.start_flags(&["--yes", "--no-clarify", "--merge"]);
    let all = text(&first);
    assert!(
        !first.status.success(),
        "p1 failed, so the run did not: {all}"
    );
    assert_eq!(s.show("main", "p2.txt"), "p2", "{all}");
    let missing = std::process::Command::new("git")
        .args(["cat-file", "-e", "main:p1.txt"])
        .current_dir(&s.repo)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!missing.success(), "p1's work is not on main yet: {all}");

    let retry = s.orchestra(&["retry", "--note", "please create ok.txt"]);
    let all = text(&retry);
    assert!(retry.status.success(), "{all}");
    assert!(all.contains("retrying p1 of run"), "{all}");
    assert_eq!(s.show("main", "p1.txt"), "p1", "{all}");
    assert_eq!(s.show("main", "ok.txt"), "ok", "{all}");
    assert_eq!(s.show("main", "p2.txt"), "p2", "{all}");
    let events = s.journal();
    assert!(
        events.iter().any(
            |e| matches!(e, WorkflowEvent::Transition { reason, .. } if reason == "retry of p1")
        ),
        "the workflow journals the retry: {events:?}"
    );

    // A finished run with nothing failed left has nothing to retry: said, and nothing changes.
    let again = s.orchestra(&["retry"]);
    let all = text(&again);
    assert!(!again.status.success(), "{all}");
    assert!(all.contains("no failed or skipped packet"), "{all}");
}

#[test]
fn tests_that_fail_on_the_integrated_change_become_a_fix_packet_and_both_land() {
    // The project's test command (its Makefile's `test`) runs every tests/*.sh.
    let plan_text = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"d\"\nfiles = [\"lib.txt\"]\n```";
    let fails = || {
        call(
            "complete",
            json!({"summary": "the test fails: lib.txt is v1"}),
        )
    };
    let s = setup(
        plan_text,
        vec![
            json!({"name": "fix", "match": ["# Coder", "# Make the new tests pass"], "replies": [
                call("write_file", json!({"path": "lib.txt", "content": "v2\n"})),
                call("complete", json!({"summary": "lib.txt is v2"}))]}),
            json!({"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
                call("write_file", json!({"path": "lib.txt", "content": "v1\n"})),
                call("complete", json!({"summary": "wrote lib.txt"}))]}),
            json!({"name": "tester", "match": ["# Tester"], "replies": [
                call("write_file", json!({"path": "tests/check.sh", "content": "grep -q v2 lib.txt || { echo 'lib.txt is not v2'; exit 1; }\n"})),
                fails(), fails(), fails(), fails(), fails()]}),
        ],
        None,
    );
    std::fs::write(
        s.repo.join("Makefile"),
        "test:\n\t@for t in tests/*.sh; do [ -e \"$$t\" ] || continue; sh \"$$t\" || exit 1; done\n",
    )
    .unwrap();
    git(&s.repo, &["add", "Makefile"]);
    git(&s.repo, &["commit", "-qm", "tests"]);
    let out = s.start_flags(&["--yes", "--no-clarify", "--merge", "--tests"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("the new tests fail on the change; a fix packet makes them pass"),
        "{all}"
    );
    // The tests and the fix are on main together, and the tests pass there.
    assert_eq!(s.show("main", "lib.txt"), "v2", "{all}");
    assert!(
        s.show("main", "tests/check.sh").contains("grep -q v2"),
        "{all}"
    );
    assert!(all.contains("completed: all 2 packets succeeded"), "{all}");
    assert!(all.contains("they land with this fix"), "{all}");
}

#[test]
fn the_planner_reads_the_code_with_nav_and_read_tools_before_it_writes_the_plan() {
    let plan_text = plan(&[("p1", &["p1.txt"])]);
    let s = setup(
        "unused",
        vec![
            json!({"name": "explorer", "match": ["# Planner", "read_file, list_dir, grep and the nav_* symbol tools"], "replies": [
                call("nav_def", json!({"symbol": "greet"})),
                call("read_file", json!({"path": "greeter/core.py"})),
                call("write_file", json!({"path": "planted.txt", "content": "x"})),
                {"text": plan_text}]}),
            writes("p1"),
        ],
        None,
    );
    let out = s.start();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(s.repo.join(".git").exists());
    let calls = tool_calls(&s.run_dir().join("logs/planner-1.log"));
    let names: Vec<&str> = calls.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["nav_def", "read_file", "write_file"], "{calls:?}");
    let oks: Vec<bool> = calls.iter().map(|(_, ok, _)| *ok).collect();
    assert_eq!(oks, [true, true, false], "{calls:?}");
    // The planner reads only: a write it tries is refused and nothing is written.
    assert!(!s.repo.join("planted.txt").exists());
}

#[test]
fn a_planner_that_keeps_calling_the_same_tool_is_asked_for_its_plan_without_tools() {
    let plan_text = plan(&[("p1", &["p1.txt"])]);
    let s = setup(
        "unused",
        vec![
            // A small model repeats one call until the loop calls it stalled; asked once more
            // without tools, it writes the plan.
            json!({"name": "looper", "match": ["# Planner", "read_file, list_dir, grep and the nav_* symbol tools"], "replies": [
                call("list_dir", json!({"path": "."})),
                call("list_dir", json!({"path": "."})),
                call("list_dir", json!({"path": "."})),
                {"text": plan_text}]}),
            writes("p1"),
        ],
        None,
    );
    let out = s.start();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let log = std::fs::read_to_string(s.run_dir().join("logs/planner-1.log")).unwrap();
    assert!(
        log.contains("\"answer_requested\"") && log.contains("stalled"),
        "{log}"
    );
    assert_eq!(s.show(&s.branch("p1"), "p1.txt"), "p1");
}

#[test]
fn the_plan_reviewer_reads_the_callers_and_sends_back_a_plan_missing_a_file() {
    // The first plan renames greet in core.py only; its importer greeter/__init__.py is missing.
    let narrow = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"rename greet to hello\"\nfiles = [\"greeter/core.py\"]\n```";
    let full = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"rename greet to hello\"\nfiles = [\"greeter/core.py\", \"greeter/__init__.py\"]\n```";
    let s = setup(
        "unused",
        vec![
            json!({"name": "planner-revised", "match": ["# Planner", "p1 is missing files: greeter/__init__.py"], "replies": [{"text": full}]}),
            json!({"name": "planner", "match": ["# Planner"], "replies": [{"text": narrow}]}),
            json!({"name": "plan-review-2", "match": ["# Reviewer", "You are reviewing a plan", "\"greeter/__init__.py\"]"], "replies": [
                {"text": "{\"verdict\": \"approve\", \"findings\": []}"}]}),
            json!({"name": "plan-review-1", "match": ["# Reviewer", "You are reviewing a plan"], "replies": [
                call("nav_importers", json!({"path": "greeter/core.py"})),
                {"text": "{\"verdict\": \"revise\", \"findings\": [\"p1 is missing files: greeter/__init__.py (it imports greet)\"]}"}]}),
            json!({"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
                call("write_file", json!({"path": "greeter/core.py", "content": "def hello(name):\n    return \"Hello, \" + name + \"!\"\n"})),
                call("write_file", json!({"path": "greeter/__init__.py", "content": "from .core import hello\n"})),
                call("complete", json!({"summary": "renamed"}))]}),
        ],
        None,
    );
    let out = s.start();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let calls = tool_calls(&s.run_dir().join("logs/plan-review-1.log"));
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].0.as_str(), calls[0].1),
        ("nav_importers", true),
        "{calls:?}"
    );
    let reviewed: Vec<(bool, Vec<String>)> = s
        .journal()
        .into_iter()
        .filter_map(|e| match e {
            WorkflowEvent::PlanReviewed {
                approved, findings, ..
            } => Some((approved, findings)),
            _ => None,
        })
        .collect();
    assert_eq!(reviewed.len(), 2, "{reviewed:?}");
    assert!(!reviewed[0].0 && reviewed[0].1[0].contains("greeter/__init__.py"));
    assert!(reviewed[1].0, "{reviewed:?}");
    assert_eq!(
        s.show(&s.branch("p1"), "greeter/__init__.py"),
        "from .core import hello"
    );
}

#[test]
fn the_clarifier_reads_the_code_before_it_says_what_is_required() {
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            json!({"name": "clarifier", "match": ["# Clarifier", "read_file, list_dir, grep and the nav_* symbol tools"], "replies": [
                call("read_file", json!({"path": "greeter/core.py"})),
                {"text": "{\"outcome\": \"clear\", \"requirements\": [\"greet(name) keeps its greeting\"]}"}]}),
            writes("p1"),
        ],
        None,
    );
    let out = s.start_flags(&["--yes"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let calls = tool_calls(&s.run_dir().join("logs/clarifier.log"));
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!((calls[0].0.as_str(), calls[0].1), ("read_file", true));
    let requirements: Vec<String> = s
        .journal()
        .into_iter()
        .find_map(|e| match e {
            WorkflowEvent::Clarified { requirements, .. } => Some(requirements),
            _ => None,
        })
        .expect("clarified");
    assert_eq!(requirements, ["greet(name) keeps its greeting"]);
}

/// Returns the clarifier's script: its replies, turn by turn, as texts.
fn clarifier_says(replies: &[&str]) -> Value {
    let replies: Vec<Value> = replies.iter().map(|t| json!({"text": t})).collect();
    json!({"name": "clarifier", "match": ["# Clarifier"], "replies": replies})
}

#[test]
fn a_clarifier_answer_of_only_tool_names_is_asked_again_not_planned_on() {
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            clarifier_says(&[
                "read_file, list_dir, grep",
                "{\"outcome\": \"clear\", \"requirements\": [\"greet(name) keeps its greeting\"]}",
            ]),
            writes("p1"),
        ],
        None,
    );
    let out = s.start_flags(&["--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    let requirements: Vec<String> = s
        .journal()
        .into_iter()
        .find_map(|e| match e {
            WorkflowEvent::Clarified { requirements, .. } => Some(requirements),
            _ => None,
        })
        .expect("clarified");
    assert_eq!(requirements, ["greet(name) keeps its greeting"]);
    let log = std::fs::read_to_string(s.run_dir().join("logs/clarifier.log")).unwrap();
    assert!(
        log.contains("answer_rejected") && log.contains("only names tools"),
        "{log}"
    );
}

#[test]
fn a_clarifier_that_only_names_tools_twice_stops_the_run_before_planning_and_says_why() {
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            clarifier_says(&["read_file, list_dir, grep", "`read_file` and `grep`"]),
            writes("p1"),
        ],
        None,
    );
    let out = s.start_flags(&["--yes"]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("clarifier") && all.contains("only names tools") && all.contains("profile"),
        "{all}"
    );
    assert!(
        !s.journal()
            .iter()
            .any(|e| matches!(e, WorkflowEvent::Clarified { .. })),
        "nothing is built on the non-answer"
    );
    assert!(!s.run_dir().join("logs/planner-1.log").exists(), "{all}");
}

#[test]
fn without_a_terminal_start_prints_the_plan_and_the_command_that_approves_it() {
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            json!({"name": "plan-review", "match": ["# Reviewer", "You are reviewing a plan"], "replies": [
                {"text": "{\"verdict\": \"approve\", \"findings\": [\"p1 could say what p1.txt holds\"]}"}]}),
            writes("p1"),
        ],
        None,
    );
    let out = s.start_flags(&["--no-clarify"]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("Plan: 1 packet for \"Write notes\""), "{all}");
    assert!(
        all.contains("p1 — Write p1 (coder)\n      files: p1.txt"),
        "{all}"
    );
    assert!(
        all.contains("Plan review findings:\n  - p1 could say what p1.txt holds"),
        "{all}"
    );
    assert!(
        all.contains("Approve it with `git orchestra start --yes 'Write notes'`"),
        "{all}"
    );
    // The sample has no ORCHESTRA.md: start says where its context came from and how to keep it.
    assert!(
        all.contains("no ORCHESTRA.md here: the project context was built in memory; `git orchestra init` writes it"),
        "{all}"
    );
    assert!(!s.root.exists() || std::fs::read_dir(&s.root).unwrap().next().is_none());
    // The printed command approves the waiting plan and the run goes on.
    let out = s.start_flags(&["--yes", "--no-clarify"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(s.show(&s.branch("p1"), "p1.txt"), "p1");
}

#[test]
fn the_packet_reviewer_gets_the_project_context_with_the_change() {
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            // Approves only a review whose prompt carries the project's context.
            json!({"name": "informed", "match": ["# Reviewer", "# Review this change", "Tabs, never spaces"], "replies": [
                {"text": "{\"verdict\": \"approve\", \"findings\": []}"}]}),
            json!({"name": "uninformed", "match": ["# Reviewer", "# Review this change"], "replies": [
                {"text": "{\"verdict\": \"reject\", \"findings\": [{\"severity\": \"blocker\", \"category\": \"style\", \"file\": \"p1.txt\", \"line\": 1, \"evidence\": \"no project context\", \"suggestion\": \"x\"}]}"}]}),
            writes("p1"),
        ],
        None,
    );
    std::fs::write(
        s.repo.join("ORCHESTRA.md"),
        "# Project\n\nTabs, never spaces.\n",
    )
    .unwrap();
    git(&s.repo, &["add", "ORCHESTRA.md"]);
    git(&s.repo, &["commit", "-qm", "context"]);
    let out = s.start();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert_eq!(s.show(&s.branch("p1"), "p1.txt"), "p1");
}

#[test]
fn a_failed_planning_phase_is_retried_with_a_note_that_reaches_the_planner() {
    let s = setup(
        "unused",
        vec![
            json!({"name": "planner-noted", "match": ["# Planner", "only write p1.txt"], "replies": [
                {"text": plan(&[("p1", &["p1.txt"])])}]}),
            json!({"name": "planner-lost", "match": ["# Planner"], "replies": [{"text": "I cannot plan this."}]}),
            writes("p1"),
        ],
        None,
    );
    let first = s.start();
    let all = text(&first);
    assert!(!first.status.success(), "{all}");
    assert!(all.contains("did not produce a valid plan"), "{all}");
    let retry = s.orchestra(&["retry", "--note", "only write p1.txt"]);
    let all = text(&retry);
    assert!(retry.status.success(), "{all}");
    assert!(all.contains("from where it stopped"), "{all}");
    assert_eq!(s.show(&s.branch("p1"), "p1.txt"), "p1");
    assert!(
        s.journal()
            .iter()
            .any(|e| matches!(e, WorkflowEvent::Noted { note } if note == "only write p1.txt")),
        "the note is journaled"
    );
}

#[test]
fn start_shows_its_agents_tool_calls_and_model_turns_as_they_happen_and_quiet_hides_them() {
    let scripts = || vec![writes("p1")];
    let s = setup(&plan(&[("p1", &["p1.txt"])]), scripts(), None);
    let out = s.start();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("[p1] coder: write_file p1.txt ("), "{all}");
    assert!(all.contains("[p1] coder: model turn 1 ("), "{all}");
    // The run store has them too, for status and the web view.
    let run = StartJournal::runs(&s.repo.join(".git")).unwrap()[0].clone();
    let store = git_orchestra::store::Store::open(&s.repo.join(".git")).unwrap();
    let tools: Vec<String> = store
        .events_of_kind(&run, git_orchestra::store::EventKind::AgentToolCall)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            git_orchestra::store::Event::AgentToolCall { tool, .. } => Some(tool),
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["write_file", "complete"]);

    let quiet = setup(&plan(&[("p1", &["p1.txt"])]), scripts(), None);
    let out = quiet.start_flags(&["--yes", "--no-clarify", "--quiet"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("write_file ("), "{all}");
}

#[test]
fn at_the_prompt_a_plan_is_sent_back_with_feedback_and_the_revised_plan_runs() {
    let feedback = "Put the notes in notes.txt instead";
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            // Only a planner that was given the person's feedback plans notes.txt.
            json!({"name": "revised", "match": ["# Planner", feedback], "replies": [
                {"text": plan(&[("p2", &["notes.txt"])])}]}),
            json!({"name": "p2", "match": ["# Coder", "# Write p2"], "replies": [
                call("write_file", json!({"path": "notes.txt", "content": "notes\n"})),
                call("complete", json!({"summary": "wrote notes"}))]}),
        ],
        None,
    );
    // A person at a terminal (a pseudo-terminal from `script`) sends the first plan back with
    // one line of feedback, then approves the revised plan.
    let command = s
        .start_args(&["--no-clarify"])
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = std::process::Command::new("script");
    script
        .args([
            "-qec",
            &format!("'{}' {command}", env!("CARGO_BIN_EXE_git-orchestra")),
            "/dev/null",
        ])
        .current_dir(&s.repo)
        .envs([
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", s.model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = script.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("s\n{feedback}\na\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("[s]end back with feedback"), "{all}");
    assert!(
        all.contains("p2 — Write p2 (coder)"),
        "the revised plan is shown: {all}"
    );
    let sent_back: Vec<String> = s
        .journal()
        .into_iter()
        .filter_map(|e| match e {
            WorkflowEvent::PlanSentBack { feedback } => Some(feedback),
            _ => None,
        })
        .collect();
    assert_eq!(sent_back, [feedback]);
    assert_eq!(s.show(&s.branch("p2"), "notes.txt"), "notes");
    assert!(
        git(&s.repo, &["branch", "--list", &s.branch("p1")]).is_empty(),
        "the first plan never ran"
    );
}

#[test]
fn the_terminal_shows_tool_arguments_and_a_waiting_line_during_a_long_model_call() {
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![
            json!({"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
            // A model that takes its time before its first answer.
            {"text": "I will write p1.txt now.", "calls": [{"name": "write_file", "args": {"path": "p1.txt", "content": "p1\n"}}], "delay_ms": 16_500},
            call("run_command", json!({"command": "echo first; echo the-tail-line"})),
            call("complete", json!({"summary": "wrote p1"}))]}),
        ],
        None,
    );
    let out = s.start();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("[p1] coder: waiting for the model (turn 1): 15s"),
        "{all}"
    );
    assert!(all.contains("[p1] coder: write_file p1.txt ("), "{all}");
    // The transcript keeps the model's text and the call's arguments.
    let log = std::fs::read_dir(s.run_dir().join("p1"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("worker-")
        })
        .unwrap();
    let transcript = std::fs::read_to_string(&log).unwrap();
    assert!(
        transcript.contains("\"model_text\"") && transcript.contains("I will write p1.txt now."),
        "{transcript}"
    );
    assert!(
        transcript.contains("\"args\":{\"content\":\"p1\\n\",\"path\":\"p1.txt\"}"),
        "{transcript}"
    );
    // A command's output tail is kept with its call, for the web view's activity.
    let command = transcript
        .lines()
        .find(|l| l.contains("\"name\":\"run_command\""))
        .unwrap_or_else(|| panic!("no run_command in {transcript}"));
    assert!(
        command.contains("\"output_tail\"") && command.contains("the-tail-line"),
        "{command}"
    );
}

#[test]
fn start_reviews_packets_with_the_agent_cli_the_reviewer_role_names() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    // A reviewing CLI that approves, saying so in a file of its own home.
    std::fs::write(
        bin.path().join("rev"),
        "#!/bin/sh\ntouch \"$HOME/reviewed\"\necho 'Fine.'\necho '{\"verdict\": \"approve\", \"findings\": []}'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        bin.path().join("rev"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let config = format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n[roles.reviewer]\nagent = \"rev\"\n\n[agents.cli.rev]\ncommand = \"{}\"\noutput = \"text\"\n",
        bin.path().display(),
        bin.path().join("rev").display()
    );
    let s = setup(
        &plan(&[("p1", &["p1.txt"])]),
        vec![writes("p1")],
        Some(&config),
    );
    let out = s.start();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(s.show(&s.branch("p1"), "p1.txt"), "p1");
    let run = StartJournal::runs(&s.repo.join(".git")).unwrap()[0].clone();
    let store = git_orchestra::store::Store::open(&s.repo.join(".git")).unwrap();
    let reviewers: Vec<String> = store
        .events_of_kind(&run, git_orchestra::store::EventKind::PacketReviewed)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            git_orchestra::store::Event::PacketReviewed {
                reviewer,
                approved: true,
                ..
            } => Some(reviewer),
            _ => None,
        })
        .collect();
    assert!(
        reviewers.iter().any(|r| r == "reviewer:cli:rev"),
        "{reviewers:?}"
    );
    assert!(
        s.run_dir().join("p1/review-rev-tmp/home/reviewed").exists(),
        "the CLI ran in its own home beside the packet's logs"
    );
}
