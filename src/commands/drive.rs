//! Drives a run in the terminal: progress lines on stderr while it executes, the final status
//! on stdout, and the exit code its state maps to. `run`, `agent` and `resume` share it. An
//! agent's question is asked at the terminal when there is one; `git orchestra answer` from
//! another shell answers it too.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use git_orchestra::agent::Person;
use git_orchestra::config::RepoConfig;
use git_orchestra::engine::{self, Control, Summary};
use git_orchestra::git::RepoInfo;
use git_orchestra::status;
use git_orchestra::store::RunState;

use super::{CommandError, agent_worker, engine_error, progress};

/// Executes a run with progress on stderr and the summary on stdout; maps the outcome to the
/// exit code (0 completed, 1 failed, 130 interrupted).
pub fn drive(
    repo: &RepoInfo,
    run_id: &str,
    config: &RepoConfig,
    quiet: bool,
    json: bool,
) -> Result<(), CommandError> {
    drive_once_ready(repo, run_id, config, (quiet, json), || Ok(()))
}

/// Drives a run like [`drive`], calling `ready` once everything is set up, just before the
/// engine starts: what the caller left running meanwhile (`run`'s status of the checkout)
/// ends there.
pub fn drive_once_ready(
    repo: &RepoInfo,
    run_id: &str,
    config: &RepoConfig,
    (quiet, json): (bool, bool),
    ready: impl FnOnce() -> Result<(), CommandError>,
) -> Result<(), CommandError> {
    let stop = git_orchestra::exec::install_signal_handlers();
    let has_cmd = super::open_run(repo, Some(run_id))?
        .record()
        .map_err(super::lifecycle_error)?
        .is_some_and(|r| r.worker_cmd.is_some());
    let forced = super::agent_cli::chosen(repo, run_id);
    let kind = super::executor::kind_of(repo, config, Some(run_id));
    let crew =
        git_orchestra::crew::Crew::assemble(repo, config, forced.as_deref(), Some(kind), has_cmd)
            .map_err(|e| super::executor::crew_error(e, kind))?;
    let worker = if has_cmd {
        None
    } else {
        let person: Arc<dyn Person> = Arc::new(TerminalPerson::new());
        Some(agent_worker(repo, config)?.with_person(person, &repo.common_dir))
    };
    let mut model = super::review::model_reviewer(
        repo,
        false,
        "fix the reviewer's profile (`git orchestra agents` shows where it comes from)",
    )?;
    if let (Some(m), Some(w)) = (model.as_mut(), worker.as_ref()) {
        m.share_gates(w.gates());
    }
    // `[roles.reviewer] agent` reviews packets with that agent CLI; else the role's model.
    let review = crew.review(
        model
            .as_ref()
            .map(|m| m as &(dyn git_orchestra::gate::Reviewer + Sync)),
    );
    let printer = progress::printer(quiet || json);
    let crash_after_events = std::env::var("ORCHESTRA_CRASH_AFTER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok());
    let sandboxes =
        git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
    // Integrates a run asked to be merged (`run --merge`) once its packets are final.
    let integrator = git_orchestra::merge::phase::RunIntegrator::new(sandboxes.clone());
    let ctl = Control {
        stop,
        on_event: &printer,
        setup: config.worktree.setup.clone(),
        sparse: config.sparse_worktrees(),
        sandboxes,
        crash_after_events,
        review: review.as_ref(),
        fix_rounds: config.fix_rounds(),
        retries: config.retries(),
        executor: crew.executor(),
        integrator: Some(&integrator),
        arms: config.best_of.arms.clone().unwrap_or_default(),
        tests: config.eval.test.clone(),
        tester: engine::Tester::from_config(&config.best_of),
        park_early: None,
    };
    // Roles with an agent CLI (all of them with --agent) go to it, the others to our agents.
    let workers = crew.workers(worker.as_ref().map(|w| w as &dyn engine::Worker));
    ready()?;
    let notifier = super::notify::Notifier::start(&repo.common_dir, config);
    let summary = engine::execute_with(repo, run_id, &ctl, workers.worker()).map_err(engine_error);
    if let Some(n) = notifier {
        n.finish();
    }
    let summary: Summary = summary?;
    let shown = print_final(repo, run_id, json, summary.state);
    // The integration asked of the run (`run --merge`) ran in the engine: its report follows.
    match integrator.take() {
        Some(Ok(report)) => shown.and(super::merge::show_report(&report, json)),
        Some(Err(e)) => Err(super::merge::merge_error(e)
            .hint("the run stays unfinished: `git orchestra resume` integrates it again")),
        None => shown,
    }
}

/// Prints the run's final status (JSON or the table) and maps its state to the exit code.
pub fn print_final(
    repo: &RepoInfo,
    run_id: &str,
    json: bool,
    state: RunState,
) -> Result<(), CommandError> {
    let config = super::load_config(repo)?;
    let price = |model: &str| config.price(model);
    let status =
        status::of_run(&repo.common_dir, run_id, &price).map_err(CommandError::internal)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&status).map_err(CommandError::internal)?
        );
    } else {
        let mut out = String::new();
        super::status::render(&mut out, &status.run, &status.packets);
        super::status::render_failure(&mut out, status.failure.as_ref());
        super::status::render_hosts(&mut out, &status.hosts);
        super::status::render_agents(&mut out, &status.agents);
        super::status::render_spend(&mut out, &status);
        print!("{}", git_orchestra::redact::terminal_safe(&out));
    }
    match state {
        RunState::Completed => Ok(()),
        RunState::Interrupted => Err(CommandError::interrupted(format!(
            "run {run_id} interrupted; `git orchestra resume` continues it"
        ))),
        _ => Err(CommandError::failed(format!(
            "run {run_id} {}: see the packets above; their work stays on their branches",
            state.as_str()
        ))),
    }
}

/// The person running the command, answering agents' questions at the terminal: lines typed
/// on a terminal stdin go to the question shown last. Without a terminal nothing is typed and
/// questions wait for `git orchestra answer`.
struct TerminalPerson {
    /// Lines read from stdin by a reader thread, when stdin and stderr are terminals.
    lines: Option<Mutex<Receiver<String>>>,
    /// The packet whose question was shown last: typed lines answer it.
    shown: Mutex<Option<String>>,
}

impl TerminalPerson {
    fn new() -> TerminalPerson {
        let lines =
            (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then(|| {
                let (tx, rx) = std::sync::mpsc::channel();
                // Blocked in read_line for as long as the process lives; it ends with it.
                std::thread::spawn(move || {
                    for line in std::io::stdin().lock().lines() {
                        let Ok(line) = line else { break };
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                });
                Mutex::new(rx)
            });
        TerminalPerson {
            lines,
            shown: Mutex::new(None),
        }
    }
}

impl Person for TerminalPerson {
    fn show(&self, packet: &str, question: &str) {
        if self.lines.is_none() {
            return;
        }
        *self.shown.lock().unwrap_or_else(|p| p.into_inner()) = Some(packet.to_string());
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "? [{packet}] {question}\n  type the answer and press Enter (or run `git orchestra answer {packet} \"…\"` in another shell)\n> "
        );
        let _ = err.flush();
    }

    fn typed(&self, packet: &str, wait: Duration) -> Option<String> {
        let shown = self
            .shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
            == Some(packet);
        let Some(lines) = self.lines.as_ref().filter(|_| shown) else {
            std::thread::sleep(wait);
            return None;
        };
        let rx = lines.lock().unwrap_or_else(|p| p.into_inner());
        match rx.recv_timeout(wait) {
            Ok(line) if !line.trim().is_empty() => Some(line.trim().to_string()),
            Ok(_) => None,
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                drop(rx);
                std::thread::sleep(wait);
                None
            }
        }
    }
}
