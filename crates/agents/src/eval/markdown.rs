//! An eval's report as Markdown (`report.md`): the arms' table with their statistics, then
//! the task × arm grid (each cell the attempts' outcomes: ✓ resolved, else the failure class).

use super::report::{ArmReport, EvalReport};
use super::rows;

/// The name of the report's Markdown file.
pub const FILE: &str = "report.md";

/// Returns `report` as a Markdown document.
pub fn render(report: &EvalReport) -> String {
    let mut out = format!("# Eval `{}`\n\n", report.eval);
    out.push_str(&format!(
        "Tasks from `{}`, judged by `{}`; {} attempt(s) per task and arm; {} of {} attempts ended{}.\n\n",
        code(&report.range),
        code(&report.test),
        report.repeat,
        report.done,
        report.total,
        if report.finished { "" } else { " (unfinished)" }
    ));
    out.push_str("## Arms\n\n");
    let heads = report
        .arms
        .first()
        .map(|a| rows::cells(a, report.repeat))
        .unwrap_or_default();
    out.push_str("| arm | spec |");
    for c in &heads {
        out.push_str(&format!(" {} |", c.head));
    }
    out.push_str("\n|---|---|");
    for c in &heads {
        out.push_str(if c.numeric { "--:|" } else { "---|" });
    }
    out.push('\n');
    for a in &report.arms {
        out.push_str(&arm_row(a, report.repeat));
    }
    out.push_str("\n## Tasks × arms\n\n| task |");
    for a in &report.arms {
        out.push_str(&format!(" {} |", cell_text(&a.name)));
    }
    out.push_str("\n|---|");
    for _ in &report.arms {
        out.push_str("---|");
    }
    out.push('\n');
    for t in &report.tasks {
        let subject = t.objective.lines().next().unwrap_or_default();
        out.push_str(&format!(
            "| `{}` {} |",
            &t.commit[..t.commit.len().min(10)],
            cell_text(subject)
        ));
        for a in &report.arms {
            let outcomes: Vec<String> = report
                .cell(&t.commit, &a.name)
                .iter()
                .map(|r| outcome(r.resolved, r.failure.map(|f| f.as_str())))
                .collect();
            let shown = if outcomes.is_empty() {
                "…".to_string()
            } else {
                outcomes.join(", ")
            };
            out.push_str(&format!(" {shown} |"));
        }
        out.push('\n');
    }
    out
}

/// Returns one arm's row of the arms' table.
fn arm_row(a: &ArmReport, k: u32) -> String {
    let mut row = format!("| {} | `{}` |", cell_text(&a.name), code(&a.spec));
    for c in rows::cells(a, k) {
        row.push_str(&format!(" {} |", cell_text(&c.text)));
    }
    row.push('\n');
    row
}

/// Returns an attempt's outcome in a word or two: ✓ when resolved, else its failure class.
pub fn outcome(resolved: bool, failure: Option<&str>) -> String {
    match (resolved, failure) {
        (true, _) => "✓".to_string(),
        (false, Some(f)) => f.to_string(),
        (false, None) => "not resolved".to_string(),
    }
}

/// Returns `text` safe inside a table cell: no line break, no unescaped `|`.
fn cell_text(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|")
}

/// Returns `text` safe inside an inline code span of a table cell.
fn code(text: &str) -> String {
    cell_text(text).replace('`', "'")
}
