//! The planning phase of `start`: the planner role writes a plan in the packet-engine format
//! from the objective, the clarified notes, `ORCHESTRA.md` and a repository map; each proposal
//! is validated and its problems (or the plan reviewer's findings) go back to the planner, for
//! a bounded number of rounds.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::context::summarize;
use super::driver::{Ctx, StartError, ask_err};
use super::models::{RoleModels, extract_fenced};
use super::start_journal::WorkflowEvent;
use super::workflow::{Workflow, WorkflowState as S};
use crate::agent::SetupError;
use orchestra_core::plan::{self, Plan};
use orchestra_nav::nav::{Index, MapOptions};

/// Most planner rounds to reach a plan that passes validation.
pub const MAX_PLAN_ROUNDS: usize = 3;
/// Estimated-token budget of the repository map the planner sees.
pub const REPO_MAP_TOKENS: usize = 1_500;
/// Estimated-token cap of `ORCHESTRA.md` in the planner's prompt.
pub const PROJECT_CONTEXT_TOKENS: usize = 4_800;

/// What the planner is asked for: the plan format as a template of placeholders.
pub const PLAN_GUIDANCE: &str = r#"You are the planning phase of a run. Reply with only the plan, in TOML, in one ```toml block, without `objective` or `base` (they are added for you). The shape, with placeholders in <angle brackets> — fill them from this repository (its files, languages and commands), never from this template:

max_parallel = 4            # optional

[[packet]]
id = "<short-id>"           # [a-z0-9-], unique
title = "<one line>"
role = "<a role from the list of roles for packets>"
description = "<what to do, precisely>"
files = ["<path/of/a/file>", "<a/directory>/**"]   # every path the packet may change (globs allowed)
depends_on = ["<other-id>"] # packets whose work must be merged first
validation = ["<this project's own check or test command>"] # must pass in the packet's worktree
acceptance = ["<criteria the reviewer checks>"]
risks = ["<what could go wrong>"]
may_be_empty = false        # optional: true only when changing no file is a right outcome
risky = false               # optional: true when the change is easy to get subtly wrong; risky packets may be worked by several candidates and the best kept
symbols = ["<path/of/a/file>:<Qualified.name>"]  # existing definitions this packet edits in a file it shares

Packets that change the same files must depend on each other or will be ordered; keep file scopes disjoint where you can. When two packets must change the same file, give each the existing definitions it edits there (`symbols`, at least one line apart) and they may run in parallel."#;

/// What the planner is told besides the objective.
pub struct PlanInputs<'a> {
    pub objective: &'a str,
    pub base: &'a str,
    pub notes: &'a [String],
    pub project: &'a str,
    pub repo_map: &'a str,
    /// Problems of the previous proposal, or the reviewer's findings, to address.
    pub feedback: &'a [String],
    pub previous: Option<&'a str>,
    /// Which attempt this is (1-based) and of how many, so a retry is a new question.
    pub attempt: (usize, usize),
    /// The roles packets may use, one line each (see [`roles_for_packets`]).
    pub roles: &'a str,
    /// What agents of earlier runs learned, one line each.
    pub learned: &'a str,
    /// The repository the planner reads before it answers, and where its transcript goes;
    /// `None` asks for the plan in one completion.
    pub explore: Option<(&'a Path, &'a Path)>,
}

/// Returns the roles that can do a packet's work (those with a write scope), one line each:
/// name, description and what it may write.
pub fn roles_for_packets(roles: &crate::agent::Roles) -> String {
    roles
        .by_name
        .values()
        .filter(|r| !r.write_scope.is_empty())
        .map(|r| {
            format!(
                "- {}: {} (may write: {})",
                r.name,
                r.description.trim(),
                r.write_scope.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asks the planner for a plan and returns it as complete TOML (objective and base set).
pub fn propose(
    models: &RoleModels,
    inputs: &PlanInputs<'_>,
    stop: &AtomicBool,
) -> Result<String, SetupError> {
    let mut prompt = format!("Objective: {}\n", inputs.objective);
    if !inputs.notes.is_empty() {
        prompt.push_str(&format!(
            "\nRequirements and assumptions:\n- {}\n",
            inputs.notes.join("\n- ")
        ));
    }
    if !inputs.project.is_empty() {
        prompt.push_str(&format!("\n## ORCHESTRA.md\n{}\n", inputs.project));
    }
    prompt.push_str(&crate::agent::learned_section(inputs.learned));
    if !inputs.roles.is_empty() {
        prompt.push_str(&format!("\n## Roles for packets\n{}\n", inputs.roles));
    }
    prompt.push_str(&format!("\n## Repository map\n{}\n", inputs.repo_map));
    if let Some(prev) = inputs.previous {
        prompt.push_str(&format!("\n## Your previous plan\n```toml\n{prev}\n```\n"));
    }
    if !inputs.feedback.is_empty() {
        prompt.push_str(&format!(
            "\n## Fix these problems (attempt {} of {})\n- {}\n",
            inputs.attempt.0,
            inputs.attempt.1,
            inputs.feedback.join("\n- ")
        ));
    }
    let answer = match inputs.explore {
        Some((root, transcript)) => models.explore_checked(
            "planner",
            PLAN_GUIDANCE,
            &prompt,
            root,
            transcript,
            stop,
            &super::answers::any_answer,
        )?,
        None => models.ask_checked(
            "planner",
            PLAN_GUIDANCE,
            &prompt,
            stop,
            &super::answers::any_answer,
        )?,
    };
    Ok(normalize(inputs.objective, inputs.base, &answer))
}

/// Returns the planner's answer as a plan file: the fenced TOML with any top-level
/// `objective`/`base` lines replaced by the run's own.
pub fn normalize(objective: &str, base: &str, answer: &str) -> String {
    let body = extract_fenced(answer);
    let mut out = format!(
        "objective = {}\nbase = {}\n",
        toml::Value::String(objective.to_string()),
        toml::Value::String(base.to_string())
    );
    let mut top = true;
    for line in body.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            top = false;
        }
        if top && (t.starts_with("objective") || t.starts_with("base")) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Returns the problems of a plan text: parse errors, `plan check` issues, and roles that do
/// not exist; empty when the plan is good to run.
///
/// The proposal lives only in the run's journal, so a problem's place is given as the line it
/// is on, quoted, rather than as a `file:line:column` nobody can open.
pub fn check(toml_text: &str, repo_root: &Path, role_exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let plan = match Plan::from_toml_str(toml_text, "plan.toml") {
        Ok(p) => p,
        Err(plan::PlanError::Syntax {
            location, message, ..
        }) => return vec![at_line(toml_text, location.as_ref(), &message)],
        Err(e) => return vec![e.to_string()],
    };
    let mut issues: Vec<String> = match plan::validate(&plan, repo_root) {
        Ok(()) => Vec::new(),
        Err(list) => list
            .iter()
            .map(|i| {
                let text = if i.hint.is_empty() {
                    i.message.clone()
                } else {
                    format!("{}; {}", i.message, i.hint)
                };
                at_line(toml_text, i.location.as_ref(), &text)
            })
            .collect(),
    };
    if plan.packets.is_empty() {
        issues.push("the plan has no packets; add at least one [[packet]]".into());
    }
    for p in &plan.packets {
        if !role_exists(&p.role) {
            issues.push(format!(
                "packet `{}` asks for role `{}`, which does not exist; use one of the roles listed by `git orchestra agents`",
                p.id, p.role
            ));
        }
    }
    issues
}

/// Longest quote of an offending plan line, in bytes.
const QUOTE_LEN: usize = 160;

/// Returns `problem` prefixed with the line of `text` it was found on, quoted.
fn at_line(text: &str, location: Option<&plan::Location>, problem: &str) -> String {
    let Some(loc) = location else {
        return problem.to_string();
    };
    match text.lines().nth(loc.line.saturating_sub(1)).map(str::trim) {
        Some(line) if !line.is_empty() => format!(
            "line {} `{}`: {problem}",
            loc.line,
            orchestra_sys::redact::clip(line, QUOTE_LEN)
        ),
        _ => format!("line {}: {problem}", loc.line),
    }
}

/// Returns the repository map for the planner within [`REPO_MAP_TOKENS`], or a note saying
/// why there is none.
pub fn repo_map(toplevel: &Path, objective: &str) -> String {
    let mut index = match Index::open(toplevel) {
        Ok(i) => i,
        Err(e) => return format!("(no repository map: {e})"),
    };
    if let Err(e) = index.refresh() {
        return format!("(no repository map: {e})");
    }
    let map = index.repo_map(&MapOptions {
        focus: Vec::new(),
        mentioned: objective
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.len() > 2)
            .map(String::from)
            .collect(),
        tokens: REPO_MAP_TOKENS,
    });
    let files: Vec<&str> = index.files().iter().map(|f| f.path.as_str()).collect();
    format!(
        "Files: {}\n\n{map}",
        summarize(&files.join(", "), REPO_MAP_TOKENS / 3)
    )
}

/// Returns the project context — `ORCHESTRA.md`, or for a repository without one the same
/// context built in memory (`git orchestra init` keeps it) — cut to [`PROJECT_CONTEXT_TOKENS`].
pub fn project_context(toplevel: &Path) -> String {
    summarize(
        &orchestra_core::project::context(toplevel, PROJECT_CONTEXT_TOKENS),
        PROJECT_CONTEXT_TOKENS,
    )
}

impl Ctx<'_> {
    /// Returns the last plan that passed validation, if any.
    pub(super) fn valid_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanProposed { toml, issues, .. } if issues.is_empty() => {
                Some(toml.clone())
            }
            _ => None,
        }))
    }

    /// Runs planning rounds until a proposal passes validation, resuming from the journaled
    /// proposals of this phase; fails after [`MAX_PLAN_ROUNDS`] invalid ones.
    pub(super) fn plan(&self, wf: &Workflow) -> Result<(), StartError> {
        let state = wf.state();
        let here = self.since_entering(state)?;
        let mut round = self
            .all()?
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::PlanProposed { .. }))
            .count() as u32;
        let last: Option<(String, Vec<String>)> = here.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanProposed { toml, issues, .. } => {
                Some((toml.clone(), issues.clone()))
            }
            _ => None,
        });
        if last.as_ref().is_some_and(|(_, i)| i.is_empty()) {
            return Ok(());
        }
        let mut feedback: Vec<String> = match (&last, state) {
            (Some((_, issues)), _) => issues.clone(),
            (None, S::PlanRevision) => self
                .all()?
                .iter()
                .rev()
                .find_map(|e| match &e.event {
                    WorkflowEvent::PlanReviewed { findings, .. } => Some(findings.clone()),
                    WorkflowEvent::PlanSentBack { feedback } => Some(vec![format!(
                        "the person approving plans sent this plan back: {feedback}"
                    )]),
                    _ => None,
                })
                .unwrap_or_default(),
            (None, _) => Vec::new(),
        };
        let mut previous = match state {
            S::PlanRevision => self.valid_plan()?,
            _ => None,
        };
        if let Some((t, _)) = &last {
            previous = Some(t.clone());
        }
        let done = here
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::PlanProposed { .. }))
            .count();
        let notes = self.notes()?;
        if !self
            .repo
            .toplevel
            .join(orchestra_core::project::FILE)
            .exists()
            && done == 0
        {
            self.ui.progress(&format!(
                "{}: no {} here: the project context was built in memory; `git orchestra init` writes it to keep and edit",
                self.run,
                orchestra_core::project::FILE
            ));
        }
        let project = project_context(&self.repo.toplevel);
        let map = repo_map(&self.repo.toplevel, &self.req.objective);
        let roles = &self.models.roles;
        let role_lines = roles_for_packets(roles);
        let learned = crate::agent::learned(&self.repo.common_dir);
        let run_dir = orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run);
        for attempt in done..MAX_PLAN_ROUNDS {
            round += 1;
            let transcript = run_dir.planner_log(round);
            self.ui
                .progress(&format!("{}: planning, round {round}", self.run));
            let toml = propose(
                &self.models,
                &PlanInputs {
                    objective: &self.req.objective,
                    base: &self.base,
                    notes: &notes,
                    project: &project,
                    repo_map: &map,
                    feedback: &feedback,
                    previous: previous.as_deref(),
                    attempt: (attempt + 1, MAX_PLAN_ROUNDS),
                    roles: &role_lines,
                    learned: &learned,
                    explore: Some((&self.repo.toplevel, &transcript)),
                },
                self.stop,
            )
            .map_err(ask_err("plan"))?;
            let worker_cmd = self.settings.worker_cmd.is_some();
            let issues = check(&toml, &self.repo.toplevel, &|r| {
                worker_cmd || roles.get(r).is_ok()
            });
            self.j()?.append(&WorkflowEvent::PlanProposed {
                round,
                toml: toml.clone(),
                issues: issues.clone(),
            })?;
            if issues.is_empty() {
                return Ok(());
            }
            self.ui.progress(&format!(
                "{}: plan of round {round} rejected:\n  - {}",
                self.run,
                issues.join("\n  - ")
            ));
            feedback = issues.clone();
            previous = Some(toml);
        }
        Err(self.rounds_rejected(state, previous.as_deref())?)
    }

    /// Returns the error of a planning phase whose every round was rejected: each round with
    /// its problems, and where the last proposal was saved for the user to read.
    fn rounds_rejected(&self, state: S, last: Option<&str>) -> Result<StartError, StartError> {
        let rounds: Vec<String> = self
            .since_entering(state)?
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::PlanProposed { round, issues, .. } if !issues.is_empty() => {
                    Some(format!("round {round}:\n    - {}", issues.join("\n    - ")))
                }
                _ => None,
            })
            .collect();
        let mut issues = rounds.join("\n  ");
        if let Some(text) = last {
            let path =
                orchestra_sys::exec::RunDir::new(&self.repo.common_dir, &self.run).plan_rejected();
            let saved = path
                .parent()
                .map_or(Ok(()), fs_err::create_dir_all)
                .and_then(|()| fs_err::write(&path, text));
            if saved.is_ok() {
                issues.push_str(&format!("\n  the last proposal: {}", path.display()));
            }
        }
        Ok(StartError::PlanInvalid {
            rounds: MAX_PLAN_ROUNDS,
            issues,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_replaces_objective_and_base_and_keeps_packets() {
        let answer = "Plan:\n```toml\nobjective = \"other\"\nbase = \"x\"\nmax_parallel = 2\n\n[[packet]]\nid = \"a\"\ntitle = \"A\"\ndescription = \"d\"\nfiles = [\"a.txt\"]\n```\n";
        let text = normalize("Do \"it\"", "abc123", answer);
        let plan = Plan::from_toml_str(&text, "p").unwrap();
        assert_eq!(plan.objective, "Do \"it\"");
        assert_eq!(plan.base.as_deref(), Some("abc123"));
        assert_eq!(plan.max_parallel, Some(2));
        assert_eq!(plan.packets[0].id, "a");
    }

    #[test]
    fn check_reports_parse_errors_empty_plans_and_unknown_roles() {
        let dir = tempfile::tempdir().unwrap();
        let yes = |_: &str| true;
        assert!(!check("not toml [", dir.path(), &yes).is_empty());
        let empty = normalize("o", "HEAD", "");
        assert!(
            check(&empty, dir.path(), &yes)
                .iter()
                .any(|i| i.contains("no packets"))
        );
        let one = normalize(
            "o",
            "HEAD",
            "[[packet]]\nid = \"a\"\ntitle = \"A\"\nrole = \"wizard\"\ndescription = \"d\"\nfiles = [\"a.txt\"]\n",
        );
        let issues = check(&one, dir.path(), &|r| r != "wizard");
        assert!(issues.iter().any(|i| i.contains("`wizard`")), "{issues:?}");
    }
}
