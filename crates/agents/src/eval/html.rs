//! An eval's report as a self-contained HTML page (`report.html`): the arms' table, inline SVG
//! charts (resolved rate per arm with its 95% interval, cost per resolved task, each arm's
//! wall times as a strip plot with its median) and the task × arm grid.
//!
//! Nothing is loaded from anywhere: styles are inline, there is no script, no font and no
//! image but the SVG in the page, so the file opens offline and can be mailed or archived.
//! The web view's eval page shows the same [`fragment`].

use super::markdown::outcome;
use super::report::{ArmReport, EvalReport};
use super::rows;

/// The name of the report's HTML page file.
pub const FILE: &str = "report.html";

/// Width of a chart's plotting area, in SVG units.
const PLOT: f64 = 420.0;
/// Width of a chart's label column.
const LABEL: f64 = 140.0;
/// Height of one arm's row in a chart.
const ROW: f64 = 26.0;

/// The page's style: plain, readable, printable.
const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}.ok{background:#cfc}.no{background:#fdd}.wait{background:#eee}\
svg{display:block;margin:.5em 0 1.5em}code{background:#f4f4f4}";

/// Returns `report` as a whole HTML page.
pub fn render(report: &EvalReport) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>eval {}</title><style>{STYLE}</style></head><body>\n<h1>Eval <code>{}</code></h1>\n{}</body></html>\n",
        escape(&report.eval),
        escape(&report.eval),
        fragment(report)
    )
}

/// Returns the report's body: summary line, arms' table, charts and grid.
pub fn fragment(report: &EvalReport) -> String {
    let mut out = format!(
        "<p>Tasks from <code>{}</code>, judged by <code>{}</code>; {} attempt(s) per task and arm; {} of {} attempts ended{}.</p>\n",
        escape(&report.range),
        escape(&report.test),
        report.repeat,
        report.done,
        report.total,
        if report.finished { "" } else { " (unfinished)" }
    );
    out.push_str(&arms_table(report));
    out.push_str("<h2>Resolved rate (95% interval)</h2>\n");
    out.push_str(&rate_chart(&report.arms));
    out.push_str("<h2>Cost per resolved task</h2>\n");
    out.push_str(&cost_chart(&report.arms));
    out.push_str("<h2>Wall time per attempt (seconds; the bar marks the median)</h2>\n");
    out.push_str(&wall_chart(report));
    out.push_str("<h2>Tasks × arms</h2>\n");
    out.push_str(&grid(report));
    out
}

/// Returns the arms' table.
fn arms_table(report: &EvalReport) -> String {
    let k = report.repeat;
    let mut out = String::from("<table><tr><th>arm</th>");
    if let Some(first) = report.arms.first() {
        for c in rows::cells(first, k) {
            out.push_str(&format!("<th>{}</th>", escape(&c.head)));
        }
    }
    out.push_str("</tr>\n");
    for a in &report.arms {
        out.push_str(&format!(
            "<tr><td title=\"{}\">{}</td>",
            escape(&a.spec),
            escape(&a.name)
        ));
        for c in rows::cells(a, k) {
            out.push_str(&format!("<td>{}</td>", escape(&c.text)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// Returns the opening of a chart's SVG with room for `rows` arms.
fn svg_open(rows: usize) -> String {
    let height = ROW * rows.max(1) as f64 + 24.0;
    format!(
        "<svg width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" role=\"img\">\n",
        w = LABEL + PLOT + 80.0
    )
}

/// Returns the label of an arm's row `i`.
fn row_label(i: usize, name: &str) -> String {
    format!(
        "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{}</text>\n",
        ROW * i as f64 + 17.0,
        escape(name)
    )
}

/// Returns the chart of each arm's resolved rate as a bar with its interval as a whisker.
fn rate_chart(arms: &[ArmReport]) -> String {
    let mut out = svg_open(arms.len());
    for (i, a) in arms.iter().enumerate() {
        let y = ROW * i as f64;
        out.push_str(&row_label(i, &a.name));
        out.push_str(&format!(
            "<rect x=\"{LABEL}\" y=\"{:.1}\" width=\"{:.1}\" height=\"14\" fill=\"#6a9\"><title>{:.3}</title></rect>\n",
            y + 6.0,
            a.rate * PLOT,
            a.rate
        ));
        let (low, high) = (LABEL + a.interval[0] * PLOT, LABEL + a.interval[1] * PLOT);
        out.push_str(&format!(
            "<line x1=\"{low:.1}\" x2=\"{high:.1}\" y1=\"{m:.1}\" y2=\"{m:.1}\" stroke=\"#222\"/><line x1=\"{low:.1}\" x2=\"{low:.1}\" y1=\"{t:.1}\" y2=\"{b:.1}\" stroke=\"#222\"/><line x1=\"{high:.1}\" x2=\"{high:.1}\" y1=\"{t:.1}\" y2=\"{b:.1}\" stroke=\"#222\"/>\n",
            m = y + 13.0,
            t = y + 8.0,
            b = y + 18.0
        ));
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{:.3} [{:.3}, {:.3}]</text>\n",
            LABEL + PLOT + 4.0,
            y + 17.0,
            a.rate,
            a.interval[0],
            a.interval[1]
        ));
    }
    out.push_str(&axis(arms.len(), "0", "1"));
    out.push_str("</svg>\n");
    out
}

/// Returns the chart of each arm's cost per resolved task, scaled to the largest.
fn cost_chart(arms: &[ArmReport]) -> String {
    let top = arms
        .iter()
        .filter_map(|a| a.cost_per_resolved)
        .fold(0.0_f64, f64::max);
    let mut out = svg_open(arms.len());
    for (i, a) in arms.iter().enumerate() {
        let y = ROW * i as f64;
        out.push_str(&row_label(i, &a.name));
        let (width, label) = match a.cost_per_resolved {
            Some(c) if top > 0.0 => (c / top * PLOT, format!("${c:.2}")),
            Some(c) => (0.0, format!("${c:.2}")),
            None => (0.0, "no cost or nothing resolved".to_string()),
        };
        out.push_str(&format!(
            "<rect x=\"{LABEL}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"14\" fill=\"#79c\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>\n",
            y + 6.0,
            LABEL + width + 4.0,
            y + 17.0,
            escape(&label)
        ));
    }
    out.push_str(&axis(arms.len(), "$0", &format!("${top:.2}")));
    out.push_str("</svg>\n");
    out
}

/// Returns each arm's attempts' wall times as dots on a line, with a bar at the median.
fn wall_chart(report: &EvalReport) -> String {
    let secs = |ms: u64| ms as f64 / 1000.0;
    let top = report
        .attempts
        .iter()
        .map(|r| secs(r.wall_ms))
        .fold(0.0_f64, f64::max)
        .max(0.001);
    let mut out = svg_open(report.arms.len());
    for (i, a) in report.arms.iter().enumerate() {
        let y = ROW * i as f64 + 13.0;
        out.push_str(&row_label(i, &a.name));
        for r in report
            .attempts
            .iter()
            .filter(|r| r.arm == a.name && r.counted())
        {
            let color = if r.resolved { "#393" } else { "#c33" };
            out.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{color}\" fill-opacity=\"0.6\"><title>{:.1}s</title></circle>\n",
                LABEL + secs(r.wall_ms) / top * PLOT,
                secs(r.wall_ms)
            ));
        }
        if let Some(median) = a.wall_p50 {
            let x = LABEL + median / top * PLOT;
            out.push_str(&format!(
                "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#222\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">p50 {median:.1}s, p90 {:.1}s</text>\n",
                y - 8.0,
                y + 8.0,
                LABEL + PLOT + 4.0,
                y + 4.0,
                a.wall_p90.unwrap_or(median)
            ));
        }
    }
    out.push_str(&axis(report.arms.len(), "0s", &format!("{top:.1}s")));
    out.push_str("</svg>\n");
    out
}

/// Returns the x axis under `rows` rows, labelled `from` at its start and `to` at its end.
fn axis(rows: usize, from: &str, to: &str) -> String {
    let y = ROW * rows.max(1) as f64 + 4.0;
    format!(
        "<line x1=\"{LABEL}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#888\"/><text x=\"{LABEL}\" y=\"{:.1}\" font-size=\"10\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
        LABEL + PLOT,
        y + 14.0,
        escape(from),
        LABEL + PLOT,
        y + 14.0,
        escape(to)
    )
}

/// Returns the task × arm grid: a row per task, a cell per arm with each attempt's outcome.
fn grid(report: &EvalReport) -> String {
    let mut out = "<table class=\"grid\"><tr><th>task</th>".to_string();
    for a in &report.arms {
        out.push_str(&format!("<th>{}</th>", escape(&a.name)));
    }
    out.push_str("</tr>\n");
    for t in &report.tasks {
        let subject = t.objective.lines().next().unwrap_or_default();
        out.push_str(&format!(
            "<tr><td><code>{}</code> {}</td>",
            escape(&t.commit[..t.commit.len().min(10)]),
            escape(subject)
        ));
        for a in &report.arms {
            let cell = report.cell(&t.commit, &a.name);
            let class = if cell.is_empty() {
                "wait"
            } else if cell.iter().all(|r| r.resolved) {
                "ok"
            } else {
                "no"
            };
            let outcomes: Vec<String> = cell
                .iter()
                .map(|r| outcome(r.resolved, r.failure.map(|f| f.as_str())))
                .collect();
            let shown = if outcomes.is_empty() {
                "…".to_string()
            } else {
                outcomes.join(", ")
            };
            out.push_str(&format!("<td class=\"{class}\">{}</td>", escape(&shown)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// Returns `text` with the characters HTML gives meaning to escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::journal::TaskRecord;

    #[test]
    fn the_page_escapes_what_it_shows_and_loads_nothing() {
        let report = EvalReport {
            eval: "e".to_string(),
            range: "<script>alert(1)</script>".to_string(),
            test: "sh t.sh".to_string(),
            repeat: 1,
            finished: false,
            done: 0,
            total: 1,
            arms: vec![crate::eval::report::tests_support::arm("a\"><img src=x>")],
            tasks: vec![TaskRecord {
                commit: "0123456789abcdef".to_string(),
                base: "b".to_string(),
                objective: "Fix <b>it</b>\nbody".to_string(),
                tests: Vec::new(),
                suite: None,
            }],
            attempts: Vec::new(),
        };
        let page = render(&report);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(page.contains("Fix &lt;b&gt;it&lt;/b&gt;"), "{page}");
        assert!(page.contains("(unfinished)"), "{page}");
        // A cell with no ended attempt yet.
        assert!(page.contains("<td class=\"wait\">…</td>"), "{page}");
    }
}
