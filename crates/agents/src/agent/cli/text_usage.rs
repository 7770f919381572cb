//! What a plain-text agent CLI says of its spend: the usage lines some CLIs print between or
//! after their turns (`tokens used: 12,345` as Codex's plain output does, `input tokens: …`,
//! `output tokens: …`, `total cost: $0.42`), read as running totals.
//!
//! A plain-text CLI streams no events, so these lines are all a spend limit can act on while
//! it runs: once they report the limit reached, the CLI is stopped mid-packet like one that
//! streams JSON. A CLI that prints none of them reports no spend, and only its time limit
//! stops it early.

use super::parse::CliReport;

/// Reads one plain-text output `line` into `report` when it reports usage; returns true if
/// and only if it did. Each figure is the CLI's total so far, so a later line replaces an
/// earlier one; a total of tokens (`tokens used`, `total tokens`) counts as input tokens
/// beside the output tokens reported apart.
pub fn read(line: &str, report: &mut CliReport) -> bool {
    let lower = line.to_ascii_lowercase();
    if let Some(n) = number_after(&lower, &["input tokens", "prompt tokens"]) {
        report.input_tokens = n as u64;
        return true;
    }
    if let Some(n) = number_after(&lower, &["output tokens", "completion tokens"]) {
        report.output_tokens = n as u64;
        return true;
    }
    if let Some(n) = number_after(&lower, &["tokens used", "total tokens"]) {
        report.input_tokens = (n as u64).saturating_sub(report.output_tokens);
        return true;
    }
    if let Some(cost) = number_after(&lower, &["total cost", "cost"]) {
        report.cost_usd = Some(cost);
        return true;
    }
    false
}

/// Returns the number right after the first of `labels` found in `line` (separated from it
/// by blanks, `:`, `=` or `$`; thousands separated by commas).
fn number_after(line: &str, labels: &[&str]) -> Option<f64> {
    labels.iter().find_map(|label| {
        let at = line.find(label)?;
        let rest = line[at + label.len()..].trim_start_matches([' ', '\t', ':', '=', '$']);
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
            .filter(|c| *c != ',')
            .collect();
        digits.trim_end_matches('.').parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lines_are_read_as_running_totals_and_other_lines_are_not() {
        let mut report = CliReport::default();
        assert!(!read("Editing src/calc.sh", &mut report));
        assert!(!read("2 tokens of advice: keep it simple", &mut report));
        assert!(read(
            "[2025-01-01T00:00:00] tokens used: 1,200",
            &mut report
        ));
        assert_eq!(report.input_tokens, 1200);
        assert!(read("Output tokens: 300", &mut report));
        assert!(read("tokens used: 2,000", &mut report));
        assert_eq!((report.input_tokens, report.output_tokens), (1700, 300));
        assert!(read("Total cost: $0.42", &mut report));
        assert_eq!(report.cost_usd, Some(0.42));
        assert_eq!(report.input_tokens + report.output_tokens, 2000);
    }
}
