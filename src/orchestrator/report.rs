//! The final report of a `start` run, built from the workflow journal and the run store:
//! objective, outcome, per-packet changes and validation evidence, review findings, risks,
//! assumptions, learnings, next steps, tokens and cost per role and model, wall time per phase.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::journal::{Entry, UsageRow, WorkflowEvent};
use super::workflow::WorkflowState;
use crate::config::Price;
use crate::store::{Event, JournalEntry, PacketRecord};

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
    pub packets: Vec<PacketReport>,
    pub review_findings: Vec<String>,
    pub risks: Vec<String>,
    pub requirements: Vec<String>,
    pub assumptions: Vec<String>,
    pub learnings: Vec<String>,
    pub integration: Vec<String>,
    /// Model limits met on the way: concurrency changes after rate limits, consultations.
    pub agents: Vec<String>,
    pub next_steps: Vec<String>,
    pub usage: Vec<UsageLine>,
    pub phases: Vec<(String, u64)>,
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
    pub plan: Option<&'a crate::plan::Plan>,
    pub usage: &'a [UsageRow],
    pub price: &'a dyn Fn(&str) -> Option<Price>,
    pub advice: Vec<String>,
    pub now_ms: i64,
}

/// Builds the report.
pub fn build(s: &Sources<'_>) -> Report {
    let mut changed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut evidence: BTreeMap<&str, Vec<Evidence>> = BTreeMap::new();
    let mut integration = Vec::new();
    let mut packet_findings = Vec::new();
    for e in s.events {
        match &e.event {
            Event::PacketCommitted {
                packet, changed: c, ..
            } => {
                changed.insert(packet, c.clone());
            }
            Event::ValidationFinished {
                packet,
                command,
                exit_code,
                duration_ms,
                ..
            } => evidence.entry(packet).or_default().push(Evidence {
                command: command.clone(),
                exit_code: *exit_code,
                ms: *duration_ms,
            }),
            Event::PacketReviewed {
                packet,
                reviewer,
                approved: false,
                round,
                findings: f,
                ..
            } => packet_findings.extend(f.iter().map(|x| {
                let when = match round {
                    0 => String::new(),
                    r => format!(" after fix round {r}"),
                };
                format!("{packet} rejected by {reviewer}{when}: {x}")
            })),
            Event::PacketConflicted { packet, paths } => integration.push(format!(
                "{packet} conflicted with the integration branch in {}",
                paths.join(", ")
            )),
            Event::MergeValidationFinished {
                packets,
                command,
                exit_code,
                ..
            } => integration.push(format!(
                "merged tree with {}: `{command}` exit {}",
                packets.join(", "),
                exit_code.map_or("none".into(), |c| c.to_string())
            )),
            Event::PacketSentBack { packet, reason } => {
                integration.push(format!("{packet} sent back: {reason}"))
            }
            Event::PacketsShareFiles { note, .. } => integration.push(note.clone()),
            Event::ScopeFinding {
                packet,
                file,
                lines,
                ..
            } => integration.push(format!(
                "{packet} changed {file} lines {lines} outside its declared symbols (commit kept)"
            )),
            Event::MergeFinished {
                integration: branch,
                commit,
                integrated,
                target_advanced,
                ..
            } => integration.push(format!(
                "{branch} at {} with {}; target {}",
                &commit[..commit.len().min(10)],
                if integrated.is_empty() {
                    "nothing new".to_string()
                } else {
                    integrated.join(", ")
                },
                if *target_advanced {
                    "advanced"
                } else {
                    "not advanced"
                }
            )),
            _ => {}
        }
    }
    let mut summaries: BTreeMap<&str, String> = BTreeMap::new();
    let mut subtasks: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut agents = Vec::new();
    let (mut findings, mut requirements, mut assumptions, mut learnings) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut phases: Vec<(String, u64)> = Vec::new();
    let mut last: Option<(WorkflowState, i64)> = None;
    let start_ms = s.workflow.first().map_or(s.now_ms, |e| e.ts_ms);
    for e in s.workflow {
        match &e.event {
            WorkflowEvent::Transition { to, .. } => {
                if let Some((state, since)) = last {
                    add_phase(&mut phases, state, (e.ts_ms - since).max(0) as u64);
                }
                last = Some((*to, e.ts_ms));
            }
            WorkflowEvent::PlanReviewed {
                round, findings: f, ..
            } => findings.extend(f.iter().map(|x| format!("plan review {round}: {x}"))),
            WorkflowEvent::Clarified {
                requirements: r,
                assumptions: a,
                answers,
                ..
            } => {
                requirements = r.clone();
                assumptions = a.clone();
                requirements.extend(answers.iter().map(|(q, a)| format!("{q} — {a}")));
            }
            WorkflowEvent::PacketReport {
                packet,
                summary,
                learnings: l,
                ..
            } => {
                summaries.insert(packet, summary.clone());
                learnings.extend(l.iter().map(|x| format!("{packet}: {x}")));
            }
            WorkflowEvent::SubtaskFinished {
                parent,
                child,
                state,
                summary,
                ..
            } => subtasks.entry(parent).or_default().push(format!(
                "{child} ({state}, branch {}): {summary}",
                crate::names::packet_branch(s.run, child)
            )),
            WorkflowEvent::ConcurrencyChanged { text, .. } => agents.push(text.clone()),
            WorkflowEvent::Consulted {
                packet,
                asker,
                role,
                question,
                ..
            } => agents.push(format!(
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
        add_phase(&mut phases, state, (s.now_ms - since).max(0) as u64);
    }
    let packets: Vec<PacketReport> = s
        .packets
        .iter()
        .map(|p| PacketReport {
            id: p.id.clone(),
            title: p.title.clone(),
            role: p.role.clone(),
            state: p.state.as_str().to_string(),
            changed: changed.get(p.id.as_str()).cloned().unwrap_or_default(),
            validation: evidence.remove(p.id.as_str()).unwrap_or_default(),
            summary: summaries
                .get(p.id.as_str())
                .cloned()
                .or_else(|| p.reason.clone())
                .unwrap_or_default(),
            subtasks: subtasks.remove(p.id.as_str()).unwrap_or_default(),
        })
        .collect();
    let risks: Vec<String> = s
        .plan
        .map(|plan| {
            plan.packets
                .iter()
                .flat_map(|p| p.risks.iter().map(move |r| format!("{}: {r}", p.id)))
                .collect()
        })
        .unwrap_or_default();
    let ok = packets.iter().filter(|p| p.state == "succeeded").count();
    let outcome = match s.state {
        WorkflowState::Completed if !packets.is_empty() && ok == packets.len() => {
            format!("completed: all {ok} packets succeeded")
        }
        WorkflowState::Completed => format!("completed with {ok} of {} packets", packets.len()),
        other => format!(
            "{other}: {ok} of {} packets succeeded so far",
            packets.len()
        ),
    };
    let mut next_steps: Vec<String> = packets
        .iter()
        .filter(|p| p.state != "succeeded")
        .map(|p| format!("packet {} is {}: {}", p.id, p.state, p.summary))
        .collect();
    if !assumptions.is_empty() {
        next_steps.push("confirm the assumptions listed above".into());
    }
    next_steps.extend(s.advice.iter().cloned());
    let usage = s
        .usage
        .iter()
        .map(|u| UsageLine {
            role: u.role.clone(),
            model: u.model.clone(),
            calls: u.calls,
            input_tokens: u.usage.input_tokens,
            output_tokens: u.usage.output_tokens,
            cost: (s.price)(u.model.rsplit(':').next().unwrap_or(&u.model)).map(|p| {
                (u.usage.input_tokens as f64 * p.input_per_mtok
                    + u.usage.output_tokens as f64 * p.output_per_mtok)
                    / 1e6
            }),
        })
        .collect();
    Report {
        run: s.run.to_string(),
        objective: s.objective.to_string(),
        outcome,
        state: s.state,
        packets,
        review_findings: findings.into_iter().chain(packet_findings).collect(),
        risks,
        requirements,
        assumptions,
        // Agents restate what they learned on every fix round; each lesson is listed once.
        learnings: dedup_keep_order(learnings),
        integration,
        agents,
        next_steps,
        usage,
        phases,
        wall_ms: (s.now_ms - start_ms).max(0) as u64,
    }
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
    list(&mut o, "Review findings", &r.review_findings);
    list(&mut o, "Risks", &r.risks);
    list(&mut o, "Learnings", &r.learnings);
    list(&mut o, "Next steps", &r.next_steps);
    let _ = writeln!(o, "## Tokens and cost\n");
    let _ = writeln!(o, "| role | model | calls | input | output | cost |");
    let _ = writeln!(o, "|---|---|---:|---:|---:|---:|");
    let (mut ti, mut to, mut tc) = (0, 0, 0.0);
    for u in &r.usage {
        ti += u.input_tokens;
        to += u.output_tokens;
        tc += u.cost.unwrap_or(0.0);
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
    let _ = writeln!(o, "| total | | | {ti} | {to} | ${tc:.4} |\n");
    let _ = writeln!(o, "## Wall time\n");
    for (phase, ms) in &r.phases {
        let _ = writeln!(o, "- {phase}: {:.1} s", *ms as f64 / 1000.0);
    }
    let _ = writeln!(o, "- total: {:.1} s", r.wall_ms as f64 / 1000.0);
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
