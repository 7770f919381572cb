//! `[notify] webhook`: JSON posts a loopback receiver gets when a plan waits for approval, when
//! an agent waits for a person's answer and when a run ends, with Slack's `text` and Discord's `content`.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::{
    TestRepo, git, hermetic, orchestra, orchestra_with_env, packet, read_request, text,
};

/// A loopback receiver keeping each JSON body posted to it.
fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook/secret-part", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if let Some(req) = read_request(&stream) {
                assert_eq!(req.path, "/hook/secret-part");
                sink.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&req.body).unwrap_or(Value::Null));
            }
            use std::io::Write;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (url, got)
}

fn configure(repo: &std::path::Path, url: &str) {
    std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
    std::fs::write(
        repo.join(".orchestra/config.toml"),
        format!("[notify]\nwebhook = \"{url}\"\n"),
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "notify"]);
    crate::support::trust(repo);
}

#[test]
fn a_finished_run_and_a_plan_waiting_for_approval_are_posted_to_the_webhook() {
    let (url, got) = receiver();
    let repo = TestRepo::new();
    configure(&repo.path, &url);
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"notes\"\n\n{}",
            packet("p1", "\"notes.txt\"", "", "")
        ),
    );
    let out = repo.run_plan(&plan, "echo notes > notes.txt", &[]);
    assert!(out.status.success(), "{}", text(&out));
    let posts = got.lock().unwrap().clone();
    let ended: Vec<&Value> = posts.iter().filter(|p| p["event"] == "run_ended").collect();
    assert_eq!(ended.len(), 1, "{posts:?}");
    let run = crate::support::run_id(&repo.path);
    assert_eq!(ended[0]["run"], json!(run));
    let message = ended[0]["message"].as_str().unwrap();
    assert!(message.contains("completed"), "{message}");
    assert_eq!(
        ended[0]["text"], ended[0]["content"],
        "Slack's and Discord's field"
    );
    assert_eq!(ended[0]["text"].as_str(), Some(message));

    // `start` without --yes and without a terminal stops to wait for approval: posted once.
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let sample = git_orchestra::demo::create_sample(&tmp.path().join("greeter")).unwrap();
    configure(&sample, &url);
    let scripts = json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text":
            "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"d\"\nfiles = [\"NOTES.md\"]\n```"}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let root = tmp.path().join("wt");
    let out = orchestra_with_env(
        &sample,
        &[
            "start",
            "--no-clarify",
            "--worktree-root",
            root.to_str().unwrap(),
            "Write notes",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", &model.url),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("needs the plan approved"),
        "{}",
        text(&out)
    );
    let posts = got.lock().unwrap().clone();
    let waiting: Vec<&Value> = posts
        .iter()
        .filter(|p| p["event"] == "plan_awaiting_approval")
        .collect();
    assert_eq!(waiting.len(), 1, "{posts:?}");
    assert!(
        waiting[0]["text"]
            .as_str()
            .unwrap()
            .contains("waits for approval")
    );
    // The webhook's address is a secret: nothing printed names it.
    assert!(!text(&out).contains("secret-part"));
    let _ = orchestra(&sample, &["status"]);
}

#[test]
fn an_agent_waiting_for_a_persons_answer_is_posted_once_and_the_run_goes_on_when_answered() {
    use std::time::{Duration, Instant};
    let (url, got) = receiver();
    let repo = TestRepo::new();
    configure(&repo.path, &url);
    let question = "Which operand order should add() use?";
    let scripts = json!([
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "ask", "args": {"question": question}}]},
            {"calls": [{"name": "edit_file", "args": {"path": "src/lib.rs", "search": "a + b", "replace": "b + a"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "swapped"}}]}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let child = crate::support::orchestra_command(
        &repo.path,
        &["agent", "coder", "Swap the operands in add()"],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &model.url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let waiting = |posts: &[Value]| -> Vec<Value> {
        posts
            .iter()
            .filter(|p| p["event"] == "waiting_for_person")
            .cloned()
            .collect()
    };
    let began = Instant::now();
    let posted = loop {
        let found = waiting(&got.lock().unwrap());
        if let Some(first) = found.first() {
            break first.clone();
        }
        assert!(
            began.elapsed() < Duration::from_secs(90),
            "no post for the waiting agent: {:?}",
            got.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(posted["packet"], "coder", "{posted}");
    assert!(
        posted["text"].as_str().unwrap().contains(question),
        "{posted}"
    );
    // Answered on the page, as a person notified would.
    let ui = crate::web::view::ui(&repo.path);
    let run = crate::support::run_id(&repo.path);
    let (status, answer) = crate::web::steering::post_as_page(
        &ui.url,
        &format!("/api/run/{run}/answer"),
        &json!({"packet": "coder", "text": "put b first"}).to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let posts = got.lock().unwrap().clone();
    assert_eq!(waiting(&posts).len(), 1, "posted once: {posts:?}");
    assert!(posts.iter().any(|p| p["event"] == "run_ended"), "{posts:?}");
}

#[test]
fn a_run_paused_at_a_soft_budget_threshold_is_posted_as_a_question() {
    let (url, got) = receiver();
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let sample = git_orchestra::demo::create_sample(&tmp.path().join("greeter")).unwrap();
    std::fs::create_dir_all(sample.join(".orchestra")).unwrap();
    std::fs::write(
        sample.join(".orchestra/config.toml"),
        format!(
            "[notify]\nwebhook = \"{url}\"\n[prices.scripted]\ninput_per_mtok = 1.0\n\
             output_per_mtok = 2.0\n[budget]\nask_at_cost = 0.02\n"
        ),
    )
    .unwrap();
    git(&sample, &["add", "-A"]);
    git(&sample, &["commit", "-qm", "notify and budget"]);
    crate::support::trust(&sample);
    let model = git_orchestra::demo::serve().unwrap();
    let root = tmp.path().join("wt");
    let out = orchestra_with_env(
        &sample,
        &[
            "start",
            "--yes",
            "--worktree-root",
            root.to_str().unwrap(),
            git_orchestra::demo::OBJECTIVE,
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", &model.url),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let posts = got.lock().unwrap().clone();
    let asked: Vec<&Value> = posts
        .iter()
        .filter(|p| p["event"] == "waiting_for_person" && p["packet"] == "budget")
        .collect();
    assert_eq!(asked.len(), 1, "{posts:?}");
    let message = asked[0]["text"].as_str().unwrap();
    assert!(
        message.contains("reached the soft threshold of 0.0200 (`[budget] ask_at_cost`)"),
        "{message}"
    );
}
