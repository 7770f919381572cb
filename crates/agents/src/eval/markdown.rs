//! An eval's report as Markdown (`report.md`): the arms' table with their statistics, then
//! the task × arm grid (each cell the attempts' outcomes: ✓ resolved, else the failure class).

use super::report::{ArmReport, EvalReport};

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
    out.push_str(&format!(
        "| arm | spec | attempts | resolved | rate | 95% interval | pass@{k} | pass^{k} | tokens in/out | cost | cost per resolved | wall p50 | wall p90 | failures |\n",
        k = report.repeat
    ));
    out.push_str("|---|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for a in &report.arms {
        out.push_str(&arm_row(a));
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
fn arm_row(a: &ArmReport) -> String {
    let fraction = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.3}"));
    let money = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("${x:.2}"));
    let secs = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.1}s"));
    let failures: Vec<String> = a
        .failures
        .iter()
        .map(|(f, n)| format!("{n} {}", f.as_str()))
        .collect();
    format!(
        "| {} | `{}` | {} | {} | {:.3} | [{:.3}, {:.3}] | {} | {} | {}/{} | {} | {} | {} | {} | {} |\n",
        cell_text(&a.name),
        code(&a.spec),
        a.attempts,
        a.resolved,
        a.rate,
        a.interval[0],
        a.interval[1],
        fraction(a.pass_at_k),
        fraction(a.pass_hat_k),
        a.tokens_in,
        a.tokens_out,
        money(a.cost),
        money(a.cost_per_resolved),
        secs(a.wall_p50),
        secs(a.wall_p90),
        if failures.is_empty() {
            "–".to_string()
        } else {
            failures.join(", ")
        }
    )
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
