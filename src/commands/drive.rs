//! Drives a run in the terminal: progress lines on stderr while it executes, the final status
//! on stdout, and the exit code its state maps to. `run`, `agent` and `resume` share it.

use git_orchestra::config::RepoConfig;
use git_orchestra::engine::{self, Control, Summary};
use git_orchestra::git::RepoInfo;
use git_orchestra::status;
use git_orchestra::store::{RunState, Store};

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
    let stop = git_orchestra::exec::install_signal_handlers();
    let store = Store::open(&repo.common_dir).map_err(CommandError::internal)?;
    let has_cmd = store
        .require_run(run_id)
        .map_err(CommandError::internal)?
        .worker_cmd
        .is_some();
    drop(store);
    let worker = if has_cmd {
        None
    } else {
        Some(agent_worker(repo, config)?)
    };
    let mut model = super::review::model_reviewer(
        repo,
        false,
        "fix the reviewer's profile (`git orchestra agents` shows where it comes from)",
    )?;
    if let (Some(m), Some(w)) = (model.as_mut(), worker.as_ref()) {
        m.share_gates(w.gates());
    }
    let review = model.as_ref().map(|m| engine::PacketReview {
        reviewer: m,
        max_rounds: engine::DEFAULT_FIX_ROUNDS,
    });
    let printer = progress::printer(quiet || json);
    let crash_after_events = std::env::var("ORCHESTRA_CRASH_AFTER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok());
    let ctl = Control {
        stop,
        on_event: &printer,
        setup: config.worktree.setup.clone(),
        crash_after_events,
        review: review.as_ref(),
        fix_rounds: config.fix_rounds(),
        retries: config.retries(),
    };
    let worker_ref = worker.as_ref().map(|w| w as &dyn engine::Worker);
    let summary: Summary =
        engine::execute_with(repo, run_id, &ctl, worker_ref).map_err(engine_error)?;
    print_final(repo, run_id, json, summary.state)
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
        super::status::render_agents(&mut out, &status.agents);
        print!("{out}");
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
