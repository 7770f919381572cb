//! Agent CLIs as the engine's workers: Claude Code, Codex, Gemini CLI, opencode, Qwen Code or
//! a configured one runs headless in the packet's worktree with the packet's prompt and our
//! navigation as an MCP server; what it prints is parsed into agent events and journaled. The
//! engine commits, scope-checks, validates and reviews as for any worker.
//!
//! `adapter` knows each CLI's flags, `parse` its output; [`spawn`] is the one place a CLI is
//! started, confined like our agents' commands (with the network, which the CLI needs).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub mod adapter;
pub mod parse;
mod probe;
pub mod record;
mod review;
pub mod stream;
mod text_usage;
mod touched;

pub use adapter::{Adapter, AdapterError, BUILTIN, Call, Invocation, PromptVia};
pub use parse::{CliReport, Format};
pub use probe::{CliStatus, probe, which};
pub use review::CliReviewer;
pub use stream::{DEFAULT_HEARTBEAT, Sent, Stream};

use super::AgentEvent;
use super::limit::SpendLimit;
use super::sandbox::{IfUnavailable, Sandbox};
use orchestra_core::config::RepoConfig;
use orchestra_core::engine::{Worker, WorkerJob, WorkerReport};
use orchestra_core::plan::Packet;
use orchestra_sys::exec::process::{self, Confine, Outcome, Spec};

/// Longest a CLI may print nothing before it counts as stalled, unless configured.
pub const DEFAULT_STALL: Duration = Duration::from_secs(900);

/// Runs packets with agent CLIs.
pub struct CliWorker {
    config: RepoConfig,
    /// `--agent`: the CLI of every packet, over the roles' `agent`.
    forced: Option<String>,
    toplevel: PathBuf,
    project: OnceLock<String>,
    /// Each packet's CLI session (`<run>/<packet>`), for its fix rounds.
    sessions: Mutex<HashMap<String, String>>,
    /// The validation commands' sandbox (as our agents').
    validation: Option<Box<Confine>>,
    /// Whether a fix round resumes the session an earlier process kept for the packet when
    /// this one has none (see [`CliWorker::continuing_kept`]).
    continue_kept: bool,
    /// The spend limit each CLI run is stopped at, if any (an eval arm's `tokens=`/`budget=`).
    limit: Option<Arc<SpendLimit>>,
}

impl CliWorker {
    /// Returns the worker for the repository at `toplevel`; `forced` (`--agent`) works every
    /// packet, else each role's configured `agent`. Every CLI named is checked to be known.
    pub fn new(
        toplevel: &Path,
        config: RepoConfig,
        forced: Option<&str>,
    ) -> Result<CliWorker, AdapterError> {
        let common_dir = orchestra_git::git::RepoInfo::discover(toplevel)
            .ok()
            .map(|r| r.common_dir);
        CliWorker::with_common_dir(toplevel, common_dir.as_deref(), config, forced)
    }

    /// Does what [`CliWorker::new`] does for a repository already discovered, without starting
    /// git again to find its common directory.
    pub fn in_repo(
        repo: &orchestra_git::git::RepoInfo,
        config: RepoConfig,
        forced: Option<&str>,
    ) -> Result<CliWorker, AdapterError> {
        CliWorker::with_common_dir(&repo.toplevel, Some(&repo.common_dir), config, forced)
    }

    fn with_common_dir(
        toplevel: &Path,
        common_dir: Option<&Path>,
        config: RepoConfig,
        forced: Option<&str>,
    ) -> Result<CliWorker, AdapterError> {
        for name in forced
            .into_iter()
            .chain(config.roles.values().filter_map(|r| r.agent.as_deref()))
            .chain(config.best_of.cli_arms())
        {
            adapter::adapter(name, config.agents.cli.get(name))?;
        }
        let policy = IfUnavailable::from_config(config.sandbox.if_unavailable);
        let validation = super::validation_sandbox(common_dir, &config, policy);
        Ok(CliWorker {
            config,
            forced: forced.map(str::to_string),
            toplevel: toplevel.to_path_buf(),
            project: OnceLock::new(),
            sessions: Mutex::default(),
            validation,
            continue_kept: false,
            limit: None,
        })
    }

    /// Returns this worker resuming, in a fix round, the CLI session an earlier process kept
    /// for the packet (landing's fix rounds come after the run ended).
    pub fn continuing_kept(mut self) -> CliWorker {
        self.continue_kept = true;
        self
    }

    /// Returns this worker stopping a CLI mid-packet once what it reported reaches `limit`;
    /// the packet then fails naming the limit.
    pub fn with_limit(mut self, limit: Arc<SpendLimit>) -> CliWorker {
        self.limit = Some(limit);
        self
    }

    /// Returns the CLI that works packets of `role`, if any.
    pub fn agent_for(&self, role: &str) -> Option<&str> {
        self.forced
            .as_deref()
            .or_else(|| self.config.roles.get(role)?.agent.as_deref())
    }

    /// True when some role (or every one, with `--agent`) is worked by a CLI.
    pub fn any(&self) -> bool {
        self.forced.is_some()
            || self.config.roles.values().any(|r| r.agent.is_some())
            || self.config.best_of.cli_arms().next().is_some()
    }

    /// Returns a worker that gives packets of roles with a CLI to it and the others to
    /// `other` (our agents), if any.
    pub fn routed<'a>(&'a self, other: Option<&'a dyn Worker>) -> Routed<'a> {
        Routed { cli: self, other }
    }

    fn adapter(&self, name: &str) -> Result<Adapter, AdapterError> {
        adapter::adapter(name, self.config.agents.cli.get(name))
    }

    /// The prompt of a packet's CLI: what our packet agent is given, with the tools it has
    /// here instead of ours.
    fn prompt(&self, job: &WorkerJob<'_>, resumed: bool) -> String {
        if let (true, Some(fixes)) = (resumed, job.fixes) {
            return format!(
                "The engine committed your work and checked it (scope, validation commands, review); it needs these fixes before it can land. Your work is still in the worktree: fix it there and check it, then end with a short summary of what you changed. Do not commit.\n\n{fixes}"
            );
        }
        let task = super::with_learned(
            super::with_project(
                super::with_dependencies(
                    super::task_text(job.objective, job.packet, job.fixes),
                    job.dependencies,
                ),
                self.project.get_or_init(|| {
                    orchestra_core::project::context(
                        &self.toplevel,
                        super::PROJECT_CONTEXT_CHARS / 4,
                    )
                }),
            ),
            &super::learned(job.common_dir),
        );
        format!(
            "{task}\n## How to work here\n\nTo find your way in the code, prefer the `orchestra` MCP server's tools over grep and find: nav_outline (a file's symbols), nav_def (where a name is defined), nav_refs and nav_callers (who uses it), nav_search, nav_map and nav_show. Change only the files listed above. There is no `complete` tool here: when the work is done, end with a short summary of what you changed. Do not commit; the engine commits what you leave in the worktree.\n"
        )
    }

    fn run(&self, name: &str, job: &WorkerJob<'_>) -> WorkerReport {
        let adapter = match self.adapter(name) {
            Ok(a) => a,
            Err(e) => return failed(e.to_string(), false),
        };
        let key = format!("{}/{}", job.run, job.packet.id);
        let session = job
            .fixes
            .and(adapter.resumes().then_some(()))
            .and_then(|()| {
                let held = self.sessions.lock().ok()?.get(&key).cloned();
                held.or_else(|| {
                    self.continue_kept
                        .then(|| {
                            super::resumable::load_session(
                                job.common_dir,
                                job.run,
                                &job.packet.id,
                                name,
                            )
                        })
                        .flatten()
                })
            });
        // One private directory per packet, kept across its fix rounds so a session resumes.
        let dir = job.log.parent().unwrap_or(job.worktree);
        let tmp = dir.join(format!("{name}-tmp"));
        let stem = job
            .log
            .file_stem()
            .map_or("worker".into(), |s| s.to_string_lossy().into_owned());
        let prompt_file = tmp.join(format!("{stem}-prompt.md"));
        let prompt = self.prompt(job, session.is_some());
        let configured = self.config.agents.cli.get(name);
        let stall = configured
            .and_then(|c| c.stall_secs)
            .map_or(DEFAULT_STALL, Duration::from_secs);
        let heartbeat = configured
            .and_then(|c| c.heartbeat_secs)
            .map_or(DEFAULT_HEARTBEAT, Duration::from_secs);
        let launched = Launch {
            adapter: &adapter,
            config: &self.config,
            tmp: &tmp,
            prompt_file: &prompt_file,
            resume: session.as_deref(),
            stall,
            heartbeat,
            limit: self.limit.clone(),
        }
        .run(job, prompt);
        let (out, text, report) = match launched {
            Ok(done) => done,
            Err(e) => return failed(e, false),
        };
        self.journal(name, job, &report, &out);
        if let Some(id) = &report.session {
            super::resumable::save_session(job.common_dir, job.run, &job.packet.id, name, id);
            if let Ok(mut m) = self.sessions.lock() {
                m.insert(key, id.clone());
            }
        }
        finish(&adapter, job, &report, &out, &text)
    }

    /// Journals what the CLI did that its streamed activity did not show yet: the rest of
    /// its tokens and cost as one model call (or the only one, of a CLI that streamed none),
    /// its remaining tool calls, and how it ended with its session, commands and files.
    fn journal(&self, name: &str, job: &WorkerJob<'_>, report: &CliReport, out: &Run) {
        let recorder = record::Recorder::new(job, name);
        let emit = |e: AgentEvent| recorder.emit(e);
        let sent = out.sent;
        let input = report.input_tokens.saturating_sub(sent.input_tokens);
        let output = report.output_tokens.saturating_sub(sent.output_tokens);
        let cost = match (report.cost_usd, sent.cost_usd) {
            (Some(total), Some(shown)) => Some(total - shown).filter(|c| *c > 0.0),
            (total, _) => total,
        };
        if sent.model_calls == 0 || input > 0 || output > 0 || cost.is_some() {
            let ms = out.outcome.duration.as_millis() as u64;
            emit(AgentEvent::ModelCall {
                turn: report.turns.max(1),
                model: report.model.clone().unwrap_or_else(|| name.to_string()),
                input_tokens: input,
                output_tokens: output,
                cost,
                ms: ms.saturating_sub(sent.ms),
            });
        }
        for (i, t) in report.tools.iter().enumerate().skip(sent.tools) {
            emit(stream::tool_event(i, t, 0));
        }
        let stopped = out.outcome.interrupted && !out.stalled && job.stop.load(Ordering::SeqCst);
        let to = if out.outcome.success() && report.error.is_none() {
            super::WorkerState::Completed
        } else if stopped {
            super::WorkerState::Cancelled
        } else {
            super::WorkerState::Error
        };
        emit(AgentEvent::State {
            from: super::WorkerState::Running,
            to,
            reason: account(name, report),
        });
    }
}

/// One run of an agent CLI: its adapter, where its private files go, the session it resumes.
pub(super) struct Launch<'a> {
    pub adapter: &'a Adapter,
    pub config: &'a RepoConfig,
    /// Its private directory: settings files, the prompt, its own home.
    pub tmp: &'a Path,
    pub prompt_file: &'a Path,
    pub resume: Option<&'a str>,
    pub stall: Duration,
    /// Longest the packet's activity goes without a line while the CLI runs.
    pub heartbeat: Duration,
    /// The spend limit the CLI is stopped at, if any.
    pub limit: Option<Arc<SpendLimit>>,
}

impl Launch<'_> {
    /// Runs the CLI once in `job`'s worktree with `prompt`: under the workers' sandbox, which
    /// also lets it read its own program and ours (none with `[sandbox] workers = "off"`, as
    /// for worker commands), with our navigation as its MCP server. Returns how it ended, its
    /// output (the job's log) and what that output says.
    pub fn run(
        &self,
        job: &WorkerJob<'_>,
        prompt: String,
    ) -> Result<(Run, String, CliReport), String> {
        let launcher = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("git-orchestra"));
        let sandbox = (self.config.sandbox.workers
            != Some(orchestra_core::config::WorkersSandbox::Off))
        .then(|| {
            let mut sandbox = Sandbox::from_config(
                launcher.clone(),
                job.common_dir,
                &self.config.sandbox,
                self.tmp.to_path_buf(),
            );
            sandbox
                .read
                .extend(program_dirs(&launcher, &self.adapter.command));
            sandbox
        });
        let call = Call {
            worktree: job.worktree,
            tmp: self.tmp,
            prompt_file: self.prompt_file,
            mcp: (
                &launcher,
                vec![
                    "-C".into(),
                    job.worktree.to_string_lossy().into_owned(),
                    "mcp".into(),
                ],
            ),
            resume: self.resume,
            confined: sandbox.is_some() && super::sandbox::landlock_abi().is_some(),
        };
        let mut inv = self.adapter.invocation(&call);
        inv.files.push((self.prompt_file.to_path_buf(), prompt));
        let auth = |t: &str| self.adapter.auth_hint(t).is_some();
        let recorder = record::Recorder::new(job, &self.adapter.name);
        let emit = |e: AgentEvent| recorder.emit(e);
        let mut stream = Stream::new(
            &self.adapter.name,
            self.adapter.format,
            self.heartbeat,
            &emit,
        )
        .with_limit(self.limit.clone());
        let log = job.log.file_name().unwrap_or_default().to_string_lossy();
        stream.start(&log);
        let out = spawn(&inv, self.tmp, job, sandbox, self.stall, &auth, &mut stream)?;
        let text = String::from_utf8_lossy(&fs_err::read(job.log).unwrap_or_default()).into_owned();
        let mut report = parse::parse(self.adapter.format, &text);
        // Files touched are the packet's: what the CLI edited outside its worktree is not.
        report.files = touched::inside_worktree(job.worktree, &report.files);
        Ok((out, text, report))
    }
}

/// Returns what the sandbox must let the CLI read to run at all: the directory of our own
/// binary (the MCP server it starts) and the CLI's, with its installation prefix when it sits
/// in a `bin` directory (npm links `bin/<cli>` into `lib/node_modules`) that is not the home.
fn program_dirs(launcher: &Path, command: &str) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out: Vec<PathBuf> = launcher
        .parent()
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    if let Some(bin) = probe::which(command).and_then(|p| p.parent().map(Path::to_path_buf)) {
        if let Some(prefix) = bin.parent()
            && bin.file_name().is_some_and(|n| n == "bin")
            && prefix != Path::new("/")
            && Some(prefix) != home.as_deref()
        {
            out.push(prefix.to_path_buf());
        }
        out.push(bin);
    }
    out
}

/// What the journal keeps of a CLI run: session, commands, files touched (inside the
/// worktree, relative to it).
fn account(name: &str, report: &CliReport) -> String {
    let files: Vec<&str> = report.files.iter().map(String::as_str).collect();
    format!(
        "{name} session {}; {} tool calls, {} commands; files touched: {}",
        report.session.as_deref().unwrap_or("(none reported)"),
        report.tools.len(),
        report.commands.len(),
        if files.is_empty() {
            "none reported".to_string()
        } else {
            files.join(", ")
        }
    )
}

/// The API keys in the environment the CLIs get, to scrub from what is journaled.
fn secrets() -> Vec<orchestra_core::llm::ApiKey> {
    orchestra_sys::exec::secret_env::stashed()
        .iter()
        .map(|(_, v)| orchestra_core::llm::ApiKey::new(v))
        .collect()
}

fn failed(summary: String, transient: bool) -> WorkerReport {
    WorkerReport {
        success: false,
        interrupted: false,
        summary,
        transient,
    }
}

/// How a CLI's process ended.
pub struct Run {
    pub outcome: Outcome,
    /// It printed nothing for the stall limit and was stopped.
    pub stalled: bool,
    /// What its activity showed while it ran.
    pub sent: Sent,
    /// It was stopped for reaching its spend limit: the limit reached.
    pub spent: Option<String>,
}

/// Returns the engine's report of a CLI run.
fn finish(
    adapter: &Adapter,
    job: &WorkerJob<'_>,
    report: &CliReport,
    out: &Run,
    text: &str,
) -> WorkerReport {
    let keys = secrets();
    let scrub = |t: &str| orchestra_core::llm::ApiKey::scrub_all(&keys, t);
    let o = &out.outcome;
    if let Some(reason) = &out.spent {
        return failed(
            scrub(&format!("{} stopped mid-packet: {reason}", adapter.name)),
            false,
        );
    }
    if o.interrupted && !out.stalled && job.stop.load(Ordering::SeqCst) {
        return WorkerReport {
            success: false,
            interrupted: true,
            summary: "cancelled".into(),
            transient: false,
        };
    }
    let said = report
        .last_message()
        .map(|m| orchestra_sys::redact::clip(m, 600))
        .unwrap_or_default();
    // No cost here: the CLI's own figure is its price list's, not `[prices]`; `status` and the
    // report give the run's one cost.
    let detail = format!(
        "{} ({} turns, {} in / {} out tokens; {})",
        said,
        report.turns,
        report.input_tokens,
        report.output_tokens,
        account(&adapter.name, report)
    );
    if o.success() && report.error.is_none() {
        return WorkerReport {
            success: true,
            interrupted: false,
            summary: scrub(detail.trim()),
            transient: false,
        };
    }
    let error = report.error.clone().unwrap_or_default();
    if let Some(hint) = adapter.auth_hint(&format!("{error}\n{}", o.tail)) {
        return failed(scrub(&hint), false);
    }
    let why = if out.stalled {
        "printed nothing for too long (stalled)".to_string()
    } else if o.timed_out {
        format!("timed out after {}s", job.timeout.as_secs())
    } else {
        match o.exit_code {
            Some(0) => format!("reported an error: {error}"),
            Some(code) => format!("exit {code}: {}", first_line(&error, text)),
            None => "killed by a signal".into(),
        }
    };
    failed(
        scrub(&format!("{} {why}; {detail}", adapter.name)),
        out.stalled || o.timed_out || o.exit_code.is_none(),
    )
}

fn first_line(error: &str, text: &str) -> String {
    let line = if error.is_empty() {
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
    } else {
        error.lines().next().unwrap_or("")
    };
    orchestra_sys::redact::clip(line.trim(), 300)
}

/// Starts the CLI of `inv` in `job`'s worktree — the one place an agent CLI is spawned —
/// under `sandbox` (none with `[sandbox] workers = "off"`) with the network (writable: the
/// worktree and `tmp`), its settings files
/// written first, its output to the job's log, streamed into `stream` as it comes; a CLI that
/// prints nothing for `stall` is stopped. The CLI gets the API keys the engine took out of its own environment, and a home
/// of its own under `tmp` (its login under the user's home is not what it reads).
pub fn spawn(
    inv: &Invocation,
    tmp: &Path,
    job: &WorkerJob<'_>,
    sandbox: Option<Sandbox>,
    stall: Duration,
    auth: &(dyn Fn(&str) -> bool + Sync),
    stream: &mut Stream<'_>,
) -> Result<Run, String> {
    let home = tmp.join("home");
    for dir in [&home.join(".config"), &home.join(".local/share")] {
        fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    for (path, text) in &inv.files {
        fs_err::write(path, text).map_err(|e| e.to_string())?;
    }
    let mut env: Vec<(String, String)> = vec![
        ("HOME".into(), home.to_string_lossy().into_owned()),
        (
            "XDG_CONFIG_HOME".into(),
            home.join(".config").to_string_lossy().into_owned(),
        ),
        (
            "XDG_DATA_HOME".into(),
            home.join(".local/share").to_string_lossy().into_owned(),
        ),
        (
            "XDG_STATE_HOME".into(),
            home.join(".local/state").to_string_lossy().into_owned(),
        ),
        (
            "XDG_CACHE_HOME".into(),
            home.join(".cache").to_string_lossy().into_owned(),
        ),
        ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
    ];
    env.extend(orchestra_sys::exec::command_env::provider_settings());
    env.extend(inv.env.iter().cloned());
    env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
    let confine = sandbox.map(Sandbox::worker_confinement);
    let spec = Spec {
        command: &inv.command,
        dir: job.worktree,
        env: &env,
        log: job.log,
        timeout: job.timeout,
        confine: confine.as_deref(),
    };
    let halt = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let stalled = AtomicBool::new(false);
    let spent = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let flags = [&halt, &done, &stalled, &spent];
        let stream = &mut *stream;
        scope.spawn(move || watch(job, stall, auth, stream, flags));
        let r = process::run(&spec, &halt, &mut |_| {});
        done.store(true, Ordering::SeqCst);
        r
    })
    .map_err(|e| e.to_string())?;
    Ok(Run {
        outcome,
        stalled: stalled.load(Ordering::SeqCst),
        sent: stream.sent(),
        spent: spent
            .load(Ordering::SeqCst)
            .then(|| stream.over_limit())
            .flatten(),
    })
}

/// Streams what the CLI prints into `stream` and sets `halt` when the run stops, the log has
/// not grown for `stall` (then `stalled` too), what it reported reaches the stream's spend
/// limit (then `spent` too) or what it printed shows an authentication failure (a CLI may
/// retry a refused key for minutes), until `done`.
fn watch(
    job: &WorkerJob<'_>,
    stall: Duration,
    auth: &(dyn Fn(&str) -> bool + Sync),
    stream: &mut Stream<'_>,
    [halt, done, stalled, spent]: [&AtomicBool; 4],
) {
    let mut size = 0u64;
    let mut read = 0u64;
    let mut since = Instant::now();
    while !done.load(Ordering::SeqCst) {
        if job.stop.load(Ordering::SeqCst) {
            halt.store(true, Ordering::SeqCst);
            return;
        }
        let now = fs_err::metadata(job.log).map_or(0, |m| m.len());
        if read < now {
            let new = read_from(job.log, read);
            read += new.len() as u64;
            stream.feed(&new);
            if stream.over_limit().is_some() {
                spent.store(true, Ordering::SeqCst);
                halt.store(true, Ordering::SeqCst);
                return;
            }
            if auth(&String::from_utf8_lossy(&new)) {
                halt.store(true, Ordering::SeqCst);
                return;
            }
        }
        if now != size {
            size = now;
            since = Instant::now();
        } else if since.elapsed() >= stall {
            stalled.store(true, Ordering::SeqCst);
            halt.store(true, Ordering::SeqCst);
            return;
        }
        stream.tick();
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Returns what `path` holds from byte `from` on (at most 256 KiB).
fn read_from(path: &Path, from: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut buf = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(from)).is_ok()
    {
        let _ = f.take(256 * 1024).read_to_end(&mut buf);
    }
    buf
}

impl Worker for CliWorker {
    fn label(&self, packet: &Packet) -> String {
        format!(
            "{}:{}",
            self.agent_for(&packet.role).unwrap_or("cli"),
            packet.role
        )
    }

    fn work(&self, job: &WorkerJob<'_>) -> WorkerReport {
        match self.agent_for(&job.packet.role) {
            Some(name) => {
                let name = name.to_string();
                let _span = tracing::info_span!("agent_cli", cli = %name, packet = %job.packet.id)
                    .entered();
                self.run(&name, job)
            }
            None => failed(
                format!(
                    "no agent CLI for role `{}`: pass --agent or set [roles.{}] agent",
                    job.packet.role, job.packet.role
                ),
                false,
            ),
        }
    }

    fn confine(&self) -> Option<&Confine> {
        self.validation.as_deref()
    }

    fn commits_itself(&self) -> bool {
        true
    }
}

/// Packets of roles with a CLI go to the CLI worker, the others to our agents.
pub struct Routed<'a> {
    cli: &'a CliWorker,
    other: Option<&'a dyn Worker>,
}

impl Routed<'_> {
    fn pick(&self, packet: &Packet) -> &dyn Worker {
        match (self.cli.agent_for(&packet.role), self.other) {
            (None, Some(other)) => other,
            _ => self.cli,
        }
    }
}

impl Worker for Routed<'_> {
    fn label(&self, packet: &Packet) -> String {
        self.pick(packet).label(packet)
    }

    fn work(&self, job: &WorkerJob<'_>) -> WorkerReport {
        // A candidate whose arm is `cli:<name>` goes to that agent CLI, whoever works the role.
        let cli_arm = job
            .candidate
            .and_then(|k| self.cli.config.best_of.cli_arm(k));
        match cli_arm {
            Some(name) => self.cli.run(name, job),
            None => self.pick(job.packet).work(job),
        }
    }

    fn confine(&self) -> Option<&Confine> {
        self.other
            .and_then(|o| o.confine())
            .or_else(|| self.cli.confine())
    }

    fn commits_itself(&self) -> bool {
        self.cli.any()
    }

    fn arm(&self, packet: &Packet, candidate: u32) -> Option<String> {
        match self.cli.config.best_of.cli_arm(candidate) {
            Some(name) => Some(format!("cli:{name}")),
            None => self.pick(packet).arm(packet, candidate),
        }
    }
}
