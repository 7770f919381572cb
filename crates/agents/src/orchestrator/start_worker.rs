//! The packet worker of `start` runs: our agents, like [`crate::agent::AgentWorker`], with
//! every model turn journaled (so a resumed packet replays finished turns), human questions
//! routed to `git orchestra answer`, questions to other roles answered by those roles in a
//! bounded consultation ([`super::consult`]), subtasks run as child packets
//! ([`super::subtask`]), and each agent's report (summary, touched files, learnings)
//! journaled for the final report.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::consult::Consultation;
use super::models::RoleModels;
use super::replay::{Replaying, SharedJournal};
use super::start_journal::{WorkflowEvent, kind};
use crate::agent::sandbox::IfUnavailable;
use crate::agent::tools::Registry;
use crate::agent::{self, AgentEvent, AgentOutcome, Host, Reply, SubtaskRequest, WorkerState};
use orchestra_core::engine::{Worker, WorkerJob, WorkerReport};
use orchestra_core::llm::ChatModel;
use orchestra_core::plan::Packet;
use orchestra_sys::confine::ConfinedRoot;

/// How often a waiting agent looks for a human's answer.
const ANSWER_POLL: Duration = Duration::from_millis(200);

/// Runs packets with our agents for a `start` run.
pub struct StartWorker {
    models: Arc<RoleModels>,
    journal: SharedJournal,
    registry: Registry,
    /// Longest an agent waits for a human's answer before it is left waiting.
    pub answer_wait: Duration,
    /// The answer every question to a person gets at once, journaled as asked and answered;
    /// `None`: it waits up to `answer_wait` for `git orchestra answer`.
    pub standing_answer: Option<String>,
    /// Set when the budget runs out, to stop the other packets too.
    pub halt: Arc<AtomicBool>,
    /// The project context, read once from the first packet's worktree.
    project: std::sync::OnceLock<String>,
    /// What earlier runs learned, read once from the run store.
    learned: std::sync::OnceLock<String>,
    /// The sandbox validation commands run in (see `Worker::confine`).
    confine: Option<Box<orchestra_sys::exec::process::Confine>>,
    /// What a packet agent's tools reach beyond the built-in ones.
    tools: agent::PacketTools,
    /// Which worker of `[routing] workers` each packet goes to; `None`: its role's own.
    pub router: Option<super::routing::Router>,
}

impl StartWorker {
    /// Returns a worker using the roles and profiles of `models` in the repository whose common
    /// git directory is `common_dir`.
    pub fn new(models: Arc<RoleModels>, answer_wait: Duration, common_dir: &Path) -> StartWorker {
        let confine = crate::agent::validation_sandbox(
            Some(common_dir),
            &models.config,
            IfUnavailable::Refuse,
        );
        StartWorker {
            journal: models.journal().clone(),
            models,
            registry: Registry::builtin(),
            answer_wait,
            standing_answer: None,
            halt: Arc::new(AtomicBool::new(false)),
            project: std::sync::OnceLock::new(),
            learned: std::sync::OnceLock::new(),
            confine,
            tools: agent::PacketTools::default(),
            router: None,
        }
    }

    pub(super) fn record(&self, event: &WorkflowEvent) {
        record(&self.journal, event);
    }
}

fn record(journal: &SharedJournal, event: &WorkflowEvent) {
    if let Ok(j) = journal.lock()
        && let Err(e) = j.append(event)
    {
        tracing::warn!(error = %e, "workflow event not journaled");
    }
}

/// Waits up to `wait` for an answer to `packet`'s question from `git orchestra answer`.
fn human_answer(
    journal: &SharedJournal,
    wait: Duration,
    packet: &str,
    question: &str,
    stop: &AtomicBool,
) -> Option<String> {
    let already = |j: &super::StartJournal| -> Option<(usize, Option<String>)> {
        let entries = j.entries_of(&[kind::ASKED, kind::ANSWERED], 0).ok()?;
        let asked = entries
            .iter()
            .filter(|e| {
                matches!(&e.event, WorkflowEvent::Asked { packet: p, question: q } if p == packet && q == question)
            })
            .count();
        let answers: Vec<String> = entries
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::Answered { packet: p, text } if p == packet => Some(text.clone()),
                _ => None,
            })
            .collect();
        Some((asked, answers.last().cloned()))
    };
    // A question asked before (a resumed agent) keeps its answer.
    let (asked, answer) = journal.lock().ok().and_then(|j| already(&j))?;
    if asked > 0
        && let Some(a) = answer
    {
        return Some(a);
    }
    let before = journal
        .lock()
        .ok()
        .and_then(|j| j.last_seq().ok())
        .unwrap_or(0);
    record(
        journal,
        &WorkflowEvent::Asked {
            packet: packet.to_string(),
            question: question.to_string(),
        },
    );
    let started = Instant::now();
    while started.elapsed() < wait && !stop.load(Ordering::SeqCst) {
        let found = journal.lock().ok().and_then(|j| {
            j.entries_of(&[kind::ANSWERED], before)
                .ok()?
                .into_iter()
                .find_map(|e| match e.event {
                    WorkflowEvent::Answered { packet: p, text }
                        if p == packet && e.seq > before =>
                    {
                        Some(text)
                    }
                    _ => None,
                })
        });
        if found.is_some() {
            return found;
        }
        std::thread::sleep(ANSWER_POLL);
    }
    None
}

/// Journals `packet`'s question as asked and `answer` as its answer, and returns the answer
/// (nothing to wait for when nobody is there); a question asked before (a resumed agent)
/// keeps the answer it got without being counted again.
fn standing_answer(journal: &SharedJournal, packet: &str, question: &str, answer: &str) -> String {
    let asked = journal.lock().ok().and_then(|j| j.entries_of(&[kind::ASKED], 0).ok()).is_some_and(|entries| {
        entries.iter().any(|e| {
            matches!(&e.event, WorkflowEvent::Asked { packet: p, question: q } if p == packet && q == question)
        })
    });
    if !asked {
        record(
            journal,
            &WorkflowEvent::Asked {
                packet: packet.to_string(),
                question: question.to_string(),
            },
        );
        record(
            journal,
            &WorkflowEvent::Answered {
                packet: packet.to_string(),
                text: answer.to_string(),
            },
        );
    }
    answer.to_string()
}

/// One agent run of a `start` packet or subtask.
pub(super) struct AgentJob<'a> {
    pub run: &'a str,
    pub objective: &'a str,
    pub packet: &'a Packet,
    pub worktree: &'a Path,
    /// The repository's common git directory: engine git in the worktree is pinned to it.
    pub common_dir: &'a Path,
    /// The transcript's path; a subtask's files go beside it.
    pub log: &'a Path,
    pub stop: &'a AtomicBool,
    pub timeout: Duration,
    /// The review's required fixes, in a fix round.
    pub fixes: Option<&'a str>,
    /// 0 for a plan packet, 1 for its subtask, and so on.
    pub depth: u32,
    /// What the packets this one depends on did; empty for none (and for subtasks).
    pub dependencies: &'a str,
    /// Where the agent's activity goes in the run store (states, model calls, tool names),
    /// for `status`, the terminal and the web view; `None` for subtasks, which the store
    /// does not know as packets.
    pub journal: Option<&'a (dyn Fn(orchestra_core::store::Event) + Sync)>,
    /// The profile routing chose for this work instead of its role's own (`[routing]`).
    pub profile: Option<&'a str>,
    /// The approach a best-of-N candidate's `strategy:<text>` arm gives it.
    pub strategy: Option<&'a str>,
}

/// The runtime side of one packet agent's `ask` and `spawn_subtask`.
struct PacketHost<'a> {
    worker: &'a StartWorker,
    job: &'a AgentJob<'a>,
    role: &'a str,
    consult: Consultation<'a>,
}

impl Host for PacketHost<'_> {
    fn answer(&self, question: &str, to: Option<&str>) -> Reply {
        match to {
            Some(other) if other != "human" => self.consult.ask(other, question),
            _ => match &self.worker.standing_answer {
                Some(answer) => Reply::Answer(standing_answer(
                    &self.worker.journal,
                    &self.job.packet.id,
                    question,
                    answer,
                )),
                None => human_answer(
                    &self.worker.journal,
                    self.worker.answer_wait,
                    &self.job.packet.id,
                    question,
                    self.job.stop,
                )
                .map_or(Reply::Pending, Reply::Answer),
            },
        }
    }

    fn spawn(&self, request: &SubtaskRequest) -> Result<String, String> {
        super::subtask::spawn(self.worker, self.job, self.role, request)
    }
}

impl StartWorker {
    /// Returns the roles and models this worker uses.
    pub(super) fn models(&self) -> &RoleModels {
        &self.models
    }

    /// Returns the run's workflow journal.
    pub(super) fn journal(&self) -> &SharedJournal {
        &self.journal
    }

    /// Runs the agent of `job`'s packet in its worktree, every model turn journaled, its
    /// events written to `log`; returns how it ended.
    pub(super) fn run_agent(
        &self,
        job: &AgentJob<'_>,
        log: &mut dyn Write,
    ) -> Result<AgentOutcome, String> {
        let packet = job.packet;
        let role = agent::role_for_job(&self.models.roles, packet, job.timeout)
            .map_err(|e| e.to_string())?;
        let (models, chain) = self
            .models
            .clients_for(&role.name, job.profile)
            .map_err(|e| e.to_string())?;
        let role_name = role.name.clone();
        let guard = || self.models.budget_exceeded(Some(&role_name));
        let wrapped: Vec<Replaying<'_>> = models
            .iter()
            .map(|m| {
                Replaying::new(m.as_ref(), self.journal.clone(), &role.name).with_guard(&guard)
            })
            .collect();
        let root = ConfinedRoot::open(job.worktree)
            .map_err(|e| format!("cannot open the worktree: {e}"))?;
        let (registry, _mcp) = self.tools.for_agent(
            &self.registry,
            &role,
            &self.models.config,
            &root,
            job.log,
            log,
        );
        let host = PacketHost {
            worker: self,
            job,
            role: &role_name,
            consult: Consultation::new(
                &self.models,
                &self.journal,
                &packet.id,
                &role.name,
                job.worktree,
                job.log.parent().unwrap_or(job.worktree),
                job.stop,
            ),
        };
        let spec = agent::PacketAgent {
            role: &role,
            models: wrapped.iter().map(|m| m as &dyn ChatModel).collect(),
            chain: &chain,
            registry: &registry,
            answer: Some(&host),
            if_unavailable: IfUnavailable::Refuse,
        }
        .spec(
            &self.models.config,
            &root,
            agent::with_learned(
                agent::with_project(
                    agent::with_dependencies(
                        agent::with_strategy(
                            agent::task_text(job.objective, packet, job.fixes),
                            job.strategy,
                        ),
                        job.dependencies,
                    ),
                    self.project.get_or_init(|| {
                        orchestra_core::project::context(
                            job.worktree,
                            agent::PROJECT_CONTEXT_CHARS / 4,
                        )
                    }),
                ),
                self.learned.get().map_or("", String::as_str),
            ),
            packet,
            job.stop,
            job.log,
        );
        let keys = orchestra_core::llm::Profile::keys_of(chain.iter());
        let mut on_event = |e: &AgentEvent| {
            e.transcribe(log, &keys);
            if let Some(journal) = job.journal
                && let Some(event) = agent::activity::store_event(&packet.id, &role_name, &keys, e)
            {
                journal(event);
            }
        };
        let mut outcome = crate::agent::run(&spec, &mut on_event).map_err(|e| e.to_string())?;
        outcome.scrub(&keys);
        if job.depth == 0 && outcome.state == WorkerState::Completed {
            // Kept as `run` keeps its packets' conversations: a `land` fix round, days
            // later, is the next turn of this one.
            agent::resumable::save_conversation(
                job.common_dir,
                job.run,
                &packet.id,
                &outcome.messages,
                &keys,
            );
        }
        Ok(outcome)
    }

    /// Returns who `[routing]` sends fix round `round` of `packet` to.
    fn route(&self, packet: &Packet, round: u32) -> super::routing::Route<'_> {
        let Some(router) = self.router.as_ref() else {
            return super::routing::Route::Own;
        };
        let role = if packet.role.is_empty() {
            orchestra_core::plan::DEFAULT_ROLE
        } else {
            &packet.role
        };
        let own = self
            .models
            .clients(role)
            .ok()
            .and_then(|(_, chain)| chain.first().map(|p| p.name.clone()));
        router.route(&self.journal, packet, round, own.as_deref())
    }

    fn run_packet(
        &self,
        job: &WorkerJob<'_>,
        log: &mut dyn Write,
        profile: Option<String>,
    ) -> Result<WorkerReport, String> {
        let packet = job.packet;
        let agent_job = AgentJob {
            run: job.run,
            objective: job.objective,
            packet,
            worktree: job.worktree,
            common_dir: job.common_dir,
            log: job.log,
            stop: job.stop,
            timeout: job.timeout,
            fixes: job.fixes,
            depth: 0,
            dependencies: job.dependencies,
            journal: Some(job.journal),
            profile: profile.as_deref(),
            strategy: job
                .candidate
                .and_then(|k| self.models.config.best_of.strategy(k)),
        };
        self.learned.get_or_init(|| agent::learned(job.common_dir));
        let outcome = self.run_agent(&agent_job, log)?;
        self.record(&WorkflowEvent::PacketReport {
            packet: packet.id.clone(),
            role: packet.role.clone(),
            state: outcome.state.as_str().to_string(),
            summary: outcome
                .summary
                .clone()
                .unwrap_or_else(|| outcome.reason.clone()),
            touched: outcome.touched_files.clone(),
            learnings: outcome.learnings.clone(),
        });
        if outcome.state == WorkerState::Completed {
            agent::remember(job.common_dir, job.run, &packet.id, &outcome.learnings);
        }
        if outcome.state != WorkerState::Completed
            && let Some(reason) = self.models.budget_exceeded(Some(&packet.role))
        {
            // Out of budget: stop cleanly; the packet restarts from its worktree on resume.
            self.halt.store(true, Ordering::SeqCst);
            return Ok(WorkerReport {
                transient: false,
                success: false,
                interrupted: true,
                summary: reason,
            });
        }
        Ok(agent::outcome_report(outcome, job.stop, ""))
    }
}

impl Worker for StartWorker {
    fn label(&self, packet: &Packet) -> String {
        format!("agent:{}", packet.role)
    }

    fn confine(&self) -> Option<&orchestra_sys::exec::process::Confine> {
        self.confine.as_deref()
    }

    fn commits_itself(&self) -> bool {
        self.router.as_ref().is_some_and(|r| r.has_cli())
    }

    fn arm(&self, _packet: &Packet, candidate: u32) -> Option<String> {
        self.models
            .config
            .best_of
            .arm(candidate)
            .map(str::to_string)
    }

    fn work(&self, job: &WorkerJob<'_>) -> WorkerReport {
        let arm = job
            .candidate
            .and_then(|k| self.models.config.best_of.worker_arm(k));
        let route = match arm {
            // A candidate's arm is the profile its agent uses, whatever routing would pick.
            Some(arm) => super::routing::Route::Profile(arm.to_string()),
            None => self.route(job.packet, job.round),
        };
        let profile = match route {
            // Routing sent this work to an agent CLI: it works the worktree instead of ours.
            super::routing::Route::Cli(cli) => return cli.work(job),
            super::routing::Route::Profile(p) => Some(p),
            super::routing::Route::Own => None,
        };
        let _span = tracing::info_span!("agent", packet = %job.packet.id, role = %job.packet.role)
            .entered();
        let mut log = crate::agent::open_transcript(job.log);
        match self.run_packet(job, &mut log, profile) {
            Ok(report) => report,
            Err(summary) => WorkerReport {
                transient: false,
                success: false,
                interrupted: false,
                summary,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestrator::StartJournal;
    use std::sync::Mutex;

    #[test]
    fn a_question_waits_for_the_journaled_answer_and_keeps_it_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let journal: SharedJournal =
            Arc::new(Mutex::new(StartJournal::open(dir.path(), "r").unwrap()));
        let stop = AtomicBool::new(false);
        let path = dir.path().to_path_buf();
        let answerer = std::thread::spawn(move || {
            // Another process (`git orchestra answer`) answers through its own connection.
            let j = StartJournal::open(&path, "r").unwrap();
            loop {
                let asked = j
                    .entries()
                    .unwrap()
                    .iter()
                    .any(|e| matches!(e.event, WorkflowEvent::Asked { .. }));
                if asked {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            j.append(&WorkflowEvent::Answered {
                packet: "p1".into(),
                text: "use the token bucket".into(),
            })
            .unwrap();
        });
        let q = "Which limiter?";
        let got = human_answer(&journal, Duration::from_secs(10), "p1", q, &stop);
        answerer.join().unwrap();
        assert_eq!(got.as_deref(), Some("use the token bucket"));
        // A resumed agent asking the same question gets the same answer at once.
        let again = human_answer(&journal, Duration::from_millis(1), "p1", q, &stop);
        assert_eq!(again.as_deref(), Some("use the token bucket"));
        // Nobody answers another packet: it is left waiting after the wait.
        assert_eq!(
            human_answer(&journal, Duration::from_millis(300), "p2", q, &stop),
            None
        );
        let asked = journal
            .lock()
            .unwrap()
            .entries()
            .unwrap()
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::Asked { .. }))
            .count();
        assert_eq!(asked, 2, "the resumed question is not asked twice");
    }
}
