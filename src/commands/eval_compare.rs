//! `git orchestra eval compare`: two evals (or two arms of one) compared task by task with a
//! paired test, read from the results kept in git.

use std::path::Path;

use clap::Args;
use git_orchestra::eval_run::compare::{self, Comparison};
use git_orchestra::eval_run::lookup::{self, Prefer};
use git_orchestra::eval_run::report::EvalReport;
use git_orchestra::git::RepoInfo;
use git_orchestra::redact::terminal_safe;

use super::CommandError;

/// Compares two evals task by task: says whether one arm resolves significantly more.
///
/// Attempts are paired by task and repeat index: each arm present in both evals is compared
/// with itself, or `--arm X --arm Y` compares arm X of A with arm Y of B (B defaults to A, so
/// two arms of one eval compare too). For each comparison: the paired attempts, how many both,
/// only A, only B and neither resolved, the difference in resolved rate with its 95% paired
/// bootstrap interval (fixed seed), the exact McNemar p-value on the discordant pairs, and
/// whether the difference is significant at 0.05. Evals are read from
/// `refs/orchestra/eval/<eval>` (so a clone that fetched `refs/orchestra/eval/*` compares
/// evals it never ran), else from this repository's journal.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first eval.
    a: String,
    /// The second eval (default: the first).
    b: Option<String>,
    /// An arm to compare: give it twice, the first of A's and the second of B's (default:
    /// every arm both evals have, each with itself).
    #[arg(long = "arm", value_name = "ARM", num_args = 1)]
    arms: Vec<String>,
    /// Print `{"comparisons": [...]}` as JSON.
    #[arg(long)]
    json: bool,
}

/// Compares the arms of two evals and prints the paired tests.
pub fn cmd_compare(cwd: &Path, args: &CompareArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let b_id = args.b.as_deref().unwrap_or(&args.a);
    let a = lookup::report(&repo, Some(&args.a), Prefer::Kept);
    let b = lookup::report(&repo, Some(b_id), Prefer::Kept);
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(_), Err(_)) if args.a != b_id => {
            return Err(CommandError::user(format!(
                "no eval `{}` and no eval `{b_id}` in this repository's journal or under refs/orchestra/eval/",
                args.a
            ))
            .hint("`git orchestra eval report --list` lists the evals there are"));
        }
        (Err(e), _) | (_, Err(e)) => return Err(super::eval_report::lookup_error(e)),
    };
    let pairs = arm_pairs(&a, &b, &args.arms)?;
    let mut comparisons = Vec::new();
    for (x, y) in &pairs {
        comparisons.push(compare::compare(&a, x, &b, y).map_err(CommandError::user)?);
    }
    if args.json {
        let out = serde_json::json!({ "comparisons": comparisons });
        let text = serde_json::to_string_pretty(&out).map_err(CommandError::internal)?;
        println!("{text}");
    } else {
        for c in &comparisons {
            println!("{}", terminal_safe(&describe(c)));
        }
    }
    Ok(())
}

/// Returns the (arm of A, arm of B) pairs to compare.
fn arm_pairs(
    a: &EvalReport,
    b: &EvalReport,
    arms: &[String],
) -> Result<Vec<(String, String)>, CommandError> {
    match arms {
        [] if a.eval == b.eval => Err(CommandError::user(
            "comparing an eval with itself needs two arms: `--arm X --arm Y`",
        )),
        [] => {
            let common = compare::common_arms(a, b);
            if common.is_empty() {
                return Err(CommandError::user(format!(
                    "evals `{}` and `{}` have no arm of the same name",
                    a.eval, b.eval
                ))
                .hint("name the arms to compare: `--arm X --arm Y`"));
            }
            Ok(common.into_iter().map(|n| (n.clone(), n)).collect())
        }
        [x, y] => Ok(vec![(x.clone(), y.clone())]),
        _ => Err(CommandError::user(format!(
            "`--arm` was given {} time(s); give it twice (arm of A, arm of B) or not at all",
            arms.len()
        ))),
    }
}

/// Returns one comparison in a few lines.
fn describe(c: &Comparison) -> String {
    let verdict = if c.significant {
        "significant at 0.05"
    } else {
        "not significant at 0.05"
    };
    let mut out = format!(
        "{}:{} vs {}:{}: {} paired attempts; both resolved {}, only A {}, only B {}, neither {}\n",
        c.a.eval, c.a.arm, c.b.eval, c.b.arm, c.pairs, c.both, c.only_a, c.only_b, c.neither
    );
    out.push_str(&format!(
        "  rate A {:.3}, B {:.3}; difference A - B {:+.3}, 95% bootstrap interval [{:+.3}, {:+.3}]; McNemar exact p = {:.4}: {verdict}",
        c.a.rate, c.b.rate, c.difference, c.interval[0], c.interval[1], c.p_value
    ));
    if c.unpaired > 0 {
        out.push_str(&format!(
            "\n  ({} attempt(s) without a partner left out)",
            c.unpaired
        ));
    }
    out
}
