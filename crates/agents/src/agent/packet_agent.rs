//! Our agents as the engine's in-process worker: one agent of the packet's role works in the
//! packet's worktree; the engine then commits and validates as for any worker. The packet
//! agent's spec ([`PacketAgent`]), its role limits and its outcome report are built here
//! for the `start` worker too, which differs only in its clients and host. Here a person
//! answers the agents' questions ([`super::person`]) when the front end provides one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::limit::{Limited, SpendLimit};
use super::person::{AskPerson, Person};
use super::profiles::{self, SetupError, env};
use super::role::{Role, RoleError, Roles};
use super::sandbox::{IfUnavailable, Sandbox};
use super::state::WorkerState;
use super::tools::Registry;
use super::{AgentEvent, AgentOutcome, AgentSpec, Host};
use orchestra_core::config::RepoConfig;
use orchestra_core::engine::{Worker, WorkerJob, WorkerReport};
use orchestra_core::llm::{self, ChatModel, LlmError, RetryPolicy};
use orchestra_core::plan::Packet;
use orchestra_sys::confine::ConfinedRoot;

/// Runs packets with our agents.
pub struct AgentWorker {
    roles: Roles,
    config: RepoConfig,
    registry: Registry,
    /// One gate per profile, shared by all packets (and the run's model reviewer): the
    /// profile's concurrency limit.
    gates: std::sync::Arc<llm::Gates>,
    /// Each packet's last conversation (`<run>/<packet>`), so a fix round is the next turn of
    /// the same conversation; a new process starts the fix round afresh with the task.
    conversations: std::sync::Mutex<std::collections::HashMap<String, Vec<llm::Message>>>,
    /// The repository's top, where the project context comes from.
    toplevel: std::path::PathBuf,
    /// The project context (`ORCHESTRA.md`, or built in memory), read once per process.
    project: std::sync::OnceLock<String>,
    /// Who answers the agents' questions, and the common git directory of the run store
    /// where questions and answers are journaled; `None`: an asking agent ends waiting.
    person: Option<(Arc<dyn Person>, PathBuf)>,
    /// The sandbox validation commands run in (see `Worker::confine`).
    confine: Option<Box<orchestra_sys::exec::process::Confine>>,
    /// What a packet agent's tools reach beyond the built-in ones.
    tools: PacketTools,
    /// Whether a fix round this process has no conversation for continues the one kept on
    /// disk (see [`AgentWorker::continuing_kept`]).
    continue_kept: bool,
    /// A hard limit on what this worker's model calls spend, over all its packets; `None`:
    /// none (a `start` run enforces its budget itself).
    limit: Option<Arc<SpendLimit>>,
}

/// What a run's packet agents reach beyond the built-in tools: the MCP servers their role
/// names (started per agent) and the language servers behind their symbol tools (one set per
/// run, shared by its packets).
#[derive(Default)]
pub struct PacketTools {
    servers: std::sync::OnceLock<Option<Arc<super::tools::nav::Servers>>>,
}

impl PacketTools {
    /// Returns the tools of `role` from `builtin` for an agent in the worktree at `root`,
    /// with its MCP servers' (their session stops them when dropped; notes go to the
    /// transcript `log`, at `transcript`) and the run's language servers behind the symbol
    /// tools, which start for the worktree now, in the background, when the role has them.
    pub fn for_agent(
        &self,
        builtin: &Registry,
        role: &super::Role,
        config: &RepoConfig,
        root: &ConfinedRoot,
        transcript: &Path,
        log: &mut dyn Write,
    ) -> (Registry, super::mcp::McpSession) {
        let mut registry = builtin.for_role(role);
        let mcp = super::mcp::for_agent(
            &mut registry,
            role,
            config,
            root.root(),
            root.common_dir(),
            transcript,
            log,
        );
        if let Some(servers) = self.servers.get_or_init(|| {
            let settings = match root.common_dir() {
                Some(common_dir) => super::sandbox::language_server_settings(config, common_dir),
                // Without a repository to keep their files in, no server runs unconfined.
                None => orchestra_nav::lsp::Settings {
                    enabled: false,
                    ..orchestra_nav::lsp::Settings::from_config(&config.nav.lsp)
                },
            };
            super::tools::nav::Servers::new(settings)
        }) && super::tools::nav::with_servers(&mut registry, servers)
        {
            super::tools::nav::Servers::start_early(servers, root);
        }
        (registry, mcp)
    }
}

/// Most characters of the project context in a packet agent's task.
pub const PROJECT_CONTEXT_CHARS: usize = 6_000;

impl AgentWorker {
    /// Loads the roles of the repository at `toplevel` with its configuration.
    pub fn new(toplevel: &Path, config: RepoConfig) -> Result<AgentWorker, SetupError> {
        let common_dir = orchestra_git::git::RepoInfo::discover(toplevel)
            .ok()
            .map(|r| r.common_dir);
        AgentWorker::with_common_dir(toplevel, common_dir.as_deref(), config)
    }

    /// Does what [`AgentWorker::new`] does for a repository already discovered, without
    /// starting git again to find its common directory.
    pub fn in_repo(
        repo: &orchestra_git::git::RepoInfo,
        config: RepoConfig,
    ) -> Result<AgentWorker, SetupError> {
        AgentWorker::with_common_dir(&repo.toplevel, Some(&repo.common_dir), config)
    }

    fn with_common_dir(
        toplevel: &Path,
        common_dir: Option<&Path>,
        config: RepoConfig,
    ) -> Result<AgentWorker, SetupError> {
        let policy = IfUnavailable::from_config(config.sandbox.if_unavailable);
        let confine = validation_sandbox(common_dir, &config, policy);
        Ok(AgentWorker {
            roles: Roles::load_with_trust(toplevel, config.trusted)?,
            config,
            registry: Registry::builtin(),
            gates: std::sync::Arc::default(),
            conversations: std::sync::Mutex::default(),
            toplevel: toplevel.to_path_buf(),
            project: std::sync::OnceLock::new(),
            person: None,
            confine,
            tools: PacketTools::default(),
            continue_kept: false,
            limit: None,
        })
    }

    /// Returns this worker with its model calls refused once `limit` is reached, so a packet
    /// stops mid-work at the limit (it then fails naming the budget).
    pub fn with_limit(mut self, limit: Arc<SpendLimit>) -> AgentWorker {
        self.limit = Some(limit);
        self
    }

    /// Returns this worker continuing, in a fix round, the conversation an earlier process
    /// kept for the packet (landing's fix rounds come days after the run): the fixes are the
    /// next turn of that conversation. Without it such a round starts afresh with the task.
    pub fn continuing_kept(mut self) -> AgentWorker {
        self.continue_kept = true;
        self
    }

    /// Returns the per-profile gates, for other model users of the same run to share.
    pub fn gates(&self) -> std::sync::Arc<llm::Gates> {
        std::sync::Arc::clone(&self.gates)
    }

    /// Returns this worker with `person` answering its agents' questions (`ask`), journaled
    /// in the run store of the repository whose common git directory is `common_dir`.
    pub fn with_person(mut self, person: Arc<dyn Person>, common_dir: &Path) -> AgentWorker {
        self.person = Some((person, common_dir.to_path_buf()));
        self
    }

    /// Returns what to tell the user, once, about command confinement on this machine:
    /// `None` when Landlock is available, otherwise what the configured policy will do.
    pub fn sandbox_notice(&self) -> Option<String> {
        IfUnavailable::from_config(self.config.sandbox.if_unavailable)
            .notice(super::sandbox::landlock_abi().is_some())
    }

    /// Returns the loaded roles.
    pub fn roles(&self) -> &Roles {
        &self.roles
    }

    /// Checks, before anything starts, that each of `roles` exists, has a profile and that
    /// the profile's key variable is set — so a misconfiguration is one clear error, not a
    /// failure in every packet.
    pub fn check<'r>(&self, roles: impl IntoIterator<Item = &'r str>) -> Result<(), SetupError> {
        for name in roles {
            profiles::check(&self.config, self.roles.get(name)?)?;
        }
        Ok(())
    }

    /// Returns the task that opens a packet's conversation: the packet, its candidate's
    /// approach (a `strategy:` arm), what its dependencies did, the project and the learnings.
    fn first_task(&self, job: &WorkerJob<'_>) -> String {
        with_learned(
            with_project(
                with_dependencies(
                    with_strategy(
                        task_text(job.objective, job.packet, job.fixes),
                        job.candidate.and_then(|k| self.config.best_of.strategy(k)),
                    ),
                    job.dependencies,
                ),
                self.project.get_or_init(|| {
                    orchestra_core::project::context(&self.toplevel, PROJECT_CONTEXT_CHARS / 4)
                }),
            ),
            &learned(job.common_dir),
        )
    }

    fn run_packet(
        &self,
        job: &WorkerJob<'_>,
        log: &mut dyn Write,
    ) -> Result<WorkerReport, SetupError> {
        let packet = job.packet;
        let role = role_for_job(&self.roles, packet, job.timeout)?;
        let chain = match job
            .candidate
            .and_then(|k| self.config.best_of.worker_arm(k))
        {
            // A candidate's arm is the profile its agent uses instead of the role's own, or
            // the model its role's profile asks for.
            Some(arm) => profiles::resolve(&self.config.with_worker(&role.name, arm), &role, &env)?,
            None => profiles::resolve(&self.config, &role, &env)?,
        };
        let mut models = llm::connect_chain(&chain, &self.gates, &mut |e| {
            let _ = writeln!(
                log,
                "{{\"type\":\"fallback_unusable\",\"error\":{}}}",
                serde_json::Value::String(e.to_string())
            );
        })?;
        if let Some(limit) = &self.limit {
            models = models
                .into_iter()
                .map(|inner| {
                    Arc::new(Limited {
                        inner,
                        limit: Arc::clone(limit),
                    }) as Arc<dyn ChatModel>
                })
                .collect();
        }
        let root = ConfinedRoot::open(job.worktree).map_err(|e| LlmError::Protocol {
            model: String::new(),
            message: format!("cannot open the worktree: {e}"),
        })?;
        let (registry, _mcp) =
            self.tools
                .for_agent(&self.registry, &role, &self.config, &root, job.log, log);
        // A fix round continues the packet's conversation when this process has it.
        let key = format!("{}/{}", job.run, packet.id);
        let history = match job.fixes {
            Some(_) => self.take_conversation(&key, job),
            None => Vec::new(),
        };
        let task = match job.fixes {
            Some(fixes) if !history.is_empty() => fix_turn_text(fixes),
            _ => self.first_task(job),
        };
        let host = self.person.as_ref().map(|(person, common_dir)| AskPerson {
            person: person.as_ref(),
            common_dir,
            run: job.run,
            packet: &packet.id,
            stop: job.stop,
            journal: job.journal,
        });
        let spec = PacketAgent {
            role: &role,
            models: models.iter().map(|m| m.as_ref()).collect(),
            chain: &chain,
            registry: &registry,
            answer: host.as_ref().map(|h| h as &dyn Host),
            if_unavailable: IfUnavailable::from_config(self.config.sandbox.if_unavailable),
        }
        .spec(&self.config, &root, task, packet, job.stop, job.log);
        let keys = llm::Profile::keys_of(chain.iter());
        let mut on_event = |e: &AgentEvent| {
            e.transcribe(log, &keys);
            if let Some(event) = super::activity::store_event(&packet.id, &role.name, &keys, e) {
                (job.journal)(event);
            }
        };
        let mut outcome =
            super::run_from(&spec, history, &mut on_event).map_err(|e| LlmError::Protocol {
                model: String::new(),
                message: e.to_string(),
            })?;
        outcome.scrub(&keys);
        if outcome.state == WorkerState::Completed {
            super::resumable::save_conversation(
                job.common_dir,
                job.run,
                &packet.id,
                &outcome.messages,
                &keys,
            );
            self.keep_conversation(key, std::mem::take(&mut outcome.messages));
            remember(job.common_dir, job.run, &packet.id, &outcome.learnings);
        }
        if let Ok(line) = serde_json::to_string(&outcome) {
            let _ = writeln!(log, "{{\"type\":\"outcome\",\"outcome\":{line}}}");
        }
        let mut tokens = format!(
            "{} turns, {} tool calls, {} in / {} out tokens",
            outcome.turns,
            outcome.tool_calls,
            outcome.usage.input_tokens,
            outcome.usage.output_tokens
        );
        if let Some(share) = outcome.symbolic_share() {
            tokens.push_str(&format!(", {:.0}% of navigation symbolic", share * 100.0));
        }
        Ok(outcome_report(outcome, job.stop, &format!(" ({tokens})")))
    }
}

impl AgentWorker {
    /// Returns the packet's conversation this process holds under `key`, else (when
    /// continuing kept ones) the one kept on disk for `job`'s packet.
    fn take_conversation(&self, key: &str, job: &WorkerJob<'_>) -> Vec<llm::Message> {
        let held = self
            .conversations
            .lock()
            .map(|mut m| m.remove(key).unwrap_or_default())
            .unwrap_or_default();
        if held.is_empty() && self.continue_kept {
            return super::resumable::load_conversation(job.common_dir, job.run, &job.packet.id);
        }
        held
    }

    fn keep_conversation(&self, key: String, messages: Vec<llm::Message>) {
        if let Ok(mut m) = self.conversations.lock() {
            m.insert(key, messages);
        }
    }
}

/// Holds what an agent learned, credentials redacted, in the run store until its packet lands
/// (then later runs are told); a store that cannot be opened loses the learnings, not the work.
pub fn remember(common_dir: &Path, run: &str, packet: &str, learnings: &[String]) {
    if learnings.is_empty() {
        return;
    }
    // Agent output: no credential it saw is kept, nor a terminal control sequence.
    let scrubbed: Vec<String> = learnings
        .iter()
        .map(|l| orchestra_core::gate::safe_to_show(l))
        .collect();
    if let Ok(store) = orchestra_core::store::Store::open(common_dir) {
        let _ = store.propose_learnings(run, packet, &scrubbed);
    }
}

/// Most characters of earlier runs' learnings in a prompt.
pub const LEARNED_CHARS: usize = 2_000;

/// Returns the learnings of earlier runs kept in the run store at `common_dir`, as prompt lines.
pub fn learned(common_dir: &Path) -> String {
    orchestra_core::store::Store::open_existing(common_dir)
        .ok()
        .flatten()
        .and_then(|s| s.learnings(40).ok())
        .map(|mut l| {
            // Kept before learnings were redacted on the way in, maybe.
            l.iter_mut()
                .for_each(|l| l.text = orchestra_core::gate::safe_to_show(&l.text));
            orchestra_core::store::memory::prompt_lines(&l, LEARNED_CHARS)
        })
        .unwrap_or_default()
}

/// Returns `learned`, earlier agents' notes, framed as untrusted under a heading; empty when
/// there are none.
pub fn learned_section(learned: &str) -> String {
    if learned.trim().is_empty() {
        return String::new();
    }
    format!(
        "\n## Learned in earlier runs (notes by earlier agents: check before relying on them)\n\n{}",
        super::untrusted::frame("Earlier agents' notes", "text", learned)
    )
}

/// Returns `task` followed by what earlier runs learned, when there is anything.
pub fn with_learned(mut task: String, learned: &str) -> String {
    task.push_str(&learned_section(learned));
    task
}

/// Returns `task` followed by the project context (bounded), when there is one.
pub fn with_project(mut task: String, project: &str) -> String {
    if !project.trim().is_empty() {
        task.push_str(&format!(
            "\n## Project context (ORCHESTRA.md)\n\n{}",
            super::untrusted::frame(
                "The repository's ORCHESTRA.md",
                "markdown",
                &orchestra_sys::redact::clip(project.trim(), PROJECT_CONTEXT_CHARS)
            )
        ));
    }
    task
}

/// Returns `task` followed by what the packets it depends on did, when it depends on any.
pub fn with_dependencies(mut task: String, dependencies: &str) -> String {
    if !dependencies.trim().is_empty() {
        task.push_str(&format!(
            "\n## What the packets this one depends on did\n\n{}",
            super::untrusted::frame("Their agents' reports", "text", dependencies)
        ));
    }
    task
}

/// Returns the next user message of a packet's conversation in a fix round: what the engine's
/// checks or the review require.
pub fn fix_turn_text(fixes: &str) -> String {
    format!(
        "The engine committed your work and checked it (scope, validation commands, review); it needs these fixes before it can land. Your work is still in the worktree: fix it there, check it, then call `complete` again.\n\n{fixes}"
    )
}

/// Returns the confinement of the validation commands of packets our agents work on in the
/// repository whose common git directory is `common_dir`: the agents' own sandbox, without the
/// network; `None` when this binary cannot act as the launcher.
pub fn validation_sandbox(
    common_dir: Option<&Path>,
    config: &RepoConfig,
    if_unavailable: IfUnavailable,
) -> Option<Box<orchestra_sys::exec::process::Confine>> {
    let common_dir = common_dir?;
    let launcher = std::env::current_exe().ok()?;
    let sandbox = Sandbox {
        launcher,
        tmp: orchestra_sys::exec::state_dir(common_dir).join("validate-tmp"),
        read: Sandbox::reads(Some(common_dir), &config.sandbox),
        write: Vec::new(),
        limits: super::sandbox::Limits::from_config(&config.sandbox),
        if_unavailable,
    };
    Some(sandbox.confinement())
}

/// Returns the role of `packet` from `roles`, its time limit cut to the packet's `timeout`.
pub fn role_for_job(roles: &Roles, packet: &Packet, timeout: Duration) -> Result<Role, RoleError> {
    let mut role = roles.get(&packet.role)?.clone();
    role.timeout_secs = role.timeout_secs.min(timeout.as_secs().max(1));
    Ok(role)
}

/// The parts of a packet agent that the `run` and `start` workers choose differently: which
/// clients (plain or journaled), which host answers `ask`, how strict the sandbox is.
pub struct PacketAgent<'a> {
    pub role: &'a Role,
    /// The connected model chain, primary first.
    pub models: Vec<&'a dyn ChatModel>,
    /// The chain's profiles, primary first: context window and price.
    pub chain: &'a [llm::Profile],
    /// The role's tools.
    pub registry: &'a Registry,
    pub answer: Option<&'a (dyn Host + 'a)>,
    pub if_unavailable: IfUnavailable,
}

impl<'a> PacketAgent<'a> {
    /// Returns the spec of this agent working on `packet` in `root` with `task`, priced by
    /// `config`, its confined commands' temporary directory beside the transcript `log`.
    pub fn spec(
        self,
        config: &RepoConfig,
        root: &'a ConfinedRoot,
        task: String,
        packet: &Packet,
        stop: &'a AtomicBool,
        log: &Path,
    ) -> AgentSpec<'a> {
        let primary = self.chain.first();
        AgentSpec {
            role: self.role,
            models: self.models,
            context_tokens: primary.map_or(32_000, |p| p.context_tokens),
            task,
            root,
            packet_files: Some(packet.files.clone()),
            registry: self.registry,
            stop,
            policy: RetryPolicy::default(),
            price: primary.and_then(|p| config.prices.get(&p.model).copied()),
            answer: self.answer,
            sandbox: std::env::current_exe().ok().map(|launcher| Sandbox {
                launcher,
                tmp: log.with_extension("tmp"),
                read: Sandbox::reads(root.common_dir(), &config.sandbox),
                write: Vec::new(),
                limits: super::sandbox::Limits::from_config(&config.sandbox),
                if_unavailable: self.if_unavailable,
            }),
            text_answer: false,
        }
    }
}

/// Returns the engine's report of how a packet's agent ended: completed is a success, a
/// cancellation while the run is stopping is an interruption (the packet resumes), anything
/// else a failure; `detail` is appended to the summary (e.g. the token tally).
pub fn outcome_report(outcome: AgentOutcome, stop: &AtomicBool, detail: &str) -> WorkerReport {
    match outcome.state {
        WorkerState::Completed => WorkerReport {
            transient: false,
            success: true,
            interrupted: false,
            summary: format!("{}{detail}", outcome.summary.unwrap_or_default()),
        },
        // An agent waiting for an answer when the run stops asks again on resume.
        WorkerState::Cancelled | WorkerState::WaitingForInput if stop.load(Ordering::SeqCst) => {
            WorkerReport {
                transient: false,
                success: false,
                interrupted: true,
                summary: "cancelled".into(),
            }
        }
        state => WorkerReport {
            transient: outcome.transient,
            success: false,
            interrupted: false,
            summary: format!("{}: {}{detail}", state.as_str(), outcome.reason),
        },
    }
}

/// Returns a writer for an agent's transcript at `path`, creating its directory; a transcript
/// that cannot be written must not stop the agent, so failures give a sink.
pub fn open_transcript(path: &std::path::Path) -> Box<dyn Write> {
    match path
        .parent()
        .map(fs_err::create_dir_all)
        .transpose()
        .and_then(|_| fs_err::File::create(path))
    {
        Ok(f) => Box::new(f),
        Err(_) => Box::new(std::io::sink()),
    }
}

/// Returns `task` with the approach a best-of-N candidate's `strategy:<text>` arm gives it,
/// when it has one.
pub fn with_strategy(mut task: String, strategy: Option<&str>) -> String {
    if let Some(text) = strategy.map(str::trim).filter(|t| !t.is_empty()) {
        task.push_str(&format!("\nApproach for this attempt: {text}\n"));
    }
    task
}

/// Returns the task message for a packet: title, description, objective, scope, acceptance
/// criteria, validation commands and, in a fix round, the review's required fixes.
pub fn task_text(objective: &str, p: &Packet, fixes: Option<&str>) -> String {
    let mut t = format!(
        "# {}\n\n{}\n\nThe run's objective: {objective}\n",
        p.title, p.description
    );
    t.push_str(&format!("\nFiles you may change: {}\n", p.files.join(", ")));
    if !p.acceptance.is_empty() {
        t.push_str(&format!(
            "\nAcceptance criteria:\n- {}\n",
            p.acceptance.join("\n- ")
        ));
    }
    if !p.validation.is_empty() {
        t.push_str(&format!(
            "\nAfter you complete, these commands must pass:\n- {}\n",
            p.validation.join("\n- ")
        ));
    }
    if let Some(fixes) = fixes {
        t.push_str(&format!(
            "\n## Required fixes\n\nYour previous work is already in the worktree; it was checked (scope, validation commands, review) and needs these fixes:\n{fixes}\n"
        ));
    }
    t.push_str(
        "\nThe engine commits your changes when you call `complete`; do not commit yourself.\n",
    );
    t
}

impl Worker for AgentWorker {
    fn label(&self, packet: &Packet) -> String {
        format!("agent:{}", packet.role)
    }

    fn confine(&self) -> Option<&orchestra_sys::exec::process::Confine> {
        self.confine.as_deref()
    }

    fn arm(&self, _packet: &Packet, candidate: u32) -> Option<String> {
        self.config.best_of.arm(candidate).map(str::to_string)
    }

    fn work(&self, job: &WorkerJob<'_>) -> WorkerReport {
        let _span = tracing::info_span!("agent", packet = %job.packet.id, role = %job.packet.role)
            .entered();
        let mut log = open_transcript(job.log);
        match self.run_packet(job, &mut log) {
            Ok(report) => report,
            Err(e) => WorkerReport {
                transient: false,
                success: false,
                interrupted: false,
                summary: e.to_string(),
            },
        }
    }
}
