//! `git orchestra status`: runs and their packets, from the run store.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::status::{
    self, Failure, Note, OpenQuestion, Overview, PlanningStatus, RunKind, RunListing, RunStatus,
    Spend, StartStatus, StatusError,
};
use git_orchestra::store::{AgentUsage, PacketRecord, RunRecord, StoreError};

use super::CommandError;
use super::progress::short;

/// Shows runs and the state of their packets.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The run to show; default: the newest run.
    run: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Refresh every second until the run finishes (Ctrl-C to stop watching).
    #[arg(long, conflicts_with = "json")]
    watch: bool,
    /// Show where each packet's time went: milliseconds per pipeline phase (worktree, setup,
    /// worker, commit, validation, checks, review, integration) and the run's sum per phase.
    #[arg(long, conflicts_with_all = ["json", "report", "all"])]
    timings: bool,
    /// Print the report of a `start` run (written when it ends).
    #[arg(long, conflicts_with_all = ["json", "watch"])]
    report: bool,
    /// List every run — `run`/`agent` and `start` runs — with its state, whether a process
    /// drives it now, and what to do next.
    #[arg(long, conflicts_with_all = ["run", "watch", "report"])]
    all: bool,
}

/// Prints the status of a run (and a line for each other run).
pub fn cmd_status(cwd: &Path, args: &StatusArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if args.report {
        return print_report(&repo, args.run.as_deref());
    }
    if args.all {
        let runs = status::all_runs(&repo.common_dir).map_err(CommandError::internal)?;
        if args.json {
            return print_json(&serde_json::json!({ "runs": runs }));
        }
        print!(
            "{}",
            git_orchestra::redact::terminal_safe(&render_all(&runs))
        );
        return Ok(());
    }
    let config = super::load_config(&repo)?;
    let price = |model: &str| config.price(model);
    loop {
        let overview = match status::overview(&repo.common_dir, args.run.as_deref(), &price) {
            Ok(o) => o,
            Err(StatusError::Store(e @ StoreError::UnknownRun { .. })) => {
                return Err(CommandError::user(e));
            }
            Err(e) => return Err(CommandError::internal(e)),
        };
        let (out, finished) = match overview {
            Overview::Run(status) if args.json => {
                print_json(&status)?;
                return Ok(());
            }
            Overview::Planning(status) if args.json => {
                print_json(&status)?;
                return Ok(());
            }
            Overview::NoRun if args.json => {
                println!("{{\"runs\":[]}}");
                return Ok(());
            }
            Overview::NoRun => {
                println!(
                    "no runs yet; start one with `git orchestra start \"<objective>\"` or `git orchestra run <plan.toml>`"
                );
                return Ok(());
            }
            Overview::Run(status) => {
                let mut out = render_status(&status);
                if args.timings {
                    render_timings(&mut out, &status);
                }
                (out, status.run.state.is_finished())
            }
            Overview::Planning(status) => (render_planning(&status), false),
        };
        if args.watch {
            // Clear the screen and home the cursor, then redraw.
            print!(
                "\x1b[2J\x1b[H{}",
                git_orchestra::redact::terminal_safe(&out)
            );
            let _ = std::io::stdout().flush();
            if finished {
                return Ok(());
            }
            std::thread::sleep(Duration::from_secs(1));
        } else {
            print!("{}", git_orchestra::redact::terminal_safe(&out));
            return Ok(());
        }
    }
}

fn print_json(value: &impl serde::Serialize) -> Result<(), CommandError> {
    println!(
        "{}",
        serde_json::to_string_pretty(value).map_err(CommandError::internal)?
    );
    Ok(())
}

/// Returns the human status of a `start` run that has no packets yet.
fn render_planning(status: &PlanningStatus) -> String {
    let p = &status.planning;
    let mut out = format!(
        "run {} ({}) is {}; it has no packets yet\n",
        p.id, p.objective, p.state
    );
    if let Some(start) = &status.start {
        out.push_str(&format!("\n{}\n", start_lines(start).join("\n")));
    }
    render_others(&mut out, &status.other_runs);
    out
}

/// Returns the table of every run: id, kind, state, start time, whether a process drives it,
/// and the command that moves it on.
fn render_all(runs: &[RunListing]) -> String {
    if runs.is_empty() {
        return "no runs yet; start one with `git orchestra start \"<objective>\"` or `git orchestra run <plan.toml>`\n".to_string();
    }
    let id_w = runs.iter().map(|r| r.id.len()).max().unwrap_or(2).max(2);
    let state_w = runs.iter().map(|r| r.state.len()).max().unwrap_or(5).max(5);
    let mut out = format!(
        "{:<id_w$}  {:<5}  {:<state_w$}  {:<20}  {:<6}  NEXT\n",
        "RUN", "KIND", "STATE", "STARTED", "DRIVEN"
    );
    for r in runs {
        let kind = match r.kind {
            RunKind::Run => "run",
            RunKind::Start => "start",
        };
        let started = git_orchestra::gate::rfc3339_utc(r.started_ms.div_euclid(1000));
        let driven = if r.driven { "yes" } else { "no" };
        let next = r.next.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "{:<id_w$}  {kind:<5}  {:<state_w$}  {started:<20}  {driven:<6}  {next}\n",
            r.id, r.state
        ));
    }
    out
}

fn render_others(out: &mut String, others: &[RunRecord]) {
    if !others.is_empty() {
        out.push_str("\nother runs:\n");
        for r in others {
            out.push_str(&format!("  {:<12} {}\n", r.state.as_str(), r.id));
        }
    }
}

/// Returns the whole human status of a run: table, agents, notes, its `start` lines, what
/// else is planning, the other runs.
fn render_status(status: &RunStatus) -> String {
    let mut out = String::new();
    render(&mut out, &status.run, &status.packets);
    // A `start` run's own failure says it best; an engine run says why its packets failed.
    if status.start.as_ref().is_none_or(|s| s.failure.is_none()) {
        render_failure(&mut out, status.failure.as_ref());
    }
    render_hosts(&mut out, &status.hosts);
    let candidates = git_orchestra::status::candidate_lines(&status.candidates);
    if !candidates.is_empty() {
        out.push_str(&format!("\ncandidates\n{}\n", candidates.join("\n")));
    }
    render_landing(&mut out, &status.landing);
    render_agents(&mut out, &status.agents);
    render_spend(&mut out, status);
    render_notes(&mut out, &status.notes);
    if !status.questions.is_empty() {
        let lines: Vec<String> = status.questions.iter().map(question_line).collect();
        out.push_str(&format!("\n{}\n", lines.join("\n")));
    }
    if let Some(start) = &status.start {
        out.push_str(&format!("\n{}\n", start_lines(start).join("\n")));
    }
    for p in &status.planning {
        out.push_str(&format!(
            "\nrun {} ({}) is {}\n",
            p.id, p.objective, p.state
        ));
    }
    render_others(&mut out, &status.other_runs);
    out
}

/// Appends where each pull request stood at `land`'s last look: its state and what it waits
/// for since when, its address, checks, reviews, mergeability and fix rounds.
fn render_landing(out: &mut String, landing: &[git_orchestra::land::PrLanding]) {
    let Some(first) = landing.first() else {
        return;
    };
    let now = git_orchestra::exec::now_ms();
    let settled = landing.iter().all(|p| p.state != "open");
    out.push_str(match (first.followed, settled) {
        (true, _) => "\npull requests (git orchestra land follows them now):\n",
        (false, true) => "\npull requests (git orchestra land):\n",
        (false, false) => {
            "\npull requests (git orchestra land is not running; run it again to go on following them):\n"
        }
    });
    for p in landing {
        let mut lines = p.lines(now).into_iter();
        out.push_str(&format!("  {}\n", lines.next().unwrap_or_default()));
        for l in lines {
            out.push_str(&format!("      {l}\n"));
        }
    }
}

/// Appends why packets sharing files ran side by side, and edits found outside declared
/// symbols.
fn render_notes(out: &mut String, notes: &[Note]) {
    let lines: Vec<String> = notes
        .iter()
        .map(|n| match n {
            Note::Parallel { note } => format!("parallel  {note}"),
            Note::Finding {
                packet,
                file,
                lines,
                declared,
            } => format!(
                "finding   {packet} changed {file} lines {lines} outside its declared symbols ({})",
                declared.join(", ")
            ),
        })
        .collect();
    if !lines.is_empty() {
        out.push_str(&format!("\n{}\n", lines.join("\n")));
    }
}

/// Returns the lines a `start` run adds: phase, tokens and cost spent, pull requests, limits,
/// subtasks and the questions agents wait on.
fn start_lines(s: &StartStatus) -> Vec<String> {
    let mut out = vec![if s.parent_of_phase {
        format!("phase     {} (of start run {})", s.state, s.run)
    } else {
        format!("phase     {}", s.state)
    }];
    if let Some(outcome) = &s.outcome {
        out.push(format!("outcome   {outcome}"));
    }
    if let Some(f) = &s.failure {
        out.extend(failure_lines(f));
    }
    out.extend(spend_lines(&s.spend));
    out.extend(
        s.prs
            .iter()
            .map(|(packet, at)| format!("pr        {packet}: {at}")),
    );
    out.extend(s.limits.iter().map(|t| format!("limit     {t}")));
    let now = git_orchestra::exec::now_ms();
    out.extend(
        s.model_calls
            .iter()
            .map(|c| format!("model     {}", c.line(now))),
    );
    out.extend(s.subtasks.iter().map(|t| format!("subtask   {t}")));
    out.extend(s.routing.iter().map(|t| format!("routing   {t}")));
    out.extend(s.questions.iter().map(question_line));
    out
}

/// Returns the lines of a run's tokens and cost, as the one accounting gives them: no cost
/// line when no model has a price.
fn spend_lines(spend: &Spend) -> Vec<String> {
    let mut out = vec![format!(
        "tokens    {} in / {} out over {} model calls",
        spend.input_tokens, spend.output_tokens, spend.calls
    )];
    if let Some(cost) = spend.cost {
        let partial = if spend.partial {
            " (models without a price not counted)"
        } else {
            ""
        };
        out.push(format!("cost      ${cost:.4}{partial}"));
    }
    out
}

/// Appends a `run`/`agent` run's tokens and cost (a `start` run's are among its own lines),
/// or nothing when it made no model call.
pub fn render_spend(out: &mut String, status: &RunStatus) {
    if status.start.is_none() && status.spend.calls > 0 {
        out.push_str(&format!("\n{}\n", spend_lines(&status.spend).join("\n")));
    }
}

/// Returns the lines that say why a run failed and what continues it.
fn failure_lines(f: &Failure) -> Vec<String> {
    let mut lines: Vec<String> = f
        .reason
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{}{l}", if i == 0 { "reason    " } else { "          " }))
        .collect();
    lines.push(format!("next      {}", f.next));
    lines
}

/// Appends why the run failed and what continues it, or nothing when it did not fail.
pub fn render_failure(out: &mut String, failure: Option<&Failure>) {
    if let Some(f) = failure {
        out.push_str(&format!("\n{}\n", failure_lines(f).join("\n")));
    }
}

/// Returns the status line of a question an agent waits on, with the command that answers it.
fn question_line(q: &OpenQuestion) -> String {
    format!(
        "question  {}: {}  (git orchestra answer {} \"…\")",
        q.packet, q.question, q.packet
    )
}

/// Appends a run's header and packet table to `out`.
pub fn render(out: &mut String, run: &RunRecord, packets: &[PacketRecord]) {
    out.push_str(&format!("run       {}\n", run.id));
    out.push_str(&format!("objective {}\n", run.objective));
    out.push_str(&format!("base      {}\n", short(&run.base)));
    out.push_str(&format!("state     {}\n\n", run.state.as_str()));
    let width = packets.iter().map(|p| p.id.len()).max().unwrap_or(6).max(6);
    out.push_str(&format!(
        "{:<width$}  {:<11}  {:<10}  {}\n",
        "PACKET", "STATE", "COMMIT", "DETAIL"
    ));
    for p in packets {
        let state = match (p.state.as_str(), p.phase) {
            ("running", Some(phase)) => format!("running:{}", phase.as_str()),
            (s, _) => s.to_string(),
        };
        let commit = p.commit.as_deref().map(short).unwrap_or("-");
        let detail = p
            .reason
            .as_deref()
            .and_then(|r| r.lines().next())
            .map(str::to_string)
            .unwrap_or_else(|| p.branch.clone());
        out.push_str(&format!(
            "{:<width$}  {state:<11}  {commit:<10}  {detail}\n",
            p.id
        ));
    }
}

/// Appends where packets ran on an executor's hosts, or nothing when all ran here.
pub fn render_hosts(out: &mut String, hosts: &[git_orchestra::status::PacketHost]) {
    if hosts.is_empty() {
        return;
    }
    let width = hosts
        .iter()
        .map(|h| h.packet.len())
        .max()
        .unwrap_or(6)
        .max(6);
    out.push_str(&format!("\n{:<width$}  HOST\n", "PACKET"));
    for h in hosts {
        out.push_str(&format!(
            "{:<width$}  {} ({})\n",
            h.packet, h.host, h.executor
        ));
    }
}

/// Appends the agents' activity to `out` — per packet and role, then totals per role — or
/// nothing when no agent worked in the run.
pub fn render_agents(out: &mut String, agents: &[AgentUsage]) {
    if agents.is_empty() {
        return;
    }
    let width = agents
        .iter()
        .map(|a| a.packet.len())
        .max()
        .unwrap_or(6)
        .max(6);
    out.push_str(&format!(
        "\n{:<width$}  {:<10}  {:<17}  {:>5}  {:>17}  {:>10}  {:>11}  {:>7}\n",
        "AGENT", "ROLE", "STATE", "CALLS", "TOKENS IN/OUT", "COST", "TOOLS (ERR)", "RETRIES"
    ));
    for a in agents {
        out.push_str(&format!(
            "{:<width$}  {:<10}  {:<17}  {:>5}  {:>17}  {:>10}  {:>11}  {:>7}\n",
            a.packet,
            a.role,
            a.state,
            a.model_calls,
            format!("{}/{}", a.input_tokens, a.output_tokens),
            cost(a.cost()),
            format!("{} ({})", a.tool_calls, a.tool_errors),
            a.retries + a.fallbacks,
        ));
        // A running agent CLI's latest note: what it did last and for how long it has run.
        if a.state == "running"
            && let Some(note) = a.reason.as_deref().and_then(|r| r.lines().next())
            && !note.is_empty()
        {
            let note = git_orchestra::redact::clip(note, 200);
            out.push_str(&format!(
                "{:<width$}  └ {}\n",
                "",
                git_orchestra::redact::terminal_safe(&note)
            ));
        }
    }
    let mut roles: std::collections::BTreeMap<&str, (u64, u64, u64, Option<f64>)> =
        std::collections::BTreeMap::new();
    for a in agents {
        let t = roles.entry(a.role.as_str()).or_default();
        t.0 += a.model_calls;
        t.1 += a.input_tokens;
        t.2 += a.output_tokens;
        if let Some(c) = a.cost() {
            t.3 = Some(t.3.unwrap_or(0.0) + c);
        }
    }
    out.push_str("by role:\n");
    for (role, (calls, input, output, c)) in roles {
        out.push_str(&format!(
            "  {role:<10}  {calls} calls  {input}/{output} tokens  cost {}\n",
            cost(c)
        ));
    }
}

/// Appends one line per packet with its milliseconds per phase, and the run's sum per phase.
fn render_timings(out: &mut String, status: &RunStatus) {
    let line = |durations: &git_orchestra::store::PhaseDurations| {
        let parts: Vec<String> = durations
            .iter()
            .map(|(phase, ms)| format!("{} {ms} ms", phase.as_str()))
            .collect();
        if parts.is_empty() {
            "-".to_string()
        } else {
            parts.join(" · ")
        }
    };
    out.push_str(
        "
timings
",
    );
    for p in &status.packets {
        out.push_str(&format!(
            "  {}  {}
",
            p.id,
            line(&p.timings)
        ));
    }
    out.push_str(&format!(
        "  total  {}
",
        line(&status.phase_totals)
    ));
}

fn cost(c: Option<f64>) -> String {
    c.map_or_else(|| "-".to_string(), |c| format!("{c:.6}"))
}
/// Prints the saved report of `run` (default: the newest `start` run).
fn print_report(repo: &RepoInfo, run: Option<&str>) -> Result<(), CommandError> {
    let opened = super::pause::open_start(repo, run, "has a report")?;
    let run = opened.id();
    match opened.report() {
        Some(text) => {
            print!("{}", git_orchestra::redact::terminal_safe(&text));
            Ok(())
        }
        None => Err(CommandError::user(format!("run {run} has no report yet"))
            .hint("the report is written when the run completes; `git orchestra status` shows its phase")),
    }
}
