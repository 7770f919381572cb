//! Tools from MCP servers for our agents: a server from `.mcp.json` or `[mcp.servers]`, named
//! by the role, is started in the packet's worktree and its tools reach the model namespaced
//! (`mcp__<server>__<tool>`); write tools only for roles with a write scope; calls journaled.

use serde_json::{Value, json};

use crate::attacks::{Attacked, attack_with, call, complete};
use crate::support::{TestRepo, text};

/// A scripted MCP server: `lookup` (read-only) answers with its query; `stamp` (a write tool)
/// writes `stamp.txt` in its working directory. Its requests are logged to `$MCP_LOG`.
const SCRIPTED_SERVER: &str = r#"import json, os, sys
log = open(os.environ["MCP_LOG"], "a")
for line in sys.stdin:
    msg = json.loads(line)
    log.write(msg.get("method", "") + "\n"); log.flush()
    if "id" not in msg:
        continue
    method, result = msg["method"], None
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "docs", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [
            {"name": "lookup", "description": "Looks a term up.", "annotations": {"readOnlyHint": True},
             "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
            {"name": "stamp", "description": "Writes stamp.txt.",
             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        name, args = msg["params"]["name"], msg["params"].get("arguments", {})
        if name == "lookup":
            result = {"content": [{"type": "text", "text": "looked up: " + args["q"]}]}
        else:
            open("stamp.txt", "w").write("stamped\n")
            result = {"content": [{"type": "text", "text": "stamped"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

/// Returns the tool names offered in the model's first request.
fn offered(run: &Attacked) -> Vec<String> {
    run.requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Returns the tool names of the run's journaled tool calls with whether they succeeded.
fn journaled_calls(repo: &TestRepo, run: &Attacked) -> Vec<(String, bool)> {
    let common = repo.path.join(repo.git(&["rev-parse", "--git-common-dir"]));
    let store = git_orchestra::store::Store::open(&common).unwrap();
    let id = run.json["run"]["id"].as_str().unwrap();
    store
        .events(id, 0)
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(&e.event).unwrap())
        .filter(|v| v["type"] == "agent_tool_call")
        .map(|v| (v["tool"].as_str().unwrap().to_string(), v["ok"] == true))
        .collect()
}

fn configure(repo: &TestRepo, config: &str, mcp_json: &Value) {
    repo.write(".orchestra/config.toml", config);
    repo.write(".mcp.json", &mcp_json.to_string());
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "mcp servers"]);
    repo.trust();
}

#[test]
fn an_agent_calls_the_navigation_of_git_orchestra_mcp_registered_in_mcp_json() {
    let repo = TestRepo::new();
    configure(
        &repo,
        "[roles.coder]\nmcp = [\"graph\"]\n",
        &json!({"mcpServers": {"graph": {"command": env!("CARGO_BIN_EXE_git-orchestra"), "args": ["mcp"]}}}),
    );
    let run = attack_with(
        &repo,
        vec![
            call("n1", "mcp__graph__nav_def", json!({"symbol": "add"})),
            call(
                "w1",
                "write_file",
                json!({"path": "src/lib.rs", "content": "pub fn add(a: i32, b: i32) -> i32 { b + a }\n"}),
            ),
            complete("c1"),
        ],
        &[],
        &["--files", "src/lib.rs"],
    );
    assert!(run.out.status.success(), "{}", text(&run.out));
    assert!(
        offered(&run).contains(&"mcp__graph__nav_def".to_string()),
        "{:?}",
        offered(&run)
    );
    let results = run.tool_results();
    assert!(
        results[0].contains("src/lib.rs:1") && results[0].contains("add"),
        "the server's answer reached the model: {results:?}"
    );
    assert_eq!(
        journaled_calls(&repo, &run)[0],
        ("mcp__graph__nav_def".to_string(), true)
    );
}

#[test]
fn a_scripted_servers_write_tool_is_offered_only_to_roles_that_may_write() {
    let repo = TestRepo::new();
    let script = repo.scratch().join("docs_server.py");
    std::fs::write(&script, SCRIPTED_SERVER).unwrap();
    let log = repo.scratch().join("mcp.log");
    let config = format!(
        "[mcp.servers.docs]\ncommand = \"python3\"\nargs = [\"{}\"]\nenv = {{ MCP_LOG = \"{}\" }}\n\n[roles.coder]\nmcp = [\"docs\"]\n\n[roles.reviewer]\nmcp = [\"docs\"]\n\n[run]\nretries = 0\nfix_rounds = 0\n",
        script.display(),
        log.display()
    );
    configure(&repo, &config, &json!({"mcpServers": {}}));

    let run = attack_with(
        &repo,
        vec![
            call("l1", "mcp__docs__lookup", json!({"q": "parser"})),
            call("s1", "mcp__docs__stamp", json!({})),
            complete("c1"),
        ],
        &[],
        &["--files", "stamp.txt"],
    );
    assert!(run.out.status.success(), "{}", text(&run.out));
    let tools = offered(&run);
    assert!(
        tools.contains(&"mcp__docs__lookup".to_string())
            && tools.contains(&"mcp__docs__stamp".to_string()),
        "{tools:?}"
    );
    assert_eq!(run.tool_results()[..2], ["looked up: parser", "stamped"]);
    assert_eq!(
        journaled_calls(&repo, &run)[..2],
        [
            ("mcp__docs__lookup".to_string(), true),
            ("mcp__docs__stamp".to_string(), true)
        ]
    );
    // What the server wrote in the worktree is the packet's work, committed on its branch.
    let branch = run.json["packets"][0]["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{branch}:stamp.txt")]),
        "stamped"
    );
    let methods = std::fs::read_to_string(&log).unwrap();
    assert!(
        methods.starts_with("initialize\nnotifications/initialized\ntools/list\n"),
        "{methods}"
    );

    // The read-only reviewer gets the read-only tool only (its packet, which changes
    // nothing, fails at once: no retries, no fix rounds).
    let server = crate::mock::MockServer::start(vec![complete("c2"), crate::mock::approval()]);
    let out = crate::support::orchestra_with_env(
        &repo.path,
        &["agent", "reviewer", "Look at src/parser.rs", "--json"],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", server.url.as_str()),
            ("ORCHESTRA_MODEL", "mock-model"),
        ],
    );
    let requests = server.requests();
    assert!(!requests.is_empty(), "{}", text(&out));
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__docs__lookup"), "{tools:?}");
    assert!(!tools.contains(&"mcp__docs__stamp"), "{tools:?}");
}
