//! What the merge lets in, and what it vouches for afterwards.
//!
//! Only packets whose commit carries an approving verdict are integrated. A packet without one
//! (its verdict notes were removed, or its run predates the pipeline's checks) is reviewed here
//! by the deterministic checks first; a rejected one is sent back with the findings. Once the
//! target has advanced, the integration tip gets a verdict of its own on the range the merge
//! added (`<target before>..<tip>`), signed by the reviewers every merged packet had, so the
//! pre-push gate lets the merged result out without reviewing it a second time. That verdict
//! is kept on the commit only, not on its tree: the tree also holds the target's own history,
//! which the merge did not review.

use std::collections::{BTreeSet, VecDeque};

use super::MergeError;
use super::batch::{Item, Progress};
use super::report::SentBack;
use super::steps::send_back;
use crate::engine::Journal;
use crate::gate::{self, Decision, PacketChecks, PacketRef, Verdict};
use crate::plan::Plan;
use crate::store::PacketRecord;
use orchestra_git::git::{Git, RepoInfo};

/// Most findings named in a sent-back packet's reason.
const NAMED_FINDINGS: usize = 3;

/// What the approval step needs of one merge.
pub(super) struct Approval<'a> {
    pub repo: &'a RepoInfo,
    pub git: &'a Git,
    pub run_id: &'a str,
    pub run_base: &'a str,
    pub plan: &'a Plan,
    pub records: &'a [PacketRecord],
}

impl Approval<'_> {
    /// Returns the queued packets whose commits are approved, reviewing the ones without a
    /// verdict; sends back the rejected ones. Also returns, per approved packet, who signed.
    fn approved(
        &self,
        journal: &Journal<'_>,
        queue: VecDeque<Item>,
        sent_back: &mut Vec<SentBack>,
    ) -> Result<(VecDeque<Item>, Vec<BTreeSet<String>>), MergeError> {
        let mut keep = VecDeque::new();
        let mut signers = Vec::new();
        for item in queue {
            let verdict = self.verdict_of(&item)?;
            if verdict.verdict == Decision::Approve {
                signers.push(verdict.reviewers().map(str::to_string).collect());
                keep.push_back(item);
                continue;
            }
            let reason = rejection(&verdict);
            send_back(journal, sent_back, item.id, reason, Vec::new())?;
        }
        Ok((keep, signers))
    }

    /// Returns the batching loop's starting point with only approved packets queued (the
    /// others sent back), and who signed the approval of each queued or `already` integrated
    /// packet.
    pub(super) fn progress(
        &self,
        journal: &Journal<'_>,
        queue: VecDeque<Item>,
        already: &[String],
        tip: String,
        validations: Vec<String>,
    ) -> Result<(Progress, Vec<BTreeSet<String>>), MergeError> {
        let mut sent_back = Vec::new();
        let (queue, mut signers) = self.approved(journal, queue, &mut sent_back)?;
        signers.extend(self.signers_of(already)?);
        let mut progress = Progress::new(queue, tip, validations);
        progress.sent_back = sent_back;
        Ok((progress, signers))
    }

    /// Returns who signed the approval of each packet in `ids` (already integrated); an empty
    /// set for one without an approving verdict, so the integration is not vouched for.
    fn signers_of(&self, ids: &[String]) -> Result<Vec<BTreeSet<String>>, MergeError> {
        let mut out = Vec::new();
        for id in ids {
            let commit = self
                .records
                .iter()
                .find(|r| &r.id == id)
                .and_then(|r| r.commit.clone());
            let mut signed = BTreeSet::new();
            if let Some(commit) = commit {
                let tree = self.git.tree_of(&commit)?;
                let verdict = match gate::approved_for_tree(self.git, &tree)? {
                    Some(v) => Some(v),
                    None => gate::read_verdict(self.git, &commit)?,
                };
                if let Some(v) = verdict.filter(|v| v.verdict == Decision::Approve) {
                    signed = v.reviewers().map(str::to_string).collect();
                }
            }
            out.push(signed);
        }
        Ok(out)
    }

    /// Returns the verdict on the packet's commit (or its tree), reviewing it now when none
    /// is stored.
    fn verdict_of(&self, item: &Item) -> Result<Verdict, MergeError> {
        let tree = self.git.tree_of(&item.commit)?;
        if let Some(v) = gate::approved_for_tree(self.git, &tree)? {
            return Ok(v);
        }
        if let Some(v) =
            gate::read_verdict(self.git, &item.commit)?.filter(|v| v.commit == item.commit)
        {
            return Ok(v);
        }
        let packet = self
            .plan
            .packets
            .iter()
            .find(|p| p.id == item.id)
            .cloned()
            .ok_or_else(|| MergeError::StoredPlan {
                run: self.run_id.to_string(),
                message: format!("packet `{}` is not in the stored plan", item.id),
            })?;
        let start = self
            .records
            .iter()
            .find(|r| r.id == item.id)
            .and_then(|r| r.start.clone())
            .unwrap_or_else(|| self.run_base.to_string());
        let packet_ref = PacketRef {
            run: self.run_id.to_string(),
            packet,
            checkout: None,
            notes: Vec::new(),
        };
        let checks = PacketChecks::for_repo(self.git);
        let reviewers: [&dyn gate::Reviewer; 1] = [&checks];
        Ok(gate::review(
            self.repo,
            &start,
            &item.commit,
            Some(&packet_ref),
            &reviewers,
        )?)
    }
}

/// Returns why a rejected packet stays out, naming its first blocking findings.
fn rejection(verdict: &Verdict) -> String {
    let blocking = verdict.blocking_lines(NAMED_FINDINGS, 200);
    format!(
        "its work has no approving review ({} rejected it: {}); fix it and review it with `git orchestra review`",
        verdict.reviewer,
        blocking.join("; ")
    )
}

/// Stores the verdict of the range the merge added to the target, `before..tip`, signed by the
/// reviewers every packet in it had (`signers`, one set per packet) and naming the `validated`
/// commands (`all_on_tip`: each ran on the tip itself); nothing when no packet was merged.
pub(super) fn vouch_for_integration(
    git: &Git,
    before: &str,
    tip: &str,
    packets: &[String],
    (signers, validated, all_on_tip): (&[BTreeSet<String>], &[String], bool),
) -> Result<(), MergeError> {
    if packets.is_empty() || before == tip {
        return Ok(());
    }
    let mut common = signers.first().cloned().unwrap_or_default();
    for s in signers.iter().skip(1) {
        common = common.intersection(s).cloned().collect();
    }
    if common.is_empty() {
        return Ok(());
    }
    let mut checks = vec![format!(
        "every merged packet approved: {}",
        packets.join(", ")
    )];
    if !validated.is_empty() {
        // Without revalidation each command passed on the merged tree of the batch that
        // brought its packet, not necessarily on the final one: say which.
        let on = if all_on_tip {
            "the merged tree"
        } else {
            "the merged tree of each packet's batch"
        };
        checks.push(format!("validation of {on}: {}", validated.join("; ")));
    }
    let verdict = Verdict {
        version: 1,
        commit: tip.to_string(),
        tree: git.tree_of(tip)?,
        base: before.to_string(),
        // Deterministic first, as a review would name them.
        reviewer: ordered(&common).join("+"),
        verdict: Decision::Approve,
        checks,
        findings: Vec::new(),
        packet: None,
        timestamp: gate::rfc3339_utc(orchestra_sys::exec::now_ms() / 1000),
        notes: Vec::new(),
    };
    gate::write_range_verdict(git, &verdict)?;
    Ok(())
}

/// Returns `names` with the deterministic reviewer first.
fn ordered(names: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = names
        .iter()
        .filter(|n| *n == gate::DETERMINISTIC)
        .cloned()
        .collect();
    out.extend(names.iter().filter(|n| *n != gate::DETERMINISTIC).cloned());
    out
}
