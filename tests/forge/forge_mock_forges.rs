//! The fake forge's Gitea and GitLab landing endpoints, where they differ from GitHub's: kept
//! apart from the shared fake so each forge's shapes read in one place.

use serde_json::{Value, json};

use super::{State, landing, of, query_param};

/// Serves Gitea's landing calls where they differ from GitHub's: repository settings, the
/// combined status (`status`, not `state`), a review's inline comments, collaborator
/// permissions and `POST …/merge` with `Do`; the rest as GitHub.
pub(super) fn gitea_landing(
    s: &mut State,
    method: &str,
    segs: &[&str],
    body: &Value,
) -> Option<(u16, Value)> {
    let num = |n: &str| json!(n.parse::<u64>().unwrap_or(0));
    Some(match (method, segs) {
        ("GET", ["repos", _, _]) => (
            200,
            json!({"allow_merge_commits": s.allowed[0], "allow_squash_merge": s.allowed[1],
                "allow_rebase": s.allowed[2], "allow_rebase_explicit": true}),
        ),
        ("GET", ["repos", _, _, "commits", sha, "status"]) => {
            let mut latest: Vec<Value> = Vec::new();
            for st in s.statuses.iter().filter(|v| v["sha"] == *sha) {
                latest.retain(|l| l["context"] != st["context"]);
                let mut g = st.clone();
                g["status"] = g["state"].take();
                latest.push(g);
            }
            (
                200,
                json!({"state": "pending", "sha": sha, "statuses": latest}),
            )
        }
        ("GET", ["repos", _, _, "pulls", _, "reviews", id, "comments"]) => (
            200,
            of(&s.review_comments, "pull_request_review_id", &num(id)),
        ),
        ("GET", ["repos", _, _, "collaborators", login, "permission"]) => {
            let permission = if *login == "mallory" { "read" } else { "write" };
            (
                200,
                json!({"permission": permission, "role_name": permission}),
            )
        }
        ("POST", ["repos", _, _, "pulls", n, "merge"]) => {
            let allowed = s.allowed;
            let Some(p) = s.pulls.iter_mut().find(|p| p["number"] == num(n)) else {
                return Some((404, json!({"message": "Not Found"})));
            };
            let how = body["Do"].as_str().unwrap_or("");
            let ok = match how {
                "merge" => allowed[0],
                "squash" => allowed[1],
                "rebase" => allowed[2],
                _ => false,
            };
            if !ok {
                return Some((
                    405,
                    json!({"message": format!("merge style {how:?} is not allowed")}),
                ));
            }
            if p["state"] != "open" || p["mergeable"] == false {
                return Some((405, json!({"message": "Please try again later"})));
            }
            if !body["head_commit_id"].is_null() && body["head_commit_id"] != p["head"]["sha"] {
                return Some((409, json!({"message": "head out of date"})));
            }
            p["state"] = json!("closed");
            p["merged"] = json!(true);
            p["merged_at"] = json!("2026-01-02T00:00:00Z");
            p["merge_commit_sha"] = json!("e".repeat(40));
            p["merge_method"] = json!(how);
            (200, Value::Null)
        }
        ("GET", ["repos", _, _, "actions", "runs", run, "jobs"]) => {
            match s.actions_runs.iter().find(|r| r["run"] == num(run)) {
                Some(r) => (
                    200,
                    json!({"jobs": r["jobs"], "total_count": r["jobs"].as_array().map_or(0, Vec::len)}),
                ),
                None => (404, json!({"message": "run not found"})),
            }
        }
        ("GET", ["repos", _, _, "actions", "jobs", id, "logs"]) => {
            let id = id.parse::<u64>().unwrap_or(0);
            match s.job_logs.iter().rev().find(|(j, _)| *j == id) {
                // A string is answered as plain text, as Gitea sends a log.
                Some((_, log)) => (200, Value::String(log.clone())),
                None => (404, json!({"message": "Not Found"})),
            }
        }
        ("GET", ["repos", _, _, "actions", ..]) | ("POST", ["repos", _, _, "actions", ..]) => {
            return None;
        }
        _ => return landing(s, method, segs, body),
    })
}

/// Serves GitLab's landing calls: a merge request, its head's pipeline and jobs, approvals,
/// reviewers, discussions and notes, membership, merging and retrying a job.
pub(super) fn gitlab_landing(
    s: &mut State,
    method: &str,
    segs: &[&str],
    query: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    let num = |n: &str| n.parse::<u64>().unwrap_or(0);
    Some(match (method, segs) {
        ("GET", ["projects", _]) => {
            let [merge, squash, rebase] = s.allowed;
            let merge_method = if rebase && !merge { "ff" } else { "merge" };
            let squash_option = match (squash, merge || rebase) {
                (false, _) => "never",
                (true, false) => "always",
                (true, true) => "default_off",
            };
            let [trains, pipeline] = s.gitlab_auto;
            (
                200,
                json!({"merge_method": merge_method, "squash_option": squash_option,
                    "merge_trains_enabled": trains,
                    "only_allow_merge_if_pipeline_succeeds": pipeline}),
            )
        }
        ("GET", ["projects", _, "merge_requests", n]) => look_at_mr(s, num(n)),
        ("GET", ["projects", _, "merge_requests", n, "reviewers"]) => {
            (200, of(&s.mr_reviewers, "pr", &json!(num(n))))
        }
        ("GET", ["projects", _, "merge_requests", n, "approvals"]) => {
            let by: Vec<Value> = s
                .approvals
                .iter()
                .filter(|(iid, _)| *iid == num(n))
                .map(|(_, l)| json!({"user": {"id": user_id(l), "username": l}}))
                .collect();
            (200, json!({"approved": !by.is_empty(), "approved_by": by}))
        }
        ("GET", ["projects", _, "merge_requests", n, "discussions"]) => {
            let list: Vec<Value> = s
                .issue_comments
                .iter()
                .filter(|c| c["pr"] == num(n))
                .map(|c| json!({"id": format!("d{}", c["id"]), "notes": [c]}))
                .collect();
            (200, Value::Array(list))
        }
        ("GET", ["projects", _, "merge_requests", n, "notes"]) => {
            (200, of(&s.issue_comments, "pr", &json!(num(n))))
        }
        ("PUT", ["projects", _, "merge_requests", _, "notes", id]) => {
            match s.issue_comments.iter_mut().find(|c| c["id"] == num(id)) {
                Some(c) => {
                    c["body"] = body["body"].clone();
                    (200, c.clone())
                }
                None => (404, json!({"message": "404 Note Not Found"})),
            }
        }
        ("GET", ["projects", _, "members", "all", id]) => {
            if num(id) == user_id("mallory") {
                (404, json!({"message": "404 Member Not Found"}))
            } else {
                (200, json!({"id": num(id), "access_level": 30}))
            }
        }
        ("PUT", ["projects", _, "merge_requests", n, "merge"]) => {
            let Some(p) = s.pulls.iter_mut().find(|p| p["iid"] == num(n)) else {
                return Some((404, json!({"message": "404 Not found"})));
            };
            if p["state"] != "opened" || p["has_conflicts"] == true {
                return Some((405, json!({"message": "405 Method Not Allowed"})));
            }
            if !body["sha"].is_null() && body["sha"] != p["sha"] {
                return Some((
                    409,
                    json!({"message": "SHA does not match HEAD of source branch"}),
                ));
            }
            let squash = body["squash"] == true;
            if body["merge_when_pipeline_succeeds"] == true || body["auto_merge"] == true {
                p["merge_when_pipeline_succeeds"] = json!(true);
                p["merge_method"] = json!(if squash { "squash" } else { "merge" });
                return Some((200, p.clone()));
            }
            p["state"] = json!("merged");
            p["merge_commit_sha"] = json!("d".repeat(40));
            p["merge_method"] = json!(if squash { "squash" } else { "merge" });
            (200, p.clone())
        }
        _ => {
            return gitlab_trains(s, method, segs, body)
                .or_else(|| gitlab_ci(s, method, segs, query));
        }
    })
}

/// Answers `GET` of GitLab merge request `iid`, counting a look at one GitLab is to merge
/// itself (see [`auto_merge_look`]).
fn look_at_mr(s: &mut State, iid: u64) -> (u16, Value) {
    let train = s.train.clone();
    let Some(p) = s.pulls.iter_mut().find(|p| p["iid"] == iid) else {
        return (404, json!({"message": "404 Not found"}));
    };
    if p["state"] == "opened" && (p["merge_when_pipeline_succeeds"] == true || train.contains(&iid))
    {
        auto_merge_look(p);
    }
    let answer = p.clone();
    if answer["state"] == "merged" {
        s.train.retain(|t| *t != iid);
    }
    (200, answer)
}

/// Serves GitLab's merge train: whether a merge request is on it, and putting one on it.
fn gitlab_trains(s: &mut State, method: &str, segs: &[&str], body: &Value) -> Option<(u16, Value)> {
    let num = |n: &str| n.parse::<u64>().unwrap_or(0);
    Some(match (method, segs) {
        ("GET", ["projects", _, "merge_trains", "merge_requests", n]) => {
            if s.train.contains(&num(n)) {
                (
                    200,
                    json!({"id": num(n) + 700, "status": "fresh",
                    "merge_request": {"iid": num(n)}}),
                )
            } else {
                (404, json!({"message": "404 Merge Train Not Found"}))
            }
        }
        ("POST", ["projects", _, "merge_trains", "merge_requests", n]) => {
            let trains = s.gitlab_auto[0];
            let Some(p) = s.pulls.iter().find(|p| p["iid"] == num(n)) else {
                return Some((404, json!({"message": "404 Not found"})));
            };
            if !trains {
                return Some((400, json!({"message": "Merge trains are not enabled"})));
            }
            if p["state"] != "opened" || p["has_conflicts"] == true {
                return Some((400, json!({"message": "Failed to add to the merge train"})));
            }
            if !body["sha"].is_null() && body["sha"] != p["sha"] {
                return Some((
                    409,
                    json!({"message": "SHA does not match HEAD of source branch"}),
                ));
            }
            if !s.train.contains(&num(n)) {
                s.train.push(num(n));
            }
            let cars: Vec<Value> = s
                .train
                .iter()
                .map(
                    |iid| json!({"id": iid + 700, "status": "idle", "merge_request": {"iid": iid}}),
                )
                .collect();
            (201, Value::Array(cars))
        }
        _ => return None,
    })
}

/// Serves GitLab's CI calls: the newest pipeline of a commit, its jobs, a job's trace, and
/// retrying a job.
pub(super) fn gitlab_ci(
    s: &mut State,
    method: &str,
    segs: &[&str],
    query: &str,
) -> Option<(u16, Value)> {
    let num = |n: &str| n.parse::<u64>().unwrap_or(0);
    Some(match (method, segs) {
        ("GET", ["projects", _, "pipelines"]) => {
            let sha = query_param(query, "sha").unwrap_or_default();
            let newest = s.jobs.iter().rev().find(|j| j["sha"] == sha.as_str());
            let list: Vec<Value> = newest
                .map(|j| json!({"id": j["pipeline"], "sha": sha, "status": "running"}))
                .into_iter()
                .collect();
            (200, Value::Array(list))
        }
        ("GET", ["projects", _, "pipelines", id, "jobs"]) => {
            let list: Vec<Value> = s
                .jobs
                .iter()
                .filter(|j| j["pipeline"] == num(id) && j["retried"] == false)
                .cloned()
                .collect();
            (200, Value::Array(list))
        }
        ("GET", ["projects", _, "repository", "commits", sha, "statuses"]) => {
            // Statuses external CI posted, newest of each name, in GitLab's shape.
            let mut latest: Vec<Value> = Vec::new();
            for st in s.statuses.iter().filter(|v| v["sha"] == *sha) {
                latest.retain(|l| l["name"] != st["context"]);
                let status = match st["state"].as_str() {
                    Some("failure" | "error") => "failed",
                    Some(other) => other,
                    None => "pending",
                };
                latest.push(json!({"id": st["id"], "sha": sha, "name": st["context"],
                    "status": status, "description": st["description"],
                    "target_url": st["target_url"]}));
            }
            (200, Value::Array(latest))
        }
        ("GET", ["projects", _, "jobs", id, "trace"]) => {
            match s.jobs.iter().find(|j| j["id"] == num(id)) {
                // A string is answered as plain text, as GitLab sends a trace.
                Some(j) => (200, j["trace"].clone()),
                None => (404, json!({"message": "404 Not found"})),
            }
        }
        ("POST", ["projects", _, "jobs", id, "retry"]) => {
            let id = num(id);
            let Some(at) = s.reruns.iter().position(|r| r.0 == id) else {
                return Some((
                    403,
                    json!({"message": "403 Forbidden - Job is not retryable"}),
                ));
            };
            let (_, status, trace) = s.reruns.remove(at);
            let old = s.jobs.iter_mut().find(|j| j["id"] == id)?;
            old["retried"] = json!(true);
            let mut new = old.clone();
            s.next_id += 1;
            new["id"] = json!(s.next_id);
            new["status"] = json!(status);
            new["trace"] = json!(trace);
            new["retried"] = json!(false);
            s.jobs.push(new.clone());
            (201, new)
        }
        _ => return None,
    })
}

/// Counts one look at merge request `p` waiting for GitLab to merge it (on the train, or set to
/// merge when its pipeline succeeds); the second look finds it merged.
fn auto_merge_look(p: &mut Value) {
    if p["auto_merge_held"] == true {
        return;
    }
    let looks = p["auto_merge_looks"].as_u64().unwrap_or(0) + 1;
    p["auto_merge_looks"] = json!(looks);
    if looks >= 2 {
        p["state"] = json!("merged");
        p["merge_commit_sha"] = json!("c".repeat(40));
    }
}

/// Returns a GitLab note; `at` puts it on a line of the diff.
pub(super) fn note(id: u64, iid: u64, login: &str, body: &str, at: Option<(&str, u64)>) -> Value {
    let position = at.map(|(path, line)| {
        json!({"position_type": "text", "new_path": path, "old_path": path,
            "new_line": line, "old_line": null})
    });
    json!({"id": id, "pr": iid, "body": body, "system": false,
        "author": {"id": user_id(login), "username": login}, "position": position})
}

/// Returns the fake GitLab's user id of `login`.
pub(super) fn user_id(login: &str) -> u64 {
    match login {
        "alice" => 1,
        "bob" => 2,
        "mallory" => 666,
        "orchestra-bot" => 99,
        _ => 50,
    }
}
