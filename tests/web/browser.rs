//! The web view in a real browser (headless Chromium over WebDriver) against a scripted
//! `start --ui` run.

use std::time::{Duration, Instant};

use crate::web::view;
use crate::web::webdriver::{Browser, tools};

const WAIT: Duration = Duration::from_secs(120);

fn state_of(b: &Browser, packet: &str) -> String {
    b.eval(&format!(
        "const c = document.querySelector('[data-packet=\"{packet}\"]'); return c ? c.dataset.state : ''"
    ))
    .as_str()
    .unwrap_or("")
    .to_string()
}

#[test]
fn a_run_is_approved_watched_live_and_a_diff_comment_reaches_the_agent() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let release = scratch.path().join("release");
    let mut run = view::start(&release);
    let b = Browser::start(&chromium, &driver);

    // A wrong token is refused, and so is a page without one.
    let code_name = run
        .url
        .split_once("/?")
        .unwrap()
        .1
        .split('=')
        .next()
        .unwrap();
    b.goto(&format!(
        "{}/?{code_name}=0123456789abcdef0123456789abcdef",
        run.base
    ));
    b.wait_for(
        "the refusal",
        "return document.body.innerText.includes('wrong token')",
        WAIT,
    );
    b.goto(&format!("{}/run/x", run.base));
    b.wait_for(
        "the refusal",
        "return document.body.innerText.includes('no token')",
        WAIT,
    );

    // The printed address lets the browser in; the plan waits for approval on the run page.
    b.goto(&run.url);
    b.wait_for(
        "the runs list",
        "return document.querySelector('#runs a')",
        WAIT,
    );
    let id = run.run_id();
    b.goto(&format!("{}/run/{id}", run.base));
    b.wait_for(
        "the plan to approve",
        "return document.getElementById('approve')",
        WAIT,
    );
    assert!(
        b.eval("return document.getElementById('plan-text').value")
            .as_str()
            .unwrap()
            .contains("id = \"p1\""),
        "the plan is shown for approval"
    );
    // The page is never reloaded from here on: the marker survives only live updates.
    b.eval("window.notReloaded = true; return true");
    b.click("#approve");

    // Approval starts execution: both packets appear, and p1 is seen running, live.
    b.wait_for("p1 running", "const c = document.querySelector('[data-packet=\"p1\"]'); return c && c.dataset.state === 'running'", WAIT);
    assert!(!state_of(&b, "p2").is_empty(), "p2's card is shown");
    b.wait_for(
        "the live stream",
        "return document.getElementById('live').classList.contains('on')",
        WAIT,
    );
    assert_eq!(
        b.eval("return window.notReloaded === true"),
        serde_json::json!(true)
    );

    comment_and_see_the_fix(&b, &run, &id, &release);

    // `start --ui` serves while the run lasts; the run ends well.
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = run.child_exited() {
            break status;
        }
        assert!(Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{}", run.stderr.lock().unwrap());

    // The finished run in `git orchestra ui`: both packets succeeded.
    let ui = view::ui(&run.repo);
    b.goto(&ui.url);
    b.goto(&format!("{}/run/{id}", ui.base));
    b.wait_for("p2 succeeded", "const c = document.querySelector('[data-packet=\"p2\"]'); return c && c.dataset.state === 'succeeded'", WAIT);
    assert_eq!(state_of(&b, "p1"), "succeeded");
    // The run page renders the final report and the packets' reviews.
    b.wait_for(
        "the report",
        "const r = document.getElementById('report'); return r && r.textContent.includes('Report')",
        WAIT,
    );
    assert_eq!(
        b.eval("return document.querySelectorAll('#reviews li').length > 0"),
        serde_json::json!(true)
    );
    if let Ok(path) = std::env::var("ORCHESTRA_UI_SCREENSHOT") {
        std::fs::write(&path, b.screenshot()).unwrap();
    }
}

/// Comments on p1's diff while p1 waits in validation, lets validation go on, and checks that
/// the comment reaches the model in p1's next prompt and a new commit follows.
fn comment_and_see_the_fix(b: &Browser, run: &view::Run, id: &str, release: &std::path::Path) {
    // p1 has committed and waits in validation: its diff is there to comment on.
    let tip_before = wait_for_tip(run, "p1");
    b.goto(&format!("{}/packet/{id}/p1", run.base));
    b.wait_for("the diff", "return [...document.querySelectorAll('.diff .line.add')].find(l => l.innerText.includes('first notes'))", WAIT);
    b.eval("[...document.querySelectorAll('.diff .line.add')].find(l => l.innerText.includes('first notes')).click(); return true");
    b.type_into("#comment-text", "Add a line saying what was fixed");
    b.click("#add-comment");
    b.click("#send-comments");
    b.wait_for(
        "the confirmation",
        "return document.getElementById('banner').innerText.includes('sent to the agent')",
        WAIT,
    );

    // Validation goes on; the comment becomes a fix round: the model gets it in p1's next
    // prompt and a new commit follows.
    std::fs::write(release, "").unwrap();
    let deadline = Instant::now() + WAIT;
    while run.branch_tip("p1") == tip_before
        || run.branch_file("p1", "NOTES.md") != "first notes\nfixed as the person asked"
    {
        assert!(
            Instant::now() < deadline,
            "no fix commit on p1 (tip {} before {tip_before}, NOTES.md {:?}): {}",
            run.branch_tip("p1"),
            run.branch_file("p1", "NOTES.md"),
            run.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let prompts = run.prompts.lock().unwrap().clone();
    let with_comment: Vec<&String> = prompts
        .iter()
        .filter(|p| p.contains("Add a line saying what was fixed"))
        .collect();
    assert!(
        !with_comment.is_empty(),
        "the comment never reached the model"
    );
    assert!(
        with_comment[0].contains("NOTES.md") && with_comment[0].contains("first notes"),
        "the comment names its file and line: {}",
        with_comment[0]
    );
}

/// Waits until `packet`'s branch has the engine's commit, and returns it.
fn wait_for_tip(run: &view::Run, packet: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let tip = run.branch_tip(packet);
        if crate::support::git(&run.repo, &["log", "-1", "--format=%B", &tip])
            .contains("Orchestra-Packet")
        {
            return tip;
        }
        assert!(
            Instant::now() < deadline,
            "no commit on {packet}: {}",
            run.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn hostile_worker_output_is_shown_as_text_without_keys_and_never_breaks_the_page() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let (repo, run) = view::hostile_run();
    let ui = view::ui_with(&repo.path, &view::KEYS_ENV);
    let b = Browser::start(&chromium, &driver);
    b.goto(&ui.url);
    b.goto(&format!("{}/packet/{run}/p1", ui.base));
    // The page renders: the activity with every line, the diff after it.
    b.wait_for(
        "the activity",
        "const a = document.getElementById('activity'); return a && a.textContent.includes('the key is') && document.getElementById('diff')",
        WAIT,
    );
    let activity = b
        .eval("return document.getElementById('activity').textContent")
        .as_str()
        .unwrap()
        .to_string();
    // Markup in a field is text, not a live link, form or image.
    assert!(activity.contains("live link"), "{activity}");
    assert!(activity.contains("<form id="), "{activity}");
    assert!(activity.contains("<b id=\"pwn-b\">"), "{activity}");
    assert_eq!(
        b.eval("return ['pwn-ms', 'pwn-form', 'pwn-img', 'pwn-b'].filter(id => document.getElementById(id))"),
        serde_json::json!([])
    );
    assert_eq!(
        b.eval(
            "return document.querySelectorAll('#activity a, #activity form, #activity img').length"
        ),
        serde_json::json!(0)
    );
    // The line without its type's fields is shown as it came.
    assert!(activity.contains("\"type\":\"outcome\""), "{activity}");
    // Neither key is anywhere in the page.
    let html = b
        .eval("return document.documentElement.outerHTML")
        .as_str()
        .unwrap()
        .to_string();
    for key in [view::SHAPED_KEY, view::PLAIN_KEY] {
        assert!(!html.contains(key), "{key} in the page: {activity}");
    }
}

#[test]
fn a_preview_server_on_another_port_sees_the_cookie_but_never_the_key_and_cannot_use_it() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let repo = crate::support::TestRepo::new();
    let ui = view::ui(&repo.path);
    // A worker's preview server: another loopback port, keeping every request it gets.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let preview = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if let Some(req) = crate::support::read_request(&stream) {
                sink.lock().unwrap().push(req.headers);
            }
            let page = "<!doctype html><p id=\"done\">preview</p>";
            let _ = std::io::Write::write_all(
                &mut stream,
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            );
        }
    });
    let b = Browser::start(&chromium, &driver);
    b.goto(&ui.url);
    b.wait_for(
        "the runs page",
        "return document.body.innerText.includes('No runs yet')",
        WAIT,
    );
    let key = b
        .eval("return localStorage.getItem('orchestra-key') || ''")
        .as_str()
        .unwrap_or("")
        .to_string();
    b.goto(&format!("{preview}/"));
    b.wait_for(
        "the preview",
        "return document.getElementById('done')",
        WAIT,
    );
    let seen = seen.lock().unwrap().clone();
    let cookie = seen
        .iter()
        .flatten()
        .find(|(k, v)| k.eq_ignore_ascii_case("cookie") && v.contains("orchestra_"))
        .map(|(_, v)| v.clone())
        .expect("the browser sends the view's cookie to another port of the host");
    if !key.is_empty() {
        assert!(
            !seen.iter().flatten().any(|(_, v)| v.contains(&key)),
            "the key reached another port: {seen:?}"
        );
    }
    // What the preview server caught neither reads nor changes anything.
    let addr = ui.base.trim_start_matches("http://");
    let (status, body) = view::send(
        addr,
        &format!(
            "GET /api/runs HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(status, 403, "{body}");
    let secret = cookie.split_once('=').unwrap().1;
    let (status, body) = view::send(
        addr,
        &format!(
            "POST /api/run/x/cancel HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nX-Orchestra-Token: {secret}\r\nOrigin: http://{addr}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        ),
    );
    assert_eq!(status, 403, "{body}");
}
