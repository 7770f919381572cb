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

use std::collections::{BTreeSet, HashMap, VecDeque};

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
        let stored = self.stored(&queue)?;
        for item in queue {
            let verdict = self.verdict_of(&item, stored.as_ref())?;
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

    /// Returns the trees and verdict notes of the queued packets' commits read together, when
    /// more than one is queued: one at a time, a packet costs two git processes (its tree, its
    /// note); together, a merge costs three (the trees, the notes' list, their texts).
    fn stored(&self, queue: &VecDeque<Item>) -> Result<Option<Stored>, MergeError> {
        if queue.len() < 2 {
            return Ok(None);
        }
        let specs: Vec<String> = queue
            .iter()
            .map(|i| format!("{}^{{tree}}", i.commit))
            .collect();
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let mut trees = HashMap::new();
        for (item, tree) in queue.iter().zip(self.git.resolve_all(&specs)?) {
            if let Some(tree) = tree {
                trees.insert(item.commit.clone(), tree);
            }
        }
        let mut objects: Vec<&str> = trees.values().map(String::as_str).collect();
        objects.extend(queue.iter().map(|i| i.commit.as_str()));
        let notes = gate::verdict_notes(self.git, &objects)?;
        Ok(Some(Stored { trees, notes }))
    }

    /// Returns the verdict on the packet's commit (or its tree) — from `stored` when it was
    /// read with the others — reviewing it now when none is stored.
    fn verdict_of(&self, item: &Item, stored: Option<&Stored>) -> Result<Verdict, MergeError> {
        let known = stored.and_then(|s| s.trees.get(&item.commit).map(|tree| (s, tree)));
        let tree = match known {
            Some((_, tree)) => tree.clone(),
            None => self.git.tree_of(&item.commit)?,
        };
        let on_tree = match known {
            Some((s, _)) => s
                .notes
                .get(&tree)
                .map(|text| gate::parse_verdict(&tree, text))
                .transpose()?
                .filter(|v| v.verdict == Decision::Approve && v.tree == tree),
            None => gate::approved_for_tree(self.git, &tree)?,
        };
        if let Some(v) = on_tree {
            return Ok(v);
        }
        let on_commit = match known {
            Some((s, _)) => s
                .notes
                .get(&item.commit)
                .map(|text| gate::parse_verdict(&item.commit, text))
                .transpose()?,
            None => gate::read_verdict(self.git, &item.commit)?,
        };
        if let Some(v) = on_commit.filter(|v| v.commit == item.commit) {
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

/// The queued packets' trees (by commit) and the verdict notes of those commits and trees.
struct Stored {
    trees: HashMap<String, String>,
    notes: HashMap<String, String>,
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
