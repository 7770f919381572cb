//! Finds what an external worker changed outside its worktree.
//!
//! The sandbox keeps a confined worker's writes in its worktree; a worker run unconfined
//! (`[sandbox] workers = "off"`, or where the sandbox is unavailable) could write anywhere the
//! user can. So around each run of a worker command (and of an agent CLI, which may commit)
//! the engine takes a snapshot of what lies outside the worktree, and a difference fails the
//! packet before anything of its work is committed:
//!
//! - the main checkout's HEAD and `git status` (untracked files included), and the size and
//!   modification time of each ignored file there (not of ignored directories);
//! - every ref outside the engine's namespaces (`refs/orchestra/`, `refs/notes/orchestra/`)
//!   and the run's packet branches, which the engine itself moves meanwhile;
//! - the common git directory's `hooks/` and `config`;
//! - with an unconfined worker, the HEAD and status of every other packet worktree of the run
//!   whose packet is not running at the time (a running one changes legitimately);
//! - in the run store, the stored plan, its hash kept beside it at the run's first start
//!   (checked again on every resume), and the packet's own `packet.json`.
//!
//! Each read is a listing or a status, never a hash of a whole tree. The main checkout's
//! status, the costliest, is not read around a confined worker where the kernel's Landlock
//! enforces every right the sandbox asks for and no granted cache lies in that checkout: the
//! kernel refuses those writes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::EngineError;
use super::packet::Context;
use super::watch_fs::{IdleWatch, RefWatch, Touched};
use orchestra_git::git::Git;

/// Which packets' pipelines run, so that a worktree the engine may be writing is not taken
/// for one a worker wrote: each pipeline's start and end advance its packet's epoch, odd
/// while it runs. With `watch_idle`, the worktrees of packets that do not run are watched
/// for writes (see `watch_fs`); those it could not watch whole are read with `git status`.
#[derive(Default)]
pub(crate) struct Activity {
    epochs: Mutex<Epochs>,
    idle: Option<IdleWatch>,
    unwatched: Mutex<HashSet<String>>,
    refs: Option<RunRefs>,
}

/// Each packet's epoch and the clock reading of its last start or end.
#[derive(Default)]
struct Epochs {
    clock: u64,
    packets: HashMap<String, (u64, u64)>,
}

/// The run's packet branches, watched for changes (see [`RefWatch`]), with the tip each had
/// when its packet's pipeline last ended.
struct RunRefs {
    watch: RefWatch,
    common: PathBuf,
    /// Packet → its branch's full ref name.
    branches: HashMap<String, String>,
    /// Branch file name (what the watch's events name) → packet.
    by_file: HashMap<String, String>,
    /// Packet → its branch's tip as the engine left it (absent: no branch).
    tips: Mutex<HashMap<String, String>>,
}

impl Activity {
    /// Returns the activity of a run; `watch_idle` when its workers may write other
    /// packets' worktrees.
    pub(crate) fn new(watch_idle: bool) -> Activity {
        Activity {
            idle: if watch_idle { IdleWatch::new() } else { None },
            ..Activity::default()
        }
    }

    /// Watches the branches of the run `run`'s packets (`records`) in the repository whose
    /// common git directory is `common`, so that a snapshot need not read them all; without
    /// inotify (or with reftable) every snapshot reads them.
    pub(crate) fn with_run_refs(
        mut self,
        common: &Path,
        run: &str,
        records: &[crate::store::PacketRecord],
    ) -> Activity {
        let probe = format!(
            "refs/heads/{}",
            orchestra_sys::names::packet_branch(run, "p")
        );
        let Some(dir) = Path::new(&probe).parent().map(|d| common.join(d)) else {
            return self;
        };
        let Some(watch) = RefWatch::new(common, &dir) else {
            return self;
        };
        let (mut branches, mut by_file) = (HashMap::new(), HashMap::new());
        for rec in records {
            let full = format!("refs/heads/{}", rec.branch);
            if let Some(leaf) = common
                .join(&full)
                .strip_prefix(&dir)
                .ok()
                .and_then(Path::to_str)
                && !leaf.contains('/')
            {
                by_file.insert(leaf.to_string(), rec.id.clone());
                branches.insert(rec.id.clone(), full);
            }
        }
        let names: Vec<&str> = branches.values().map(String::as_str).collect();
        let found = orchestra_git::git::ref_tips_named(common, &names);
        let tips = branches
            .iter()
            .filter_map(|(id, full)| Some((id.clone(), found.get(full.as_str())?.clone())))
            .collect();
        self.refs = Some(RunRefs {
            watch,
            common: common.to_path_buf(),
            branches,
            by_file,
            tips: Mutex::new(tips),
        });
        self
    }

    /// Marks the pipeline of `packet` as started.
    pub(crate) fn start(&self, packet: &str) {
        self.advance(packet);
        if let Some(idle) = &self.idle {
            idle.unwatch(packet);
        }
    }

    /// Stops watching the run's branches once no packet's pipeline is left to start: the
    /// kernel then frees the watches while the run integrates, and closing the watch costs
    /// the run's end nothing (see [`RefWatch::retire`]). A snapshot taken after reads every
    /// branch.
    pub(crate) fn retire_ref_watch(&self) {
        if let Some(refs) = &self.refs {
            refs.watch.retire();
        }
    }

    /// Marks the pipeline of `packet`, whose worktree is `worktree`, as ended.
    pub(crate) fn end(&self, packet: &str, worktree: &Path) {
        if let Some(refs) = &self.refs
            && let Some(full) = refs.branches.get(packet)
        {
            let tip = orchestra_git::git::ref_tips_named(&refs.common, &[full.as_str()]);
            let mut tips = refs.tips.lock().unwrap_or_else(|p| p.into_inner());
            match tip.get(full.as_str()) {
                Some(tip) => tips.insert(packet.to_string(), tip.clone()),
                None => tips.remove(packet),
            };
        }
        if let Some(idle) = &self.idle
            && worktree.is_dir()
            && !idle.watch(packet, worktree)
        {
            idle.unwatch(packet);
            let mut unwatched = self.unwatched.lock().unwrap_or_else(|p| p.into_inner());
            unwatched.insert(packet.to_string());
        }
        self.advance(packet);
    }

    /// Starts watching the worktrees the run's packets already have (a resumed run's), each
    /// idle until its pipeline starts.
    pub(crate) fn watch_existing(&self, records: &[crate::store::PacketRecord]) {
        if self.idle.is_none() {
            return;
        }
        for rec in records.iter().filter(|r| !r.removed) {
            let wt = Path::new(&rec.worktree);
            if let Some(idle) = &self.idle
                && wt.is_dir()
                && !idle.watch(&rec.id, wt)
            {
                idle.unwatch(&rec.id);
                let mut unwatched = self.unwatched.lock().unwrap_or_else(|p| p.into_inner());
                unwatched.insert(rec.id.clone());
            }
        }
    }

    fn advance(&self, packet: &str) {
        let mut epochs = self.epochs.lock().unwrap_or_else(|p| p.into_inner());
        epochs.clock += 1;
        let clock = epochs.clock;
        let entry = epochs.packets.entry(packet.to_string()).or_default();
        *entry = (entry.0 + 1, clock);
    }

    fn epoch(&self, packet: &str) -> u64 {
        let epochs = self.epochs.lock().unwrap_or_else(|p| p.into_inner());
        epochs.packets.get(packet).map_or(0, |e| e.0)
    }

    /// Returns the clock: how many starts and ends there were.
    fn clock(&self) -> u64 {
        self.epochs.lock().unwrap_or_else(|p| p.into_inner()).clock
    }

    /// Returns true when the pipeline of `packet` has neither run nor started or ended since
    /// the clock read `clock`.
    fn idle_since(&self, packet: &str, clock: u64) -> bool {
        let epochs = self.epochs.lock().unwrap_or_else(|p| p.into_inner());
        epochs
            .packets
            .get(packet)
            .is_none_or(|(epoch, at)| epoch.is_multiple_of(2) && *at <= clock)
    }

    /// Returns the packet branches (other than that of `packet`) that moved since the clock
    /// read `clock` and the ref watch's mark `mark`, whose packets stayed idle meanwhile, as
    /// `(ref, old tip, new tip)`; a tip is empty for a branch that does not exist.
    fn moved_branches(&self, packet: &str, clock: u64, mark: u64) -> Vec<(String, String, String)> {
        let Some(refs) = &self.refs else {
            return Vec::new();
        };
        let candidates: Vec<(&String, &String)> = match refs.watch.touched_since(mark) {
            Touched::Names(names) => names
                .iter()
                .filter_map(|n| refs.branches.get_key_value(refs.by_file.get(n)?))
                .collect(),
            Touched::Unknown => refs.branches.iter().collect(),
        };
        let candidates: Vec<(&String, &String)> = candidates
            .into_iter()
            .filter(|(id, _)| *id != packet)
            .collect();
        let names: Vec<&str> = candidates.iter().map(|(_, full)| full.as_str()).collect();
        let now = orchestra_git::git::ref_tips_named(&refs.common, &names);
        let mut tips = refs.tips.lock().unwrap_or_else(|p| p.into_inner());
        let mut moved = Vec::new();
        for (id, full) in candidates {
            // Read after the tips: a pipeline that started meanwhile may have written them.
            if !self.idle_since(id, clock) {
                continue;
            }
            let new = now.get(full.as_str()).cloned().unwrap_or_default();
            let old = tips.get(id).cloned().unwrap_or_default();
            if old != new {
                // Named once, by the first worker whose watch sees it.
                if new.is_empty() {
                    tips.remove(id);
                } else {
                    tips.insert(id.clone(), new.clone());
                }
                moved.push((full.clone(), old, new));
            }
        }
        moved.sort();
        moved
    }

    /// Returns true when the worktree of `packet` is not watched for writes.
    fn is_unwatched(&self, packet: &str) -> bool {
        self.idle.is_none()
            || self
                .unwatched
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(packet)
    }
}

/// What lies outside a packet's worktree at one moment.
#[derive(Debug, Default)]
pub(crate) struct Outside {
    main: Option<(String, String)>,
    refs: BTreeMap<String, String>,
    /// The run's packet branches of packets not running (other than this one), with their
    /// packets' epochs: ref → (epoch, tip; empty when the branch does not exist).
    run_refs: BTreeMap<String, (u64, String)>,
    /// With the run's branches watched: the activity's clock and the ref watch's mark, in
    /// place of `run_refs`.
    ref_mark: Option<(u64, u64)>,
    git_files: BTreeMap<String, String>,
    /// Idle sibling packets not watched for writes: epoch, worktree, HEAD and status.
    siblings: BTreeMap<String, (u64, PathBuf, String, String)>,
    /// The newest write seen into watched idle worktrees (see `watch_fs`).
    mark: Option<u64>,
    store: BTreeMap<String, String>,
}

/// What a snapshot reads besides the refs, the common git directory's files and the store.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    /// The other packets' worktrees (an unconfined worker could have written them).
    pub siblings: bool,
    /// The main checkout's HEAD and status: left out only for a worker the kernel keeps from
    /// writing there (see `Sandboxes::worker_contained`).
    pub main: bool,
}

/// Returns the snapshot of what lies outside the worktree of `packet` (see the module
/// comment), reading what `seen` says besides.
pub(super) fn snapshot(ctx: &Context<'_>, packet: &str, seen: Seen) -> Result<Outside, String> {
    let repo = ctx.repo;
    let siblings = seen.siblings;
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("cannot read {what}: {e}");
    let mut out = Outside {
        main: match seen.main {
            true => main_state(&repo.common_dir, &repo.toplevel)?,
            false => None,
        },
        ..Outside::default()
    };
    // The packet records, read only when needed: with the run's branches watched and idle
    // worktrees watched for writes, a snapshot costs the same whatever the number of packets.
    let unwatched_siblings = siblings
        && (ctx.activity.idle.is_none()
            || !ctx
                .activity
                .unwatched
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty());
    let records = if ctx.activity.refs.is_none() || unwatched_siblings {
        ctx.journal.packets().map_err(|e| fail("the journal", &e))?
    } else {
        Vec::new()
    };
    // A packet branch is compared only while its packet does not run (the engine commits
    // there meanwhile); the run's other branches (subtasks') not at all.
    if let Some(refs) = &ctx.activity.refs {
        out.ref_mark = Some((ctx.activity.clock(), refs.watch.mark()));
    }
    let idle = idle_branches(
        ctx.activity,
        records
            .iter()
            .filter(|r| r.id != packet && ctx.activity.refs.is_none())
            .map(|r| (r.id.as_str(), r.branch.as_str())),
    );
    let own_branches = format!("refs/heads/orchestra/{}/", ctx.run.id);
    let wanted: Vec<String> = idle.keys().cloned().collect();
    let skip = [
        "refs/orchestra/",
        "refs/notes/orchestra/",
        own_branches.as_str(),
    ];
    let tips = match orchestra_git::git::ref_files(&repo.common_dir, &skip, &wanted) {
        Some(tips) => tips.into_iter().collect(),
        None => repo
            .git()
            .ref_tips(&skip[..2])
            .map_err(|e| fail("the repository's refs", &e))?,
    };
    let mut run_tips = BTreeMap::new();
    for (name, id) in tips {
        if !name.starts_with(&own_branches) {
            out.refs.insert(name, id);
        } else if idle.contains_key(&name) {
            run_tips.insert(name, id);
        }
    }
    out.run_refs = idle_tips(ctx.activity, idle, run_tips);
    out.git_files = git_files(&repo.common_dir);
    if siblings {
        out.mark = ctx.activity.idle.as_ref().map(IdleWatch::mark);
        for rec in &records {
            let epoch = ctx.activity.epoch(&rec.id);
            let wt = PathBuf::from(&rec.worktree);
            if rec.id == packet
                || rec.removed
                || !epoch.is_multiple_of(2)
                || !wt.is_dir()
                || !ctx.activity.is_unwatched(&rec.id)
            {
                continue;
            }
            let Ok(git) = Git::pinned_unrepaired(&repo.common_dir, &wt) else {
                continue;
            };
            let (head, status) = git
                .head_and_status()
                .map_err(|e| fail(&format!("the worktree {}", wt.display()), &e))?;
            // As for the branches (see `idle_tips`): a pipeline that started meanwhile may
            // have written what was read.
            if ctx.activity.epoch(&rec.id) != epoch {
                continue;
            }
            out.siblings
                .insert(rec.id.clone(), (epoch, wt, head, status));
        }
    }
    let stored = ctx
        .journal
        .stored_plan()
        .map_err(|e| fail("the stored plan", &e))?;
    out.store
        .insert("the stored plan".into(), hash(stored.as_bytes()));
    for (label, file) in [
        ("its hash", ctx.run_dir.plan_hash()),
        ("the packet file", ctx.run_dir.packet_file(packet)),
    ] {
        let bytes = std::fs::read(&file).unwrap_or_default();
        out.store
            .insert(format!("{label} ({})", file.display()), hash(&bytes));
    }
    Ok(out)
}

/// Returns the HEAD and status (ignored files included) of the checkout at `top`, read with
/// git pinned to its registration and hardened like every engine git (its configuration is
/// not trusted); `None` when it cannot be pinned.
fn main_state(common_dir: &Path, top: &Path) -> Result<Option<(String, String)>, String> {
    let Ok(main) = Git::pinned_unrepaired(common_dir, top) else {
        return Ok(None);
    };
    main.head_status_and_ignored_files()
        .map(Some)
        .map_err(|e| format!("cannot read the main checkout's status: {e}"))
}

/// Returns the part of a snapshot that needs no packet pipeline: the main checkout (of the
/// repository whose common git directory is `common_dir`), refs outside the engine's
/// namespaces and run `run`'s branches, and the common `hooks/` and `config`. Taken around a
/// worker resolving a merge's conflicts, when no packet pipeline runs.
pub(crate) fn outside_of_run(common_dir: &Path, run: &str) -> Result<Outside, String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("cannot read {what}: {e}");
    let mut out = Outside::default();
    let main_top = common_dir
        .file_name()
        .is_some_and(|n| n == ".git")
        .then(|| common_dir.parent())
        .flatten();
    if let Some(top) = main_top {
        out.main = main_state(common_dir, top)?;
    }
    let own = format!("refs/heads/orchestra/{run}/");
    let skip = ["refs/orchestra/", "refs/notes/orchestra/", own.as_str()];
    let tips = match orchestra_git::git::ref_files(common_dir, &skip, &[]) {
        Some(tips) => tips.into_iter().collect(),
        None => Git::new(common_dir)
            .ref_tips(&skip[..2])
            .map_err(|e| fail("the repository's refs", &e))?,
    };
    for (name, id) in tips {
        if !name.starts_with(&own) {
            out.refs.insert(name, id);
        }
    }
    out.git_files = git_files(common_dir);
    Ok(out)
}

/// Returns the reason a worker's work is refused when it changed `changed` (lines from
/// [`changes`]) outside its worktree.
pub(crate) fn outside_reason(changed: &[String]) -> String {
    format!(
        "the worker changed what lies outside its worktree, so none of its work is used:\n- {}",
        changed
            .iter()
            .map(|c| orchestra_sys::redact::terminal_safe(c).into_owned())
            .collect::<Vec<_>>()
            .join("\n- ")
    )
}

/// Returns what differs between two [`outside_of_run`] snapshots, one line each.
pub(crate) fn outside_changes(before: &Outside, after: &Outside) -> Vec<String> {
    changes(&Activity::default(), "", before, after)
}

/// The run's packet branches whose packets do not run: ref → (packet, epoch).
type IdleBranches = BTreeMap<String, (String, u64)>;

/// Returns the branches of `packets` (id, branch) whose pipelines do not run, each with its
/// packet's epoch as read before the branch is.
fn idle_branches<'r>(
    activity: &Activity,
    packets: impl Iterator<Item = (&'r str, &'r str)>,
) -> IdleBranches {
    packets
        .filter_map(|(id, branch)| {
            let epoch = activity.epoch(id);
            epoch
                .is_multiple_of(2)
                .then(|| (format!("refs/heads/{branch}"), (id.to_string(), epoch)))
        })
        .collect()
}

/// Returns the tips read (`tips`; empty for a branch that does not exist) of the `idle`
/// branches with their epochs, leaving out the packets whose epoch moved since `idle` was
/// read.
///
/// Reading the refs takes a while, and a pipeline that starts meanwhile creates its branch
/// within milliseconds: its tip may be read under the epoch of before it started, and taken
/// for a branch a worker created (a 1,000-packet run failed packets that way). Such a branch
/// is not compared, as is one whose packet ran between the two snapshots.
fn idle_tips(
    activity: &Activity,
    idle: IdleBranches,
    mut tips: BTreeMap<String, String>,
) -> BTreeMap<String, (u64, String)> {
    idle.into_iter()
        .filter(|(_, (id, epoch))| activity.epoch(id) == *epoch)
        .map(|(name, (_, epoch))| {
            let tip = tips.remove(&name).unwrap_or_default();
            (name, (epoch, tip))
        })
        .collect()
}

/// Returns what differs between `before` and `after`, the snapshots around a run of the
/// worker of `packet`, one line each, naming what changed.
pub(super) fn changes(
    activity: &Activity,
    packet: &str,
    before: &Outside,
    after: &Outside,
) -> Vec<String> {
    let mut found = Vec::new();
    if let (Some((h0, s0)), Some((h1, s1))) = (&before.main, &after.main) {
        if h0 != h1 {
            found.push(format!("the main checkout's HEAD moved ({h0} → {h1})"));
        }
        for line in changed_lines(s0, s1) {
            found.push(format!("the main checkout changed: `{line}`"));
        }
    }
    let run_refs = before.run_refs.iter().filter_map(|(name, (epoch, old))| {
        let (e, new) = after.run_refs.get(name)?;
        (e == epoch).then(|| (name.clone(), old.clone(), new.clone()))
    });
    let watched = match (before.ref_mark, after.ref_mark) {
        (Some((clock, mark)), Some(_)) => activity.moved_branches(packet, clock, mark),
        _ => Vec::new(),
    };
    let refs = diff_maps(&before.refs, &after.refs)
        .into_iter()
        .map(|(name, old, new)| {
            (
                name.clone(),
                old.cloned().unwrap_or_default(),
                new.cloned().unwrap_or_default(),
            )
        })
        .chain(run_refs)
        .chain(watched);
    for (name, old, new) in refs {
        found.push(match (old.is_empty(), new.is_empty()) {
            _ if old == new => continue,
            (false, false) => format!("ref {name} moved ({old} → {new})"),
            (true, false) => format!("ref {name} was created (at {new})"),
            (false, true) => format!("ref {name} was deleted (it was at {old})"),
            (true, true) => continue,
        });
    }
    for (name, old, new) in diff_maps(&before.git_files, &after.git_files) {
        let what = match (old, new) {
            (None, Some(_)) => "was planted",
            (Some(_), None) => "was deleted",
            _ => "was changed",
        };
        found.push(format!("the repository's {name} {what}"));
    }
    if let (Some(mark), Some(idle)) = (before.mark, &activity.idle) {
        match idle.changes_since(mark, packet) {
            Some(writes) => {
                for (id, path) in writes {
                    found.push(format!(
                        "the worktree of packet `{id}` changed: {} was written",
                        path.display()
                    ));
                }
            }
            None => found.push(
                "the worktrees of idle packets were written more often than could be recorded (the watch's event queue overflowed)".into(),
            ),
        }
    }
    for (id, (epoch, wt, h0, s0)) in &before.siblings {
        let Some((epoch1, _, h1, s1)) = after.siblings.get(id) else {
            continue;
        };
        if epoch1 != epoch {
            continue;
        }
        if h0 != h1 {
            found.push(format!(
                "the worktree of packet `{id}` ({}) moved its HEAD ({h0} → {h1})",
                wt.display()
            ));
        }
        for line in changed_lines(s0, s1) {
            found.push(format!(
                "the worktree of packet `{id}` ({}) changed: `{line}`",
                wt.display()
            ));
        }
    }
    for (name, _, _) in diff_maps(&before.store, &after.store) {
        found.push(format!("the run store's {name} was changed"));
    }
    found
}

/// Checks the stored plan of a run against the hash kept beside it (writing the hash at the
/// run's first start): a plan changed in the store since is refused.
pub(super) fn check_stored_plan(
    run: &str,
    dir: &orchestra_sys::exec::RunDir,
    plan_toml: &str,
) -> Result<(), EngineError> {
    let file = dir.plan_hash();
    let expected = hash(plan_toml.as_bytes());
    match std::fs::read_to_string(&file) {
        Ok(text) if text.trim() == expected => Ok(()),
        Ok(_) => Err(EngineError::StoredPlan {
            run: run.to_string(),
            message: format!(
                "the plan in the run store no longer matches the hash recorded when the run started ({}); something changed it — start a new run from your plan file",
                file.display()
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs_err::create_dir_all(dir.path())
            .and_then(|()| fs_err::write(&file, format!("{expected}\n")))
            .map_err(|e| EngineError::StoredPlan {
                run: run.to_string(),
                message: format!("cannot record the plan's hash: {e}"),
            }),
        Err(e) => Err(EngineError::StoredPlan {
            run: run.to_string(),
            message: format!("cannot read {}: {e}", file.display()),
        }),
    }
}

/// Returns the hashes of the common git directory's `config` and of each file in `hooks/`.
fn git_files(common: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    if let Ok(bytes) = std::fs::read(common.join("config")) {
        files.insert("config".to_string(), hash(&bytes));
    }
    if let Ok(entries) = std::fs::read_dir(common.join("hooks")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            files.insert(format!("hook {name}"), hash(&bytes));
        }
    }
    files
}

/// Returns the lines of `after` that `before` does not have and those it lost.
fn changed_lines(before: &str, after: &str) -> Vec<String> {
    let old: std::collections::BTreeSet<&str> = before.lines().collect();
    let new: std::collections::BTreeSet<&str> = after.lines().collect();
    let mut lines: Vec<String> = new.difference(&old).map(|l| l.to_string()).collect();
    lines.extend(old.difference(&new).map(|l| format!("{l} (no longer)")));
    lines
}

type Change<'m> = (&'m String, Option<&'m String>, Option<&'m String>);

/// Returns each key whose value differs between `a` and `b`, with both values.
fn diff_maps<'m>(
    a: &'m BTreeMap<String, String>,
    b: &'m BTreeMap<String, String>,
) -> Vec<Change<'m>> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| (k, a.get(k), b.get(k)))
        .collect()
}

fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIP: &str = "fa67962227d450434b7d7cb611c16ac0d5cf5c1c";

    /// Returns the snapshot of the run refs of packets p1 to p3 (the watched packet is p0),
    /// `meanwhile` running between the reading of the epochs and that of the refs, which
    /// then finds the branches `existing`.
    fn run_refs(activity: &Activity, meanwhile: impl FnOnce(), existing: &[&str]) -> Outside {
        let branches = [
            ("p1", "orchestra/r/p1"),
            ("p2", "orchestra/r/p2"),
            ("p3", "orchestra/r/p3"),
        ];
        let idle = idle_branches(activity, branches.into_iter());
        meanwhile();
        let tips = existing
            .iter()
            .map(|b| (format!("refs/heads/orchestra/r/{b}"), TIP.to_string()))
            .collect();
        Outside {
            run_refs: idle_tips(activity, idle, tips),
            ..Outside::default()
        }
    }

    #[test]
    fn a_packet_starting_while_the_refs_are_read_is_not_taken_for_the_workers_doing() {
        let activity = Activity::new(false);
        let before = run_refs(&activity, || {}, &[]);
        // p2 starts while the refs are read and creates its branch at once (a 1,000-packet
        // run failed packets for a sibling's branch "created" this way).
        let after = run_refs(&activity, || activity.start("p2"), &["p2"]);
        assert_eq!(
            changes(&activity, "p0", &before, &after),
            Vec::<String>::new()
        );
        assert!(!after.run_refs.contains_key("refs/heads/orchestra/r/p2"));
    }

    #[test]
    fn a_branch_of_a_packet_idle_throughout_is_still_compared() {
        let activity = Activity::new(false);
        activity.start("p2");
        activity.end("p2", Path::new("/nonexistent"));
        let before = run_refs(&activity, || {}, &["p2"]);
        let after = run_refs(&activity, || {}, &["p2", "p3"]);
        assert_eq!(
            changes(&activity, "p0", &before, &after),
            vec![format!(
                "ref refs/heads/orchestra/r/p3 was created (at {TIP})"
            )]
        );
        let gone = run_refs(&activity, || {}, &[]);
        assert_eq!(
            changes(&activity, "p0", &after, &gone),
            vec![
                format!("ref refs/heads/orchestra/r/p2 was deleted (it was at {TIP})"),
                format!("ref refs/heads/orchestra/r/p3 was deleted (it was at {TIP})"),
            ]
        );
    }

    fn record(id: &str) -> crate::store::PacketRecord {
        crate::store::PacketRecord {
            id: id.into(),
            index: 0,
            title: id.into(),
            role: "implementer".into(),
            state: crate::store::PacketState::Pending,
            phase: None,
            branch: orchestra_sys::names::packet_branch("r", id),
            worktree: String::new(),
            attempt: 0,
            start: None,
            commit: None,
            reason: None,
            pgid: None,
            removed: false,
            backup: None,
            updated_ms: 0,
            timings: Default::default(),
        }
    }

    use orchestra_git::git::testing::git;

    /// Makes a repository in `repo` with one empty commit on `main`; returns the commit.
    fn repository(repo: &Path) -> String {
        git(repo, &["init", "-q", "-b", "main"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "a"]);
        git(repo, &["rev-parse", "HEAD"])
    }

    #[test]
    fn watched_branches_name_what_moved_while_their_packets_were_idle_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        let first = repository(repo);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "b"]);
        let second = git(repo, &["rev-parse", "HEAD"]);
        for p in ["p1", "p2"] {
            git(repo, &["branch", &format!("orchestra/r/{p}"), &first]);
        }
        let common = repo.join(".git");
        let records: Vec<_> = ["p0", "p1", "p2", "p3", "p4"].map(record).into();
        let activity = Activity::new(false).with_run_refs(&common, "r", &records);
        assert!(activity.refs.is_some(), "inotify is available here");
        let window = |work: &dyn Fn()| {
            let (clock, mark) = (
                activity.clock(),
                activity.refs.as_ref().unwrap().watch.mark(),
            );
            work();
            activity.moved_branches("p0", clock, mark)
        };
        let name = |p: &str| format!("refs/heads/orchestra/r/{p}");
        // The worker moves an idle packet's branch and creates one for a packet that never
        // ran; packing every ref moves nothing.
        let moved = window(&|| {
            git(repo, &["update-ref", &name("p1"), &second]);
            git(repo, &["branch", "orchestra/r/p3", &first]);
            git(repo, &["pack-refs", "--all"]);
        });
        assert_eq!(
            moved,
            vec![
                (name("p1"), first.clone(), second.clone()),
                (name("p3"), String::new(), first.clone()),
            ]
        );
        // Named once: the next window does not name them again.
        assert_eq!(window(&|| {}), Vec::new());
        // A packet that runs moves its own branch, and the engine records the tip it left.
        let moved = window(&|| {
            activity.start("p2");
            git(repo, &["update-ref", &name("p2"), &second]);
            activity.end("p2", Path::new("/nonexistent"));
        });
        assert_eq!(moved, Vec::new());
        assert_eq!(window(&|| {}), Vec::new());
        // Deleted by the worker: named, though the watched directory may go with it.
        let moved = window(&|| {
            git(repo, &["update-ref", "-d", &name("p2")]);
        });
        assert_eq!(moved, vec![(name("p2"), second.clone(), String::new())]);
        // The worker's own branch is its own business.
        assert_eq!(
            window(&|| {
                git(repo, &["branch", "-f", "orchestra/r/p0", &second]);
            }),
            Vec::new()
        );
    }

    #[test]
    fn a_retired_watch_still_finds_every_moved_branch_and_holds_no_watch() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        let first = repository(repo);
        git(repo, &["branch", "orchestra/r/p1", &first]);
        let records: Vec<_> = ["p0", "p1"].map(record).into();
        let activity = Activity::new(false).with_run_refs(&repo.join(".git"), "r", &records);
        let refs = activity.refs.as_ref().expect("inotify is available here");
        assert_eq!(refs.watch.watches(), 2);
        let (clock, mark) = (activity.clock(), refs.watch.mark());
        activity.retire_ref_watch();
        // Moved after the watch stopped: no event says so, yet it is named.
        let name = "refs/heads/orchestra/r/p1";
        git(repo, &["update-ref", "-d", name]);
        assert_eq!(
            activity.moved_branches("p0", clock, mark),
            vec![(name.to_string(), first.clone(), String::new())]
        );
        // Its watches are gone, its descriptor kept.
        assert_eq!(refs.watch.watches(), 0);
    }
}
