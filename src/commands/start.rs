//! `git orchestra start "<objective>"`: the whole job — clarify, plan, review the plan, approve
//! it, execute the packets, integrate them, report.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use git_orchestra::agent::AgentWorker;
use git_orchestra::config::RepoConfig;
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{
    self, Approval, Interaction, PublishSettings, StartError, StartOutcome, StartRequest,
    StartSettings, WorkflowState,
};
use git_orchestra::run::{Run, RunRef};
use git_orchestra::store::Event;

use super::CommandError;
use super::progress;

/// Takes an objective to merged work: clarify, plan, review, approve, execute, integrate,
/// report.
///
/// A clarifier resolves ambiguity (or records assumptions), a planner writes a plan of packets from the repository map, a reviewer checks
/// it, you approve it (or pass --yes), agents do the packets in parallel worktrees, the merge
/// coordinator integrates them (with --merge), and a report says what happened.
///
/// Starting the same objective again resumes its run instead of duplicating it.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// What the run must achieve, in words.
    objective: String,
    /// Approve the plan without asking.
    #[arg(long, short)]
    yes: bool,
    /// Integrate the succeeded packets and advance the target branch at the end.
    #[arg(long)]
    merge: bool,
    /// With --merge: afterwards, the docs role documents the integrated change (a packet on
    /// the target branch, integrated like the others). Default: `[start] docs` in config.
    #[arg(long, requires = "merge")]
    docs: bool,
    /// With --merge: afterwards, the tester role tests the integrated change (a packet on the
    /// target branch, integrated like the others). Default: `[start] tests` in config.
    #[arg(long, requires = "merge")]
    tests: bool,
    /// Skip the clarification phase (also `[start] clarify = false` in config).
    #[arg(long)]
    no_clarify: bool,
    /// Run this command (`sh -c`, in each packet's worktree) instead of our agents.
    #[arg(long, value_name = "COMMAND")]
    worker_cmd: Option<String>,
    /// An agent CLI that works every packet instead of our agents (planning and review stay
    /// ours): claude, codex, gemini, opencode, qwen, or an [agents.cli.<name>].
    #[arg(long, value_name = "NAME", conflicts_with = "worker_cmd")]
    agent: Option<String>,
    /// Where packets run: `local` (worktrees beside the repository), `ssh` (the hosts of
    /// `[executor.ssh]`) or `github-actions` (one workflow run per packet); default
    /// `[executor] kind`, else local. Kept with the run.
    #[arg(long, value_enum, value_name = "KIND")]
    executor: Option<super::executor::ExecutorArg>,
    /// Most workers running at once, packets and their candidates together (default: the
    /// plan's, else 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    max_parallel: Option<u16>,
    /// Longest a worker or validation command may run, in seconds (default 3600).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    timeout: Option<u64>,
    /// With --merge: the branch to advance; with --pr: the branch stacks target (default: the
    /// current branch).
    #[arg(long, value_name = "BRANCH")]
    target: Option<String>,
    /// Where packet worktrees go (default: <repo-parent>/.orchestra/<repo-name>).
    #[arg(long, value_name = "DIR")]
    worktree_root: Option<PathBuf>,
    /// Stop cleanly once the run's model calls used this many tokens (input + output).
    #[arg(long, value_name = "N")]
    budget_tokens: Option<u64>,
    /// Stop cleanly once the run cost this much (in the currency of `[prices]`).
    #[arg(long, value_name = "AMOUNT")]
    budget_cost: Option<f64>,
    /// Stop cleanly once the run has taken this many seconds.
    #[arg(long, value_name = "SECS")]
    budget_secs: Option<u64>,
    /// Stop cleanly once a role used this many tokens, e.g. `coder=200000` (repeatable).
    #[arg(long, value_name = "ROLE=N", value_parser = role_budget)]
    budget_role: Vec<(String, u64)>,
    /// Afterwards, open or update one pull request per succeeded packet, stacked by
    /// dependency, each with its section of the report (`git orchestra pr`); `--pr=local`
    /// only writes them as Markdown files in the run's state directory.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "auto", conflicts_with = "merge")]
    pr: Option<super::pr::PrMode>,
    /// With --pr: the remote to push to (default: orchestra.forge.remote, else origin).
    #[arg(long, value_name = "NAME", requires = "pr")]
    remote: Option<String>,
    /// With --pr: then follow the pull requests until they are merged, closed or wait for a
    /// person (`git orchestra land`; `[land]` settings apply).
    #[arg(long, requires = "pr")]
    land: bool,
    /// Print only the report.
    #[arg(long, short)]
    quiet: bool,
    /// Serve the web view of this run while it runs (as `git orchestra ui --no-open`); the
    /// plan then waits for approval on the page.
    #[arg(long)]
    ui: bool,
    #[command(flatten)]
    listen: super::ui::ListenArgs,
}

fn role_budget(text: &str) -> Result<(String, u64), String> {
    let (role, n) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not ROLE=N, e.g. coder=200000"))?;
    let n = n
        .trim()
        .parse()
        .map_err(|_| format!("`{n}` in `{text}` is not a whole number of tokens"))?;
    Ok((role.trim().to_string(), n))
}

/// The terminal side of a `start` run.
pub struct Terminal {
    pub quiet: bool,
    /// Agents waiting for their model, said every so often (none when quiet).
    waits: Option<progress::Waits>,
}

impl Terminal {
    /// Returns the terminal side; `quiet` prints only questions, the plan and the report.
    pub fn new(quiet: bool) -> Terminal {
        Terminal {
            quiet,
            waits: (!quiet).then(progress::Waits::start),
        }
    }
}

impl Interaction for Terminal {
    fn interactive(&self) -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }

    fn ask(&self, question: &str) -> Option<String> {
        eprint!("? {question}\n> ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok()?;
        Some(line.trim().to_string()).filter(|l| !l.is_empty())
    }

    fn approve(&self, plan_toml: &str, problems: &[String]) -> Approval {
        eprintln!("\n{plan_toml}");
        for p in problems {
            eprintln!("problem: {p}");
        }
        loop {
            eprint!("[a]pprove, [e]dit in $EDITOR, [s]end back with feedback, [r]eject? ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return Approval::Reject;
            }
            match line.trim() {
                "a" | "approve" | "y" | "yes" => return Approval::Approve,
                "r" | "reject" | "n" | "no" => return Approval::Reject,
                "s" | "send" | "f" | "feedback" => {
                    match self.ask("What should the planner change? (one line)") {
                        Some(feedback) => return Approval::Revise(feedback),
                        None => eprintln!("no feedback given; the plan still waits"),
                    }
                }
                "e" | "edit" => match edit(plan_toml) {
                    Ok(text) => return Approval::Edited(text),
                    Err(e) => eprintln!("cannot edit: {e}"),
                },
                _ => {}
            }
        }
    }

    fn progress(&self, line: &str) {
        if !self.quiet {
            eprintln!("{}", git_orchestra::redact::terminal_safe(line));
        }
    }

    fn engine_event(&self, _run: &str, event: &Event) {
        if let Some(waits) = &self.waits {
            waits.observe(event);
        }
        if !self.quiet
            && let Some(line) = progress::line(event)
        {
            eprintln!("{line}");
        }
    }
}

/// The terminal with the web view beside it (`start --ui`): the plan waits for approval on
/// the page.
struct WithPage {
    terminal: Terminal,
    live: std::sync::Arc<crate::web::Live>,
    stop: &'static std::sync::atomic::AtomicBool,
}

impl Interaction for WithPage {
    fn interactive(&self) -> bool {
        true
    }

    fn ask(&self, question: &str) -> Option<String> {
        self.terminal
            .interactive()
            .then(|| self.terminal.ask(question))
            .flatten()
    }

    fn approve(&self, plan_toml: &str, problems: &[String]) -> Approval {
        self.terminal
            .progress("the plan waits for approval on the web view (approve, edit or reject)");
        self.live.wait_for_approval(plan_toml, problems, &|| {
            self.stop.load(std::sync::atomic::Ordering::SeqCst)
        })
    }

    fn progress(&self, line: &str) {
        self.terminal.progress(line);
    }

    fn engine_event(&self, run: &str, event: &Event) {
        self.terminal.engine_event(run, event);
    }
}

/// Opens `text` in `$VISUAL`/`$EDITOR` (default `vi`) and returns what the user saved.
fn edit(text: &str) -> std::io::Result<String> {
    let dir = tempfile_dir()?;
    let path = dir.join("plan.toml");
    fs_err::write(&path, text)?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "{editor} exited with {status}"
        )));
    }
    let out = fs_err::read_to_string(&path)?;
    let _ = fs_err::remove_dir_all(&dir);
    Ok(out)
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("git-orchestra-edit-{}", std::process::id()));
    fs_err::create_dir_all(&dir)?;
    Ok(dir)
}

/// Refuses soft thresholds no run can reach sensibly: a cost or token count of zero or less.
fn check_soft_budget(budget: &git_orchestra::config::BudgetConfig) -> Result<(), CommandError> {
    let bad = match (budget.ask_at_cost, budget.ask_at_tokens) {
        (Some(c), _) if !(c.is_finite() && c > 0.0) => Some(("ask_at_cost", c.to_string())),
        (_, Some(0)) => Some(("ask_at_tokens", "0".to_string())),
        _ => None,
    };
    match bad {
        Some((key, value)) => Err(CommandError::user(format!(
            "`[budget] {key}` is {value}: a soft threshold must be above 0"
        ))
        .hint("set it to a positive number in .orchestra/config.toml, or remove it")),
        None => Ok(()),
    }
}

/// Refuses a `[best_of] n` that is no number of candidates when `[start] best_of` would use it.
fn check_best_of(config: &RepoConfig) -> Result<(), CommandError> {
    if config.start.best_of.is_none() {
        return Ok(());
    }
    config
        .best_of
        .risky_candidates()
        .map(|_| ())
        .map_err(|e| CommandError::user(e).hint("fix `[best_of] n` in .orchestra/config.toml"))
}

/// Refuses `[start] best_of` when packets run on another executor (`executor` is `None` for
/// local): candidates run only on the local one, and the plan is not made yet.
fn check_best_of_executor(
    config: &RepoConfig,
    executor: Option<git_orchestra::config::ExecutorKind>,
) -> Result<(), CommandError> {
    let (Some(kind), Some(mode)) = (executor, config.start.best_of) else {
        return Ok(());
    };
    if mode == git_orchestra::plan::BestOfMode::All(1) {
        return Ok(());
    }
    Err(CommandError::user(format!(
        "`[start] best_of` gives packets candidates, but candidates run only on the local executor, not {}",
        kind.as_str()
    ))
    .hint("start with --executor local, or remove `[start] best_of` from .orchestra/config.toml to run each packet elsewhere once"))
}

/// Runs `start`.
pub fn cmd_start(cwd: &Path, args: &StartArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    if args.objective.trim().is_empty() {
        return Err(CommandError::user("the objective is empty").hint(
            "say what the run must achieve, e.g. git orchestra start \"Add rate limiting\"",
        ));
    }
    check_soft_budget(&config.budget)?;
    check_best_of(&config)?;
    let executor = super::executor::for_start(&repo, &config, args.executor)?;
    check_best_of_executor(&config, executor)?;
    orchestrator::routing::checked_workers(&config).map_err(|e| {
        CommandError::user(e).hint("list configured profiles (or their models, or agent CLIs as `cli:<name>`) in `[routing] workers`, cheapest first, or set `mode = \"off\"`")
    })?;
    let settings = StartSettings {
        yes: args.yes,
        merge: args.merge,
        clarify: !args.no_clarify && config.start.clarify != Some(false),
        worker_cmd: args.worker_cmd.clone(),
        agent: args.agent.clone(),
        max_parallel: config.max_parallel(args.max_parallel),
        budget: orchestrator::budget::Budget {
            tokens: args.budget_tokens,
            cost: args.budget_cost,
            secs: args.budget_secs,
            role_tokens: args.budget_role.iter().cloned().collect(),
        },
        // The configured finishing phases apply to merged runs, like their flags.
        docs: args.docs || (args.merge && config.start.docs == Some(true)),
        tests: args.tests || (args.merge && config.start.tests == Some(true)),
        publish: args.pr.map(|mode| PublishSettings {
            local: mode == super::pr::PrMode::Local,
            remote: args.remote.clone(),
            target: args.target.clone(),
            land: args.land,
        }),
        executor,
    };
    preflight(&repo, &config, &settings)?;
    let req = StartRequest {
        objective: args.objective.trim().to_string(),
        settings,
        timeout: config.timeout(args.timeout),
        worktree_root: config.worktree_root(args.worktree_root.as_deref(), cwd),
        setup: config.worktree.setup.clone(),
        target: args.target.clone(),
        crash_after_events: crash_after_events(),
        crash_after_steps: std::env::var(orchestrator::fault::ENV)
            .ok()
            .and_then(|v| v.parse().ok()),
        answer_wait: Duration::from_secs(3600),
        fix_rounds: config.fix_rounds(),
    };
    let web = match args.ui {
        true => {
            let live = std::sync::Arc::new(crate::web::Live::default());
            super::ui::start_view(&repo, &args.listen, live.clone())?;
            Some(live)
        }
        false => None,
    };
    run_start(&repo, &config, &req, args.quiet, web)
}

/// Returns the engine's crash-injection setting from `ORCHESTRA_CRASH_AFTER_EVENTS`.
pub fn crash_after_events() -> Option<u64> {
    std::env::var("ORCHESTRA_CRASH_AFTER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// Checks that the roles the planning phases need have model profiles, before anything is
/// written, so a missing profile is one clear error.
pub fn preflight(
    repo: &RepoInfo,
    config: &RepoConfig,
    settings: &StartSettings,
) -> Result<(), CommandError> {
    let worker = AgentWorker::in_repo(repo, config.clone())
        .map_err(|e| CommandError::user(e).hint("fix the agent file named above"))?;
    super::agent_cli::cli_worker(repo, config, settings.agent.as_deref())?;
    let mut roles = vec!["planner"];
    if settings.clarify {
        roles.push("clarifier");
    }
    worker.check(roles).map_err(|e| {
        CommandError::user(e).hint(
            "configure a model profile (see `git orchestra agents`), or try the offline `git orchestra demo`",
        )
    })
}

/// Drives the run and prints its report; maps the outcome to the exit code. A completed run
/// started with `--pr` then opens (or updates) one pull request per succeeded packet, each
/// with its section of the report, and journals where they are; a resumed run that had not
/// published yet publishes now (publication is idempotent: pull requests are found by head).
pub fn run_start(
    repo: &RepoInfo,
    config: &RepoConfig,
    req: &StartRequest,
    quiet: bool,
    web: Option<std::sync::Arc<crate::web::Live>>,
) -> Result<(), CommandError> {
    let stop = git_orchestra::exec::install_signal_handlers();
    let terminal = Terminal::new(quiet);
    let notifier = super::notify::Notifier::start(&repo.common_dir, config);
    let outcome = match web {
        Some(live) => {
            let ui = WithPage {
                terminal,
                live,
                stop,
            };
            orchestrator::start(repo, config, req, &ui, stop)
        }
        None => orchestrator::start(repo, config, req, &terminal, stop),
    };
    if let Some(n) = notifier {
        n.finish();
    }
    let outcome = outcome.map_err(start_error)?;
    let finished = finish(&outcome);
    // A completed run may have failed packets; the succeeded ones still get pull requests.
    if outcome.state != WorkflowState::Completed {
        return finished;
    }
    let Some(publish) = outcome.publish.clone() else {
        return finished;
    };
    orchestrator::fault::point("publish");
    let notes = git_orchestra::run::report_notes(outcome.report.as_ref());
    let mode = if publish.local {
        super::pr::PrMode::Local
    } else {
        super::pr::PrMode::Auto
    };
    let published = super::pr::publish_report(
        repo,
        &outcome.run,
        mode,
        publish.remote.as_deref(),
        publish.target.as_deref().or(req.target.as_deref()),
        notes,
    )
    .and_then(|report| {
        print!("{}", super::pr::render(&report));
        Run::open(repo, RunRef::Id(outcome.run.clone()))
            .and_then(|run| run.record_published(&report))
            .map_err(super::lifecycle_error)
    });
    if publish.land && finished.is_ok() && published.is_ok() {
        if publish.local {
            return Err(CommandError::user(
                "--land needs the pull requests on a forge; drop --pr=local",
            ));
        }
        // The same phase as `run --pr --land` and `git orchestra land`.
        return super::land::run_land(
            repo,
            config,
            &outcome.run,
            publish.remote.as_deref(),
            false,
            false,
        );
    }
    finished.and(published)
}

/// Prints the outcome's report and returns the exit status it deserves.
pub fn finish(outcome: &StartOutcome) -> Result<(), CommandError> {
    if let Some(report) = &outcome.report {
        print!(
            "{}",
            git_orchestra::redact::terminal_safe(&orchestrator::report::render(report))
        );
        if let Some(path) = &outcome.report_path {
            eprintln!("report saved to {}", path.display());
        }
    }
    let run = &outcome.run;
    match outcome.state {
        WorkflowState::Completed
            if outcome
                .report
                .as_ref()
                .is_some_and(|r| r.packets.iter().all(|p| p.state == "succeeded")) =>
        {
            Ok(())
        }
        WorkflowState::Completed => Err(CommandError::failed(format!(
            "run {run} completed, but not every packet succeeded; see the report"
        ))),
        WorkflowState::Cancelled => Err(CommandError::failed(format!("run {run} was cancelled"))),
        WorkflowState::Failed => Err(CommandError::failed(format!(
            "run {run} stopped before the end; its work is kept and the report says what remains"
        ))
        .hint(
            "fix the cause (e.g. raise the budget) and run the same `git orchestra start` again",
        )),
        state => Err(CommandError::interrupted(format!(
            "run {run} is {state}; `git orchestra resume {run}` continues it"
        ))),
    }
}

/// Maps orchestrator errors to the CLI's kinds.
pub fn start_error(e: StartError) -> CommandError {
    match e {
        StartError::Repo(e) => e.into(),
        StartError::Engine(e) => super::engine_error(e),
        e @ (StartError::NeedsApproval { .. }
        | StartError::Roles(_)
        | StartError::RetryRefused(_)
        | StartError::Routing(_)
        | StartError::AgentCli(_)) => CommandError::user(e),
        StartError::Lock(e) => CommandError::user(e),
        e @ (StartError::PlanInvalid { .. } | StartError::Ask { .. }) => CommandError::failed(e)
            .hint("`git orchestra start` with the same objective (or `resume`) retries from this phase"),
        e => CommandError::internal(e),
    }
}

/// Drives a `start` run on with `req`, the request the library rebuilt from its journal, with
/// this process's fault injection for crash tests.
pub fn drive_start(
    repo: &RepoInfo,
    config: &RepoConfig,
    mut req: StartRequest,
    quiet: bool,
) -> Result<(), CommandError> {
    req.crash_after_events = crash_after_events();
    req.crash_after_steps = std::env::var(orchestrator::fault::ENV)
        .ok()
        .and_then(|v| v.parse().ok());
    run_start(repo, config, &req, quiet, None)
}
