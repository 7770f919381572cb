//! Language servers behind navigation: `nav status`, `nav --precise`, and `git orchestra mcp`
//! answering from a server once it is ready. The server is either `git orchestra lsp` itself
//! (always there) or pyright (`pyright-langserver --stdio`, installed by `.ci/run`; skipped
//! with a reason elsewhere unless ORCHESTRA_REQUIRE_LSP_TOOLS=1).

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

use super::fixture;
use super::nvim::tool_available;
use crate::support::{TestRepo, orchestra, text};

/// Writes `[nav.lsp]` settings (TOML lines) into the repository's configuration.
fn configure(repo: &TestRepo, lines: &str) {
    repo.write(".orchestra/config.toml", &format!("[nav.lsp]\n{lines}\n"));
    // Trusted where every command here (and `git orchestra mcp` an editor starts) reads the
    // user configuration, the shared test home; a file that does not parse stays as it is for
    // the test to see its error.
    if git_orchestra::config::RepoConfig::read_repository(&repo.path).is_ok() {
        crate::support::trust(&repo.path);
    }
}

/// Returns true if and only if a text answer lists a place of kind `kind` on `line` of `path`
/// (in its compact form `path: 1, 5 read, 16`, a bare line having the heading's common kind).
fn lists(answer: &str, path: &str, line: u32, kind: &str) -> bool {
    let common = answer.contains(&format!("each {kind} unless marked"));
    answer
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(path)?;
            // Callers name the function each call lies in: `path (in run): 5`.
            let rest = match rest.strip_prefix(" (in ") {
                Some(within) => within.split_once(')')?.1,
                None => rest,
            };
            rest.strip_prefix(": ")
        })
        .flat_map(|places| places.split(", "))
        .any(|p| {
            let mut words = p.split(' ');
            let at = words.next().unwrap_or_default();
            let rest: Vec<&str> = words.collect();
            at.split(':').next() == Some(line.to_string().as_str())
                && (rest.first() == Some(&kind) || (rest.is_empty() && common))
        })
}

/// Our own binary as the Python server.
fn ourselves() -> String {
    format!(
        "[nav.lsp.servers.python]\ncommand = \"{}\"\nargs = [\"lsp\"]",
        env!("CARGO_BIN_EXE_git-orchestra")
    )
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn nav_status_lists_the_servers_and_whether_they_are_installed() {
    let repo = fixture("lsp");
    configure(
        &repo,
        "max_servers = 2\nstartup_timeout = 5\n[nav.lsp.servers.go]\ncommand = \"no-such-gopls-here\"",
    );
    let out = orchestra(&repo.path, &["nav", "status"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.contains("mode auto (max_servers 2, memory_mb 2048, startup_timeout 5 s"),
        "{s}"
    );
    assert!(
        s.contains("go          no-such-gopls-here (configured) — not found on PATH"),
        "{s}"
    );
    assert!(
        s.contains("python      pyright-langserver --stdio (default)"),
        "{s}"
    );
    let out = orchestra(&repo.path, &["nav", "status", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let go = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["language"] == "go")
        .unwrap();
    assert_eq!(go["found"], Value::Null);
    assert_eq!(go["configured"], true);

    configure(&repo, "mode = \"sometimes\"");
    let out = orchestra(&repo.path, &["nav", "status"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("sometimes"), "{}", text(&out));
}

#[test]
fn precise_queries_answer_from_the_server_and_say_so() {
    let repo = fixture("lsp");
    configure(&repo, &ourselves());
    let out = orchestra(&repo.path, &["nav", "refs", "make", "--precise"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.starts_with("[lsp] answered by git-orchestra\nreferences to make: 2 resolved"),
        "{s}"
    );
    assert!(s.contains("app/main.py: 1, 5\n"), "{s}");
    let out = orchestra(&repo.path, &["nav", "callers", "make", "--precise"]);
    assert!(
        lists(&stdout(&out), "app/main.py", 5, "call"),
        "{}",
        text(&out)
    );
    // Without --precise the graph answers, as always.
    let out = orchestra(&repo.path, &["nav", "refs", "make"]);
    assert!(!stdout(&out).contains("[lsp]"), "{}", text(&out));
    assert!(
        lists(&stdout(&out), "app/main.py", 5, "call"),
        "{}",
        text(&out)
    );
    // JSON answers say where they came from: the server, or the graph and why.
    let json = |args: &[&str]| -> Value {
        let out = orchestra(&repo.path, args);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
    };
    for (query, place) in [("refs", "5:9"), ("callers", "5:9")] {
        let v = json(&["nav", query, "make", "--precise", "--json"]);
        assert_eq!(v["source"], "lsp:git-orchestra", "{v}");
        assert_eq!(v["source_notice"], Value::Null, "{v}");
        assert!(v["results"].to_string().contains(place), "{v}");
        let v = json(&["nav", query, "make", "--json"]);
        assert_eq!(v["source"], "graph", "{v}");
        assert_eq!(v["source_notice"], Value::Null, "{v}");
    }
    let v = json(&[
        "nav",
        "def",
        "--from",
        "app/main.py:6:31",
        "--precise",
        "--json",
    ]);
    assert_eq!(v["source"], "lsp:git-orchestra", "{v}");
    assert!(v["results"].to_string().contains("app/models.py"), "{v}");
    let v = json(&["nav", "impls", "Greeter", "--json"]);
    assert_eq!(v["source"], "graph", "{v}");
    // Off: the graph answers and says nothing of servers.
    configure(&repo, &format!("mode = \"off\"\n{}", ourselves()));
    let out = orchestra(&repo.path, &["nav", "refs", "make", "--precise"]);
    assert!(!stdout(&out).contains("[lsp]"), "{}", text(&out));
    assert!(
        stdout(&out).contains("references to make"),
        "{}",
        text(&out)
    );
    let v = json(&["nav", "callees", "run", "--precise", "--json"]);
    assert_eq!(
        (&v["source"], &v["source_notice"]),
        (&json!("graph"), &Value::Null),
        "{v}"
    );
    // A server that cannot answer: the graph does, and the JSON says why.
    configure(
        &repo,
        "[nav.lsp.servers.python]\ncommand = \"no-such-language-server\"",
    );
    let v = json(&["nav", "refs", "make", "--precise", "--json"]);
    assert_eq!(v["source"], "graph", "{v}");
    assert!(
        v["source_notice"]
            .as_str()
            .is_some_and(|n| n.contains("no-such-language-server is not installed")),
        "{v}"
    );
    assert!(v["results"].to_string().contains("5:9"), "{v}");
}

#[test]
fn precise_queries_answer_from_pyright() {
    if !tool_available("pyright", "--version") {
        return;
    }
    // No [nav.lsp]: Python's default server, pyright-langserver, answers.
    let repo = fixture("lsp");
    let out = orchestra(&repo.path, &["nav", "refs", "make", "--precise"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.starts_with("[lsp] answered by pyright-langserver\nreferences to make: 2 resolved"),
        "{}",
        text(&out)
    );
    assert!(s.contains("app/main.py: 1, 5\n"), "{s}");
    let out = orchestra(&repo.path, &["nav", "callers", "make", "--precise"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.starts_with("[lsp] answered by pyright-langserver\ncallers of make"),
        "{}",
        text(&out)
    );
    assert!(lists(&s, "app/main.py", 5, "call"), "{s}");
}

/// Asserts that `nav refs make --precise` answered from the graph, with a notice on stderr
/// containing `why`, within `limit`.
fn degrades(repo: &TestRepo, why: &str, limit: Duration) {
    let started = Instant::now();
    let out = orchestra(&repo.path, &["nav", "refs", "make", "--precise"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).starts_with("references to make: 2 resolved"),
        "{}",
        text(&out)
    );
    assert!(
        stderr(&out).contains("[graph]") && stderr(&out).contains(why),
        "{}",
        text(&out)
    );
    assert!(started.elapsed() < limit, "took {:?}", started.elapsed());
}

/// Returns the process ids whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(needle)
        {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_missing_crashing_or_slow_server_degrades_to_the_graph_with_a_notice() {
    let repo = fixture("lsp");
    let server = |cmd: &str, args: &str| {
        format!("[nav.lsp.servers.python]\ncommand = \"{cmd}\"\nargs = [{args}]")
    };
    configure(&repo, &server("no-such-language-server", ""));
    degrades(
        &repo,
        "no-such-language-server is not installed",
        Duration::from_secs(30),
    );
    configure(&repo, &server("sh", "\"-c\", \"exit 3\""));
    degrades(&repo, "exited", Duration::from_secs(30));
    // A server that never answers: the wait ends at startup_timeout, and the process ends
    // with the command.
    configure(
        &repo,
        &format!("startup_timeout = 2\n{}", server("sleep", "\"3601.2718\"")),
    );
    degrades(&repo, "[graph] sleep ", Duration::from_secs(30));
    assert_eq!(
        processes_with("sleep 3601.2718"),
        Vec::<u32>::new(),
        "the server outlived its run"
    );
    // A server over its memory limit is shut down, and the graph answers.
    configure(&repo, &format!("memory_mb = 0\n{}", ourselves()));
    degrades(
        &repo,
        "over [nav.lsp] memory_mb = 0",
        Duration::from_secs(60),
    );
}

/// A `git orchestra mcp` session in `repo`, calling tools with JSON arguments.
struct Mcp {
    runtime: tokio::runtime::Runtime,
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
}

impl Mcp {
    fn start(repo: &TestRepo) -> Mcp {
        crate::support::hermetic();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = repo.path.clone();
        let client = runtime.block_on(async {
            let transport = TokioChildProcess::new(
                tokio::process::Command::new(env!("CARGO_BIN_EXE_git-orchestra")).configure(
                    |cmd| {
                        cmd.arg("mcp").current_dir(&dir);
                    },
                ),
            )
            .unwrap();
            ().serve(transport).await.unwrap()
        });
        Mcp { runtime, client }
    }

    fn call(&self, tool: &str, args: Value) -> String {
        let request = CallToolRequestParams::new(tool.to_string())
            .with_arguments(args.as_object().cloned().unwrap());
        let result = self
            .runtime
            .block_on(self.client.call_tool(request))
            .unwrap();
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }

    /// Calls the tool, waiting at most `limit` for its answer.
    fn call_within(&self, tool: &str, args: Value, limit: Duration) -> Option<String> {
        let request = CallToolRequestParams::new(tool.to_string())
            .with_arguments(args.as_object().cloned().unwrap());
        let result = self
            .runtime
            .block_on(async { tokio::time::timeout(limit, self.client.call_tool(request)).await });
        Some(
            result
                .ok()?
                .unwrap()
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect(),
        )
    }

    /// Calls the tool until its answer starts with `[lsp]` (at most two minutes).
    fn until_lsp(&self, tool: &str, args: Value) -> String {
        self.until(tool, args, |a| a.starts_with("[lsp]"))
    }

    /// Calls the tool until its answer satisfies `done` (at most two minutes).
    fn until(&self, tool: &str, args: Value, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let answer = self.call(tool, args.clone());
            if done(&answer) {
                return answer;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "never from the server: {answer}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The processes running `needle` started by the `git orchestra mcp` serving `dir` (through
/// the sandbox launcher, whose children they are), and no one else's.
///
/// Each process is told apart by one reading of its command line: a launcher reads as a
/// launcher whichever moment it is caught in, so one that executes between two listings of
/// the process table is not taken for a server (it names the server in its arguments).
fn servers_in(dir: &std::path::Path, needle: &str) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    let mcp = processes_with(" mcp")
        .into_iter()
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir));
    let children = |pid: u32| -> Vec<u32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        tasks
            .flatten()
            .flat_map(|t| {
                let c = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
                c.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let cmdline = |pid: u32| -> String {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&raw).replace('\0', " ")
    };
    // A child not yet executing its program still reads as its parent: neither a launcher
    // nor a server, until a later look.
    let server = |line: &str| line.contains(needle) && !line.contains(" __sandbox ");
    let mut out = Vec::new();
    for pid in mcp {
        for child in children(pid) {
            let line = cmdline(child);
            if line.contains(" __sandbox ") {
                out.extend(children(child).into_iter().filter(|g| server(&cmdline(*g))));
            } else if server(&line) {
                out.push(child);
            }
        }
    }
    out
}

#[test]
fn a_server_over_memory_mb_is_stopped_and_started_again_without_a_question() {
    let repo = fixture("lsp");
    configure(&repo, &format!("memory_mb = 0\n{}", ourselves()));
    let mcp = Mcp::start(&repo);
    // No question is asked: the session starts its server, and the watchdog stops it (and
    // each of its restarts) on its own.
    let needle = concat!(env!("CARGO_BIN_EXE_git-orchestra"), " lsp");
    let started = Instant::now();
    let mut seen: Vec<u32> = Vec::new();
    let mut quiet_since: Option<Instant> = None;
    loop {
        let running = servers_in(&repo.path, needle);
        for pid in &running {
            if !seen.contains(pid) {
                seen.push(*pid);
            }
        }
        if running.is_empty() && !seen.is_empty() {
            if quiet_since.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(3) {
                break;
            }
        } else {
            quiet_since = None;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "servers seen {seen:?}, still running {running:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let restarts = git_orchestra::lsp::tier::RESTARTS as usize;
    assert_eq!(
        seen.len(),
        1 + restarts,
        "started, then restarted twice: {seen:?}"
    );
    // The next question is answered by the graph, saying why.
    let answer = mcp.call("nav_refs", json!({"symbol": "make"}));
    assert!(
        answer.starts_with("[graph] git-orchestra used ")
            && answer.contains(
                "over [nav.lsp] memory_mb = 0; not started again (restarted 2 times already)"
            ),
        "{answer}"
    );
    assert!(lists(&answer, "app/main.py", 5, "call"), "{answer}");
}

#[test]
fn a_server_that_stops_reading_degrades_to_the_graph_within_request_timeout() {
    let repo = fixture("lsp");
    configure(&repo, &format!("request_timeout = 2\n{}", ourselves()));
    let mcp = Mcp::start(&repo);
    let refs = json!({"symbol": "make"});
    mcp.until_lsp("nav_refs", refs.clone());
    let needle = concat!(env!("CARGO_BIN_EXE_git-orchestra"), " lsp");
    let pids = servers_in(&repo.path, needle);
    assert_eq!(pids.len(), 1, "{pids:?}");
    // Alive but reading nothing: stopped.
    // SAFETY: a plain system call on the server this test's session started.
    unsafe { libc::kill(pids[0] as i32, libc::SIGSTOP) };
    // A new file bigger than a pipe holds: telling the server of it fills its input.
    let big = format!("# {}\n", "x".repeat(98)).repeat(3_000);
    repo.write("app/big.py", &big);
    let started = Instant::now();
    let answer = mcp.call_within("nav_refs", refs, Duration::from_secs(60));
    let took = started.elapsed();
    let Some(answer) = answer else {
        // SAFETY: as above, so that the stuck session can end.
        unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
        panic!("no answer within {took:?}: the session is stuck writing to the server");
    };
    assert!(
        answer.starts_with("[graph] git-orchestra did not read its input within 2.0 s"),
        "{answer}"
    );
    assert!(lists(&answer, "app/main.py", 5, "call"), "{answer}");
    // The write's deadline, the index's refresh and the server's end, on a busy machine.
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn mcp_answers_from_pyright_after_warm_up_sees_edits_and_falls_back_when_it_dies() {
    if !tool_available("pyright", "--version") {
        return;
    }
    let repo = fixture("lsp");
    let mcp = Mcp::start(&repo);
    let refs = json!({"symbol": "make"});
    // The graph answers at once, saying the server is starting.
    let first = mcp.call("nav_refs", refs.clone());
    assert!(
        first.starts_with("[graph] pyright-langserver is still starting"),
        "{first}"
    );
    assert!(lists(&first, "app/main.py", 5, "call"), "{first}");
    let answer = mcp.until_lsp("nav_refs", refs.clone());
    assert!(answer.contains("app/main.py: 1, 5\n"), "{answer}");
    let def = mcp.until_lsp("nav_def", json!({"from": "app/main.py:6:31"}));
    assert!(def.contains("app/models.py:1:7"), "{def}");
    // An edit on disk reaches the server before the next question.
    let main = std::fs::read_to_string(repo.path.join("app/main.py")).unwrap();
    repo.write(
        "app/main.py",
        &format!("{main}\n\ndef later():\n    return make()\n"),
    );
    let answer = mcp.until("nav_refs", refs.clone(), |a| {
        lists(a, "app/main.py", 16, "reference")
    });
    assert!(
        answer.starts_with("[lsp]") && lists(&answer, "app/main.py", 16, "reference"),
        "{answer}"
    );
    // A killed server: the graph answers, saying so.
    let pids = servers_in(&repo.path, "pyright-langserver");
    assert!(!pids.is_empty(), "no pyright process while it answered");
    for pid in &pids {
        // SAFETY: a plain system call on processes this test's server started.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    let after = mcp.call("nav_refs", refs.clone());
    assert!(
        after.starts_with("[graph] pyright-langserver exited")
            && after.contains("starting it again"),
        "{after}"
    );
    assert!(lists(&after, "app/main.py", 16, "call"), "{after}");
    // ... and a new one answers once it is ready, knowing the edit.
    let again = mcp.until_lsp("nav_refs", refs);
    assert!(lists(&again, "app/main.py", 16, "reference"), "{again}");
    let restarted = servers_in(&repo.path, "pyright-langserver");
    assert!(
        !restarted.is_empty() && restarted.iter().all(|p| !pids.contains(p)),
        "no new server: {pids:?} then {restarted:?}"
    );
    drop(mcp);
    let started = Instant::now();
    while !servers_in(&repo.path, "pyright").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a server outlived the session"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn one_server_serves_two_worktrees_through_workspace_folders_and_restarts_at_most_twice() {
    if !tool_available("pyright", "--version") {
        return;
    }
    use git_orchestra::lsp::{Outcome, Query, Settings, Tier};
    let repo = fixture("lsp");
    // A second worktree of the repository, where `make` has one more caller.
    let other = repo.scratch().join("other");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "other",
        other.to_str().unwrap(),
    ]);
    std::fs::write(
        other.join("app/extra.py"),
        "from app.models import make\n\n\ndef extra():\n    return make()\n",
    )
    .unwrap();
    let tier = Tier::new(Settings::from_config(&Default::default()));
    let mut first = git_orchestra::nav::Index::open(&repo.path).unwrap();
    let mut second = git_orchestra::nav::Index::open(&other).unwrap();
    let ask = |index: &mut git_orchestra::nav::Index| {
        let started = Instant::now();
        loop {
            match tier.query(
                index,
                Query::References,
                Some("make"),
                None,
                Duration::from_secs(60),
            ) {
                Outcome::Lsp { locations, .. } => {
                    let mut paths: Vec<String> = locations.iter().map(|l| l.path.clone()).collect();
                    paths.sort();
                    paths.dedup();
                    return paths;
                }
                Outcome::Graph(why) => assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "never from the server: {why:?}"
                ),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert_eq!(ask(&mut first), ["app/main.py"]);
    let pid = tier
        .server_pid(git_orchestra::nav::Lang::Python, first.root())
        .unwrap();
    assert_eq!(
        ask(&mut second),
        ["app/extra.py", "app/main.py"],
        "the second worktree's own files"
    );
    assert_eq!(
        (
            tier.servers().len(),
            tier.server_pid(git_orchestra::nav::Lang::Python, first.root())
        ),
        (1, Some(pid)),
        "one server for both worktrees"
    );
    assert_eq!(ask(&mut first), ["app/main.py"]);
    // A server that keeps dying is started again twice, then left to the graph.
    let mut notices = Vec::new();
    for _ in 0..=git_orchestra::lsp::tier::RESTARTS {
        let pid = tier
            .server_pid(git_orchestra::nav::Lang::Python, first.root())
            .unwrap();
        // SAFETY: a plain system call on the server this test's tier started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let started = Instant::now();
        let notice = loop {
            match tier.query(
                &mut first,
                Query::References,
                Some("make"),
                None,
                Duration::ZERO,
            ) {
                Outcome::Graph(Some(why)) if why.contains("exited") => break why,
                other => assert!(started.elapsed() < Duration::from_secs(30), "{other:?}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        notices.push(notice);
        if notices.len() <= git_orchestra::lsp::tier::RESTARTS as usize {
            ask(&mut first);
        }
    }
    assert!(notices[0].contains("starting it again"), "{notices:?}");
    assert!(
        notices
            .last()
            .unwrap()
            .contains("not started again (restarted 2 times already)"),
        "{notices:?}"
    );
    match tier.query(
        &mut first,
        Query::References,
        Some("make"),
        None,
        Duration::ZERO,
    ) {
        Outcome::Graph(Some(why)) => assert!(why.contains("not started again"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn max_servers_limits_the_servers_of_a_process_and_shutdown_ends_them() {
    use git_orchestra::lsp::{Outcome, Query, Settings, Tier};
    let repo = TestRepo::with_files(&[
        ("app/models.py", "def make():\n    return 1\n"),
        (
            "app/main.py",
            "from app.models import make\n\n\ndef run():\n    return make()\n",
        ),
        (
            "src/lib.rs",
            "pub fn build() -> u32 {\n    1\n}\n\npub fn twice() -> u32 {\n    build() + build()\n}\n",
        ),
    ]);
    let ours = env!("CARGO_BIN_EXE_git-orchestra");
    configure(
        &repo,
        &format!(
            "max_servers = 1\n[nav.lsp.servers.python]\ncommand = \"{ours}\"\nargs = [\"lsp\"]\n\
             [nav.lsp.servers.rust]\ncommand = \"{ours}\"\nargs = [\"lsp\", \"--stdio\"]"
        ),
    );
    let user = git_orchestra::config::user_config_path(&|k| std::env::var(k).ok());
    let config =
        git_orchestra::config::RepoConfig::load_with_user(&repo.path, user.as_deref()).unwrap();
    let tier = Tier::new(Settings::from_config(&config.nav.lsp));
    let mut index = git_orchestra::nav::Index::open(&repo.path).unwrap();
    let wait = Duration::from_secs(60);
    match tier.query(&mut index, Query::References, Some("make"), None, wait) {
        Outcome::Lsp { locations, .. } => {
            assert!(
                locations.iter().any(|l| l.path == "app/main.py"),
                "{locations:?}"
            )
        }
        other => panic!("the Python server did not answer: {other:?}"),
    }
    let python = tier
        .server_pid(git_orchestra::nav::Lang::Python, index.root())
        .unwrap();
    match tier.query(&mut index, Query::References, Some("build"), None, wait) {
        Outcome::Graph(Some(why)) => assert!(
            why.contains("not started") && why.contains("max_servers"),
            "{why}"
        ),
        other => panic!("a second server started: {other:?}"),
    }
    assert_eq!(tier.servers().len(), 1);
    tier.shutdown();
    assert!(
        !std::path::Path::new(&format!("/proc/{python}")).exists()
            || std::fs::read_to_string(format!("/proc/{python}/stat"))
                .is_ok_and(|s| s.contains(") Z ")),
        "the server outlived the shutdown"
    );
}
