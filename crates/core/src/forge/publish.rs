//! Publishing a run's packets as pull requests: review verdicts first, then one push of every
//! branch with the `git` command line, then one pull request per packet in dependency order,
//! stacked on the branch of the packet it depends on.
//!
//! The function is safe to run again at any time, and running it again is how a stack moves
//! on: a pull request whose lower neighbour was merged is retargeted to the target branch (with
//! a comment saying why) *before* the merged branch is deleted from the remote, because some
//! forges close a pull request whose base branch disappears.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::body::{PrContext, render_body};
use super::remote::ForgeSettings;
use super::{Forge, ForgeError, NewPullRequest, PrState, PullRequest, PullRequestUpdate};
use crate::gate::{self, CheckOptions, DeterministicReviewer, PacketRef, Reviewer, Verdict};
use crate::plan::{Packet, Plan};
use crate::store::{PacketState, Store};
use orchestra_git::git::{Git, RepoInfo};
use orchestra_sys::exec::RunLock;

/// Choices for one publication.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// The branch the bottom of each stack targets; default: the plan's base when it is a local
    /// branch, else the current branch.
    pub target: Option<String>,
    pub settings: ForgeSettings,
    /// Options of the deterministic review run on packets without a verdict.
    pub checks: CheckOptions,
    /// Longest one validation command of that review may run.
    pub timeout: Duration,
    /// Markdown appended to a packet's body, by packet id (e.g. its section of a run report).
    pub notes: std::collections::BTreeMap<String, String>,
}

/// What happened to one packet's pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrAction {
    Created,
    Updated,
    /// Already up to date: nothing was sent.
    Unchanged,
    /// Merged on the forge; nothing to do.
    Merged,
    /// Closed without merging by someone; left alone.
    Closed,
    /// No forge: the body was written to a local file only.
    Written,
}

/// One packet's pull request after publication.
#[derive(Debug, Clone, Serialize)]
pub struct PrEntry {
    pub packet: String,
    pub title: String,
    pub branch: String,
    pub base: String,
    pub draft: bool,
    pub action: PrAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The base it had before this publication moved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retargeted_from: Option<String>,
    /// The Markdown file holding the title and body.
    pub file: PathBuf,
}

/// A packet that got no pull request, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub packet: String,
    pub reason: String,
}

/// The outcome of [`publish`].
#[derive(Debug, Clone, Serialize)]
pub struct PrReport {
    pub run: String,
    pub target: String,
    /// The forge spoken to (`github`, `gitea`), or `None` for local files only.
    pub forge: Option<String>,
    /// The remote the branches go to (pushed only when `forge` is set).
    pub remote: String,
    /// Where the Markdown files are.
    pub dir: PathBuf,
    pub entries: Vec<PrEntry>,
    pub skipped: Vec<Skipped>,
    /// Merged lower branches of stacks deleted from the remote.
    pub deleted: Vec<String>,
}

struct Item {
    packet: Packet,
    branch: String,
    commit: String,
    verdict: Verdict,
}

/// Publishes run `run_id`'s succeeded packets, and as drafts the failed ones whose work the
/// gate rejected: to `forge` when given (pushing branches to the
/// configured remote), else as Markdown files only. See the module docs.
pub fn publish(
    repo: &RepoInfo,
    run_id: &str,
    forge: Option<&dyn Forge>,
    opts: &PublishOptions,
) -> Result<PrReport, ForgeError> {
    let dir = orchestra_sys::exec::RunDir::new(&repo.common_dir, run_id);
    let _lock = RunLock::acquire(dir.path(), run_id)?;
    let store = Store::open(&repo.common_dir)?;
    let run = store.require_run(run_id)?;
    let plan = run.plan().map_err(|e| ForgeError::StoredPlan {
        run: run_id.to_string(),
        message: e.to_string(),
    })?;
    let git = repo.git();
    let target = resolve_target(&git, repo, &plan, opts.target.as_deref())?;
    let records = store.packets(run_id)?;
    drop(store);

    let mut skipped = Vec::new();
    let mut candidates = Vec::new();
    for packet in &plan.packets {
        let Some(rec) = records.iter().find(|r| r.id == packet.id) else {
            continue;
        };
        match (rec.state, &rec.commit) {
            (PacketState::Succeeded, Some(commit)) => {
                candidates.push((
                    packet.clone(),
                    rec.branch.clone(),
                    commit.clone(),
                    rec.start.clone(),
                ));
            }
            // Work the gate rejected after its fix rounds is shown to people as a draft
            // that says what is required; the packet stays failed.
            (PacketState::Failed, Some(commit)) if gate_rejected(&git, commit) => {
                candidates.push((
                    packet.clone(),
                    rec.branch.clone(),
                    commit.clone(),
                    rec.start.clone(),
                ));
            }
            (state, _) => skipped.push(Skipped {
                packet: packet.id.clone(),
                reason: format!("the packet is {}", state.as_str()),
            }),
        }
    }
    let reviewer = DeterministicReviewer {
        options: opts.checks.clone(),
        validation: Vec::new(),
        timeout: opts.timeout,
    };
    let mut items = Vec::new();
    for (packet, branch, commit, start) in topo_order(candidates) {
        let base = start.unwrap_or_else(|| run.base.clone());
        let verdict = verdict_for(repo, &git, run_id, &packet, &base, &commit, &reviewer)?;
        items.push(Item {
            packet,
            branch,
            commit,
            verdict,
        });
    }

    let out_dir = dir.pr_dir();
    let mut report = PrReport {
        run: run_id.to_string(),
        target: target.clone(),
        forge: forge.map(|f| f.kind().as_str().to_string()),
        remote: opts.settings.remote.clone(),
        dir: out_dir.clone(),
        entries: Vec::new(),
        skipped,
        deleted: Vec::new(),
    };
    match forge {
        None => publish_local(&target, &items, &mut report),
        Some(f) => publish_remote(
            f,
            &git,
            &run.objective,
            run_id,
            &target,
            &items,
            opts,
            &mut report,
        )?,
    }
    fs_err::create_dir_all(&out_dir).map_err(|e| write_error(&out_dir, e))?;
    for (entry, item) in report.entries.iter().zip(&items) {
        let text = format!(
            "# {}\n\n<!-- head: {} base: {}{} -->\n\n{}",
            entry.title,
            entry.branch,
            entry.base,
            if entry.draft { " draft" } else { "" },
            body_for(
                &run.objective,
                run_id,
                item,
                &entry.base,
                &deps_refs(item, &report.entries),
                opts.notes.get(&item.packet.id).map(String::as_str)
            )
        );
        fs_err::write(&entry.file, text).map_err(|e| write_error(&entry.file, e))?;
    }
    Ok(report)
}

fn write_error(path: &std::path::Path, source: std::io::Error) -> ForgeError {
    ForgeError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Returns the stored verdict of the packet's tree or commit, or reviews it now.
/// Returns true if and only if `commit` carries a stored verdict that rejects it.
fn gate_rejected(git: &Git, commit: &str) -> bool {
    matches!(
        gate::read_verdict(git, commit),
        Ok(Some(v)) if v.commit == commit && v.verdict != gate::Decision::Approve
    )
}

fn verdict_for(
    repo: &RepoInfo,
    git: &Git,
    run_id: &str,
    packet: &Packet,
    base: &str,
    commit: &str,
    reviewer: &DeterministicReviewer,
) -> Result<Verdict, ForgeError> {
    let tree = git.tree_of(commit)?;
    if let Some(v) = gate::approved_for_tree(git, &tree)? {
        return Ok(v);
    }
    if let Some(v) = gate::read_verdict(git, commit)?.filter(|v| v.commit == commit) {
        return Ok(v);
    }
    let packet_ref = PacketRef {
        run: run_id.to_string(),
        packet: packet.clone(),
        checkout: None,
        notes: Vec::new(),
    };
    let reviewers: [&dyn Reviewer; 1] = [reviewer];
    Ok(gate::review(
        repo,
        base,
        commit,
        Some(&packet_ref),
        &reviewers,
    )?)
}

/// Returns how each dependency of `item` is referred to: `#<n>` when its pull request is
/// known, else its branch.
fn deps_refs(item: &Item, entries: &[PrEntry]) -> Vec<(String, String)> {
    item.packet
        .depends_on
        .iter()
        .filter_map(|d| {
            let e = entries.iter().find(|e| &e.packet == d)?;
            Some((
                d.clone(),
                match e.number {
                    Some(n) => format!("#{n}"),
                    None => format!("`{}`", e.branch),
                },
            ))
        })
        .collect()
}

fn body_for(
    objective: &str,
    run_id: &str,
    item: &Item,
    base: &str,
    deps: &[(String, String)],
    note: Option<&str>,
) -> String {
    let body = render_body(&PrContext {
        run: run_id,
        objective,
        packet: &item.packet,
        branch: &item.branch,
        commit: &item.commit,
        base,
        verdict: Some(&item.verdict),
        depends_on: deps.to_vec(),
    });
    let Some(note) = note.map(str::trim).filter(|n| !n.is_empty()) else {
        return body;
    };
    // The marker stays the body's last line.
    let end = super::body::marker(run_id, &item.packet.id);
    let head = body.trim_end().strip_suffix(end.as_str()).unwrap_or(&body);
    format!(
        "{}\n\n## From the run report\n\n{note}\n\n{end}\n",
        head.trim_end()
    )
}

fn is_draft(item: &Item) -> bool {
    item.verdict.verdict != gate::Decision::Approve
}

fn publish_local(target: &str, items: &[Item], report: &mut PrReport) {
    for item in items {
        // Without a forge nothing is merged: every dependency in the run is still a branch.
        let base = item
            .packet
            .depends_on
            .iter()
            .rev()
            .find_map(|d| items.iter().find(|i| &i.packet.id == d))
            .map_or_else(|| target.to_string(), |i| i.branch.clone());
        report.entries.push(PrEntry {
            packet: item.packet.id.clone(),
            title: item.packet.title.clone(),
            branch: item.branch.clone(),
            base,
            draft: is_draft(item),
            action: PrAction::Written,
            number: None,
            url: None,
            retargeted_from: None,
            file: report.dir.join(format!("{}.md", item.packet.id)),
        });
    }
}

/// Pull requests already on the forge, by packet id (`None`: the packet has none yet).
type Known = HashMap<String, Option<PullRequest>>;

/// Returns true if and only if the packet's pull request exists and is no longer open.
fn finished(id: &str, known: &Known) -> bool {
    known
        .get(id)
        .and_then(|p| p.as_ref())
        .is_some_and(|p| p.state != PrState::Open)
}

/// Returns true if and only if the packet's pull request was merged.
fn merged(id: &str, known: &Known) -> bool {
    known
        .get(id)
        .and_then(|p| p.as_ref())
        .is_some_and(|p| p.state == PrState::Merged)
}

/// What publishing one run's pull requests on a forge shares.
struct Remote<'a> {
    forge: &'a dyn Forge,
    git: &'a Git,
    objective: &'a str,
    run_id: &'a str,
    target: &'a str,
    items: &'a [Item],
    opts: &'a PublishOptions,
}

#[allow(clippy::too_many_arguments)]
fn publish_remote(
    forge: &dyn Forge,
    git: &Git,
    objective: &str,
    run_id: &str,
    target: &str,
    items: &[Item],
    opts: &PublishOptions,
    report: &mut PrReport,
) -> Result<(), ForgeError> {
    let r = Remote {
        forge,
        git,
        objective,
        run_id,
        target,
        items,
        opts,
    };
    let mut known: Known = HashMap::new();
    for item in items {
        known.insert(item.packet.id.clone(), forge.find_by_head(&item.branch)?);
    }
    r.push_branches(&known)?;
    for item in items {
        let (entry, pr) = r.publish_item(item, &known, &report.dir)?;
        known.insert(item.packet.id.clone(), Some(pr));
        report.entries.push(entry);
    }
    // Only now, with every pull request above retargeted, may merged lower branches go.
    if opts.settings.delete_merged {
        r.delete_merged_branches(&known, report)?;
    }
    Ok(())
}

impl Remote<'_> {
    /// Pushes, in one push, every branch whose pull request is still to be opened or updated.
    fn push_branches(&self, known: &Known) -> Result<(), ForgeError> {
        let remote = &self.opts.settings.remote;
        let refspecs: Vec<String> = self
            .items
            .iter()
            .filter(|i| !finished(&i.packet.id, known))
            .map(|i| format!("{}:refs/heads/{}", i.commit, i.branch))
            .collect();
        if refspecs.is_empty() {
            return Ok(());
        }
        self.git
            .push(remote, &refspecs)
            .map_err(|e| ForgeError::Push {
                remote: remote.clone(),
                message: e.to_string(),
            })
    }

    /// Returns the branch `item`'s pull request targets: its last dependency in the run whose
    /// pull request is not merged, else the target.
    fn base_of(&self, item: &Item, known: &Known) -> String {
        item.packet
            .depends_on
            .iter()
            .rev()
            .filter(|d| !merged(d, known))
            .find_map(|d| self.items.iter().find(|i| &i.packet.id == d))
            .map_or_else(|| self.target.to_string(), |i| i.branch.clone())
    }

    /// Creates, updates or just reports `item`'s pull request; returns its report entry and
    /// the pull request as the forge now has it.
    fn publish_item(
        &self,
        item: &Item,
        known: &Known,
        dir: &std::path::Path,
    ) -> Result<(PrEntry, PullRequest), ForgeError> {
        let id = &item.packet.id;
        let base = self.base_of(item, known);
        let deps: Vec<(String, String)> = item
            .packet
            .depends_on
            .iter()
            .filter_map(|d| {
                let pr = known.get(d)?.as_ref()?;
                Some((d.clone(), format!("#{}", pr.number)))
            })
            .collect();
        let note = self.opts.notes.get(id).map(String::as_str);
        let body = body_for(self.objective, self.run_id, item, &base, &deps, note);
        let draft = is_draft(item);
        let mut entry = PrEntry {
            packet: id.clone(),
            title: item.packet.title.clone(),
            branch: item.branch.clone(),
            base: base.clone(),
            draft,
            action: PrAction::Unchanged,
            number: None,
            url: None,
            retargeted_from: None,
            file: dir.join(format!("{id}.md")),
        };
        let pr = match known.get(id).cloned().flatten() {
            None => {
                let settings = &self.opts.settings;
                let pr = self.forge.create(&NewPullRequest {
                    title: item.packet.title.clone(),
                    body,
                    head: item.branch.clone(),
                    base,
                    draft,
                })?;
                self.forge.add_labels(pr.number, &settings.labels)?;
                self.forge
                    .request_reviewers(pr.number, &settings.reviewers)?;
                entry.action = PrAction::Created;
                pr
            }
            Some(pr) if pr.state == PrState::Open => {
                self.update_open(item, pr, &base, &body, known, &mut entry)?
            }
            Some(pr) => {
                entry.action = if pr.state == PrState::Merged {
                    PrAction::Merged
                } else {
                    PrAction::Closed
                };
                entry.base = pr.base.clone();
                entry.draft = pr.draft;
                pr
            }
        };
        entry.number = Some(pr.number);
        entry.url = Some(pr.url.clone()).filter(|u| !u.is_empty());
        Ok((entry, pr))
    }

    /// Brings an open pull request's title, body, base and draft state up to date, with a
    /// comment saying why when it is retargeted; returns it as updated.
    fn update_open(
        &self,
        item: &Item,
        pr: PullRequest,
        base: &str,
        body: &str,
        known: &Known,
        entry: &mut PrEntry,
    ) -> Result<PullRequest, ForgeError> {
        let draft = is_draft(item);
        let change = PullRequestUpdate {
            title: (pr.title != item.packet.title).then(|| item.packet.title.clone()),
            body: (normalise(&pr.body) != normalise(body)).then(|| body.to_string()),
            base: (pr.base != base).then(|| base.to_string()),
            draft: (pr.draft != draft).then_some(draft),
        };
        if change.is_empty() {
            return Ok(pr);
        }
        let updated = self.forge.update(&pr, &change)?;
        entry.action = PrAction::Updated;
        if change.base.is_some() {
            entry.retargeted_from = Some(pr.base.clone());
            let below = self.items.iter().find(|i| i.branch == pr.base);
            let why = match below.and_then(|i| known.get(&i.packet.id)?.as_ref()) {
                Some(b) if b.state == PrState::Merged => {
                    format!("the pull request below it, #{}, was merged", b.number)
                }
                _ => "the stack changed".to_string(),
            };
            self.forge.comment(
                updated.number,
                &format!("Retargeted from `{}` to `{base}`: {why}.", pr.base),
            )?;
        }
        Ok(updated)
    }

    /// Deletes from the remote the branches of merged pull requests that no open pull request
    /// still targets.
    fn delete_merged_branches(
        &self,
        known: &Known,
        report: &mut PrReport,
    ) -> Result<(), ForgeError> {
        let remote = &self.opts.settings.remote;
        for item in self.items {
            let still_a_base = report
                .entries
                .iter()
                .any(|e| e.base == item.branch && e.action != PrAction::Merged);
            if !merged(&item.packet.id, known) || still_a_base {
                continue;
            }
            let remote_ref = format!("refs/heads/{}", item.branch);
            if !self.git.remote_has_branch(remote, &remote_ref)? {
                continue;
            }
            self.git
                .push_delete(remote, &remote_ref)
                .map_err(|e| ForgeError::Push {
                    remote: remote.clone(),
                    message: e.to_string(),
                })?;
            report.deleted.push(item.branch.clone());
        }
        Ok(())
    }
}

fn normalise(s: &str) -> String {
    s.replace("\r\n", "\n").trim().to_string()
}

/// Orders packets so every dependency comes before its dependents, keeping plan order
/// otherwise.
fn topo_order<T>(mut rest: Vec<(Packet, String, String, T)>) -> Vec<(Packet, String, String, T)> {
    let mut out: Vec<(Packet, String, String, T)> = Vec::new();
    while !rest.is_empty() {
        let ids: Vec<String> = rest.iter().map(|r| r.0.id.clone()).collect();
        let pos = rest
            .iter()
            .position(|r| r.0.depends_on.iter().all(|d| !ids.contains(d)))
            .unwrap_or(0);
        out.push(rest.remove(pos));
    }
    out
}

fn resolve_target(
    git: &Git,
    repo: &RepoInfo,
    plan: &Plan,
    given: Option<&str>,
) -> Result<String, ForgeError> {
    let is_branch = |b: &str| {
        git.resolve(&format!("refs/heads/{b}"))
            .map(|id| id.is_some())
    };
    if let Some(t) = given {
        let t = t.strip_prefix("refs/heads/").unwrap_or(t);
        return if is_branch(t)? {
            Ok(t.to_string())
        } else {
            Err(ForgeError::Config(format!(
                "target `{t}` is not a local branch; pass --target <branch>"
            )))
        };
    }
    if let Some(base) = &plan.base {
        let b = base.strip_prefix("refs/heads/").unwrap_or(base);
        if is_branch(b)? {
            return Ok(b.to_string());
        }
    }
    repo.branch.clone().ok_or(ForgeError::NoTarget)
}
