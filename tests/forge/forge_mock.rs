//! A fake forge on a loopback port: a small in-memory GitHub (or Gitea, or GitLab) that keeps pull
//! requests, labels and comments, records every request in order, and can be told to answer
//! the next requests with rate-limit errors.
//!
//! Stateful rather than scripted because what is tested is behaviour across runs: a second
//! publication must find what the first created, and a merge done "on the forge" must be seen
//! by the next one.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

#[path = "forge_mock_forges.rs"]
mod forges;
use forges::{gitea_landing, gitlab_landing, note, user_id};

/// Which API the fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    GitHub,
    Gitea,
    GitLab,
}

/// One request received.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub auth: Option<String>,
    pub body: Value,
    pub at: Instant,
    /// What the observer callback returned when the request arrived.
    pub observed: String,
    /// The `If-None-Match` it carried.
    pub if_none_match: Option<String>,
    /// The status it was answered with.
    pub status: u16,
}

type Observer = Box<dyn Fn() -> String + Send>;

/// A CI run on a commit: given its sha, returns the conclusion and the log.
type Ci = Arc<dyn Fn(&str) -> (String, String) + Send + Sync>;

/// A canned answer: status, headers, body.
type Canned = (u16, Vec<(String, String)>, Value);

struct State {
    flavour: Flavour,
    pulls: Vec<Value>,
    log: Vec<Req>,
    fail_next: VecDeque<Canned>,
    observer: Option<Observer>,
    /// Check runs (`head_sha` says of which commit), newest last.
    check_runs: Vec<Value>,
    /// Commit statuses (`sha` says of which commit).
    statuses: Vec<Value>,
    /// What re-running check run `id` concludes: (id, conclusion, output text).
    reruns: Vec<(u64, String, String)>,
    /// Reviews (`pr` says of which pull request).
    reviews: Vec<Value>,
    /// Inline review comments (`pr` says of which pull request).
    review_comments: Vec<Value>,
    /// Conversation comments (`pr` says of which pull request).
    issue_comments: Vec<Value>,
    /// Which of merge, squash, rebase the repository allows.
    allowed: [bool; 3],
    /// GitLab's CI jobs (`sha` says of which commit's pipeline, `pipeline` which).
    jobs: Vec<Value>,
    /// GitLab's approvals: (merge request, login).
    approvals: Vec<(u64, String)>,
    /// GitLab's reviewers and their verdicts (`pr` says of which merge request).
    mr_reviewers: Vec<Value>,
    next_id: u64,
    /// Checks every commit without check runs gets once it is first asked about: (name,
    /// conclusion, output text).
    new_heads: Vec<(String, String, String)>,
    /// CI run on every commit without check runs once it is first asked about, and again
    /// when its check is re-run: (check name, the run).
    ci: Vec<(String, Ci)>,
    /// The logs of Actions jobs: (job id, plain text).
    job_logs: Vec<(u64, String)>,
    /// The bare repository the pull requests' branches are pushed to, when the fake follows
    /// it: heads are read from it and merges are made in it.
    bare: Option<std::path::PathBuf>,
    /// GitLab's project settings: merge trains enabled, merges only once the pipeline succeeds.
    gitlab_auto: [bool; 2],
    /// GitLab's merge train: the merge requests on it, first to merge first.
    train: Vec<u64>,
    /// Gitea Actions runs: `run` and its `jobs` (`id`, `name`).
    actions_runs: Vec<Value>,
}

/// A running fake forge; its thread ends with the test process.
pub struct FakeForge {
    /// The API base URL to configure (`orchestra.forge.apiUrl`).
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeForge {
    pub fn start(flavour: Flavour) -> FakeForge {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let url = match flavour {
            Flavour::GitHub => format!("http://{addr}"),
            Flavour::Gitea => format!("http://{addr}/api/v1"),
            Flavour::GitLab => format!("http://{addr}/api/v4"),
        };
        let state = Arc::new(Mutex::new(State {
            flavour,
            pulls: Vec::new(),
            log: Vec::new(),
            fail_next: VecDeque::new(),
            observer: None,
            check_runs: Vec::new(),
            statuses: Vec::new(),
            reruns: Vec::new(),
            reviews: Vec::new(),
            review_comments: Vec::new(),
            issue_comments: Vec::new(),
            allowed: [true, true, true],
            jobs: Vec::new(),
            approvals: Vec::new(),
            mr_reviewers: Vec::new(),
            next_id: 1000,
            new_heads: Vec::new(),
            ci: Vec::new(),
            job_logs: Vec::new(),
            bare: None,
            gitlab_auto: [false, false],
            train: Vec::new(),
            actions_runs: Vec::new(),
        }));
        let s = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                // One request at a time, like a forge seen through one client.
                serve(stream, &s);
            }
        });
        FakeForge { url, state }
    }

    pub fn requests(&self) -> Vec<Req> {
        self.state.lock().unwrap().log.clone()
    }

    /// Returns (method, path without query) of every request, in order.
    pub fn calls(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path.split('?').next().unwrap()))
            .collect()
    }

    /// Returns how many reads were answered `304 Not Modified`.
    pub fn not_modified(&self) -> usize {
        self.requests().iter().filter(|r| r.status == 304).count()
    }

    pub fn pulls(&self) -> Vec<Value> {
        self.state.lock().unwrap().pulls.clone()
    }

    /// Makes the fake follow the git repository `bare`: a pull request's head is its branch
    /// there (what is pushed there is its new head at the next request), whether it merges
    /// cleanly is computed, and merging writes the base branch there (`merge` as a merge
    /// commit; `squash` and `rebase` as one new commit, so the head's commits are not in the
    /// base).
    pub fn follow_git(&self, bare: &std::path::Path) {
        self.state.lock().unwrap().bare = Some(bare.to_path_buf());
    }

    /// Merges pull request `number` with `method` on the followed repository, as a person
    /// clicking "squash and merge" would; panics when it does not merge.
    pub fn merge_as_person(&self, number: u64, method: &str) {
        let mut s = self.state.lock().unwrap();
        let (status, answer) = merge_pull(&mut s, number, method, &Value::Null);
        assert_eq!(status, 200, "{answer}");
    }

    /// Marks pull request `number` merged, as a user clicking "merge" would.
    pub fn merge(&self, number: u64) {
        let mut s = self.state.lock().unwrap();
        let gitlab = s.flavour == Flavour::GitLab;
        let pr = s
            .pulls
            .iter_mut()
            .find(|p| p["number"] == number || p["iid"] == number)
            .unwrap();
        pr["state"] = json!(if gitlab { "merged" } else { "closed" });
        pr["merged"] = json!(true);
        pr["merged_at"] = json!("2026-01-02T00:00:00Z");
    }

    /// Adds a completed (or, with conclusion `None`, running) check run on commit `sha` and
    /// returns its id.
    pub fn add_check_run(
        &self,
        sha: &str,
        name: &str,
        conclusion: Option<&str>,
        text: &str,
    ) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        s.check_runs.push(json!({
            "id": id, "name": name, "head_sha": sha,
            "status": if conclusion.is_some() { "completed" } else { "in_progress" },
            "conclusion": conclusion,
            "output": {"title": format!("{name} {}", conclusion.unwrap_or("running")), "summary": "", "text": text},
        }));
        id
    }

    /// Scripts what re-running check run `id` concludes: a new run of the same name.
    pub fn on_rerun(&self, id: u64, conclusion: &str, text: &str) {
        self.state
            .lock()
            .unwrap()
            .reruns
            .push((id, conclusion.to_string(), text.to_string()));
    }

    /// Adds a commit status (`success`, `failure`, `error`, `pending`) on commit `sha`.
    pub fn add_status(&self, sha: &str, context: &str, state: &str, description: &str) {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        s.statuses.push(
            json!({"id": id, "sha": sha, "context": context, "state": state,
            "description": description, "target_url": format!("https://ci.example/{id}")}),
        );
    }

    /// Adds the commit status a Gitea Actions job reports on commit `sha`: its `target_url`
    /// links to the job of a new run (`…/actions/runs/<run>/jobs/0`), whose log the API serves
    /// when `log` is given (an older Gitea answers 404). Returns the job's id.
    pub fn add_actions_status(
        &self,
        sha: &str,
        context: &str,
        state: &str,
        description: &str,
        log: Option<&str>,
    ) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.next_id += 2;
        let (run, job) = (s.next_id - 1, s.next_id);
        // "ci / test (push)": workflow `ci`, job `test`.
        let name = context
            .split(" / ")
            .last()
            .unwrap_or(context)
            .split(" (")
            .next()
            .unwrap_or(context)
            .to_string();
        s.actions_runs
            .push(json!({"run": run, "jobs": [{"id": job, "name": name, "status": "completed"}]}));
        if let Some(log) = log {
            s.job_logs.push((job, log.to_string()));
        }
        s.statuses
            .push(json!({"id": job + 100_000, "sha": sha, "context": context,
            "state": state, "description": description,
            "target_url": format!("http://gitea.example/acme/widgets/actions/runs/{run}/jobs/0")}));
        job
    }

    /// Adds a review by `login` (`APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`) to pull request
    /// `number`.
    pub fn add_review(&self, number: u64, login: &str, state: &str, body: &str) {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        let mut review = json!({"id": id, "pr": number, "user": {"login": login},
            "author_association": association(login), "state": state, "body": body});
        if s.flavour == Flavour::Gitea {
            // Gitea says nothing of the author's relation; it counts inline comments.
            review = json!({"id": id, "pr": number, "user": {"login": login}, "state": state,
                "body": body, "dismissed": false, "stale": false, "comments_count": 0});
        }
        s.reviews.push(review);
    }

    /// Adds an inline comment by `login` on `path`:`line` of pull request `number`'s diff.
    pub fn add_review_comment(&self, number: u64, login: &str, body: &str, path: &str, line: u64) {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        if s.flavour == Flavour::Gitea {
            // On Gitea an inline comment belongs to a review, and `position` is its line.
            s.next_id += 1;
            let review = s.next_id;
            s.reviews
                .push(json!({"id": review, "pr": number, "user": {"login": login},
                "state": "COMMENT", "body": "", "dismissed": false, "stale": false,
                "comments_count": 1}));
            s.review_comments
                .push(json!({"id": id, "pr": number, "user": {"login": login},
                "body": body, "path": path, "position": line, "original_position": 0,
                "pull_request_review_id": review}));
            return;
        }
        s.review_comments
            .push(json!({"id": id, "pr": number, "user": {"login": login},
            "body": body, "path": path, "line": line}));
    }

    /// Adds a conversation comment by `login` to pull request `number`.
    pub fn add_comment(&self, number: u64, login: &str, body: &str) {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        let mut comment = json!({"id": id, "pr": number, "user": {"login": login},
            "author_association": association(login), "body": body});
        if s.flavour == Flavour::Gitea {
            comment = json!({"id": id, "pr": number, "user": {"login": login}, "body": body});
        }
        if s.flavour == Flavour::GitLab {
            comment = note(id, number, login, body, None);
        }
        s.issue_comments.push(comment);
    }

    /// Adds a GitLab CI job `name` (`success`, `failed`, `running`, …) to the pipeline of
    /// commit `sha` with log `trace`, and returns its id.
    pub fn add_job(&self, sha: &str, name: &str, status: &str, trace: &str) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        let pipeline = s
            .jobs
            .iter()
            .find(|j| j["sha"] == sha)
            .map(|j| j["pipeline"].clone())
            .unwrap_or(json!(id + 500_000));
        s.jobs
            .push(json!({"id": id, "name": name, "status": status, "sha": sha,
            "pipeline": pipeline, "trace": trace, "allow_failure": false, "retried": false}));
        id
    }

    /// Has `login` approve GitLab merge request `iid`.
    pub fn add_approval(&self, iid: u64, login: &str) {
        self.state
            .lock()
            .unwrap()
            .approvals
            .push((iid, login.to_string()));
    }

    /// Sets `login`'s reviewer verdict on GitLab merge request `iid` (`requested_changes`,
    /// `approved`, `reviewed`, `unreviewed`).
    pub fn set_reviewer(&self, iid: u64, login: &str, state: &str) {
        let mut s = self.state.lock().unwrap();
        s.mr_reviewers
            .retain(|r| !(r["pr"] == iid && r["user"]["username"] == login));
        s.mr_reviewers.push(json!({"pr": iid, "state": state,
            "user": {"id": user_id(login), "username": login}}));
    }

    /// Adds a GitLab note by `login` to merge request `iid`, on `path`:`line` of the diff when
    /// `at` says so.
    pub fn add_note(&self, iid: u64, login: &str, body: &str, at: Option<(&str, u64)>) {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        s.issue_comments.push(note(id, iid, login, body, at));
    }

    /// Returns the inline review comments (and replies to them) of pull request `number`,
    /// oldest first.
    pub fn review_comments_of(&self, number: u64) -> Vec<Value> {
        let s = self.state.lock().unwrap();
        s.review_comments
            .iter()
            .filter(|c| c["pr"] == number)
            .cloned()
            .collect()
    }

    /// Returns the conversation comments of pull request `number`, oldest first.
    pub fn comments_of(&self, number: u64) -> Vec<Value> {
        let s = self.state.lock().unwrap();
        s.issue_comments
            .iter()
            .filter(|c| c["pr"] == number)
            .cloned()
            .collect()
    }

    /// Sets whether the GitLab project uses merge trains and whether it merges only once the
    /// pipeline succeeds. A merge request put on the train or set to merge when its pipeline
    /// succeeds is merged by the fake at the second look at it after that, as GitLab would once
    /// the pipeline passed.
    pub fn gitlab_auto_merge(&self, trains: bool, pipeline_must_succeed: bool) {
        self.state.lock().unwrap().gitlab_auto = [trains, pipeline_must_succeed];
    }

    /// Makes GitLab hold merge request `iid` (`held`) or let it go: while held, one on the
    /// merge train or set to merge when its pipeline succeeds stays open however often it is
    /// looked at, as while its pipeline runs.
    pub fn hold_auto_merge(&self, iid: u64, held: bool) {
        let mut s = self.state.lock().unwrap();
        let mr = s.pulls.iter_mut().find(|p| p["iid"] == iid).unwrap();
        mr["auto_merge_held"] = json!(held);
    }

    /// Returns the merge requests on the GitLab merge train, first to merge first.
    pub fn train(&self) -> Vec<u64> {
        self.state.lock().unwrap().train.clone()
    }

    /// Sets which of merge, squash and rebase the repository allows.
    pub fn allow_methods(&self, merge: bool, squash: bool, rebase: bool) {
        self.state.lock().unwrap().allowed = [merge, squash, rebase];
    }

    /// Sets pull request `number`'s head commit and whether it merges cleanly.
    pub fn set_head(&self, number: u64, sha: &str, mergeable: Option<bool>) {
        let mut s = self.state.lock().unwrap();
        if s.flavour == Flavour::GitLab {
            let mr = s.pulls.iter_mut().find(|p| p["iid"] == number).unwrap();
            mr["sha"] = json!(sha);
            mr["has_conflicts"] = json!(mergeable == Some(false));
            mr["detailed_merge_status"] = json!(match mergeable {
                Some(true) => "mergeable",
                Some(false) => "conflict",
                None => "checking",
            });
            return;
        }
        let pr = s.pulls.iter_mut().find(|p| p["number"] == number).unwrap();
        pr["head"]["sha"] = json!(sha);
        pr["mergeable"] = json!(mergeable);
    }

    /// Gives every commit without check runs, when first asked about, a completed check run
    /// `name` that concluded `conclusion` with output `text` (CI running on each new head).
    pub fn on_new_heads(&self, name: &str, conclusion: &str, text: &str) {
        self.state.lock().unwrap().new_heads.push((
            name.to_string(),
            conclusion.to_string(),
            text.to_string(),
        ));
    }

    /// Runs `ci` on every commit without check runs when it is first asked about, and again
    /// when its check is re-run: a completed check run `name` with the conclusion and log it
    /// returns (real CI, such as `act`, on each new head).
    pub fn on_new_heads_run(
        &self,
        name: &str,
        ci: impl Fn(&str) -> (String, String) + Send + Sync + 'static,
    ) {
        self.state
            .lock()
            .unwrap()
            .ci
            .push((name.to_string(), Arc::new(ci)));
    }

    /// Sets the log of the Actions job behind check run `id`: its logs endpoint redirects to a
    /// download of `text`, as GitHub's does.
    pub fn set_job_log(&self, id: u64, text: &str) {
        self.state
            .lock()
            .unwrap()
            .job_logs
            .push((id, text.to_string()));
    }

    /// Closes pull request `number` without merging it, as a person would.
    pub fn close(&self, number: u64) {
        let mut s = self.state.lock().unwrap();
        let pr = s.pulls.iter_mut().find(|p| p["number"] == number).unwrap();
        pr["state"] = json!("closed");
    }

    /// Answers the next request with `status`, `headers` and `body` instead of serving it.
    pub fn fail_next(&self, status: u16, headers: &[(&str, &str)], body: Value) {
        self.state.lock().unwrap().fail_next.push_back((
            status,
            headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body,
        ));
    }

    /// Calls `f` on every request and records what it returns (e.g. which branches a remote
    /// has at that moment).
    pub fn observe(&self, f: impl Fn() -> String + Send + 'static) {
        self.state.lock().unwrap().observer = Some(Box::new(f));
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let Some(request) = crate::support::read_request(&stream) else {
        return;
    };
    let auth = request.header("authorization").map(str::to_string);
    let if_none_match = request.header("if-none-match").map(str::to_string);
    let (method, path) = (request.method, request.path);
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let mut s = state.lock().unwrap();
    let observed = s.observer.as_ref().map(|f| f()).unwrap_or_default();
    s.log.push(Req {
        method: method.clone(),
        path: path.clone(),
        auth,
        body: body.clone(),
        at: Instant::now(),
        observed,
        if_none_match: if_none_match.clone(),
        status: 0,
    });
    follow_heads(&mut s);
    if let Some((status, headers, text)) = job_log(&s, &method, &path) {
        drop(s);
        let _ = respond_raw(stream, status, &headers, &text);
        return;
    }
    let (status, headers, reply) = match s.fail_next.pop_front() {
        Some(f) => f,
        None => {
            let (status, reply) = route(&mut s, &method, &path, &body);
            conditional(&method, status, reply, if_none_match.as_deref())
        }
    };
    if let Some(last) = s.log.last_mut() {
        last.status = status;
    }
    drop(s);
    let _ = respond(stream, status, &headers, &reply);
}

/// Sets each open pull request's head to what its branch points at in the followed repository,
/// on every request: a push shows as the new head at once, as on a real forge.
fn follow_heads(s: &mut State) {
    let Some(remote) = s.bare.clone() else {
        return;
    };
    for p in s.pulls.iter_mut().filter(|p| p["state"] == "open") {
        let Some(branch) = p["head"]["ref"].as_str() else {
            continue;
        };
        let out = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&remote)
            .args([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ])
            .output()
            .unwrap();
        let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !sha.is_empty() {
            p["head"]["sha"] = json!(sha);
        }
    }
}

fn route(s: &mut State, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let prefix = match s.flavour {
        Flavour::GitHub => "",
        Flavour::Gitea => "/api/v1",
        Flavour::GitLab => "/api/v4",
    };
    let Some(rest) = path.strip_prefix(prefix) else {
        return (404, json!({"message": "not found"}));
    };
    let (route, query) = rest.split_once('?').unwrap_or((rest, ""));
    let segs: Vec<&str> = route.trim_matches('/').split('/').collect();
    match (method, segs.as_slice()) {
        ("GET", ["users"]) => (
            200,
            json!([{"id": 42, "username": query_param(query, "username")}]),
        ),
        (_, ["projects", ..]) => {
            gitlab(s, method, &segs, query, body).unwrap_or_else(|| no_route(method, path))
        }
        ("POST", ["graphql"]) => {
            let id = body["variables"]["id"].as_str().unwrap_or("");
            let draft = body["query"]
                .as_str()
                .unwrap_or("")
                .contains("convertPullRequestToDraft");
            match s.pulls.iter_mut().find(|p| p["node_id"] == id) {
                Some(p) => {
                    p["draft"] = json!(draft);
                    (
                        200,
                        json!({"data": {"pr": {"pullRequest": {"isDraft": draft}}}}),
                    )
                }
                None => (200, json!({"errors": [{"message": "no such node"}]})),
            }
        }
        (_, ["repos", ..]) => {
            github(s, method, &segs, query, body).unwrap_or_else(|| no_route(method, path))
        }
        _ => no_route(method, path),
    }
}

/// Returns the decoded value of parameter `k` of a query string.
fn query_param(query: &str, k: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(n, _)| *n == k)
        .map(|(_, v)| decode(v))
}

/// The answer to a request no route serves.
fn no_route(method: &str, path: &str) -> (u16, Value) {
    (
        404,
        json!({"message": format!("fake forge: no route for {method} {path}")}),
    )
}

/// Serves GitLab's merge requests and their notes; `None` for a request it has no route for.
fn gitlab(
    s: &mut State,
    method: &str,
    segs: &[&str],
    query: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    let param = |k: &str| query_param(query, k);
    let by_iid = |p: &&mut Value, n: &str| p["iid"].as_u64() == n.parse::<u64>().ok();
    Some(match (method, segs) {
        ("GET", ["projects", _, "merge_requests"]) => {
            let head = param("source_branch");
            let list: Vec<Value> = s
                .pulls
                .iter()
                .filter(|p| {
                    head.as_ref()
                        .is_none_or(|h| p["source_branch"] == h.as_str())
                })
                .cloned()
                .collect();
            (200, Value::Array(list))
        }
        ("POST", ["projects", _, "merge_requests"]) => {
            let iid = s.pulls.len() as u64 + 1;
            let mr = json!({
                "iid": iid,
                "web_url": format!("https://gitlab.example/acme/widgets/-/merge_requests/{iid}"),
                "state": "opened",
                "draft": body["title"].as_str().unwrap_or("").starts_with("Draft:"),
                "title": body["title"],
                "description": body["description"],
                "source_branch": body["source_branch"],
                "target_branch": body["target_branch"],
                "labels": [],
                "reviewer_ids": [],
                "notes": [],
                "sha": "0".repeat(40),
                "has_conflicts": false,
                "detailed_merge_status": "mergeable",
            });
            s.pulls.push(mr.clone());
            (201, mr)
        }
        ("PUT", ["projects", _, "merge_requests", n]) => {
            let Some(p) = s.pulls.iter_mut().find(|p| by_iid(p, n)) else {
                return Some((404, json!({"message": "no such merge request"})));
            };
            for k in ["title", "description", "target_branch", "reviewer_ids"] {
                if !body[k].is_null() {
                    p[k] = body[k].clone();
                }
            }
            if let Some(l) = body["add_labels"].as_str() {
                for label in l.split(',') {
                    p["labels"].as_array_mut().unwrap().push(json!(label));
                }
            }
            p["draft"] = json!(p["title"].as_str().unwrap_or("").starts_with("Draft:"));
            (200, p.clone())
        }
        ("POST", ["projects", _, "merge_requests", n, "notes"]) => {
            let Some(p) = s.pulls.iter_mut().find(|p| by_iid(p, n)) else {
                return Some((404, json!({"message": "no such merge request"})));
            };
            p["notes"]
                .as_array_mut()
                .unwrap()
                .push(body["body"].clone());
            s.next_id += 1;
            let id = s.next_id;
            let iid: u64 = n.parse().unwrap_or(0);
            let c = note(
                id,
                iid,
                "orchestra-bot",
                body["body"].as_str().unwrap_or(""),
                None,
            );
            s.issue_comments.push(c.clone());
            (201, c)
        }
        _ => return gitlab_landing(s, method, segs, query, body),
    })
}

/// Serves GitHub's (and Gitea's) pull requests, their labels, comments and reviewers; `None`
/// for a request it has no route for.
fn github(
    s: &mut State,
    method: &str,
    segs: &[&str],
    query: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    Some(match (method, segs) {
        ("GET", ["repos", _, _, "pulls"]) => {
            let params: Vec<(String, String)> = query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), decode(v)))
                .collect();
            let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            if get("page").is_some_and(|p| p != "1") {
                return Some((200, json!([])));
            }
            let head = get("head").map(|h| h.split_once(':').map(|x| x.1.to_string()).unwrap_or(h));
            let list: Vec<Value> = s
                .pulls
                .iter()
                .filter(|p| head.as_ref().is_none_or(|h| p["head"]["ref"] == h.as_str()))
                .cloned()
                .collect();
            (200, Value::Array(list))
        }
        ("POST", ["repos", _, _, "pulls"]) => {
            let number = s.pulls.len() as u64 + 1;
            let pr = json!({
                "number": number,
                "html_url": format!("https://forge.example/acme/widgets/pull/{number}"),
                "node_id": format!("PR_{number}"),
                "state": "open",
                "merged": false,
                "merged_at": null,
                "draft": body["draft"].as_bool().unwrap_or(false),
                "title": body["title"],
                "body": body["body"],
                "head": {"ref": body["head"], "sha": "0".repeat(40)},
                "base": {"ref": body["base"]},
                "mergeable": true,
                "labels": [],
                "comments": [],
            });
            s.pulls.push(pr.clone());
            (201, pr)
        }
        ("PATCH", ["repos", _, _, "pulls", n]) => {
            let Some(p) = s
                .pulls
                .iter_mut()
                .find(|p| p["number"].as_u64() == n.parse::<u64>().ok())
            else {
                return Some((404, json!({"message": "no such pull request"})));
            };
            for k in ["title", "body"] {
                if !body[k].is_null() {
                    p[k] = body[k].clone();
                }
            }
            if !body["base"].is_null() {
                p["base"]["ref"] = body["base"].clone();
            }
            (200, p.clone())
        }
        ("POST", ["repos", _, _, "issues", n, "labels"]) => {
            let Some(p) = s
                .pulls
                .iter_mut()
                .find(|p| p["number"].as_u64() == n.parse::<u64>().ok())
            else {
                return Some((404, json!({"message": "no such issue"})));
            };
            for l in body["labels"].as_array().cloned().unwrap_or_default() {
                p["labels"].as_array_mut().unwrap().push(l);
            }
            (200, p["labels"].clone())
        }
        ("POST", ["repos", _, _, "issues", n, "comments"]) => {
            let Some(p) = s
                .pulls
                .iter_mut()
                .find(|p| p["number"].as_u64() == n.parse::<u64>().ok())
            else {
                return Some((404, json!({"message": "no such issue"})));
            };
            p["comments"]
                .as_array_mut()
                .unwrap()
                .push(body["body"].clone());
            s.next_id += 1;
            let id = s.next_id;
            let number: u64 = n.parse().unwrap();
            let c = json!({"id": id, "pr": number, "user": {"login": "orchestra-bot"},
                "body": body["body"]});
            s.issue_comments.push(c.clone());
            (201, c)
        }
        ("POST", ["repos", _, _, "pulls", _, "requested_reviewers"]) => (201, json!({})),
        _ if s.flavour == Flavour::Gitea => return gitea_landing(s, method, segs, body),
        _ => return landing(s, method, segs, body),
    })
}

/// Returns how the fake relates `login` to the repository: `mallory` is an outsider, everyone
/// else a collaborator.
fn association(login: &str) -> &'static str {
    if login == "mallory" {
        "NONE"
    } else {
        "COLLABORATOR"
    }
}

/// Returns the items of `list` whose `key` is `value`.
fn of(list: &[Value], key: &str, value: &Value) -> Value {
    Value::Array(list.iter().filter(|v| &v[key] == value).cloned().collect())
}

/// Serves GitHub's landing calls: a pull request, its checks, reviews and comments, merging,
/// re-running a job and editing a comment; `None` for a request it has no route for.
fn landing(s: &mut State, method: &str, segs: &[&str], body: &Value) -> Option<(u16, Value)> {
    let num = |n: &str| json!(n.parse::<u64>().unwrap_or(0));
    Some(match (method, segs) {
        ("GET", ["repos", _, _]) => (
            200,
            json!({"allow_merge_commit": s.allowed[0], "allow_squash_merge": s.allowed[1],
                "allow_rebase_merge": s.allowed[2]}),
        ),
        ("GET", ["repos", _, _, "pulls", n]) => {
            let bare = s.bare.clone();
            match s.pulls.iter_mut().find(|p| p["number"] == num(n)) {
                Some(p) => {
                    if let Some(bare) = bare {
                        follow(&bare, p);
                    }
                    (200, p.clone())
                }
                None => (404, json!({"message": "Not Found"})),
            }
        }
        ("GET", ["repos", _, _, "commits", sha, "check-runs"]) => check_runs(s, sha),
        ("GET", ["repos", _, _, "commits", sha, "status"]) => {
            // The combined status keeps the newest status of each context.
            let mut latest: Vec<Value> = Vec::new();
            for st in s.statuses.iter().filter(|v| v["sha"] == *sha) {
                latest.retain(|l| l["context"] != st["context"]);
                latest.push(st.clone());
            }
            (200, json!({"state": "pending", "statuses": latest}))
        }
        ("GET", ["repos", _, _, "pulls", n, "reviews"]) => (200, of(&s.reviews, "pr", &num(n))),
        ("GET", ["repos", _, _, "pulls", n, "comments"]) => {
            (200, of(&s.review_comments, "pr", &num(n)))
        }
        ("GET", ["repos", _, _, "issues", n, "comments"]) => {
            (200, of(&s.issue_comments, "pr", &num(n)))
        }
        ("PATCH", ["repos", _, _, "issues", "comments", id]) => {
            match s.issue_comments.iter_mut().find(|c| c["id"] == num(id)) {
                Some(c) => {
                    c["body"] = body["body"].clone();
                    (200, c.clone())
                }
                None => (404, json!({"message": "Not Found"})),
            }
        }
        ("POST", ["repos", _, _, "actions", "jobs", id, "rerun"]) => {
            let id: u64 = id.parse().unwrap_or(0);
            let Some(old) = s.check_runs.iter().find(|c| c["id"] == id).cloned() else {
                return Some((404, json!({"message": "Not Found"})));
            };
            let ci =
                s.ci.iter()
                    .find(|(name, _)| old["name"] == name.as_str())
                    .map(|(_, ci)| ci.clone());
            let (conclusion, text) = match (s.reruns.iter().position(|r| r.0 == id), ci) {
                (Some(at), _) => {
                    let (_, conclusion, text) = s.reruns.remove(at);
                    (conclusion, text)
                }
                (None, Some(ci)) => ci(old["head_sha"].as_str().unwrap_or_default()),
                (None, None) => {
                    return Some((403, json!({"message": "fake forge: no scripted rerun"})));
                }
            };
            s.next_id += 1;
            let mut new = old;
            new["id"] = json!(s.next_id);
            new["status"] = json!("completed");
            new["conclusion"] = json!(conclusion);
            new["output"]["text"] = json!(text);
            s.check_runs.push(new);
            (201, json!({}))
        }
        ("POST", ["repos", _, _, "pulls", n, "comments", id, "replies"]) => {
            s.next_id += 1;
            let reply = json!({"id": s.next_id, "pr": num(n), "user": {"login": "orchestra-bot"},
                "body": body["body"], "in_reply_to_id": num(id)});
            s.review_comments.push(reply.clone());
            (201, reply)
        }
        ("PUT", ["repos", _, _, "pulls", n, "merge"]) => {
            let method = body["merge_method"].as_str().unwrap_or("merge").to_string();
            merge_pull(s, n.parse().unwrap_or(0), &method, body)
        }
        _ => return None,
    })
}

/// Merges pull request `number` with `method` (the API's checks first; in the followed
/// repository, when there is one) and returns the API's answer.
fn merge_pull(s: &mut State, number: u64, method: &str, body: &Value) -> (u16, Value) {
    let allowed = s.allowed;
    let bare = s.bare.clone();
    if bare.as_ref().is_some_and(|b| !b.exists()) {
        // The forge cannot reach its own repository: it merges nothing.
        return (503, json!({"message": "the repository is unavailable"}));
    }
    let Some(p) = s.pulls.iter_mut().find(|p| p["number"] == number) else {
        return (404, json!({"message": "Not Found"}));
    };
    if let Some(bare) = &bare {
        follow(bare, p);
    }
    let ok = match method {
        "merge" => allowed[0],
        "squash" => allowed[1],
        "rebase" => allowed[2],
        _ => false,
    };
    if !ok {
        return (
            405,
            json!({"message": format!("{method} merges are not allowed on this repository")}),
        );
    }
    if p["state"] != "open" || p["mergeable"] == false {
        return (405, json!({"message": "Pull Request is not mergeable"}));
    }
    if !body["sha"].is_null() && body["sha"] != p["head"]["sha"] {
        return (
            409,
            json!({"message": "Head branch was modified. Review and try the merge again."}),
        );
    }
    let sha = match &bare {
        Some(bare) => merge_in(bare, p, method),
        None => "f".repeat(40),
    };
    p["state"] = json!("closed");
    p["merged"] = json!(true);
    p["merged_at"] = json!("2026-01-02T00:00:00Z");
    p["merge_method"] = json!(method);
    p["merge_commit_sha"] = json!(sha);
    (
        200,
        json!({"merged": true, "sha": sha, "message": "Pull Request successfully merged"}),
    )
}

/// Runs git in the bare repository as the forge's identity; `None` when git fails.
fn bare_git(bare: &std::path::Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(bare)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Forge")
        .env("GIT_AUTHOR_EMAIL", "forge@example.com")
        .env("GIT_COMMITTER_NAME", "Forge")
        .env("GIT_COMMITTER_EMAIL", "forge@example.com")
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Updates an open pull request `p` from the bare repository: its head is its branch's commit,
/// and it is mergeable when its head merges into its base without conflicts.
fn follow(bare: &std::path::Path, p: &mut Value) {
    if p["state"] != "open" {
        return;
    }
    let head = p["head"]["ref"].as_str().unwrap_or_default().to_string();
    let base = p["base"]["ref"].as_str().unwrap_or_default().to_string();
    let Some(sha) = bare_git(bare, &["rev-parse", &format!("refs/heads/{head}")]) else {
        return;
    };
    p["head"]["sha"] = json!(sha);
    let clean = bare_git(
        bare,
        &[
            "merge-tree",
            "--write-tree",
            &format!("refs/heads/{base}"),
            &sha,
        ],
    )
    .is_some();
    p["mergeable"] = json!(clean);
}

/// Merges pull request `p`'s head into its base branch in the bare repository with `method`
/// and returns the base's new commit.
fn merge_in(bare: &std::path::Path, p: &Value, method: &str) -> String {
    let head = p["head"]["sha"].as_str().unwrap().to_string();
    let base_ref = format!("refs/heads/{}", p["base"]["ref"].as_str().unwrap());
    let base = bare_git(bare, &["rev-parse", &base_ref]).unwrap();
    let tree = bare_git(bare, &["merge-tree", "--write-tree", &base, &head]).unwrap();
    let title = p["title"].as_str().unwrap_or("merged").to_string();
    let commit = if method == "merge" {
        bare_git(
            bare,
            &["commit-tree", &tree, "-p", &base, "-p", &head, "-m", &title],
        )
    } else {
        bare_git(bare, &["commit-tree", &tree, "-p", &base, "-m", &title])
    }
    .unwrap();
    bare_git(bare, &["update-ref", &base_ref, &commit, &base]).unwrap();
    commit
}

/// Tags a successful read with an `ETag` (a hash of its answer), as GitHub does, and answers
/// `304 Not Modified` with no body when the request already has that tag.
fn conditional(
    method: &str,
    status: u16,
    reply: Value,
    if_none_match: Option<&str>,
) -> (u16, Vec<(String, String)>, Value) {
    use std::hash::{Hash, Hasher};
    if method != "GET" || status != 200 {
        return (status, Vec::new(), reply);
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    reply.to_string().hash(&mut h);
    let etag = format!("\"{:016x}\"", h.finish());
    let headers = vec![("etag".to_string(), etag.clone())];
    if if_none_match == Some(etag.as_str()) {
        return (304, headers, Value::Null);
    }
    (status, headers, reply)
}

/// Returns the check runs of commit `sha`; a commit without any first gets those
/// [`FakeForge::on_new_heads`] scripted.
fn check_runs(s: &mut State, sha: &str) -> (u16, Value) {
    if !s.check_runs.iter().any(|c| c["head_sha"] == *sha) {
        let ran: Vec<(String, String, String)> =
            s.ci.clone()
                .into_iter()
                .map(|(name, ci)| {
                    let (conclusion, text) = ci(sha);
                    (name, conclusion, text)
                })
                .collect();
        for (name, conclusion, text) in s.new_heads.clone().into_iter().chain(ran) {
            s.next_id += 1;
            let id = s.next_id;
            s.check_runs.push(json!({
                "id": id, "name": name, "head_sha": sha, "status": "completed",
                "conclusion": conclusion,
                "output": {"title": name, "summary": "", "text": text},
            }));
        }
    }
    let runs = of(&s.check_runs, "head_sha", &json!(sha));
    (
        200,
        json!({"total_count": runs.as_array().unwrap().len(), "check_runs": runs}),
    )
}

/// A plain-text answer: status, headers, text.
type RawAnswer = (u16, Vec<(String, String)>, String);

/// Serves an Actions job's logs: the API answers with a redirect to a download, which
/// answers with the plain text; `None` for any other request.
fn job_log(s: &State, method: &str, path: &str) -> Option<RawAnswer> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let log = |id: &str| {
        s.job_logs
            .iter()
            .rev()
            .find(|(i, _)| Some(*i) == id.parse().ok())
            .map(|(_, t)| t.clone())
    };
    match (method, segs.as_slice()) {
        ("GET", ["repos", _, _, "actions", "jobs", id, "logs"]) => Some(match log(id) {
            Some(_) => (
                302,
                vec![("location".to_string(), format!("/job-logs/{id}"))],
                String::new(),
            ),
            None => (404, Vec::new(), "{\"message\": \"Not Found\"}".to_string()),
        }),
        ("GET", ["job-logs", id]) => Some((200, Vec::new(), log(id).unwrap_or_default())),
        _ => None,
    }
}

fn respond_raw(
    mut stream: TcpStream,
    status: u16,
    headers: &[(String, String)],
    text: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} Fake\r\nconnection: close\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n",
        text.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(text.as_bytes())
}

fn respond(
    mut stream: TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &Value,
) -> std::io::Result<()> {
    // A bare string is plain text (a CI job's trace), as the forge sends it.
    let (text, kind) = match body {
        _ if status == 304 => (String::new(), "application/json"),
        Value::String(t) => (t.clone(), "text/plain"),
        other => (other.to_string(), "application/json"),
    };
    let mut head = format!(
        "HTTP/1.1 {status} Fake\r\nconnection: close\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n",
        text.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(text.as_bytes())
}
