//! An agent CLI's packet on the web view's packet page: its activity (tool calls, tokens,
//! states) as the CLI's activity transcript records it, not the CLI's own output format.

use std::os::unix::fs::PermissionsExt;

use crate::support::{TestRepo, orchestra_with_env, run_id, text};
use crate::web::view::{send, session, ui};

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s-web","model":"claude-test","tools":["Edit"]}"#;
const EDIT: &str = r#"{"type":"assistant","session_id":"s-web","message":{"id":"m1","usage":{"input_tokens":1200,"output_tokens":30},"content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"src/note.txt"}}]}}"#;
const EDITED: &str = r#"{"type":"user","session_id":"s-web","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#;
const DONE: &str = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s-web","num_turns":1,"result":"Wrote the note.","usage":{"input_tokens":1200,"output_tokens":30}}"#;

#[test]
fn the_packet_page_shows_an_agent_cli_s_tool_calls_not_its_raw_output() {
    let repo = TestRepo::new();
    let bin = repo.scratch().join("bin-claude");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("claude"),
        format!(
            "#!/bin/sh\ncat > /dev/null\necho noted > src/note.txt\necho '{INIT}'\necho '{EDIT}'\necho '{EDITED}'\necho '{DONE}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n",
            bin.display()
        ),
    );
    repo.git(&["add", ".orchestra/config.toml"]);
    repo.git(&["commit", "-qm", "configuration"]);
    let plan = repo.write_plan(
        "plan.toml",
        "objective = \"Add a note\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"Note\"\ndescription = \"Write src/note.txt\"\nfiles = [\"src/**\"]\n",
    );
    let root = repo.scratch().join("wt");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--agent",
            "claude",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[("PATH", &path)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let view = ui(&repo.path);
    let page = session(&view.url);
    let (status, answer) = send(
        &page.addr,
        &format!(
            "GET /api/packet/{run}/p1?diff=0 HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains(r#""type":"tool_call""#) && answer.contains("src/note.txt"),
        "the CLI's tool call is on the page: {answer}"
    );
    assert!(
        answer.contains(r#""type":"model_call""#),
        "its tokens are: {answer}"
    );
    assert!(
        !answer.contains(r#""type":"assistant""#),
        "its own output format is not: {answer}"
    );
}
