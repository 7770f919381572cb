//! A fake forge on a loopback port: a small in-memory GitHub (or Gitea) that keeps pull
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
}

type Observer = Box<dyn Fn() -> String + Send>;

/// A canned answer: status, headers, body.
type Canned = (u16, Vec<(String, String)>, Value);

struct State {
    flavour: Flavour,
    pulls: Vec<Value>,
    log: Vec<Req>,
    fail_next: VecDeque<Canned>,
    observer: Option<Observer>,
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

    pub fn pulls(&self) -> Vec<Value> {
        self.state.lock().unwrap().pulls.clone()
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
    });
    let (status, headers, reply) = match s.fail_next.pop_front() {
        Some(f) => f,
        None => {
            let (status, reply) = route(&mut s, &method, &path, &body);
            (status, Vec::new(), reply)
        }
    };
    drop(s);
    let _ = respond(stream, status, &headers, &reply);
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
            (201, json!({"id": 1}))
        }
        _ => return None,
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
                "head": {"ref": body["head"]},
                "base": {"ref": body["base"]},
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
            (201, json!({"id": 1}))
        }
        ("POST", ["repos", _, _, "pulls", _, "requested_reviewers"]) => (201, json!({})),
        _ => return None,
    })
}

fn respond(
    mut stream: TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &Value,
) -> std::io::Result<()> {
    let text = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} Fake\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        text.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(text.as_bytes())
}
