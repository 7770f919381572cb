//! Routing of a `start` run's packets to the workers of `[routing] workers`: the decision
//! from the run store's history before a packet's first work, the escalation after a rejected
//! fix round, both journaled (`Routed`, `Escalated`) so that a resumed run keeps them and
//! `status` and the report show them. The decision itself is `orchestra_core::routing`'s.
//!
//! A worker is a model profile our agents use or an agent CLI (`cli:<name>`), which then works
//! the packet (or the fix round) in its worktree instead of our agents.

use std::path::Path;

use super::replay::SharedJournal;
use super::start_journal::{WorkflowEvent, kind};
use crate::agent::cli::CliWorker;
use orchestra_core::config::{RepoConfig, RoutedWorker};
use orchestra_core::plan::Packet;
use orchestra_core::routing::{self, Decision, Observation};

/// The workers of `[routing]` and the history they are chosen by, for one run.
pub struct Router {
    workers: Vec<RoutedWorker>,
    history: Vec<Observation>,
    min_observations: usize,
    min_pass_rate: f64,
    /// The agent CLIs among the workers, by name, each keeping its packets' sessions.
    clis: std::collections::BTreeMap<String, CliWorker>,
}

/// Who works a packet (or one of its fix rounds) by routing.
pub enum Route<'a> {
    /// The role's own worker.
    Own,
    /// Our agents with this profile.
    Profile(String),
    /// This agent CLI.
    Cli(&'a CliWorker),
}

/// Returns the workers of `[routing]` as `RepoConfig::routed_workers` does, with every agent
/// CLI among them checked to be known (built in or described by `[agents.cli.<name>]`); an
/// error names the entry that is wrong and how to fix it.
pub fn checked_workers(config: &RepoConfig) -> Result<Vec<RoutedWorker>, String> {
    let workers = config.routed_workers()?;
    for name in workers.iter().filter_map(|w| w.cli.as_deref()) {
        crate::agent::cli::adapter::adapter(name, config.agents.cli.get(name))
            .map_err(|e| format!("`[routing] workers` entry `cli:{name}`: {e}"))?;
    }
    Ok(workers)
}

impl Router {
    /// Returns the router of `config` over the run store of the repository at `toplevel`
    /// whose common git directory is `common_dir`; `None` when routing is off; an error naming
    /// what is wrong in `[routing]`.
    pub fn configured(
        config: &RepoConfig,
        toplevel: &Path,
        common_dir: &Path,
    ) -> Result<Option<Router>, String> {
        let workers = checked_workers(config)?;
        if workers.is_empty() {
            return Ok(None);
        }
        let mut clis = std::collections::BTreeMap::new();
        for name in workers.iter().filter_map(|w| w.cli.as_deref()) {
            let cli = CliWorker::new(toplevel, config.clone(), Some(name))
                .map_err(|e| format!("`[routing] workers` entry `cli:{name}`: {e}"))?;
            clis.insert(name.to_string(), cli);
        }
        let history = match orchestra_core::store::Store::open_existing(common_dir) {
            Ok(Some(store)) => routing::observations(&store).map_err(|e| e.to_string())?,
            Ok(None) => Vec::new(),
            Err(e) => return Err(e.to_string()),
        };
        Ok(Some(Router {
            workers,
            history,
            min_observations: config.routing.min_observations(),
            min_pass_rate: config.routing.min_pass_rate(),
            clis,
        }))
    }

    /// Returns true if and only if an agent CLI is among the workers (it may commit itself).
    pub fn has_cli(&self) -> bool {
        !self.clis.is_empty()
    }

    /// Returns who works fix round `round` of `packet` (0: its first work); `own` is the
    /// profile its role uses. The decision is made once and journaled, as is each escalation.
    pub fn route(
        &self,
        journal: &SharedJournal,
        packet: &Packet,
        round: u32,
        own: Option<&str>,
    ) -> Route<'_> {
        let Some(at) = self.worker_at(journal, packet, round, own) else {
            return Route::Own;
        };
        let worker = &self.workers[at];
        match worker.cli.as_deref().and_then(|c| self.clis.get(c)) {
            Some(cli) => Route::Cli(cli),
            None => Route::Profile(worker.profile.clone()),
        }
    }

    /// Returns the profile `packet`'s agent uses in fix round `round` (0: its first work), or
    /// `None` for its role's own or an agent CLI; `own` is the profile the role uses.
    pub fn profile_for(
        &self,
        journal: &SharedJournal,
        packet: &Packet,
        round: u32,
        own: Option<&str>,
    ) -> Option<String> {
        match self.route(journal, packet, round, own) {
            Route::Profile(p) => Some(p),
            Route::Own | Route::Cli(_) => None,
        }
    }

    /// Returns the index of the worker of fix round `round` of `packet`, or `None` for its
    /// role's own.
    fn worker_at(
        &self,
        journal: &SharedJournal,
        packet: &Packet,
        round: u32,
        own: Option<&str>,
    ) -> Option<usize> {
        let decision = self.decision(journal, packet);
        // The role's own worker escalates from its place in the list, if it has one.
        let start = match &decision.worker {
            Some(name) => self.workers.iter().position(|w| w.name == *name),
            None => own.and_then(|p| self.workers.iter().position(|w| w.profile == p)),
        }?;
        let at = routing::escalated(start, round, self.workers.len());
        if round >= 2 {
            let before = routing::escalated(start, round - 1, self.workers.len());
            if at != before {
                self.escalate(journal, packet, round, before, at);
            }
        }
        (decision.worker.is_some() || at != start).then_some(at)
    }

    /// Returns the journaled decision for `packet`, deciding and journaling it first when
    /// there is none (a resumed run keeps the one it made).
    fn decision(&self, journal: &SharedJournal, packet: &Packet) -> Decision {
        let known = journal.lock().ok().and_then(|j| {
            j.entries_of(&[kind::ROUTED], 0)
                .ok()?
                .into_iter()
                .find_map(|e| match e.event {
                    WorkflowEvent::Routed {
                        packet: p,
                        decision,
                        ..
                    } if p == packet.id => Some(decision),
                    _ => None,
                })
        });
        if let Some(d) = known {
            return d;
        }
        let d = routing::decide(
            packet,
            &self.workers,
            &self.history,
            self.min_observations,
            self.min_pass_rate,
        );
        let text = d.text(&packet.id);
        tracing::info!(%text, "packet routed");
        append(
            journal,
            &WorkflowEvent::Routed {
                packet: packet.id.clone(),
                decision: d.clone(),
                text,
            },
        );
        d
    }

    /// Journals that fix round `round` of `packet` goes from worker `from` to worker `to`,
    /// unless it is journaled already.
    fn escalate(
        &self,
        journal: &SharedJournal,
        packet: &Packet,
        round: u32,
        from: usize,
        to: usize,
    ) {
        let done = journal.lock().ok().and_then(|j| j.entries_of(&[kind::ESCALATED], 0).ok()).is_some_and(|entries| {
            entries.iter().any(|e| {
                matches!(&e.event, WorkflowEvent::Escalated { packet: p, round: r, .. } if *p == packet.id && *r == round)
            })
        });
        if done {
            return;
        }
        let (from, to) = (&self.workers[from].name, &self.workers[to].name);
        append(
            journal,
            &WorkflowEvent::Escalated {
                packet: packet.id.clone(),
                round,
                from: from.clone(),
                to: to.clone(),
                text: format!(
                    "{} → {to} for fix round {round} (escalated from {from}: its fix round was rejected)",
                    packet.id
                ),
            },
        );
    }
}

fn append(journal: &SharedJournal, event: &WorkflowEvent) {
    if let Ok(j) = journal.lock()
        && let Err(e) = j.append(event)
    {
        tracing::warn!(error = %e, "routing event not journaled");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestrator::StartJournal;
    use std::sync::{Arc, Mutex};

    fn worker(name: &str) -> RoutedWorker {
        RoutedWorker {
            name: name.into(),
            profile: name.into(),
            model: name.into(),
            cli: None,
        }
    }

    fn packet(id: &str, file: &str) -> Packet {
        toml::from_str(&format!(
            "id = \"{id}\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"{file}\"]\n"
        ))
        .unwrap()
    }

    fn count(journal: &SharedJournal, escalated: bool) -> usize {
        let entries = journal.lock().unwrap().entries().unwrap();
        entries
            .iter()
            .filter(|e| match e.event {
                WorkflowEvent::Routed { .. } => !escalated,
                WorkflowEvent::Escalated { .. } => escalated,
                _ => false,
            })
            .count()
    }

    #[test]
    fn a_packet_keeps_its_decision_and_climbs_one_worker_per_rejected_fix_round() {
        let dir = tempfile::tempdir().unwrap();
        let journal: SharedJournal =
            Arc::new(Mutex::new(StartJournal::open(dir.path(), "r").unwrap()));
        let p = packet("p1", "a.py");
        let seen = routing::Observation {
            traits: routing::traits(&p),
            model: "cheap".into(),
            passed: true,
        };
        let router = Router {
            workers: vec![worker("cheap"), worker("mid"), worker("strong")],
            history: vec![seen; 3],
            min_observations: 3,
            min_pass_rate: 0.8,
            clis: Default::default(),
        };
        let at = |round| router.profile_for(&journal, &p, round, Some("strong"));
        assert_eq!(at(0).as_deref(), Some("cheap"));
        assert_eq!(at(1).as_deref(), Some("cheap"));
        assert_eq!(at(2).as_deref(), Some("mid"));
        assert_eq!(at(2).as_deref(), Some("mid"));
        assert_eq!(at(3).as_deref(), Some("strong"));
        assert_eq!(at(4).as_deref(), Some("strong"));
        // Decided once; each step up journaled once.
        assert_eq!((count(&journal, false), count(&journal, true)), (1, 2));

        // Without evidence (a Rust packet) a packet stays on its role's own worker, climbing from its place
        // in the list when it has one.
        let other = packet("p2", "a.rs");
        let own = |own: Option<&str>, round| router.profile_for(&journal, &other, round, own);
        assert_eq!(own(Some("strong"), 0), None);
        assert_eq!(own(Some("strong"), 2), None);
        assert_eq!(own(None, 3), None);
        assert_eq!(own(Some("cheap"), 1), None);
        assert_eq!(own(Some("cheap"), 2).as_deref(), Some("mid"));
        assert_eq!(count(&journal, false), 2);
    }

    #[test]
    fn an_agent_cli_that_passed_packets_like_it_gets_the_packet_and_escalates_to_a_profile() {
        let dir = tempfile::tempdir().unwrap();
        let journal: SharedJournal =
            Arc::new(Mutex::new(StartJournal::open(dir.path(), "r").unwrap()));
        let p = packet("p1", "a.py");
        let seen = routing::Observation {
            traits: routing::traits(&p),
            model: "cli:claude".into(),
            passed: true,
        };
        let config: RepoConfig = toml::from_str(
            "[profiles.strong]\nprovider = \"openai\"\nmodel = \"strong\"\n[routing]\nmode = \"history\"\nworkers = [\"cli:claude\", \"strong\"]\n",
        )
        .unwrap();
        let mut router = Router::configured(&config, dir.path(), dir.path())
            .unwrap()
            .unwrap();
        router.history = vec![seen; 3];
        assert!(router.has_cli());
        let at = |round| router.route(&journal, &p, round, Some("strong"));
        assert!(matches!(at(0), Route::Cli(_)));
        assert!(matches!(at(1), Route::Cli(_)));
        assert!(matches!(at(2), Route::Profile(ref p) if p == "strong"));
        assert_eq!(router.profile_for(&journal, &p, 0, None), None);
        let entries = journal.lock().unwrap().entries().unwrap();
        assert!(entries.iter().any(|e| matches!(&e.event, WorkflowEvent::Escalated { from, to, .. } if from == "cli:claude" && to == "strong")));
        // An unknown agent CLI is refused, naming the entry.
        let bad: RepoConfig =
            toml::from_str("[routing]\nmode = \"history\"\nworkers = [\"cli:nosuch\"]\n").unwrap();
        let err = checked_workers(&bad).unwrap_err();
        assert!(err.contains("`cli:nosuch`"), "{err}");
    }
}
