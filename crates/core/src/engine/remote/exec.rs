//! The remote side of a packet: `git orchestra packet exec <run> <packet>` on the machine the
//! executor chose. It reads the job from the git remote, works the packet with the engine's
//! own pipeline steps (worktree, worker, commit with trailers, scope check, validation) in a
//! scratch repository, and pushes the branch and its events back. A job whose result is
//! already in the events ref is not worked again.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::super::packet::{Checked, Context, Halt, Step};
use super::{
    ExecResult, Job, Line, LineKind, base_ref, events_ref, job_ref, parse_lines, result_of,
};
use crate::engine::{EngineError, Journal};
use crate::plan::Plan;
use crate::store::{Event, NewPacket, NewRun, Store};
use orchestra_git::git::{self as gitops, Git, RepoInfo};
use orchestra_sys::exec::{LockError, RunDir, RunLock, process::Sandboxes};
use orchestra_sys::names;

/// Where and how to work one packet.
pub struct ExecOptions<'a> {
    pub run: &'a str,
    pub packet: &'a str,
    /// The git remote the job came through and the results go back to.
    pub remote: &'a str,
    /// The repository the work happens in (a bare one, created when missing); it may be the
    /// remote itself, and then nothing is fetched or pushed.
    pub repo: &'a Path,
    pub sandboxes: Sandboxes,
    /// Our agents, for a job that names no worker command (`None` when no model profile is
    /// configured here).
    pub worker: Option<&'a dyn crate::engine::Worker>,
    pub stop: &'a AtomicBool,
    pub on_event: &'a (dyn Fn(&str, &Event) + Sync),
}

/// How `exec` ended.
#[derive(Debug)]
pub struct ExecReport {
    pub result: ExecResult,
    /// True when the result was already there and nothing was worked again.
    pub reused: bool,
    pub branch: String,
}

fn failed(what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::Worktree(format!("{what}: {e}"))
}

/// Works packet `o.packet` of run `o.run` from its job in `o.remote`; see the module doc.
pub fn exec(o: &ExecOptions<'_>) -> Result<ExecReport, EngineError> {
    gitops::init_bare(o.repo).map_err(|e| failed("cannot create the work repository", e))?;
    let repo_dir = fs_err::canonicalize(o.repo).map_err(|e| failed("work repository", e))?;
    let git = Git::new(&repo_dir);
    // The remote's token (a CI runner's) goes to the fetches and the push, never to the work.
    let transport = match orchestra_sys::exec::secret_env::remote_token() {
        Some(token) => git.with_http_token(token),
        None => git.clone(),
    };
    let same = Path::new(o.remote)
        .canonicalize()
        .is_ok_and(|p| p == repo_dir);
    if !same {
        fetch_packet_refs(&transport, o)?;
    }
    let lock_dir = RunDir::new(&repo_dir, o.run).packet(o.packet);
    let _lock = wait_for_lock(&lock_dir, o)?;
    let job = read_job(&git, o)?;
    let events = events_ref(o.run, o.packet);
    let mut lines = match git.read_blob_ref(&events) {
        Ok(Some(text)) => parse_lines(&text),
        Ok(None) => Vec::new(),
        Err(e) => return Err(failed("cannot read the packet's events", e)),
    };
    if let Some(done) = result_of(&lines, job.attempt, job.round) {
        return Ok(ExecReport {
            result: done.clone(),
            reused: true,
            branch: job.branch,
        });
    }
    let collected = Mutex::new(Vec::new());
    let collect = |run: &str, e: &Event| {
        (o.on_event)(run, e);
        collected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e.clone());
    };
    let result = work(o, &repo_dir, &job, &collect)?;
    let (attempt, round) = (job.attempt, job.round);
    let events_now = collected.into_inner().unwrap_or_else(|p| p.into_inner());
    lines.extend(events_now.into_iter().map(|e| Line {
        attempt,
        round,
        what: LineKind::Event(e),
    }));
    lines.push(Line {
        attempt,
        round,
        what: LineKind::Result(result.clone()),
    });
    let text: String = lines
        .iter()
        .filter_map(|l| serde_json::to_string(l).ok())
        .map(|l| l + "\n")
        .collect();
    git.write_blob_ref(&events, text.as_bytes())
        .map_err(|e| failed("cannot write the packet's events", e))?;
    if !same {
        let branch = format!("refs/heads/{}", job.branch);
        transport
            .push(
                o.remote,
                &[format!("+{branch}:{branch}"), format!("+{events}:{events}")],
            )
            .map_err(|e| failed("cannot push the packet's branch and events", e))?;
    }
    Ok(ExecReport {
        result,
        reused: false,
        branch: job.branch,
    })
}

/// Fetches the packet's job, start, branch and events from the remote (those that exist).
fn fetch_packet_refs(git: &Git, o: &ExecOptions<'_>) -> Result<(), EngineError> {
    let wanted = [
        job_ref(o.run, o.packet),
        base_ref(o.run, o.packet),
        events_ref(o.run, o.packet),
        format!("refs/heads/{}", names::packet_branch(o.run, o.packet)),
    ];
    let mut specs = Vec::new();
    for name in wanted {
        let listed = git
            .remote_refs(o.remote, &name)
            .map_err(|e| failed("cannot list the remote's refs", e))?;
        if listed.iter().any(|(n, _)| *n == name) {
            specs.push(format!("+{name}:{name}"));
        }
    }
    if specs.is_empty() {
        return Ok(());
    }
    git.fetch_refs(o.remote, &specs)
        .map_err(|e| failed("cannot fetch the packet from the remote", e))
}

/// Takes the packet's lock, waiting while another `packet exec` of it still works (a job
/// dispatched again while the first one runs gets its result afterwards).
fn wait_for_lock(dir: &Path, o: &ExecOptions<'_>) -> Result<RunLock, EngineError> {
    let until = Instant::now() + Duration::from_secs(24 * 3600);
    loop {
        match RunLock::acquire(dir, o.run) {
            Ok(lock) => return Ok(lock),
            Err(LockError::Busy { .. })
                if Instant::now() < until && !o.stop.load(Ordering::SeqCst) =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reads the job and checks it is the packet's.
fn read_job(git: &Git, o: &ExecOptions<'_>) -> Result<Job, EngineError> {
    let name = job_ref(o.run, o.packet);
    let text = git
        .read_blob_ref(&name)
        .map_err(|e| failed("cannot read the job", e))?
        .ok_or_else(|| {
            EngineError::Worktree(format!(
                "no job for packet `{}` of run `{}` in {} ({name} is missing); the coordinator pushes it before it runs `packet exec`",
                o.packet, o.run, o.remote
            ))
        })?;
    let job: Job = serde_json::from_slice(&text)
        .map_err(|e| failed(&format!("the job in {name} does not parse"), e))?;
    if job.run != o.run || job.packet.id != o.packet {
        return Err(EngineError::Worktree(format!(
            "the job in {name} is for packet `{}` of run `{}`",
            job.packet.id, job.run
        )));
    }
    if !git.has_object(&job.start).unwrap_or(false) {
        return Err(EngineError::Worktree(format!(
            "the start commit {} of packet `{}` is not in {}",
            job.start, o.packet, o.remote
        )));
    }
    Ok(job)
}

/// Works the job in a worktree of the work repository and returns how it ended.
fn work(
    o: &ExecOptions<'_>,
    repo_dir: &Path,
    job: &Job,
    on_event: &(dyn Fn(&str, &Event) + Sync),
) -> Result<ExecResult, EngineError> {
    let mut root = repo_dir.as_os_str().to_owned();
    root.push(".worktrees");
    let wt = names::packet_worktree(&PathBuf::from(root), &job.run, &job.packet.id);
    // Each packet journals in a store of its own: packets of one run reach a host one by one.
    let store_root = RunDir::new(repo_dir, &job.run).packet(&job.packet.id);
    let mut store = Store::open(&store_root)?;
    store.create_run(&NewRun {
        id: job.run.clone(),
        objective: job.objective.clone(),
        base: job.start.clone(),
        plan_toml: String::new(),
        plan_path: String::new(),
        worker_cmd: Some(job.worker_cmd.clone()),
        max_parallel: 1,
        timeout_secs: job.timeout_secs.max(1),
        worktree_root: String::new(),
        packets: vec![NewPacket {
            id: job.packet.id.clone(),
            title: job.packet.title.clone(),
            role: job.packet.role.clone(),
            branch: job.branch.clone(),
            worktree: wt.to_string_lossy().into_owned(),
        }],
    })?;
    let run = store.require_run(&job.run)?;
    let repo = RepoInfo {
        toplevel: repo_dir.to_path_buf(),
        common_dir: repo_dir.to_path_buf(),
        branch: None,
        head: job.start.clone(),
    };
    prepare_branch(&repo, job, &wt)?;
    let mut packet = job.packet.clone();
    // The coordinator merged the dependencies' work into the start commit already.
    packet.depends_on.clear();
    let plan = Plan {
        objective: job.objective.clone(),
        base: None,
        max_parallel: None,
        packets: vec![packet],
        source: None,
    };
    let journal = Journal::new(store, &job.run, on_event, None);
    let dir = RunDir::new(repo_dir, &job.run);
    // Unconfined, the worker could write elsewhere on the host: its writes are looked for.
    let activity = crate::engine::watch::Activity::new(o.sandboxes.worker.is_none());
    // One packet works here, on the one slot of its job.
    let slots = crate::engine::slots::Slots::new(1);
    let ctx = Context {
        repo: &repo,
        activity: &activity,
        slots: &slots,
        run: &run,
        plan: &plan,
        worker_cmd: (!job.worker_cmd.is_empty()).then_some(job.worker_cmd.as_str()),
        worker: if job.worker_cmd.is_empty() {
            o.worker
        } else {
            None
        },
        run_dir: &dir,
        journal: &journal,
        stop: o.stop,
        setup: job.setup.as_deref(),
        sparse: None,
        sandboxes: &o.sandboxes,
        timeout: Duration::from_secs(job.timeout_secs.max(1)),
        review: None,
        fix_rounds: 0,
        retries: 0,
        retry_delay: Duration::from_secs(1),
        executor: None,
        dependencies: Some(&job.dependencies),
        checks: Default::default(),
        arms: &[],
        tests: None,
        tester: None,
        park: None,
    };
    match steps(&ctx, job, &wt) {
        Ok(Checked::Passed(head)) => Ok(ExecResult::Passed { head }),
        Ok(Checked::Failed { reason, fixes }) => Ok(ExecResult::Checked { reason, fixes }),
        Err(Halt::Fail(reason) | Halt::Transient(reason)) => Ok(ExecResult::Failed { reason }),
        Err(Halt::Interrupted) => Err(EngineError::Worktree(
            "interrupted; the packet is worked again when it is dispatched again".into(),
        )),
        Err(Halt::Journal) => Err(journal
            .take_error()
            .map_or(EngineError::Panicked, EngineError::from)),
    }
}

/// Points the packet branch where this job starts: at the start commit for the first work
/// (whatever an earlier try left there is saved to a backup ref first), at the rejected
/// commit the coordinator sent for a fix round.
fn prepare_branch(repo: &RepoInfo, job: &Job, wt: &Path) -> Result<(), EngineError> {
    if job.round > 0 {
        return Ok(());
    }
    if wt.exists()
        && let Ok(git) = Git::pinned(&repo.common_dir, wt)
    {
        let backup = names::backup_ref(&job.run, &job.packet.id);
        gitops::backup(
            &git,
            &backup,
            "work of an earlier try, before the packet started again",
        )
        .map_err(|e| failed("cannot save an earlier try's work", e))?;
    }
    repo.git()
        .set_ref(&format!("refs/heads/{}", job.branch), &job.start)
        .map_err(|e| failed("cannot point the packet branch at its start", e))
}

/// The packet pipeline's steps up to validation, for one job.
fn steps(ctx: &Context<'_>, job: &Job, wt: &Path) -> Result<Checked, Halt> {
    let packet = &ctx.plan.packets[0];
    super::super::packet::record(
        ctx,
        Event::PacketStarted {
            packet: packet.id.clone(),
            branch: job.branch.clone(),
            worktree: wt.to_string_lossy().into_owned(),
            start: job.start.clone(),
            attempt: job.attempt,
        },
    )?;
    let rec = ctx
        .journal
        .packets()
        .map_err(|_| Halt::Journal)?
        .into_iter()
        .find(|r| r.id == packet.id)
        .ok_or(Halt::Journal)?;
    let mut step = Step::new(ctx, 0, rec, job.start.clone());
    step.wt = wt.to_path_buf();
    step.env = step.environment()?;
    step.ensure_ready(true)?;
    let step = match &job.fixes {
        Some(fixes) => {
            // The rejected commit is taken back; its changes stay for the worker to fix.
            step.take_back()?;
            step.fixing(&step.dir.join(format!("fixes-{}.md", job.round)), fixes)?
        }
        None => step,
    };
    step.work(job.fixes.as_deref().map(|f| (f, job.round)))?;
    let committed = step.commit(None)?;
    step.validate(Some(committed))
}
