//! The packet page of a best-of-N packet: its candidates, what each came to and the winner.

use crate::support::*;
use crate::web::view;

/// Candidate k of packet `p1` writes k to out.txt; any other packet copies it.
const WORKER: &str = r#"if [ "$ORCHESTRA_PACKET" = p1 ]; then echo "$ORCHESTRA_CANDIDATE" > out.txt; else cp out.txt copy.txt; fi"#;

/// A plan whose `p1` has three candidates and passes only with a 2 in out.txt, and whose `p2`
/// copies what `p1` made.
fn plan(repo: &TestRepo) -> std::path::PathBuf {
    let body = format!(
        "objective = \"Pick the right one\"\n\n[[packet]]\nattempts = 3\n{}{}",
        packet("p1", "\"out.txt\"", "", "\"grep -qx 2 out.txt\"").replace("[[packet]]\n", ""),
        packet("p2", "\"copy.txt\"", "\"p1\"", "\"grep -qx 2 copy.txt\"")
    );
    repo.write_plan("plan.toml", &body)
}

#[test]
fn the_web_packet_page_shows_the_candidates_and_the_winner() {
    let repo = TestRepo::new();
    let plan = plan(&repo);
    assert!(repo.run_plan(&plan, WORKER, &[]).status.success());
    let run = run_id(&repo.path);
    let ui = view::ui(&repo.path);
    let page = view::session(&ui.url);
    let (status, body) = view::send(
        &page.addr,
        &format!(
            "GET /api/packet/{run}/p1?diff=0 HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{body}");
    let json = &body[body.find("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["candidates"]["winner"], 2, "{v:#}");
    assert_eq!(v["candidates"]["candidates"].as_array().unwrap().len(), 3);
    // The dependent was worked by one: it has none.
    let (_, body) = view::send(
        &page.addr,
        &format!(
            "GET /api/packet/{run}/p2?diff=0 HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert!(body.contains("\"candidates\":null"), "{body}");
}
