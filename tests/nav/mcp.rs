//! `git orchestra mcp` driven by a real MCP client (rmcp's, over the child's stdio): the
//! handshake, `tools/list` with schemas, and `tools/call` round trips on a temporary repository.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

use crate::support::{TestRepo, hermetic};

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn an_mcp_client_lists_the_navigation_tools_and_calls_them() {
    hermetic();
    let repo = TestRepo::with_files(&[
        (
            "src/app.py",
            "from .config import Config as Settings\n\ndef main():\n    return Settings()\n",
        ),
        (
            "src/config.py",
            "class Config:\n    def send(self):\n        pass\n",
        ),
        ("src/__init__.py", ""),
    ]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = repo.path.join("src");
        let transport = TokioChildProcess::new(
            tokio::process::Command::new(env!("CARGO_BIN_EXE_git-orchestra")).configure(|cmd| {
                cmd.arg("mcp").current_dir(&dir);
            }),
        )
        .unwrap();
        let client = ().serve(transport).await.unwrap();
        let info = client.peer_info().unwrap();
        assert_eq!(
            info.server_info.as_ref().map(|i| i.name.as_str()),
            Some("git-orchestra-nav")
        );
        assert!(info.capabilities.tools.is_some());

        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for expected in [
            "nav_def",
            "nav_refs",
            "nav_callers",
            "nav_outline",
            "nav_map",
            "grep",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        let nav_def = tools.iter().find(|t| t.name == "nav_def").unwrap();
        // The symbol may be left out when `from` has a column; every place query takes it.
        assert!(nav_def.input_schema.get("required").is_none());
        for name in [
            "nav_def",
            "nav_refs",
            "nav_callers",
            "nav_callees",
            "nav_impls",
        ] {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            assert_eq!(tool.input_schema["properties"]["from"]["type"], "string");
        }

        // Resolved through the alias: `Settings` at app.py:4 is config.py's Config.
        let def = client
            .call_tool(
                CallToolRequestParams::new("nav_def")
                    .with_arguments(args(json!({"symbol": "Settings", "from": "src/app.py:4"}))),
            )
            .await
            .unwrap();
        assert_ne!(def.is_error, Some(true));
        assert!(
            text(&def).contains("src/config.py:1:7 class Config [resolved]"),
            "{}",
            text(&def)
        );

        // The server sees the worktree as it is now, not as committed.
        repo.write(
            "src/extra.py",
            "from .config import Config\n\nclass Loud(Config):\n    pass\n",
        );
        let impls = client
            .call_tool(
                CallToolRequestParams::new("nav_impls")
                    .with_arguments(args(json!({"symbol": "Config"}))),
            )
            .await
            .unwrap();
        assert!(
            text(&impls).contains("src/extra.py: 3\n"),
            "{}",
            text(&impls)
        );

        // Bad arguments come back as a tool error the model can read, not a protocol failure.
        let bad = client
            .call_tool(
                CallToolRequestParams::new("nav_outline")
                    .with_arguments(args(json!({"path": "nowhere.py"}))),
            )
            .await
            .unwrap();
        assert_eq!(bad.is_error, Some(true));
        assert!(
            text(&bad).contains("not an indexed source file"),
            "{}",
            text(&bad)
        );

        let unknown = client
            .call_tool(CallToolRequestParams::new("telepathy"))
            .await;
        assert!(
            format!("{unknown:?}").contains("unknown tool `telepathy`"),
            "{unknown:?}"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn mcp_outside_a_repository_fails_with_a_clear_error() {
    hermetic();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .arg("mcp")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error:"), "{stderr}");
}
