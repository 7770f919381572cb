//! The symbol tools in the agent loop: a scripted model navigates a packet's worktree with
//! nav_def, nav_callers and grep, and the outcome reports the symbolic share.

use git_orchestra::agent::WorkerState;
use git_orchestra::llm::Provider;

use crate::agent::agent_loop::{run_role_on, tool_results};
use crate::support::TestRepo;

/// A repository with `add` in src/lib.rs and a linked worktree whose uncommitted file calls it.
fn packet_worktree() -> TestRepo {
    let base = TestRepo::with_files(&[
        (
            "src/lib.rs",
            "mod total;\n\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        ),
        (
            "src/total.rs",
            "use crate::add;\n\npub fn total(xs: &[i32]) -> i32 {\n    xs.iter().fold(0, |s, x| add(s, *x))\n}\n",
        ),
    ]);
    let wt = base.scratch().join("packet");
    base.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "packet",
        wt.to_str().unwrap(),
    ]);
    let repo = TestRepo {
        tmp: base.tmp,
        path: wt,
    };
    // Only the packet's worktree has this caller; an index of the main worktree would miss it.
    repo.write(
        "src/double.rs",
        "use crate::add;\n\npub fn double(x: i32) -> i32 {\n    add(x, x)\n}\n",
    );
    repo
}

#[test]
fn an_agent_navigates_its_worktree_with_symbol_tools_and_the_share_is_reported() {
    let ran = run_role_on(
        packet_worktree(),
        false,
        "openai/agent_nav",
        Provider::OpenaiCompatible,
        "researcher",
        None,
        |_| {},
    );
    let o = &ran.outcome;
    assert_eq!(o.state, WorkerState::Completed, "{o:?}");
    // nav_def, nav_callers and the failed nav_refs are symbolic; grep is textual.
    assert_eq!((o.symbolic_nav_calls, o.textual_nav_calls), (3, 1));
    assert_eq!(o.symbolic_share(), Some(0.75));
    assert_eq!(o.tool_errors, 1);

    let results = tool_results(ran.requests.last().unwrap());
    assert!(
        results[0].contains("src/lib.rs:3"),
        "nav_def: {}",
        results[0]
    );
    assert!(
        results[1].contains("src/total.rs (in total): 4")
            && results[1].contains("src/double.rs (in double): 4"),
        "nav_callers sees the worktree's uncommitted caller: {}",
        results[1]
    );
    assert!(
        results[2].contains("missing string argument `symbol`"),
        "bad arguments go back to the model: {}",
        results[2]
    );
    assert!(
        results[3].contains("src/double.rs:4") && results[3].contains("nav_refs"),
        "grep answers and points at the symbol tools: {}",
        results[3]
    );

    // The symbol tools are offered with their schemas, and the instructions prefer them.
    let tools = ran.requests[0].body["tools"].as_array().unwrap();
    let nav_def = tools
        .iter()
        .find(|t| t["function"]["name"] == "nav_def")
        .expect("nav_def offered");
    // A symbol, or a position to resolve (`from`, whose column makes the symbol optional).
    let props = &nav_def["function"]["parameters"]["properties"];
    assert!(
        props["symbol"].is_object() && props["from"].is_object(),
        "{nav_def}"
    );
    let system = ran.requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap();
    assert!(system.contains("symbol tools before grep"), "{system}");
    let outcome_json = serde_json::to_value(o).unwrap();
    assert_eq!(outcome_json["symbolic_nav_calls"], 3);
}

#[test]
fn grep_without_symbol_tools_does_not_point_at_them() {
    let ran = run_role_on(
        packet_worktree(),
        false,
        "openai/agent_nav",
        Provider::OpenaiCompatible,
        "researcher",
        None,
        |role| role.tools.retain(|t| !t.starts_with("nav_")),
    );
    let results = tool_results(ran.requests.last().unwrap());
    assert!(
        results[0].contains("there is no tool `nav_def`"),
        "{}",
        results[0]
    );
    assert!(
        results[3].contains("src/double.rs:4") && !results[3].contains("nav_refs"),
        "{}",
        results[3]
    );
    assert_eq!(
        (
            ran.outcome.symbolic_nav_calls,
            ran.outcome.textual_nav_calls
        ),
        (0, 1)
    );
    assert_eq!(ran.outcome.symbolic_share(), Some(0.0));
}

/// Returns true when `pyright-langserver` runs here; under `ORCHESTRA_REQUIRE_LSP_TOOLS=1`
/// (as in `.ci/run`) its absence fails the test instead.
fn pyright_available() -> bool {
    let ok = std::process::Command::new("pyright")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("ORCHESTRA_REQUIRE_LSP_TOOLS").as_deref() != Ok("1"),
            "pyright is required here (ORCHESTRA_REQUIRE_LSP_TOOLS=1); .ci/run installs it"
        );
        eprintln!("skipped: pyright is not installed");
    }
    ok
}

#[test]
fn a_packet_agents_language_server_starts_with_the_packet_and_answers_once_ready() {
    if !pyright_available() {
        return;
    }
    let repo = crate::support::TestRepo::with_files(&[
        ("app/__init__.py", ""),
        (
            "app/models.py",
            "class Greeter:\n    def greet(self, name):\n        return \"hello \" + name\n\n\ndef make():\n    return Greeter()\n",
        ),
        (
            "app/main.py",
            "from app.models import Greeter, make\n\n\ndef run():\n    g = make()\n    return g\n",
        ),
    ]);
    // The agent works for a while before its first question, then asks for the references
    // of `make` again and again, waiting between asks, until the server has had time to
    // start; then it completes.
    let mut replies = vec![crate::agent::attacks::run("w", "sleep 5")];
    for i in 0..8 {
        replies.push(crate::agent::attacks::call(
            &format!("r{i}"),
            "nav_refs",
            serde_json::json!({"symbol": "make"}),
        ));
        replies.push(crate::agent::attacks::run(&format!("s{i}"), "sleep 4"));
    }
    replies.push(crate::agent::attacks::complete("done"));
    let ran = crate::agent::attacks::attack_with(&repo, replies, &[], &["--files", "app/**"]);
    let results = ran.tool_results();
    let answers: Vec<&String> = results.iter().skip(1).step_by(2).collect();
    // The server started with the packet, not with the first question: by then it is ready
    // or has been starting for about as long as the agent worked.
    let first = answers[0];
    let starting_for = first
        .strip_prefix("[graph] pyright-langserver is still starting (")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|secs| secs.parse::<f64>().ok());
    assert!(
        first.starts_with("[lsp]") || starting_for.is_some_and(|s| s >= 4.0),
        "the server was not started with the packet: {first}"
    );
    assert!(
        answers
            .iter()
            .any(|a| a.starts_with("[lsp]") && a.contains("app/main.py")),
        "the server answers once ready: {answers:?}\n{}",
        crate::support::text(&ran.out)
    );
    // No server outlives the run.
    let worktree = std::path::PathBuf::from(ran.json["packets"][0]["worktree"].as_str().unwrap());
    let roots = [worktree.parent().unwrap().to_path_buf(), repo.path.clone()];
    let started = std::time::Instant::now();
    loop {
        let left = servers_under(&roots);
        if left.is_empty() {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "servers outlived the run: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Returns the pyright processes (zombies aside) working in a directory under one of `roots`.
fn servers_under(roots: &[std::path::PathBuf]) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("pyright")
            && !stat.contains(") Z ")
            && roots.iter().any(|r| cwd.starts_with(r))
        {
            out.push(pid);
        }
    }
    out
}
