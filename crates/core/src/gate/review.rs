//! A review: the reviewers' findings over one range, combined into a verdict stored in git.
//!
//! [`Reviewer`] is the seam for more reviewers: the deterministic one runs the checks in
//! `checks.rs` and the validation commands; a model-backed reviewer implements the same trait
//! and sees the same input (range, diff, packet), so verdicts from both combine the same way.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::GateError;
use super::checks::{self, CheckOptions, Finding, Severity};
use super::diff::{RangeDiff, read_diff_resolving};
use super::range::PacketRef;
use super::scratch::ScratchWorktree;
use super::verdict::{Decision, Verdict, rfc3339_utc, write_verdict};
use orchestra_git::git::RepoInfo;
use orchestra_sys::exec::process::{self, Outcome};

/// What every reviewer looks at.
pub struct ReviewInput<'a> {
    pub repo: &'a RepoInfo,
    pub base: &'a str,
    pub tip: &'a str,
    pub tree: &'a str,
    pub diff: &'a RangeDiff,
    /// The packet the range implements, when known: its scope and validation apply.
    pub packet: Option<&'a PacketRef>,
}

/// What one reviewer concluded: the checks it ran and what they found.
#[derive(Debug, Clone, Default)]
pub struct ReviewOutcome {
    pub checks: Vec<String>,
    pub findings: Vec<Finding>,
}

/// Something that reviews a range. Findings are results; errors mean the review itself could
/// not be done (and nothing is stored).
pub trait Reviewer {
    /// Returns the name recorded in verdicts, e.g. `deterministic`.
    fn name(&self) -> &str;
    /// Reviews the range and returns its findings.
    fn review(&self, input: &ReviewInput<'_>) -> Result<ReviewOutcome, GateError>;

    /// Compares a best-of-N packet's surviving candidates side by side and returns which one it
    /// chose and why; `Ok(None)` when this reviewer does not compare candidates (the smaller
    /// change then wins). An error means the call itself failed.
    fn compare(
        &self,
        input: &super::CompareInput<'_>,
    ) -> Result<Option<super::Comparison>, GateError> {
        let _ = input;
        Ok(None)
    }
}

/// The reviewer that needs no model: scope, conflict markers, secrets, file sizes and
/// validation commands.
pub struct DeterministicReviewer {
    pub options: CheckOptions,
    /// Validation commands to run besides the packet's own.
    pub validation: Vec<String>,
    /// Longest one validation command may run.
    pub timeout: Duration,
}

impl Reviewer for DeterministicReviewer {
    fn name(&self) -> &str {
        super::verdict::DETERMINISTIC
    }

    fn review(&self, input: &ReviewInput<'_>) -> Result<ReviewOutcome, GateError> {
        let mut out = static_checks(input, &self.options)?;

        let mut commands: Vec<String> = input
            .packet
            .map(|p| p.packet.validation.clone())
            .unwrap_or_default();
        for c in &self.validation {
            if !commands.contains(c) {
                commands.push(c.clone());
            }
        }
        if !commands.is_empty() {
            out.checks.push("validation".into());
            let log_dir = orchestra_sys::exec::state_dir(&input.repo.common_dir)
                .join("review-logs")
                .join(&input.tip[..input.tip.len().min(12)]);
            let results = run_validation(
                input.repo,
                input.tip,
                &commands,
                self.timeout,
                &log_dir,
                self.options.sandboxes.validation.as_deref(),
            )?;
            for (command, outcome, log) in results {
                if !outcome.success() {
                    out.findings.push(Finding {
                        severity: Severity::Blocker,
                        category: "validation".into(),
                        file: None,
                        line: None,
                        evidence: format!(
                            "`{command}` failed ({}); log {}\n{}",
                            outcome.describe(self.timeout),
                            log.display(),
                            outcome.tail
                        ),
                        suggestion: "fix the code (or the command) until it passes on this commit"
                            .into(),
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Runs the checks that need neither a model nor a command: the packet's scope and changes
/// to trust-relevant configuration, conflict markers, secrets and file sizes.
fn static_checks(
    input: &ReviewInput<'_>,
    options: &CheckOptions,
) -> Result<ReviewOutcome, GateError> {
    let mut out = ReviewOutcome::default();
    if let Some(p) = input.packet {
        let scope = p.packet.scope().map_err(|e| GateError::Scope {
            packet: p.packet.id.clone(),
            message: e.to_string(),
        })?;
        out.checks.push("scope".into());
        out.findings
            .extend(checks::check_scope(input.diff, &scope, &p.packet.id));
    }
    out.checks.push("symlinks".into());
    out.findings.extend(checks::check_symlinks(input.diff));
    if input.packet.is_some() {
        // A person's own change to the configuration is theirs; a packet's must be read.
        out.checks.push("trust-config".into());
        out.findings.extend(checks::check_trust_config(input.diff));
    }
    out.checks.push("conflict-markers".into());
    out.findings
        .extend(checks::check_conflict_markers(input.diff));
    out.checks.push("secrets".into());
    out.findings.extend(checks::check_secrets(input.diff));
    out.checks.push("secrets in history".into());
    out.findings
        .extend(checks::check_history_secrets(input.diff));
    out.checks.push("file-size".into());
    out.findings
        .extend(checks::check_file_sizes(input.diff, options.max_file_size));
    Ok(out)
}

/// The deterministic reviewer inside a packet's pipeline, where the packet's validation
/// commands have just passed in its own worktree at the reviewed commit: the same checks as
/// [`DeterministicReviewer`] without running those commands a second time.
pub struct PacketChecks {
    pub options: CheckOptions,
}

impl PacketChecks {
    /// Returns the checks with the repository's file size limit (`orchestra.gate.maxFileSize`,
    /// as `review` reads it).
    pub fn for_repo(git: &orchestra_git::git::Git) -> PacketChecks {
        let configured = git
            .config_get_int("orchestra.gate.maxFileSize")
            .and_then(|n| u64::try_from(n).ok());
        PacketChecks {
            options: CheckOptions {
                max_file_size: configured.unwrap_or(super::checks::DEFAULT_MAX_FILE_SIZE),
                ..Default::default()
            },
        }
    }
}

impl Reviewer for PacketChecks {
    fn name(&self) -> &str {
        super::verdict::DETERMINISTIC
    }

    fn review(&self, input: &ReviewInput<'_>) -> Result<ReviewOutcome, GateError> {
        let mut out = static_checks(input, &self.options)?;
        if input
            .packet
            .is_some_and(|p| !p.packet.validation.is_empty())
        {
            out.checks
                .push("validation (in the packet's worktree)".into());
        }
        Ok(out)
    }
}

/// Runs `commands` one after another in a scratch checkout of `commit`, logging each to
/// `log_dir/validate-<n>.log`; returns every command with its outcome and log, stopping at the
/// first failure (later commands would only repeat it).
pub fn run_validation(
    repo: &RepoInfo,
    commit: &str,
    commands: &[String],
    timeout: Duration,
    log_dir: &Path,
    confine: Option<&process::Confine>,
) -> Result<Vec<(String, Outcome, PathBuf)>, GateError> {
    let stop = AtomicBool::new(false);
    run_validation_until(repo, commit, commands, (timeout, &stop), log_dir, confine)
}

/// Runs the validation like [`run_validation`], stopping the running command (its outcome
/// then says `interrupted`) and the rest once `stop` is set.
///
/// The commands run in one process — one sandbox launch for the whole list — each with its
/// own timeout, outcome and log (see [`orchestra_sys::exec::batch`]).
pub fn run_validation_until(
    repo: &RepoInfo,
    commit: &str,
    commands: &[String],
    (timeout, stop): (Duration, &AtomicBool),
    log_dir: &Path,
    confine: Option<&process::Confine>,
) -> Result<Vec<(String, Outcome, PathBuf)>, GateError> {
    if commands.is_empty() {
        return Ok(Vec::new());
    }
    let scratch = ScratchWorktree::create(repo, commit, "validate")?;
    run_validation_in(
        scratch.path(),
        commit,
        commands,
        (timeout, stop),
        log_dir,
        confine,
    )
}

/// Runs the validation like [`run_validation_until`] in `dir`, a checkout of `commit` the
/// caller made (a merge's [`super::MovingScratch`], kept from one candidate to the next).
pub fn run_validation_in(
    dir: &Path,
    commit: &str,
    commands: &[String],
    (timeout, stop): (Duration, &AtomicBool),
    log_dir: &Path,
    confine: Option<&process::Confine>,
) -> Result<Vec<(String, Outcome, PathBuf)>, GateError> {
    let logs: Vec<PathBuf> = (1..=commands.len())
        .map(|n| log_dir.join(format!("validate-{n}.log")))
        .collect();
    let env = [("ORCHESTRA_COMMIT".to_string(), commit.to_string())];
    let spec = orchestra_sys::exec::batch::BatchSpec {
        commands,
        dir,
        env: &env,
        logs: &logs,
        log: &log_dir.join("validate-all.log"),
        timeout,
        confine,
    };
    let outcomes =
        orchestra_sys::exec::batch::run_batch(&spec, stop).map_err(|e| GateError::Validation {
            command: commands.join("; "),
            message: e.to_string(),
        })?;
    Ok(commands
        .iter()
        .cloned()
        .zip(outcomes)
        .zip(logs)
        .map(|((c, o), l)| (c, o, l))
        .collect())
}

/// Returns the credentials the commits of `base..tip` hold that the tip does not show (see
/// [`checks::check_history_secrets`]): what a verdict for the same tree reached through other
/// history does not speak for.
pub fn history_findings(
    git: &orchestra_git::git::Git,
    base: &str,
    tip: &str,
) -> Result<Vec<Finding>, GateError> {
    let diff = RangeDiff {
        history: super::diff::read_history(git, base, tip)?,
        ..RangeDiff::default()
    };
    Ok(checks::check_history_secrets(&diff))
}

/// A range read for review once: its tip's tree and the diff of `base..tip`, so that the
/// deterministic checks and a model review that follows them share one read of git.
#[derive(Debug, Clone)]
pub struct ReadRange {
    /// The range's base, as the caller named it.
    pub base: String,
    /// The reviewed commit.
    pub tip: String,
    /// The tip's tree.
    pub tree: String,
    /// What changed from base to tip, and the history between them.
    pub diff: RangeDiff,
}

/// Returns `base..tip` read as [`review`] reads it: the tip's tree, the changed files, the
/// patch and the history.
pub fn read_range(repo: &RepoInfo, base: &str, tip: &str) -> Result<ReadRange, GateError> {
    let git = repo.git();
    // The tip's tree and the base's commit are resolved in the batch that sizes the blobs.
    let read = read_diff_resolving(&git, base, tip)?;
    let tree = match read.tree {
        Some(tree) => tree,
        // Not a commit: `tree_of` says so as it always did.
        None => git.tree_of(tip)?,
    };
    Ok(ReadRange {
        base: base.to_string(),
        tip: tip.to_string(),
        tree,
        diff: read.diff,
    })
}

/// Reviews `base..tip` with every reviewer, stores the combined verdict as git notes on the tip
/// and its tree, and returns it. The verdict rejects if and only if a finding is `blocker` or
/// `major`.
pub fn review(
    repo: &RepoInfo,
    base: &str,
    tip: &str,
    packet: Option<&PacketRef>,
    reviewers: &[&dyn Reviewer],
) -> Result<Verdict, GateError> {
    review_read(repo, &read_range(repo, base, tip)?, packet, reviewers)
}

/// Reviews the range `read` (see [`read_range`]) as [`review`] does, without reading it again.
pub fn review_read(
    repo: &RepoInfo,
    read: &ReadRange,
    packet: Option<&PacketRef>,
    reviewers: &[&dyn Reviewer],
) -> Result<Verdict, GateError> {
    let verdict = judge_read(repo, read, packet, reviewers)?;
    write_verdict(&repo.git(), &verdict)?;
    Ok(verdict)
}

/// Returns the combined verdict of every reviewer on the range `read` without storing it: for
/// a caller whose next review of the same commit stores a verdict that replaces this one (the
/// packet's deterministic checks before its model review), so git writes the notes once.
pub fn judge_read(
    repo: &RepoInfo,
    read: &ReadRange,
    packet: Option<&PacketRef>,
    reviewers: &[&dyn Reviewer],
) -> Result<Verdict, GateError> {
    let (base, tip, tree) = (read.base.as_str(), read.tip.as_str(), read.tree.clone());
    let input = ReviewInput {
        repo,
        base,
        tip,
        tree: &tree,
        diff: &read.diff,
        packet,
    };
    let mut checks = Vec::new();
    let mut findings = Vec::new();
    let mut names = Vec::new();
    for reviewer in reviewers {
        let outcome = reviewer.review(&input)?;
        names.push(reviewer.name().to_string());
        checks.extend(outcome.checks);
        findings.extend(outcome.findings);
    }
    // Whatever a reviewer quoted — a marker line, a model's paraphrase, a path — is shown and
    // stored only redacted: no credential, no terminal control sequence.
    for f in &mut findings {
        f.evidence = super::secrets::safe_to_show(&f.evidence);
        f.suggestion = super::secrets::safe_to_show(&f.suggestion);
        f.file = f.file.as_deref().map(super::secrets::safe_to_show);
    }
    findings.sort_by(|a, b| (a.severity, &a.file, a.line).cmp(&(b.severity, &b.file, b.line)));
    let verdict = Verdict {
        version: 1,
        commit: tip.to_string(),
        tree,
        base: base.to_string(),
        reviewer: names.join("+"),
        verdict: if findings.iter().any(|f| f.severity.rejects()) {
            Decision::Reject
        } else {
            Decision::Approve
        },
        checks,
        findings,
        packet: packet.map(|p| format!("{}/{}", p.run, p.packet.id)),
        timestamp: rfc3339_utc(orchestra_sys::exec::now_ms() / 1000),
        notes: packet.map(|p| p.notes.clone()).unwrap_or_default(),
    };
    Ok(verdict)
}
