//! The batching loop: merge a batch in memory, validate the candidate, advance the
//! integration branch by compare-and-swap; grow the batch on success, halve it on failure.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

use super::MergeError;
use super::coordinator::{MergeOptions, rev};
use super::report::{Batch, BrokenCommand, SentBack};
use super::steps::{Resolver, send_back, validate_candidate};
use super::tree::{MergeTree, commit_merge, merge_tree};
use crate::engine::Journal;
use crate::gate::MovingScratch;
use crate::store::Event;
use orchestra_git::git::{Expected, Git, RefError};

/// How many times a batch is retried because the integration branch moved underneath it.
const MAX_CAS_RETRIES: usize = 5;

/// How many packets are integrated between two layers added to the repository's commit-graph
/// (see [`Git::extend_commit_graph`]): git's search for each merge's base then reads at most
/// this many new merges, instead of every merge of the run so far.
pub(super) const GRAPH_EVERY: usize = 64;

/// One succeeded packet waiting to be integrated.
pub(super) struct Item {
    pub id: String,
    pub commit: String,
    pub deps: Vec<String>,
    pub validation: Vec<String>,
}

/// Where the batching loop stands between batches.
pub(super) struct Progress {
    pub queue: VecDeque<Item>,
    /// The confirmed tip of the integration branch.
    pub tip: String,
    pub integrated: Vec<String>,
    /// The validation commands of everything integrated so far (each passed on the merged
    /// tree its packet landed in).
    pub validations: Vec<String>,
    pub sent_back: Vec<SentBack>,
    pub batches: Vec<Batch>,
    /// How many packets the next batch takes.
    size: usize,
    retries: usize,
    attempt: usize,
    rounds: HashMap<String, u32>,
    /// Packets integrated since the commit-graph last took in the integration branch.
    ungraphed: usize,
}

impl Progress {
    /// Returns the state before the first batch: `queue` to integrate on `tip`, whose packets'
    /// `validations` passed before (and every candidate runs again when the merge revalidates
    /// integrated packets).
    pub(super) fn new(queue: VecDeque<Item>, tip: String, validations: Vec<String>) -> Progress {
        Progress {
            queue,
            tip,
            integrated: Vec::new(),
            validations,
            sent_back: Vec::new(),
            batches: Vec::new(),
            size: 1,
            retries: 0,
            attempt: 0,
            rounds: HashMap::new(),
            ungraphed: 0,
        }
    }
}

/// What every batch of one merge shares.
pub(super) struct Batcher<'a> {
    pub git: &'a Git,
    pub journal: &'a Journal<'a>,
    pub resolver: &'a Resolver<'a>,
    pub opts: &'a MergeOptions,
    pub branch: &'a str,
    pub int_ref: &'a str,
    pub log_root: PathBuf,
    /// The checkout every candidate is validated in, moved from one to the next.
    pub scratch: RefCell<MovingScratch>,
}

impl Batcher<'_> {
    /// Takes one batch from the queue, merges it in memory on the confirmed tip, validates the
    /// candidate and advances the integration branch; failures requeue or send packets back.
    pub(super) fn step(&self, p: &mut Progress) -> Result<(), MergeError> {
        let batch = self.take_batch(p)?;
        if batch.is_empty() {
            return Ok(());
        }
        let base_tip = p.tip.clone();
        let (candidate, merged) = self.merge_batch(p, batch)?;
        if merged.is_empty() {
            return Ok(());
        }
        let Some(merged) = self.validate(p, &candidate, merged)? else {
            return Ok(());
        };
        self.advance(p, candidate, &base_tip, merged)
    }

    /// Takes up to `size` packets whose dependencies are all integrated (or not in the run's
    /// succeeded set at all: those were never candidates); sends back dependents of packets
    /// that were sent back.
    fn take_batch(&self, p: &mut Progress) -> Result<Vec<Item>, MergeError> {
        let blocked: HashSet<String> = p.sent_back.iter().map(|s| s.packet.clone()).collect();
        let mut batch: Vec<Item> = Vec::new();
        let mut rest = VecDeque::new();
        while let Some(item) = p.queue.pop_front() {
            if let Some(dep) = item.deps.iter().find(|d| blocked.contains(*d)) {
                let reason = format!("its dependency `{dep}` was not integrated");
                send_back(self.journal, &mut p.sent_back, item.id, reason, Vec::new())?;
                continue;
            }
            if batch.len() < p.size {
                batch.push(item);
            } else {
                rest.push_back(item);
            }
        }
        p.queue = rest;
        Ok(batch)
    }

    /// Merges the batch in memory on top of the confirmed tip; returns the candidate and the
    /// packets in it. A packet that conflicts on its own goes to its worker (and back into the
    /// queue once resolved) or is sent back; one that conflicts with a batch-mate waits.
    fn merge_batch(
        &self,
        p: &mut Progress,
        batch: Vec<Item>,
    ) -> Result<(String, Vec<Item>), MergeError> {
        let branch = self.branch;
        let mut candidate = p.tip.clone();
        let mut merged: Vec<Item> = Vec::new();
        let mut postponed: Vec<Item> = Vec::new();
        for mut item in batch {
            match merge_tree(self.git, &candidate, &item.commit)? {
                MergeTree::Clean { tree } => {
                    let msg = format!("Merge packet {} into {branch}", item.id);
                    candidate = commit_merge(self.git, &tree, &[&candidate, &item.commit], &msg)?;
                    merged.push(item);
                }
                MergeTree::Conflicts { paths } if merged.is_empty() => {
                    self.journal.record(Event::PacketConflicted {
                        packet: item.id.clone(),
                        paths: paths.clone(),
                    })?;
                    let round = p.rounds.entry(item.id.clone()).or_insert(0);
                    match self.resolver.resolve(&item.id, &p.tip, &paths, round)? {
                        Ok(commit) => {
                            // Back into the queue with the resolved commit.
                            item.commit = commit;
                            postponed.push(item);
                            continue;
                        }
                        Err(reason) => {
                            send_back(self.journal, &mut p.sent_back, item.id, reason, paths)?;
                        }
                    }
                }
                // It may only conflict with a batch-mate that could still fail validation:
                // try it again on its own, on the confirmed tip.
                MergeTree::Conflicts { .. } => postponed.push(item),
            }
        }
        for item in postponed.into_iter().rev() {
            p.queue.push_front(item);
        }
        Ok((candidate, merged))
    }

    /// Validates the candidate with its packets' commands, each distinct command once (and
    /// those of everything integrated so far when `[merge] revalidate_integrated` asks for
    /// it: otherwise the cost of a merge would grow with the square of its packets); returns
    /// the merged packets when it passes. On failure a lone packet goes to its worker with the
    /// output (or is sent back) and a larger batch is halved and requeued.
    fn validate(
        &self,
        p: &mut Progress,
        candidate: &str,
        mut merged: Vec<Item>,
    ) -> Result<Option<Vec<Item>>, MergeError> {
        let mut commands = if self.opts.revalidate_integrated {
            p.validations.clone()
        } else {
            Vec::new()
        };
        for item in &merged {
            commands.extend(item.validation.iter().cloned());
        }
        let mut seen = HashSet::new();
        commands.retain(|c| seen.insert(c.clone()));
        p.attempt += 1;
        let names: Vec<String> = merged.iter().map(|i| i.id.clone()).collect();
        let failure = validate_candidate(
            &mut self.scratch.borrow_mut(),
            self.journal,
            candidate,
            &commands,
            &names,
            (self.opts, self.resolver.stop),
            &self.log_root.join(format!("batch-{}", p.attempt)),
        )?;
        p.batches.push(Batch {
            packets: names,
            candidate: candidate.to_string(),
            passed: failure.is_none(),
        });
        let Some(failure) = failure else {
            return Ok(Some(merged));
        };
        if merged.len() == 1 {
            // This packet's merge broke the tree: its worker gets the output to fix it on the
            // merged tree, and the fix re-enters the queue.
            let mut item = merged.remove(0);
            let round = p.rounds.entry(item.id.clone()).or_insert(0);
            match self
                .resolver
                .fix_broken(&item.id, &p.tip, &failure, round)?
            {
                Ok(commit) => {
                    item.commit = commit;
                    p.queue.push_front(item);
                }
                Err(reason) => {
                    send_back(self.journal, &mut p.sent_back, item.id, reason, Vec::new())?;
                    if let Some(s) = p.sent_back.last_mut() {
                        s.broken = Some(BrokenCommand {
                            command: failure.command,
                            tail: failure.tail,
                        });
                    }
                }
            }
        } else {
            p.size = (merged.len() / 2).max(1);
            for item in merged.into_iter().rev() {
                p.queue.push_front(item);
            }
        }
        Ok(None)
    }

    /// Advances the integration branch to the validated candidate only if nobody else moved
    /// it meanwhile (the batch is requeued on the new tip when they did), and journals the
    /// packets as integrated.
    fn advance(
        &self,
        p: &mut Progress,
        candidate: String,
        base_tip: &str,
        merged: Vec<Item>,
    ) -> Result<(), MergeError> {
        let moved =
            match self
                .git
                .update_ref(self.int_ref, &candidate, Expected::At(base_tip), None)
            {
                Ok(()) => false,
                Err(RefError::RefMoved { .. }) if p.retries < MAX_CAS_RETRIES => true,
                Err(RefError::RefMoved { .. }) => {
                    return Err(MergeError::Contended {
                        branch: self.branch.to_string(),
                    });
                }
                Err(RefError::Git(e)) => return Err(e.into()),
            };
        if moved {
            p.retries += 1;
            p.tip = rev(self.git, self.int_ref)?.ok_or_else(|| MergeError::Contended {
                branch: self.branch.to_string(),
            })?;
            for item in merged.into_iter().rev() {
                p.queue.push_front(item);
            }
            return Ok(());
        }
        p.tip = candidate;
        p.ungraphed += merged.len();
        if p.ungraphed >= GRAPH_EVERY {
            p.ungraphed = 0;
            // Only a cost saved: a graph that cannot be written leaves git's walks as they were.
            if let Err(e) = self.git.extend_commit_graph(&[&p.tip]) {
                tracing::debug!(error = %e, "the commit-graph was not extended");
            }
        }
        for item in merged {
            self.journal.record(Event::PacketIntegrated {
                packet: item.id.clone(),
                commit: p.tip.clone(),
            })?;
            p.validations.extend(item.validation);
            p.integrated.push(item.id);
        }
        p.size = (p.size * 2).min(self.opts.max_batch.max(1));
        Ok(())
    }
}
