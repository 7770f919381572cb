//! Our agents as the engine's in-process worker: one agent of the packet's role works in the
//! packet's worktree; the engine then commits and validates as for any worker.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::profiles::{self, SetupError, env};
use super::role::Roles;
use super::sandbox::{IfUnavailable, Sandbox};
use super::state::WorkerState;
use super::tools::Registry;
use super::{AgentEvent, AgentSpec};
use crate::config::RepoConfig;
use crate::confine::ConfinedRoot;
use crate::engine::{Worker, WorkerJob, WorkerReport};
use crate::llm::{self, ChatModel, LlmError, RetryPolicy};
use crate::plan::Packet;

/// Runs packets with our agents.
pub struct AgentWorker {
    roles: Roles,
    config: RepoConfig,
    registry: Registry,
    policy: RetryPolicy,
    /// One gate per profile, shared by all packets: the profile's concurrency limit.
    gates: llm::Gates,
}

impl AgentWorker {
    /// Loads the roles of the repository at `toplevel` with its configuration.
    pub fn new(toplevel: &Path, config: RepoConfig) -> Result<AgentWorker, SetupError> {
        Ok(AgentWorker {
            roles: Roles::load(toplevel)?,
            config,
            registry: Registry::builtin(),
            policy: RetryPolicy::default(),
            gates: llm::Gates::default(),
        })
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

    fn run_packet(
        &self,
        job: &WorkerJob<'_>,
        log: &mut dyn Write,
    ) -> Result<WorkerReport, SetupError> {
        let packet = job.packet;
        let mut role = self.roles.get(&packet.role)?.clone();
        role.timeout_secs = role.timeout_secs.min(job.timeout.as_secs().max(1));
        let chain = profiles::resolve(&self.config, &role, &env)?;
        let mut models: Vec<Box<dyn ChatModel>> = Vec::new();
        for (i, p) in chain.iter().enumerate() {
            match llm::connect(p) {
                Ok(m) => models.push(Box::new(llm::Limited::new(
                    m,
                    self.gates.get(&p.name, p.concurrency),
                ))),
                Err(e) if i == 0 => return Err(e.into()),
                Err(e) => {
                    let _ = writeln!(
                        log,
                        "{{\"type\":\"fallback_unusable\",\"error\":{}}}",
                        serde_json::Value::String(e.to_string())
                    );
                }
            }
        }
        let price = chain
            .first()
            .and_then(|p| self.config.prices.get(&p.model).copied());
        let root = ConfinedRoot::open(job.worktree).map_err(|e| LlmError::Protocol {
            model: String::new(),
            message: format!("cannot open the worktree: {e}"),
        })?;
        let registry = self.registry.for_role(&role);
        let spec = AgentSpec {
            role: &role,
            models: models.iter().map(|m| m.as_ref()).collect(),
            context_tokens: chain.first().map_or(32_000, |p| p.context_tokens),
            task: task_text(job.objective, packet, job.fixes),
            root: &root,
            packet_files: Some(packet.files.clone()),
            registry: &registry,
            stop: job.stop,
            policy: self.policy,
            price,
            answer: None,
            sandbox: std::env::current_exe().ok().map(|launcher| Sandbox {
                launcher,
                tmp: job.log.with_extension("tmp"),
                if_unavailable: IfUnavailable::from_config(self.config.sandbox.if_unavailable),
            }),
        };
        let keys: Vec<llm::ApiKey> = chain
            .iter()
            .filter_map(|p| p.api_key().ok().flatten())
            .collect();
        let mut on_event = |e: &AgentEvent| {
            if let Ok(line) = serde_json::to_string(e) {
                let _ = writeln!(log, "{}", llm::ApiKey::scrub_all(&keys, &line));
            }
            if let Some(event) = super::journal::store_event(&packet.id, &role.name, &keys, e) {
                (job.journal)(event);
            }
        };
        let outcome = super::run(&spec, &mut on_event).map_err(|e| LlmError::Protocol {
            model: String::new(),
            message: e.to_string(),
        })?;
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
        Ok(match outcome.state {
            WorkerState::Completed => WorkerReport {
                success: true,
                interrupted: false,
                summary: format!("{} ({tokens})", outcome.summary.unwrap_or_default()),
            },
            WorkerState::Cancelled if job.stop.load(Ordering::SeqCst) => WorkerReport {
                success: false,
                interrupted: true,
                summary: "cancelled".into(),
            },
            state => WorkerReport {
                success: false,
                interrupted: false,
                summary: format!("{}: {} ({tokens})", state.as_str(), outcome.reason),
            },
        })
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
            "\n## Required fixes\n\nYour previous work is already in the worktree and was reviewed.\n{fixes}\n"
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

    fn work(&self, job: &WorkerJob<'_>) -> WorkerReport {
        let _span = tracing::info_span!("agent", packet = %job.packet.id, role = %job.packet.role)
            .entered();
        let mut log = open_transcript(job.log);
        match self.run_packet(job, &mut log) {
            Ok(report) => report,
            Err(e) => WorkerReport {
                success: false,
                interrupted: false,
                summary: e.to_string(),
            },
        }
    }
}
