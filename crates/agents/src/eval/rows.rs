//! One arm's row of an eval report's arms table as plain-text cells, so that the Markdown and
//! HTML reports render the same columns from one model (each escapes the text its own way).

use super::report::ArmReport;

/// One cell of an arm's row: its column's heading and its text.
pub struct Cell {
    /// The column's heading.
    pub head: String,
    /// The value as shown, `–` when there is none.
    pub text: String,
    /// Whether the column holds a number (right-aligned).
    pub numeric: bool,
}

/// Returns the statistics cells of arm `a`'s row, `k` being the eval's attempts per task and
/// arm: attempts, resolved, rate and interval, pass@k and pass^k, tokens, cost, cost per
/// resolved, wall and model times, failure classes. The arm's name and spec are the caller's.
pub fn cells(a: &ArmReport, k: u32) -> Vec<Cell> {
    let fraction = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.3}"));
    let money = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("${x:.2}"));
    let secs = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.1}s"));
    let failures: Vec<String> = a
        .failures
        .iter()
        .map(|(f, n)| format!("{n} {}", f.as_str()))
        .collect();
    let num = |head: &str, text: String| Cell {
        head: head.to_string(),
        text,
        numeric: true,
    };
    vec![
        num("attempts", a.attempts.to_string()),
        num("resolved", a.resolved.to_string()),
        num("rate", format!("{:.3}", a.rate)),
        Cell {
            head: "95% interval".to_string(),
            text: format!("[{:.3}, {:.3}]", a.interval[0], a.interval[1]),
            numeric: false,
        },
        num(&format!("pass@{k}"), fraction(a.pass_at_k)),
        num(&format!("pass^{k}"), fraction(a.pass_hat_k)),
        num("tokens in/out", format!("{}/{}", a.tokens_in, a.tokens_out)),
        num("cost", money(a.cost)),
        num("cost per resolved", money(a.cost_per_resolved)),
        num("wall p50", secs(a.wall_p50)),
        num("wall p90", secs(a.wall_p90)),
        num("model p50", secs(a.model_p50)),
        num("model total", secs(Some(a.model_total))),
        Cell {
            head: "failures".to_string(),
            text: if failures.is_empty() {
                "–".to_string()
            } else {
                failures.join(", ")
            },
            numeric: false,
        },
    ]
}
