//! The phases before execution: clarify the objective, have the planner write a plan in the
//! packet-engine format, validate it (sending problems back to the planner), and have a
//! reviewer review it.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::context::summarize;
use super::models::{RoleModels, extract_fenced, extract_json, strings};
use crate::agent::SetupError;
use crate::nav::{Index, MapOptions};
use crate::plan::{self, Plan};

/// Estimated-token budget of the repository map the planner sees.
pub const REPO_MAP_TOKENS: usize = 1_500;
/// Estimated-token cap of `ORCHESTRA.md` in the planner's prompt.
pub const PROJECT_CONTEXT_TOKENS: usize = 4_800;

/// What the clarifier said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Clarification {
    pub requirements: Vec<String>,
    pub questions: Vec<String>,
    pub assumptions: Vec<String>,
}

const CLARIFY_GUIDANCE: &str = "You are the clarification phase of a run. Reply with only a JSON object:
{\"outcome\": \"clear\" or \"questions\", \"requirements\": [testable requirements],
 \"questions\": [questions only a person can answer], \"assumptions\": [what you will assume for each question if nobody answers]}";

/// Asks the clarifier about `objective`.
pub fn clarify(
    models: &RoleModels,
    objective: &str,
    project: &str,
    stop: &AtomicBool,
) -> Result<Clarification, SetupError> {
    let prompt = format!("Objective: {objective}\n\n{project}");
    let resp = models.ask("clarifier", CLARIFY_GUIDANCE, &prompt, stop)?;
    let Some(v) = extract_json(&resp.text) else {
        // An answer that is not the requested object is read as requirements text.
        return Ok(Clarification {
            requirements: vec![summarize(resp.text.trim(), 200)],
            ..Default::default()
        });
    };
    Ok(Clarification {
        requirements: strings(&v, "requirements"),
        questions: strings(&v, "questions"),
        assumptions: strings(&v, "assumptions"),
    })
}

const PLAN_GUIDANCE: &str = r#"You are the planning phase of a run. Reply with only the plan, in TOML, in one ```toml block, without `objective` or `base` (they are added for you):

max_parallel = 4            # optional

[[packet]]
id = "short-id"             # [a-z0-9-], unique
title = "one line"
role = "coder"              # an agent role: coder, tester, docs, ...
description = "what to do, precisely"
files = ["src/a.rs", "docs/**"]   # every path the packet may change (globs allowed)
depends_on = ["other-id"]   # packets whose work must be merged first
validation = ["cargo test"] # shell commands that must pass in the packet's worktree
acceptance = ["criteria the reviewer checks"]
risks = ["what could go wrong"]
symbols = ["src/a.rs:Parser.parse"]  # optional: existing definitions this packet edits in shared files

Packets that change the same files must depend on each other or will be ordered; keep file scopes disjoint where you can. Two packets that share a file but each name the existing definitions they edit there (`symbols`, at least one line apart) may run in parallel."#;

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
    let resp = models.ask("planner", PLAN_GUIDANCE, &prompt, stop)?;
    Ok(normalize(inputs.objective, inputs.base, &resp.text))
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
pub fn check(toml_text: &str, repo_root: &Path, role_exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let plan = match Plan::from_toml_str(toml_text, "plan.toml") {
        Ok(p) => p,
        Err(e) => return vec![e.to_string()],
    };
    let mut issues: Vec<String> = match plan::validate(&plan, repo_root) {
        Ok(()) => Vec::new(),
        Err(list) => list.iter().map(|i| i.to_string()).collect(),
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

const REVIEW_GUIDANCE: &str = "You are reviewing a plan before any work starts. Check that the packets achieve the objective, that file scopes are complete and as disjoint as possible, that dependencies are right and that every packet has validation. Reply with only a JSON object: {\"verdict\": \"approve\" or \"revise\", \"findings\": [concrete problems, most severe first]}";

/// Asks the reviewer about a plan; returns whether it is approved and the findings.
pub fn review(
    models: &RoleModels,
    objective: &str,
    plan_toml: &str,
    stop: &AtomicBool,
) -> Result<(bool, Vec<String>), SetupError> {
    let prompt = format!("Objective: {objective}\n\n```toml\n{plan_toml}\n```\n");
    let resp = models.ask("reviewer", REVIEW_GUIDANCE, &prompt, stop)?;
    let v = extract_json(&resp.text).unwrap_or_default();
    let verdict = v.get("verdict").and_then(|s| s.as_str()).unwrap_or("");
    let findings = strings(&v, "findings");
    Ok((verdict.eq_ignore_ascii_case("approve"), findings))
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

/// Returns the project context file `ORCHESTRA.md`, cut to [`PROJECT_CONTEXT_TOKENS`], or
/// nothing when the repository has none.
pub fn project_context(toplevel: &Path) -> String {
    fs_err::read_to_string(toplevel.join("ORCHESTRA.md"))
        .map(|t| summarize(&t, PROJECT_CONTEXT_TOKENS))
        .unwrap_or_default()
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
