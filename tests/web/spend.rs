//! One accounting of a run's model calls: `status`, `status --json`, the report, the run list,
//! the run page's header and its chart give the same tokens, calls and cost; a model without a
//! price has no cost anywhere.

use git_orchestra::demo;
use serde_json::Value;

use crate::support::{git, hermetic, orchestra, orchestra_with_env, text};
use crate::web::view::{send, session, ui};

/// GETs `path` from a fresh view of `repo` the way its page does; returns the JSON answer.
pub(crate) fn api(repo: &std::path::Path, path: &str) -> Value {
    let ui = ui(repo);
    let page = session(&ui.url);
    let (status, answer) = send(
        &page.addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap()
}

/// Runs the demo's objective with `start --merge` against the scripted model, with `config`
/// committed as the repository's configuration; returns the repository, its run and the
/// temporary directory holding both.
pub(crate) fn finished_start(config: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    if !config.is_empty() {
        std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
        std::fs::write(repo.join(".orchestra/config.toml"), config).unwrap();
        git(&repo, &["add", ".orchestra/config.toml"]);
        git(
            &repo,
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
    }
    let model = demo::serve().unwrap();
    let root = tmp.path().join("worktrees");
    let out = orchestra_with_env(
        &repo,
        &[
            "start",
            "--yes",
            "--merge",
            "--worktree-root",
            root.to_str().unwrap(),
            demo::OBJECTIVE,
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let all = orchestra(&repo, &["status", "--all", "--json"]);
    let v: Value = serde_json::from_slice(&all.stdout).unwrap();
    let id = v["runs"][0]["id"].as_str().unwrap().to_string();
    (tmp, repo, id)
}

/// The report's totals: calls, tokens (in + out) and cost (`None` when no line has one).
fn report_totals(repo: &std::path::Path, run: &str) -> (u64, u64, Option<f64>) {
    let path = repo
        .join(".git/orchestra/runs")
        .join(run)
        .join("report.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let lines = v["usage"].as_array().unwrap();
    let calls = lines.iter().map(|l| l["calls"].as_u64().unwrap()).sum();
    let tokens = lines
        .iter()
        .map(|l| l["input_tokens"].as_u64().unwrap() + l["output_tokens"].as_u64().unwrap())
        .sum();
    let cost = lines
        .iter()
        .filter_map(|l| l["cost"].as_f64())
        .reduce(|a, b| a + b);
    (calls, tokens, cost)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn every_view_counts_the_same_tokens_calls_and_cost() {
    let (_tmp, repo, id) =
        finished_start("[prices.scripted]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n");
    let out = orchestra(&repo, &["status", "--json", &id]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spend = &status["start"]["spend"];
    let calls = spend["calls"].as_u64().unwrap();
    let tokens = spend["input_tokens"].as_u64().unwrap() + spend["output_tokens"].as_u64().unwrap();
    let cost = spend["cost"].as_f64().unwrap();
    assert!(calls > 5 && tokens > 0 && cost > 0.0, "{spend}");
    // The report.
    let (r_calls, r_tokens, r_cost) = report_totals(&repo, &id);
    assert_eq!(
        (r_calls, r_tokens),
        (calls, tokens),
        "report vs status: {spend}"
    );
    assert!(
        close(r_cost.unwrap(), cost),
        "report {r_cost:?} vs status {cost}"
    );
    // The run list.
    let list = api(&repo, "/api/runs");
    assert_eq!(list["runs"][0]["tokens"], tokens, "{list}");
    assert!(
        close(list["runs"][0]["cost"].as_f64().unwrap(), cost),
        "{list}"
    );
    // The run page: its header (the status it carries) and its chart.
    let page = api(&repo, &format!("/api/run/{id}"));
    assert_eq!(page["status"]["start"]["spend"], *spend, "{page}");
    let points = page["gates"]["spend"].as_array().unwrap();
    assert_eq!(
        points.len() as u64,
        calls,
        "one point per model call: {page}"
    );
    let last = points.last().unwrap();
    assert_eq!(last[1], tokens, "chart vs header: {last}");
    assert!(
        close(last[2].as_f64().unwrap(), cost),
        "chart vs header: {last}"
    );
}

#[test]
fn a_model_without_a_price_shows_no_cost_in_any_view() {
    let (_tmp, repo, id) = finished_start("");
    let out = orchestra(&repo, &["status", "--json", &id]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(status["start"]["spend"]["cost"].is_null(), "{status}");
    let said = String::from_utf8_lossy(&orchestra(&repo, &["status", &id]).stdout).to_string();
    assert!(!said.contains("cost      "), "{said}");
    // The report's total has no cost beside models without one.
    let report =
        String::from_utf8_lossy(&orchestra(&repo, &["status", "--report", &id]).stdout).to_string();
    let total = report
        .lines()
        .find(|l| l.starts_with("| total"))
        .unwrap_or_else(|| panic!("no total in {report}"));
    assert!(
        !total.contains('$'),
        "a cost beside unpriced models: {total}"
    );
    let page = api(&repo, &format!("/api/run/{id}"));
    let points = page["gates"]["spend"].as_array().unwrap();
    assert!(points.iter().all(|p| p[2].is_null()), "{page}");
    let list = api(&repo, "/api/runs");
    assert!(list["runs"][0]["cost"].is_null(), "{list}");
}
