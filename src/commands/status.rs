//! `git orchestra status`: runs and their packets, from the run store.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::store::{AgentUsage, Event, PacketRecord, RunRecord, Store};
use serde::Serialize;

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
    /// Print the report of a `start` run (written when it ends).
    #[arg(long, conflicts_with_all = ["json", "watch"])]
    report: bool,
}

#[derive(Serialize)]
struct RunView<'a> {
    run: &'a RunRecord,
    packets: &'a [PacketRecord],
}

/// Prints the status of a run (and a line for each other run).
pub fn cmd_status(cwd: &Path, args: &StatusArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    if args.report {
        return print_report(&repo, args.run.as_deref());
    }
    loop {
        let Some(store) = Store::open_existing(&repo.common_dir).map_err(CommandError::internal)?
        else {
            if let Some(id) = &args.run {
                return Err(CommandError::user(format!(
                    "no run `{id}` in this repository (no runs yet)"
                )));
            }
            if args.json {
                println!("{{\"runs\":[]}}");
            } else {
                println!(
                    "no runs yet; start one with `git orchestra run <plan.toml> --worker-cmd '…'`"
                );
            }
            return Ok(());
        };
        let runs = store.runs().map_err(CommandError::internal)?;
        let chosen = match &args.run {
            Some(id) => Some(store.require_run(id).map_err(CommandError::user)?),
            None => runs.first().cloned(),
        };
        let Some(run) = chosen else {
            let planning = super::start::planning_runs(&repo, &runs);
            if planning.is_empty() {
                println!("no runs yet");
            }
            for (id, (phase, objective)) in planning {
                println!("run {id} ({objective}) is {phase}");
            }
            return Ok(());
        };
        let packets = store.packets(&run.id).map_err(CommandError::internal)?;
        let agents = store.agent_usage(&run.id).map_err(CommandError::internal)?;
        if args.json {
            let view = RunView {
                run: &run,
                packets: &packets,
            };
            let others: Vec<&RunRecord> = runs.iter().filter(|r| r.id != run.id).collect();
            let value = serde_json::json!({ "run": view.run, "packets": view.packets, "agents": agents, "other_runs": others });
            println!(
                "{}",
                serde_json::to_string_pretty(&value).map_err(CommandError::internal)?
            );
            return Ok(());
        }
        let mut out = String::new();
        render(&mut out, &run, &packets);
        render_agents(&mut out, &agents);
        render_scheduling_notes(&mut out, &store, &run.id)?;
        let lines = super::start::status_lines(&repo, &run.id);
        if !lines.is_empty() {
            out.push_str(&format!("\n{}\n", lines.join("\n")));
        }
        for (id, (phase, objective)) in super::start::planning_runs(&repo, &runs) {
            out.push_str(&format!("\nrun {id} ({objective}) is {phase}\n"));
        }
        let others: Vec<&RunRecord> = runs.iter().filter(|r| r.id != run.id).collect();
        if !others.is_empty() {
            out.push_str("\nother runs:\n");
            for r in others {
                out.push_str(&format!("  {:<12} {}\n", r.state.as_str(), r.id));
            }
        }
        if args.watch {
            // Clear the screen and home the cursor, then redraw.
            print!("\x1b[2J\x1b[H{out}");
            let _ = std::io::stdout().flush();
            if run.state.is_finished() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_secs(1));
        } else {
            print!("{out}");
            return Ok(());
        }
    }
}

/// Appends why packets sharing files ran side by side, and edits found outside declared
/// symbols.
fn render_scheduling_notes(out: &mut String, store: &Store, run: &str) -> Result<(), CommandError> {
    let mut lines = Vec::new();
    for kind in ["packets_share_files", "scope_finding"] {
        for e in store
            .events_of_kind(run, kind)
            .map_err(CommandError::internal)?
        {
            match e.event {
                Event::PacketsShareFiles { note, .. } => lines.push(format!("parallel  {note}")),
                Event::ScopeFinding {
                    packet,
                    file,
                    lines: changed,
                    declared,
                } => lines.push(format!(
                    "finding   {packet} changed {file} lines {changed} outside its declared symbols ({})",
                    declared.join(", ")
                )),
                _ => {}
            }
        }
    }
    if !lines.is_empty() {
        out.push_str(&format!("\n{}\n", lines.join("\n")));
    }
    Ok(())
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

fn cost(c: Option<f64>) -> String {
    c.map_or_else(|| "-".to_string(), |c| format!("{c:.6}"))
}
/// Prints the saved report of `run` (default: the newest `start` run).
fn print_report(repo: &RepoInfo, run: Option<&str>) -> Result<(), CommandError> {
    let run = super::pause::pick(repo, run)?;
    let path = git_orchestra::exec::run_dir(&repo.common_dir, &run).join("report.md");
    match fs_err::read_to_string(&path) {
        Ok(text) => {
            print!("{text}");
            Ok(())
        }
        Err(_) => Err(CommandError::user(format!("run {run} has no report yet"))
            .hint("the report is written when the run completes; `git orchestra status` shows its phase")),
    }
}
