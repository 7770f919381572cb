//! The view's eval page: the evals listed with their progress, one eval's arms with their
//! statistics and its task × arm grid, from the same report `eval report --json` prints;
//! one eval is run and read both through the API and, when one is installed, in a browser.

use crate::support::{orchestra, text};
use crate::web::view::{send, session, ui};

/// Returns the status and JSON body of `GET path` through a session of `ui`.
fn get(ui: &crate::web::view::Ui, path: &str) -> (u16, serde_json::Value) {
    let page = session(&ui.url);
    let (status, answer) = send(
        &page.addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

#[test]
fn the_eval_page_lists_evals_and_shows_an_evals_arms_and_grid_also_in_a_browser() {
    let (repo, commits) = crate::workflow::eval_fixtures::history();
    let solver = "s=cmd:if grep -q subtraction \"$ORCHESTRA_PACKET_FILE\"; then echo 'sub() { echo $(($1 - $2)); }' >> src/calc.sh; fi";
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~2..HEAD",
            "--test",
            "sh run_tests.sh",
            "--arm",
            solver,
            "--arm",
            "noop=cmd:true",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = run["eval"].as_str().unwrap();
    let ui = ui(&repo.path);

    let (status, list) = get(&ui, "/api/evals");
    assert_eq!(status, 200, "{list}");
    let listed = &list["evals"][0];
    assert_eq!(listed["eval"], id, "{list}");
    assert_eq!(
        (listed["done"].as_u64(), listed["total"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(listed["kept"], true, "{list}");
    assert_eq!(listed["arms"][0]["resolved"], 1, "{list}");

    let (status, eval) = get(&ui, &format!("/api/eval/{id}"));
    assert_eq!(status, 200, "{eval}");
    assert_eq!(eval["arms"], run["arms"], "{eval}");
    // The grid: subtraction (HEAD~1) resolved by s, negation by neither, nothing by noop.
    let tasks: Vec<&str> = eval["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["commit"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, [commits[1].as_str(), commits[2].as_str()]);
    let outcome = |arm: &str, task: &str| {
        let a = eval["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == arm && a["task"] == task)
            .unwrap();
        (a["resolved"].as_bool().unwrap(), a["failure"].clone())
    };
    assert_eq!(outcome("s", &commits[1]), (true, serde_json::Value::Null));
    assert_eq!(outcome("s", &commits[2]), (false, "no_change".into()));
    assert_eq!(outcome("noop", &commits[2]), (false, "no_change".into()));

    let (status, missing) = get(&ui, "/api/eval/no-such-eval");
    assert_eq!(status, 404, "{missing}");
    assert!(
        missing["error"].as_str().unwrap().contains("no-such-eval"),
        "{missing}"
    );
    // The page itself is served at its path (the script renders it).
    let page = session(&ui.url);
    let (status, _) = send(
        &page.addr,
        &format!(
            "GET /eval/{id} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie
        ),
    );
    assert_eq!(status, 200);
    // The same eval as a person sees it (the address's code is spent: a view of its own).
    renders_in_a_browser(&repo.path, id);
}

/// Checks, in a browser when one is installed, that the eval pages render `id`'s listing, its
/// arms with their model time and its grid.
fn renders_in_a_browser(repo: &std::path::Path, id: &str) {
    let Some((chromium, driver)) = crate::web::webdriver::tools() else {
        return;
    };
    let ui = ui(repo);
    let b = crate::web::webdriver::Browser::start(&chromium, &driver);
    let wait = std::time::Duration::from_secs(60);
    // The printed address lets the browser in; the runs page links to the evals.
    b.goto(&ui.url);
    b.wait_for(
        "the link to the evals",
        "return document.querySelector('a[href=\"/evals\"]')",
        wait,
    );
    b.click("a[href=\"/evals\"]");
    b.wait_for(
        "the evals list",
        &format!("return document.querySelector('#evals tr[data-eval=\"{id}\"]')"),
        wait,
    );
    let listed = b.eval(&format!(
        "return document.querySelector('#evals tr[data-eval=\"{id}\"]').innerText"
    ));
    assert!(
        listed.as_str().unwrap().contains("s 1/2, noop 0/2"),
        "{listed}"
    );
    b.click(&format!("#evals tr[data-eval=\"{id}\"] a"));
    b.wait_for(
        "the eval's arms and grid",
        "return document.querySelector('#arms') && document.querySelector('#grid')",
        wait,
    );
    let arms = b.eval("return document.querySelector('#arms').innerText");
    // The headings are shown in capitals by the page's style.
    let arms = arms.as_str().unwrap().to_lowercase();
    for column in ["wall p50", "model p50", "model total", "no change"] {
        assert!(arms.contains(column), "{column}: {arms}");
    }
    let grid = b.eval("return document.querySelector('#grid').innerText");
    let grid = grid.as_str().unwrap();
    assert_eq!(grid.matches('✓').count(), 1, "{grid}");
    assert_eq!(grid.matches("no change").count(), 3, "{grid}");
}
