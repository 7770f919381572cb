//! The view's run list agrees with `status`: a `start` run whose process died shows as
//! interrupted in its phase, and a cancelled run without packets stays listed.

use crate::support::{killed_while_clarifying, orchestra, text};
use crate::web::view::{send, session, ui};

fn runs(repo: &std::path::Path) -> serde_json::Value {
    let ui = ui(repo);
    let page = session(&ui.url);
    let (status, answer) = send(
        &page.addr,
        &format!(
            "GET /api/runs HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap()
}

#[test]
fn the_run_list_shows_a_dead_start_run_interrupted_and_keeps_it_once_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_orchestra::demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let (_model, id) = killed_while_clarifying(&repo);
    let list = runs(&repo);
    assert_eq!(list["runs"][0]["id"], id.as_str(), "{list}");
    assert_eq!(
        list["runs"][0]["state"], "interrupted while clarifying",
        "{list}"
    );
    let cancelled = orchestra(&repo, &["cancel", &id]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    let list = runs(&repo);
    assert_eq!(list["runs"][0]["id"], id.as_str(), "{list}");
    assert_eq!(list["runs"][0]["state"], "cancelled", "{list}");
}
