//! The final report of a `start` run, built from the workflow journal and the run store:
//! objective, outcome, per-packet changes and validation evidence, review findings, risks,
//! assumptions, learnings, next steps, tokens and cost per role and model, wall time per phase.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::start_journal::{Entry, WorkflowEvent};
use super::workflow::WorkflowState;
use orchestra_core::config::Price;
use orchestra_core::store::{Event, JournalEntry, PacketRecord};

/// One validation command's result.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    pub command: String,
    pub exit_code: Option<i32>,
    pub ms: u64,
}

/// One packet's part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct PacketReport {
    pub id: String,
    pub title: String,
    pub role: String,
    pub state: String,
    pub changed: Vec<String>,
    pub validation: Vec<Evidence>,
    pub summary: String,
    /// The packet's subtasks: id, state and summary, one line each.
    pub subtasks: Vec<String>,
}

/// Tokens and cost of one role on one model.
#[derive(Debug, Clone, Serialize)]
pub struct UsageLine {
    pub role: String,
    pub model: String,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost: Option<f64>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub run: String,
    pub objective: String,
    pub outcome: String,
    pub state: WorkflowState,
    /// Why the run failed, in full, when it did (the headline gives its first line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub packets: Vec<PacketReport>,
    pub review_findings: Vec<String>,
    pub risks: Vec<String>,
    pub requirements: Vec<String>,
    pub assumptions: Vec<String>,
    pub learnings: Vec<String>,
    pub integration: Vec<String>,
    /// Model limits met on the way: concurrency changes after rate limits, consultations.
    pub agents: Vec<String>,
    /// Which worker `[routing]` gave each packet and why, and each escalation after a
    /// rejected fix round.
    pub routing: Vec<String>,
    pub next_steps: Vec<String>,
    pub usage: Vec<UsageLine>,
    pub phases: Vec<(String, u64)>,
    /// Milliseconds per packet pipeline phase (worktree, worker, validation, …), summed over
    /// the run's packets.
    pub packet_phases: orchestra_core::store::PhaseDurations,
    pub wall_ms: u64,
}

/// What the report is built from.
pub struct Sources<'a> {
    pub run: &'a str,
    pub objective: &'a str,
    pub state: WorkflowState,
    pub workflow: &'a [Entry],
    pub packets: &'a [PacketRecord],
    pub events: &'a [JournalEntry],
    pub plan: Option<&'a orchestra_core::plan::Plan>,
    /// Tokens and cost per role and model, from the one accounting (`spend::lines`).
    pub usage: &'a [super::spend::SpendLine],
    pub price: &'a dyn Fn(&str) -> Option<Price>,
    pub advice: Vec<String>,
    pub now_ms: i64,
    /// True when the run promised to integrate its packets and advance the target branch
    /// (`--merge`): a packet counts as landed only once it is there.
    pub merge: bool,
}

/// Builds the report.
pub fn build(s: &Sources<'_>) -> Report {
    let mut engine = engine_facts(s.events);
    let flow = workflow_facts(s, &mut engine.integration);
    let packets = packet_reports(s, &mut engine, flow.summaries, flow.subtasks);
    let reason = (s.state == WorkflowState::Failed)
        .then(|| failure_reason(s.workflow))
        .flatten();
    let mut next_steps = next_steps(s, &packets, &flow.assumptions);
    if reason.is_some() {
        next_steps.insert(0, continue_step(s.run));
    }
    Report {
        run: s.run.to_string(),
        objective: s.objective.to_string(),
        outcome: outcome(s.state, &packets, reason.as_deref()),
        state: s.state,
        reason,
        packets,
        review_findings: flow
            .findings
            .into_iter()
            .chain(engine.packet_findings)
            .collect(),
        risks: risks(s.plan),
        requirements: flow.requirements,
        assumptions: flow.assumptions,
        // Agents restate what they learned on every fix round; each lesson is listed once.
        learnings: dedup_keep_order(flow.learnings),
        integration: engine.integration,
        agents: flow.agents,
        routing: flow.routing,
        next_steps,
        usage: usage_lines(s),
        phases: flow.phases,
        packet_phases: orchestra_core::store::phase_totals(
            orchestra_core::engine::timings::packet_timings(s.events).values(),
        ),
        wall_ms: (s.now_ms - flow.start_ms).max(0) as u64,
    }
}

/// What the report takes from the engine's journal.
#[derive(Default)]
struct EngineFacts<'a> {
    changed: BTreeMap<&'a str, Vec<String>>,
    evidence: BTreeMap<&'a str, Vec<Evidence>>,
    integration: Vec<String>,
    packet_findings: Vec<String>,
    /// Packets merged into the integration branch whose merge has not advanced the target yet.
    integrated: BTreeSet<&'a str>,
    /// Packets whose merge advanced the target branch.
    landed: BTreeSet<&'a str>,
    /// Why a packet was kept out of the integration branch, the latest reason.
    kept_out: BTreeMap<&'a str, String>,
}

/// Collects changed files, validation evidence, packet review findings and integration notes
/// from the engine's events.
fn engine_facts(events: &[JournalEntry]) -> EngineFacts<'_> {
    let mut f = EngineFacts::default();
    for e in events {
        match &e.event {
            Event::PacketCommitted {
                packet, changed: c, ..
            } => {
                f.changed.insert(packet, c.clone());
            }
            Event::ValidationFinished {
                packet,
                command,
                exit_code,
                duration_ms,
                ..
            } => f.evidence.entry(packet).or_default().push(Evidence {
                command: command.clone(),
                exit_code: *exit_code,
                ms: *duration_ms,
            }),
            Event::PacketReviewed {
                packet,
                reviewer,
                approved: false,
                round,
                findings,
                ..
            } => f.packet_findings.extend(findings.iter().map(|x| {
                let when = match round {
                    0 => String::new(),
                    r => format!(" after fix round {r}"),
                };
                format!("{packet} rejected by {reviewer}{when}: {x}")
            })),
            other => {
                f.integration.extend(integration_note(other));
                f.track_landing(other);
            }
        }
    }
    f
}

impl<'a> EngineFacts<'a> {
    /// Follows a packet from the integration branch to the target branch.
    fn track_landing(&mut self, event: &'a Event) {
        match event {
            Event::PacketIntegrated { packet, .. } => {
                self.kept_out.remove(packet.as_str());
                self.integrated.insert(packet);
            }
            Event::PacketSentBack { packet, reason } => {
                self.integrated.remove(packet.as_str());
                self.kept_out.insert(packet, reason.clone());
            }
            Event::MergeFinished {
                target_advanced: true,
                ..
            } => self.landed.append(&mut self.integrated),
            _ => {}
        }
    }
}

/// Returns the integration section's line for an engine event, if it has one.
fn integration_note(event: &Event) -> Option<String> {
    Some(match event {
        Event::PacketConflicted { packet, paths } => format!(
            "{packet} conflicted with the integration branch in {}",
            paths.join(", ")
        ),
        Event::MergeValidationFinished {
            packets,
            command,
            exit_code,
            ..
        } => format!(
            "merged tree with {}: `{command}` exit {}",
            packets.join(", "),
            exit_code.map_or("none".into(), |c| c.to_string())
        ),
        Event::PacketSentBack { packet, reason } => format!("{packet} sent back: {reason}"),
        Event::PacketsShareFiles { note, .. } => note.clone(),
        Event::ScopeFinding {
            packet,
            file,
            lines,
            ..
        } => format!(
            "{packet} changed {file} lines {lines} outside its declared symbols (commit kept)"
        ),
        Event::MergeFinished {
            integration: branch,
            commit,
            integrated,
            target_advanced,
            target_moved,
            ..
        } => format!(
            "{branch} at {} with {}; target {}",
            &commit[..commit.len().min(10)],
            if integrated.is_empty() {
                "nothing new".to_string()
            } else {
                integrated.join(", ")
            },
            match (target_advanced, target_moved) {
                (true, Some(false)) => "unchanged",
                (true, _) => "advanced",
                (false, _) => "not advanced",
            }
        ),
        _ => return None,
    })
}

/// What the report takes from the workflow journal.
#[derive(Default)]
struct WorkflowFacts<'a> {
    summaries: BTreeMap<&'a str, String>,
    subtasks: BTreeMap<&'a str, Vec<String>>,
    agents: Vec<String>,
    routing: Vec<String>,
    findings: Vec<String>,
    requirements: Vec<String>,
    assumptions: Vec<String>,
    learnings: Vec<String>,
    phases: Vec<(String, u64)>,
    start_ms: i64,
}

/// Collects summaries, subtasks, plan findings, requirements, learnings, agent notes and the
/// time spent per phase from the workflow journal; conflict resolutions go to `integration`.
fn workflow_facts<'a>(s: &Sources<'a>, integration: &mut Vec<String>) -> WorkflowFacts<'a> {
    let mut f = WorkflowFacts {
        start_ms: s.workflow.first().map_or(s.now_ms, |e| e.ts_ms),
        ..WorkflowFacts::default()
    };
    let mut last: Option<(WorkflowState, i64)> = None;
    for e in s.workflow {
        match &e.event {
            WorkflowEvent::Transition { to, .. } => {
                if let Some((state, since)) = last {
                    add_phase(&mut f.phases, state, (e.ts_ms - since).max(0) as u64);
                }
                last = Some((*to, e.ts_ms));
            }
            WorkflowEvent::PlanReviewed {
                round, findings, ..
            } => f
                .findings
                .extend(findings.iter().map(|x| format!("plan review {round}: {x}"))),
            WorkflowEvent::Clarified {
                requirements,
                assumptions,
                answers,
                ..
            } => {
                f.requirements = requirements.clone();
                f.assumptions = assumptions.clone();
                f.requirements
                    .extend(answers.iter().map(|(q, a)| format!("{q} — {a}")));
            }
            WorkflowEvent::PacketReport {
                packet,
                summary,
                learnings,
                ..
            } => {
                f.summaries.insert(packet, summary.clone());
                f.learnings
                    .extend(learnings.iter().map(|x| format!("{packet}: {x}")));
            }
            WorkflowEvent::SubtaskFinished {
                parent,
                child,
                state,
                summary,
                ..
            } => f.subtasks.entry(parent).or_default().push(format!(
                "{child} ({state}, branch {}): {summary}",
                orchestra_sys::names::packet_branch(s.run, child)
            )),
            WorkflowEvent::ConcurrencyChanged { text, .. } => f.agents.push(text.clone()),
            WorkflowEvent::Routed { text, .. } | WorkflowEvent::Escalated { text, .. } => {
                f.routing.push(text.clone())
            }
            WorkflowEvent::Consulted {
                packet,
                asker,
                role,
                question,
                ..
            } => f.agents.push(format!(
                "{packet}: {} consulted {role}: {question}",
                asker.last().map_or("agent", String::as_str)
            )),
            WorkflowEvent::ConflictResolved { packet, paths, .. } => integration.push(format!(
                "{packet}: conflicts in {} resolved by its agent",
                paths.join(", ")
            )),
            _ => {}
        }
    }
    if let Some((state, since)) = last
        && state.is_active()
    {
        add_phase(&mut f.phases, state, (s.now_ms - since).max(0) as u64);
    }
    f
}

/// Returns each packet's part of the report.
fn packet_reports(
    s: &Sources<'_>,
    engine: &mut EngineFacts<'_>,
    summaries: BTreeMap<&str, String>,
    mut subtasks: BTreeMap<&str, Vec<String>>,
) -> Vec<PacketReport> {
    s.packets
        .iter()
        .map(|p| {
            let mut state = p.state.as_str().to_string();
            let mut summary = summaries
                .get(p.id.as_str())
                .cloned()
                .or_else(|| p.reason.clone())
                .unwrap_or_default();
            // With --merge a packet is done only once its work is on the target branch.
            if s.merge && state == "succeeded" && !engine.landed.contains(p.id.as_str()) {
                let why = match engine.kept_out.get(p.id.as_str()) {
                    Some(reason) => format!("sent back by the merge: {reason}"),
                    None if engine.integrated.contains(p.id.as_str()) => {
                        "integrated, but the target branch was not advanced".to_string()
                    }
                    None => "never integrated".to_string(),
                };
                state = "not_landed".to_string();
                summary = format!(
                    "{why}; its work is on branch {} (fix it there, then `git orchestra merge {}`)",
                    p.branch, s.run
                );
            }
            PacketReport {
                id: p.id.clone(),
                title: p.title.clone(),
                role: p.role.clone(),
                state,
                changed: engine
                    .changed
                    .get(p.id.as_str())
                    .cloned()
                    .unwrap_or_default(),
                validation: engine.evidence.remove(p.id.as_str()).unwrap_or_default(),
                summary,
                subtasks: subtasks.remove(p.id.as_str()).unwrap_or_default(),
            }
        })
        .collect()
}

/// Returns the plan's risks, each prefixed with its packet.
fn risks(plan: Option<&orchestra_core::plan::Plan>) -> Vec<String> {
    plan.map(|plan| {
        plan.packets
            .iter()
            .flat_map(|p| p.risks.iter().map(move |r| format!("{}: {r}", p.id)))
            .collect()
    })
    .unwrap_or_default()
}

/// Returns why the `start` run whose journal is `workflow` failed: the reason of its latest
/// move to `failed`, or `None` when it never failed.
pub fn failure_reason(workflow: &[Entry]) -> Option<String> {
    workflow.iter().rev().find_map(|e| match &e.event {
        WorkflowEvent::Transition {
            to: WorkflowState::Failed,
            reason,
            ..
        } => Some(reason.clone()),
        _ => None,
    })
}

/// Returns the command that continues the failed `start` run `run`.
pub fn continue_command(run: &str) -> String {
    format!("git orchestra resume {run}")
}

/// Returns the next step of a failed run: fix the cause, then continue it.
fn continue_step(run: &str) -> String {
    format!(
        "fix the cause above, then `{}` continues the run where it stopped (its paid work is kept)",
        continue_command(run)
    )
}

/// Returns the headline: the run's state, why it failed when it did, and how many packets
/// succeeded.
fn outcome(state: WorkflowState, packets: &[PacketReport], reason: Option<&str>) -> String {
    let ok = packets.iter().filter(|p| p.state == "succeeded").count();
    match state {
        WorkflowState::Completed if !packets.is_empty() && ok == packets.len() => {
            format!("completed: all {ok} packets succeeded")
        }
        WorkflowState::Completed => format!(
            "completed with failures: {ok} of {} packets {}",
            packets.len(),
            if packets.iter().any(|p| p.state == "not_landed") {
                "landed"
            } else {
                "succeeded"
            }
        ),
        WorkflowState::Failed if reason.is_some() => {
            let why = reason.and_then(|r| r.lines().next()).unwrap_or_default();
            let why = orchestra_sys::redact::clip(why.trim(), 300);
            if packets.is_empty() {
                format!("failed: {why}")
            } else {
                format!(
                    "failed: {why} ({ok} of {} packets succeeded so far)",
                    packets.len()
                )
            }
        }
        other => format!(
            "{other}: {ok} of {} packets succeeded so far",
            packets.len()
        ),
    }
}

/// Returns what is left to do: unfinished packets, assumptions to confirm, the advice given.
fn next_steps(s: &Sources<'_>, packets: &[PacketReport], assumptions: &[String]) -> Vec<String> {
    let mut steps: Vec<String> = packets
        .iter()
        .filter(|p| p.state != "succeeded")
        .map(|p| format!("packet {} is {}: {}", p.id, p.state, p.summary))
        .collect();
    if !assumptions.is_empty() {
        steps.push("confirm the assumptions listed above".into());
    }
    steps.extend(s.advice.iter().filter_map(|a| actionable(a)));
    steps
}

/// git-orchestra commands that do something useful as they are, without arguments: a bare one
/// from the orchestrator becomes the command line to type.
const BARE_COMMANDS: [&str; 5] = ["status", "resume", "retry", "review", "gc"];

/// Returns the orchestrator's suggestion as a step a user can act on — a sentence, or a command
/// to type — or `None` when it is not one.
///
/// Models sometimes answer with the names of their tools or phases (`complete`, `plan`) instead
/// of advice: a bare word is dropped unless it is a git-orchestra command that runs as it is,
/// which is written out in full, and a tool call (`complete(...)`, a JSON object) is dropped.
fn actionable(step: &str) -> Option<String> {
    let step = step.trim();
    let bare = step
        .trim_start_matches(['-', '*'])
        .trim()
        .trim_matches(['`', '"', '\''])
        .trim();
    let mut words = bare.split_whitespace();
    let first = words.next()?;
    if words.next().is_none() {
        let word = first
            .trim_end_matches(['.', ':', '!'])
            .trim_end_matches("()")
            .to_ascii_lowercase();
        return BARE_COMMANDS
            .contains(&word.as_str())
            .then(|| format!("run `git orchestra {word}`"));
    }
    let called = bare.split(['(', ' ', '{', ':']).next().is_some_and(|name| {
        crate::agent::tools::is_known(name) && bare[name.len()..].starts_with(['(', '{'])
    });
    if called || bare.starts_with('{') {
        return None;
    }
    Some(step.to_string())
}

/// Returns tokens and cost per role and model, as the one accounting gives them.
fn usage_lines(s: &Sources<'_>) -> Vec<UsageLine> {
    s.usage
        .iter()
        .map(|u| UsageLine {
            role: u.role.clone(),
            model: u.model.clone(),
            calls: u.calls,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cost: u.cost,
        })
        .collect()
}

fn add_phase(phases: &mut Vec<(String, u64)>, state: WorkflowState, ms: u64) {
    if matches!(state, WorkflowState::Idle) {
        return;
    }
    match phases.iter_mut().find(|(s, _)| s == state.as_str()) {
        Some((_, t)) => *t += ms,
        None => phases.push((state.as_str().to_string(), ms)),
    }
}

/// Renders the report as Markdown.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Report: {}\n", r.objective);
    let _ = writeln!(o, "Run `{}` — **{}**\n", r.run, r.outcome);
    let list = |o: &mut String, title: &str, items: &[String]| {
        if !items.is_empty() {
            let _ = writeln!(o, "## {title}\n");
            for i in items {
                let _ = writeln!(o, "- {i}");
            }
            let _ = writeln!(o);
        }
    };
    if let Some(reason) = r.reason.as_deref().filter(|r| r.trim().contains('\n')) {
        let _ = writeln!(o, "## Why it failed\n\n```\n{}\n```\n", reason.trim());
    }
    list(&mut o, "Requirements", &r.requirements);
    list(&mut o, "Assumptions", &r.assumptions);
    let _ = writeln!(o, "## Packets\n");
    for p in &r.packets {
        let _ = writeln!(o, "### {} — {} ({}, {})\n", p.id, p.title, p.role, p.state);
        o.push_str(&render_packet(p));
        let _ = writeln!(o);
    }
    list(&mut o, "Integration", &r.integration);
    list(&mut o, "Agents", &r.agents);
    list(&mut o, "Routing", &r.routing);
    list(&mut o, "Review findings", &r.review_findings);
    list(&mut o, "Risks", &r.risks);
    list(&mut o, "Learnings", &r.learnings);
    list(&mut o, "Next steps", &r.next_steps);
    let _ = writeln!(o, "## Tokens and cost\n");
    let _ = writeln!(o, "| role | model | calls | input | output | cost |");
    let _ = writeln!(o, "|---|---|---:|---:|---:|---:|");
    let (mut ti, mut to, mut tc, mut calls) = (0, 0, None::<f64>, 0);
    for u in &r.usage {
        ti += u.input_tokens;
        to += u.output_tokens;
        calls += u.calls;
        if let Some(c) = u.cost {
            tc = Some(tc.unwrap_or(0.0) + c);
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            u.role,
            u.model,
            u.calls,
            u.input_tokens,
            u.output_tokens,
            u.cost.map_or("—".into(), |c| format!("${c:.4}"))
        );
    }
    // Models without a price add no cost: with none priced the total has none either.
    let total = tc.map_or("—".into(), |c| format!("${c:.4}"));
    let _ = writeln!(o, "| total | | {calls} | {ti} | {to} | {total} |\n");
    let _ = writeln!(o, "## Wall time\n");
    for (phase, ms) in &r.phases {
        let _ = writeln!(o, "- {phase}: {:.1} s", *ms as f64 / 1000.0);
    }
    let _ = writeln!(o, "- total: {:.1} s", r.wall_ms as f64 / 1000.0);
    if !r.packet_phases.is_empty() {
        // Summed over packets that ran side by side: what the packets cost, not the wall time.
        let _ = writeln!(o, "\n## Packet time per phase\n");
        for (phase, ms) in &r.packet_phases {
            let _ = writeln!(o, "- {}: {:.1} s", phase.as_str(), *ms as f64 / 1000.0);
        }
    }
    o
}

/// Returns a packet's section of the report without its heading: summary, changed files and
/// validation evidence (also attached to the packet's pull request by `start --pr`).
pub fn render_packet(p: &PacketReport) -> String {
    let mut o = String::new();
    if !p.summary.is_empty() {
        let _ = writeln!(o, "{}\n", p.summary.trim());
    }
    if !p.changed.is_empty() {
        let _ = writeln!(o, "Changed: {}", p.changed.join(", "));
    }
    for t in &p.subtasks {
        let _ = writeln!(o, "- subtask {t}");
    }
    for v in &p.validation {
        let _ = writeln!(
            o,
            "- validation `{}`: exit {} in {} ms",
            v.command,
            v.exit_code.map_or("none".into(), |c| c.to_string()),
            v.ms
        );
    }
    o
}

/// Returns `items` without repeats, keeping the first occurrence of each.
fn dedup_keep_order(items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(i.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Event, actionable, integration_note};

    /// Regression: a merge that found the target already at the integration tip (nothing
    /// merged) was reported as having advanced it.
    #[test]
    fn a_target_left_where_it_was_is_reported_unchanged() {
        let finished = |moved| Event::MergeFinished {
            integration: "orchestra/r/integration".into(),
            commit: "0123456789abcdef".into(),
            integrated: Vec::new(),
            sent_back: Vec::new(),
            target_advanced: true,
            target_note: None,
            target_moved: moved,
        };
        let note = integration_note(&finished(Some(false))).unwrap_or_default();
        assert!(note.ends_with("target unchanged"), "{note}");
        for moved in [Some(true), None] {
            let note = integration_note(&finished(moved)).unwrap_or_default();
            assert!(note.ends_with("target advanced"), "{note}");
        }
    }

    /// Regression: the report's next steps listed the orchestrator's bare tool and phase names
    /// (`complete`, `plan`), which are neither commands nor advice.
    #[test]
    fn next_steps_keep_sentences_and_commands_and_drop_tool_names() {
        for noise in [
            "complete",
            "plan",
            "`complete`",
            "- plan.",
            "complete({\"summary\": \"done\"})",
            "{\"name\": \"complete\"}",
            "",
        ] {
            assert_eq!(actionable(noise), None, "{noise:?}");
        }
        assert_eq!(
            actionable("status").as_deref(),
            Some("run `git orchestra status`")
        );
        for kept in [
            "Add a unit test runner once the project grows",
            "git orchestra merge add-x-1234abcd",
            "Complete the docs for farewell()",
        ] {
            assert_eq!(actionable(kept).as_deref(), Some(kept));
        }
    }
}
