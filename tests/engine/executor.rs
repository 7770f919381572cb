//! Executors: packets worked by `git orchestra packet exec` on other "hosts". Here a stand-in
//! for ssh runs the command in a directory per host on this machine, so the transport, the
//! job and events refs, idempotence and a failing host are tested everywhere; `sshd.rs` runs
//! the same against a real sshd.

use std::path::{Path, PathBuf};

use super::executor_fixtures::{WORKER, packet_a, three_packets};
use crate::support::*;

/// A repository whose configuration puts packets on fake hosts `hosts` (the ones in `up`
/// have a home), and the environment the binary needs to reach them.
pub struct Hosts {
    pub repo: TestRepo,
    pub homes: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Hosts {
    fn new(hosts: &[&str], up: &[&str]) -> Hosts {
        let repo = TestRepo::new();
        let scratch = repo.scratch();
        let homes = scratch.join("hosts");
        for h in up {
            std::fs::create_dir_all(homes.join(h)).unwrap();
        }
        let ssh = fake_ssh(&scratch);
        let list: Vec<String> = hosts.iter().map(|h| format!("\"{h}\"")).collect();
        repo.write(
            ".orchestra/config.toml",
            &format!(
                "[executor.ssh]\nhosts = [{}]\nslots = 1\nssh_command = \"{}\"\n",
                list.join(", "),
                ssh.display()
            ),
        );
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "executor config"]);
        repo.trust();
        let env = vec![
            ("FAKE_HOSTS".to_string(), homes.display().to_string()),
            ("PATH".to_string(), path_with_binary()),
        ];
        Hosts { repo, homes, env }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        orchestra_with_env(&self.repo.path, args, &env)
    }

    /// Runs `plan` with `worker` on the hosts (`--executor ssh`), then `extra` arguments.
    fn run_plan(&self, plan: &Path, worker: &str, extra: &[&str]) -> std::process::Output {
        let mut args = vec![
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--executor",
            "ssh",
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

#[test]
fn packets_run_on_hosts_come_back_as_branches_with_trailers_and_merge() {
    let hosts = Hosts::new(&["h1", "h2"], &["h1", "h2"]);
    let repo = &hosts.repo;
    let plan = three_packets(repo, "Remote outputs");
    let check = hosts.run(&["plan", "check", plan.to_str().unwrap(), "--executor", "ssh"]);
    assert!(check.status.success(), "{}", text(&check));
    let shown = String::from_utf8_lossy(&check.stdout);
    assert!(
        shown.contains("runs on: ssh")
            && shown.contains("h1 (1 slot)")
            && shown.contains("h2 (1 slot)"),
        "{shown}"
    );
    let out = hosts.run_plan(&plan, WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let run = v["run"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["run"]["state"], "completed", "{}", text(&out));
    // Each packet's branch came back with the engine's commit and trailers.
    for p in ["a", "b", "c"] {
        let branch = format!("orchestra/{run}/{p}");
        let message = repo.git(&["log", "-1", "--format=%B", &branch]);
        assert!(
            message.contains(&format!("Orchestra-Packet: {p}")),
            "{message}"
        );
        assert!(
            message.contains(&format!("Orchestra-Run: {run}")),
            "{message}"
        );
        assert_eq!(
            repo.git(&["log", "-1", "--format=%an", &branch]),
            "git-orchestra"
        );
        let file = repo.git(&["show", &format!("{branch}:out-{p}.txt")]);
        assert_eq!(file, format!("done by {p}"));
        // The events came back in their ref, and the packet's worktree was never made here.
        let events = repo.git(&[
            "cat-file",
            "blob",
            &format!("refs/orchestra/events/{run}/{p}"),
        ]);
        assert!(events.contains("\"outcome\":\"passed\""), "{events}");
        assert!(
            !Path::new(
                v["packets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["id"] == p)
                    .unwrap()["worktree"]
                    .as_str()
                    .unwrap()
            )
            .exists()
        );
    }
    assert_dependencies_reached_the_host(&hosts, &run);
    // `c` started from the merge of its dependencies' work, which travelled with its job.
    let c = format!("orchestra/{run}/c");
    assert_eq!(repo.git(&["show", &format!("{c}:out-a.txt")]), "done by a");
    assert_eq!(repo.git(&["show", &format!("{c}:out-b.txt")]), "done by b");
    // Merged into main.
    for p in ["a", "b", "c"] {
        assert_eq!(
            repo.git(&["show", &format!("main:out-{p}.txt")]),
            format!("done by {p}")
        );
    }
    // The hosts' work is journaled and shown: where each packet ran, its commit, its checks.
    let placed: Vec<String> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{}@{}",
                h["packet"].as_str().unwrap(),
                h["host"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(placed.len(), 3, "{placed:?}");
    assert!(
        placed
            .iter()
            .all(|p| p.ends_with("@h1") || p.ends_with("@h2")),
        "{placed:?}"
    );
    let status = hosts.run(&["status"]);
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(shown.contains("HOST") && shown.contains("(ssh)"), "{shown}");
    assert_hosts_hold_the_branches(&hosts, &run);
}

/// Asserts that `c`'s packet file on its host says what its dependencies did, as a local one
/// would.
fn assert_dependencies_reached_the_host(hosts: &Hosts, run: &str) {
    let c_file = ["h1", "h2"]
        .iter()
        .map(|h| {
            hosts.homes.join(h).join(format!(
                ".cache/git-orchestra/remote/orchestra/runs/{run}/c/packet.json"
            ))
        })
        .find(|p| p.exists())
        .expect("c's packet file on a host");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(c_file).unwrap()).unwrap();
    let deps = file["dependencies"].as_str().unwrap_or_default();
    assert!(deps.contains("`a`") && deps.contains("out-a.txt"), "{file}");
    assert!(deps.contains("`b`") && deps.contains("out-b.txt"), "{file}");
}

/// Asserts that the hosts' bare repositories hold the branches they pushed.
fn assert_hosts_hold_the_branches(hosts: &Hosts, run: &str) {
    let on_host: Vec<String> = ["h1", "h2"]
        .iter()
        .flat_map(|h| {
            let dir = hosts.homes.join(h).join(".cache/git-orchestra/remote");
            git(
                &dir,
                &["for-each-ref", "--format=%(refname)", "refs/heads/"],
            )
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
        })
        .collect();
    for p in ["a", "b", "c"] {
        assert!(
            on_host.contains(&format!("refs/heads/orchestra/{run}/{p}")),
            "{on_host:?}"
        );
    }
}

#[test]
fn packet_exec_again_finds_its_result_and_does_not_redo_the_work() {
    let hosts = Hosts::new(&["h1"], &["h1"]);
    let repo = &hosts.repo;
    let plan = packet_a(repo, "Once");
    let counter = repo.scratch().join("count");
    let worker = format!("echo x >> {}; {WORKER}", counter.display());
    repo.scratch_writable();
    let out = hosts.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let remote = hosts.homes.join("h1/.cache/git-orchestra/remote");
    let branch = format!("refs/heads/orchestra/{run}/a");
    let tip = git(&remote, &["rev-parse", &branch]);
    let again = orchestra_with_env(
        &remote,
        &["packet", "exec", &run, "a", "--remote", "."],
        &[("PATH", &path_with_binary())],
    );
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("passed (worked before)"),
        "{}",
        text(&again)
    );
    assert_eq!(git(&remote, &["rev-parse", &branch]), tip);
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap().lines().count(),
        1
    );
    // A packet that has no job there is refused with what is missing.
    let none = orchestra(&remote, &["packet", "exec", &run, "zz", "--remote", "."]);
    assert!(!none.status.success());
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no job for packet `zz`"),
        "{}",
        text(&none)
    );
}

#[test]
fn a_host_that_is_down_leaves_its_packets_to_the_others() {
    let hosts = Hosts::new(&["down", "h2"], &["h2"]);
    let repo = &hosts.repo;
    let plan = three_packets(repo, "Remote outputs");
    let out = hosts.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed");
    for h in v["hosts"].as_array().unwrap() {
        assert_eq!(h["host"], "h2", "{v}");
    }
    let run = v["run"]["id"].as_str().unwrap();
    assert!(
        !repo
            .git(&["rev-parse", &format!("orchestra/{run}/c")])
            .is_empty()
    );
}

#[test]
fn the_ssh_executor_without_hosts_or_worker_command_is_refused_before_anything_changes() {
    let repo = TestRepo::new();
    let plan = three_packets(&repo, "Remote outputs");
    let before = refs(&repo.path);
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        WORKER,
        "--executor",
        "ssh",
    ];
    let out = orchestra(&repo.path, &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[executor.ssh] hosts"),
        "{}",
        text(&out)
    );
    assert_eq!(refs(&repo.path), before);
    repo.write(
        ".orchestra/config.toml",
        "[executor]\nkind = \"ssh\"\n[executor.ssh]\nhosts = [\"h1\"]\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "config"]);
    repo.trust();
    let before = refs(&repo.path);
    // Configured as the default without a worker command, our agents work the packets on
    // the hosts: a model profile is needed for them.
    let out = orchestra(&repo.path, &["run", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no model profile"),
        "{}",
        text(&out)
    );
    assert_eq!(refs(&repo.path), before);
    let out = orchestra(&repo.path, &["status", "--json"]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("remote-outputs"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_failed_validation_on_a_host_goes_back_to_the_worker_there_as_a_fix_round() {
    let hosts = Hosts::new(&["h1"], &["h1"]);
    let repo = &hosts.repo;
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Fix it\"\n\n{}",
            packet("a", "\"out-a.txt\"", "", "\"grep -q fixed out-a.txt\"")
        ),
    );
    // Wrong at first; right once it is told what to fix.
    let worker = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ] && grep -q 'grep -q fixed' "$ORCHESTRA_FIXES_FILE"; then echo fixed > out-a.txt; else echo wrong > out-a.txt; fi"#;
    let out = hosts.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fix round 1 runs on ssh host h1"),
        "{}",
        text(&out)
    );
    let run = run_id(&repo.path);
    let branch = format!("orchestra/{run}/a");
    assert_eq!(repo.git(&["show", &format!("{branch}:out-a.txt")]), "fixed");
    // The rejected commit was replaced, not kept under the fix.
    let base = repo.git(&["rev-parse", "main"]);
    assert_eq!(
        repo.git(&["rev-list", "--count", &format!("{base}..{branch}")]),
        "1"
    );
}

#[test]
fn a_coordinator_killed_while_a_packet_runs_elsewhere_resumes_without_working_it_again() {
    let hosts = Hosts::new(&["h1"], &["h1"]);
    let repo = &hosts.repo;
    let plan = packet_a(repo, "Once only");
    repo.scratch_writable();
    let counter = repo.scratch().join("count");
    let worker = format!("echo x >> {}; {WORKER}", counter.display());
    // Killed right after journaling the host's first events (run started, packet started,
    // dispatched, worktree ready, worker started): the host finished, the import did not.
    let mut env: Vec<(&str, &str)> = hosts
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    env.push(("ORCHESTRA_CRASH_AFTER_EVENTS", "5"));
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        &worker,
        "--executor",
        "ssh",
    ];
    let out = orchestra_with_env(&repo.path, &args, &env);
    assert_eq!(out.status.signal_or_code(), Some(-9), "{}", text(&out));
    let out = hosts.run(&["resume"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed");
    let run = v["run"]["id"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/a:out-a.txt")]),
        "done by a"
    );
    // The worker ran once: the resumed coordinator took the result the host had pushed.
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap().lines().count(),
        1
    );
}

trait SignalOrCode {
    fn signal_or_code(&self) -> Option<i32>;
}

impl SignalOrCode for std::process::ExitStatus {
    fn signal_or_code(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.signal().map(|s| -s).or(self.code())
    }
}

#[test]
fn packet_exec_with_a_repository_of_its_own_fetches_the_job_and_pushes_the_results_back() {
    let hosts = Hosts::new(&["h1"], &["h1"]);
    let repo = &hosts.repo;
    let plan = packet_a(repo, "Elsewhere");
    let out = hosts.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let remote = hosts.homes.join("h1/.cache/git-orchestra/remote");
    // The remote keeps the job and the start; its results are taken away, so the job is
    // worked again, this time in a repository of its own that fetches from the remote.
    let events = format!("refs/orchestra/events/{run}/a");
    let branch = format!("refs/heads/orchestra/{run}/a");
    git(&remote, &["update-ref", "-d", &events]);
    git(&remote, &["update-ref", "-d", &branch]);
    let work = repo.scratch().join("elsewhere");
    let out = orchestra_with_env(
        &repo.scratch(),
        &[
            "packet",
            "exec",
            &run,
            "a",
            "--remote",
            remote.to_str().unwrap(),
            "--repo",
            work.to_str().unwrap(),
        ],
        &[("PATH", &path_with_binary())],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("packet a passed"),
        "{}",
        text(&out)
    );
    // Pushed back: the branch with the engine's commit, and the events with the result.
    let tip = git(&remote, &["rev-parse", &branch]);
    assert_eq!(
        git(&remote, &["show", &format!("{tip}:out-a.txt")]),
        "done by a"
    );
    let message = git(&remote, &["log", "-1", "--format=%B", &tip]);
    assert!(message.contains("Orchestra-Packet: a"), "{message}");
    let lines = git(&remote, &["cat-file", "blob", &events]);
    assert!(lines.contains("\"outcome\":\"passed\""), "{lines}");
    assert!(lines.contains("\"type\":\"packet_committed\""), "{lines}");
    assert_eq!(git(&work, &["rev-parse", &branch]), tip);
}

#[test]
fn a_packet_from_a_host_that_conflicts_at_the_merge_is_left_on_its_branch_with_the_way_to_resolve_it()
 {
    let hosts = Hosts::new(&["h1"], &["h1"]);
    let repo = &hosts.repo;
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Same file\"\n\n{}{}",
            packet("a", "\"README.md\"", "", ""),
            packet("b", "\"README.md\"", "", ""),
        ),
    );
    let worker = r#"echo "by $ORCHESTRA_PACKET" > README.md"#;
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        worker,
        "--executor",
        "ssh",
        "--merge",
    ];
    let out = hosts.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    let run = run_id(&repo.path);
    // One landed; the other stays on its branch, and the report says how to resolve it.
    let main = repo.git(&["show", "main:README.md"]);
    let (landed, left) = if main == "by a" {
        ("a", "b")
    } else {
        ("b", "a")
    };
    assert_eq!(main, format!("by {landed}"));
    let branch = format!("orchestra/{run}/{left}");
    assert_eq!(
        repo.git(&["show", &format!("{branch}:README.md")]),
        format!("by {left}")
    );
    assert!(
        all.contains(&format!("resolve on branch {branch} by hand")),
        "{all}"
    );
}

#[test]
fn without_a_worker_command_our_agents_work_the_packet_on_the_host() {
    let hosts = Hosts::new(&["h1"], &["h1"]);
    let repo = &hosts.repo;
    let scripts = serde_json::json!([
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "out-a.txt", "content": "by our agent\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote out-a.txt"}}]}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let plan = packet_a(repo, "Agents on hosts");
    let mut env: Vec<(&str, &str)> = hosts
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    env.extend([
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ]);
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--executor",
            "ssh",
            "--merge",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/a:out-a.txt")]),
        "by our agent"
    );
    assert_eq!(repo.git(&["show", "HEAD:out-a.txt"]), "by our agent");
    // Our agent worked it on the host: the events the host sent back say so.
    let all = text(&out);
    assert!(all.contains("runs on ssh host h1"), "{all}");
    let events = repo.git(&[
        "cat-file",
        "blob",
        &format!("refs/orchestra/events/{run}/a"),
    ]);
    assert!(events.contains("agent:coder"), "{events}");
}
