//! The landing section of the web view: the run page and the packet page show each pull
//! request's state, checks, reviews, mergeability and what landing waits for, from the same
//! query as `status --json`, and follow a new look at the forge live.

use std::time::Duration;

use serde_json::Value;

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_view::{land_once, published};
use crate::support::*;
use crate::web::view;
use crate::web::webdriver::{Browser, tools};

const SHA1: &str = "1111111111111111111111111111111111111111";

/// GETs `path` from the view as the page does and returns its JSON.
fn get(page: &view::Session, path: &str) -> Value {
    let (status, body) = view::send(
        &page.addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body[body.find("\r\n\r\n").unwrap() + 4..]).unwrap()
}

#[test]
fn the_run_and_packet_pages_show_the_pull_requests_and_follow_landing_live() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    assert!(land_once(&repo).status.success());
    let run = run_id(&repo.path);
    let ui = view::ui(&repo.path);
    let page = view::session(&ui.url);

    let v = get(&page, &format!("/api/run/{run}"));
    let landing = &v["status"]["landing"];
    assert_eq!(landing[0]["packet"], "p1", "{v:#}");
    assert_eq!(landing[0]["checks"][1]["conclusion"], "pending");
    assert_eq!(landing[0]["reviews"][0]["verdict"], "approved");
    assert_eq!(landing[0]["waiting"], "checks to finish: test");
    assert_eq!(landing[1]["mergeable"], false);
    let v = get(&page, &format!("/api/packet/{run}/p2?diff=0"));
    assert_eq!(v["landing"]["number"], 2, "{v:#}");
    assert_eq!(v["landing"]["waiting"], "p1 to land first");
    assert_eq!(v["landing"]["checks"][0]["conclusion"], "failure");
    let v = get(&page, &format!("/api/packet/{run}/p1?diff=0"));
    assert_eq!(
        v["landing"]["url"],
        "https://forge.example/acme/widgets/pull/1"
    );

    let Some((chromium, driver)) = tools() else {
        return;
    };
    let shown = view::ui(&repo.path);
    let b = Browser::start(&chromium, &driver);
    b.goto(&shown.url);
    b.goto(&format!("{}/run/{run}", shown.base));
    let wait = Duration::from_secs(60);
    b.wait_for(
        "the landing table",
        "return document.querySelector('#landing tr[data-landing=\"p1\"]')",
        wait,
    );
    let row = b
        .eval("return document.querySelector('#landing tr[data-landing=\"p1\"]').innerText")
        .as_str()
        .unwrap()
        .to_string();
    assert!(row.contains("test pending"), "{row}");
    assert!(row.contains("alice approved"), "{row}");
    assert!(row.contains("checks to finish: test"), "{row}");
    // The next look merges p1: the page follows without a reload.
    b.eval("window.notReloaded = true; return true");
    forge.add_check_run(SHA1, "test", Some("success"), "");
    assert!(land_once(&repo).status.success());
    b.wait_for(
        "p1 shown merged",
        "return document.querySelector('#landing tr[data-landing=\"p1\"]').dataset.state === 'merged'",
        wait,
    );
    assert_eq!(
        b.eval("return window.notReloaded === true"),
        Value::Bool(true)
    );
    b.goto(&format!("{}/packet/{run}/p2", shown.base));
    b.wait_for(
        "the packet's pull request",
        "return document.querySelector('#landing tr[data-landing=\"p2\"]')",
        wait,
    );
}
