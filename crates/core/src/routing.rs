//! Routing learned from the run store: which worker of `[routing] workers` a packet goes to,
//! from how those workers did on packets like it in this repository's earlier runs.
//!
//! Packets are alike when they share their role, the main language of their scope files and
//! their size bucket (files plus symbols in scope: up to 2 small, up to 6 medium, more large).
//! Every earlier packet that ended (succeeded or failed) is one observation for each model that
//! worked it in its role (an agent CLI, whose events are journaled under the role
//! `<role>/<name>`, counts as the worker `cli:<name>`): the one that answered last passed when
//! the packet succeeded —
//! through validation and review — and a model the packet escalated from did not pass. The
//! packet goes to the cheapest worker with at least `min_observations` observations and a pass
//! rate of at least `min_pass_rate` (0.8 unless configured); otherwise to the role's own
//! worker. Each fix round after the first (the previous fix round was rejected too) goes one
//! worker further up the list.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::RoutedWorker;
use crate::plan::Packet;
use crate::store::{Event, EventKind, PacketState, Store, StoreError};

/// How big a packet's scope is, as routing compares packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeBucket {
    /// Up to 2 files and symbols.
    Small,
    /// Up to 6.
    Medium,
    /// More.
    Large,
}

/// What makes two packets alike for routing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traits {
    pub role: String,
    /// The language most of its scope files are in (by extension), if any file has one.
    pub language: Option<String>,
    pub size: SizeBucket,
}

/// One model's outcome on one earlier packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub traits: Traits,
    /// The model's name (without its provider).
    pub model: String,
    /// Whether the packet succeeded with this model answering last.
    pub passed: bool,
}

/// How one worker of the set did on packets like the routed one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub worker: String,
    pub observations: usize,
    pub passed: usize,
    /// Why the worker was not chosen; `None` for the chosen one and those after it.
    pub skipped: Option<String>,
}

/// The worker routing chose for a packet, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub traits: Traits,
    /// The chosen worker of the set; `None` when the packet goes to its role's own worker.
    pub worker: Option<String>,
    /// How the workers up to the chosen one did, cheapest first.
    pub evidence: Vec<Evidence>,
}

impl Decision {
    /// Returns the decision as one line for the terminal, `status` and the report.
    pub fn text(&self, packet: &str) -> String {
        let t = &self.traits;
        let like = format!(
            "{} {} {:?}",
            t.role,
            t.language.as_deref().unwrap_or("(no language)"),
            t.size
        )
        .to_lowercase();
        let evidence: Vec<String> = self
            .evidence
            .iter()
            .map(|e| match &e.skipped {
                Some(why) => format!("{} skipped: {why}", e.worker),
                None => format!("{} passed {}/{}", e.worker, e.passed, e.observations),
            })
            .collect();
        let to = self.worker.as_deref().unwrap_or("the role's own worker");
        format!(
            "{packet} → {to} (packets like it: {like}; {})",
            evidence.join("; ")
        )
    }
}

/// Returns the traits of `packet`.
pub fn traits(packet: &Packet) -> Traits {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for file in &packet.files {
        let language = match orchestra_nav::nav::Lang::from_path(file) {
            Some(l) => l.name().to_string(),
            None => match file.rsplit_once('.') {
                Some((_, ext)) if !ext.contains('/') => ext.to_lowercase(),
                _ => continue,
            },
        };
        *counts.entry(language).or_default() += 1;
    }
    // The most files; on a tie, the first name.
    let language = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(l, _)| l.clone());
    let size = match packet.files.len() + packet.symbols.len() {
        0..=2 => SizeBucket::Small,
        3..=6 => SizeBucket::Medium,
        _ => SizeBucket::Large,
    };
    let role = if packet.role.is_empty() {
        crate::plan::DEFAULT_ROLE
    } else {
        &packet.role
    };
    Traits {
        role: role.to_string(),
        language,
        size,
    }
}

/// Returns an observation for every model on every packet that ended in any run of `store`.
pub fn observations(store: &Store) -> Result<Vec<Observation>, StoreError> {
    let mut out = Vec::new();
    for run in store.runs()? {
        let Ok(plan) = run.plan() else { continue };
        let ended: Vec<_> = store
            .packets(&run.id)?
            .into_iter()
            .filter(|p| matches!(p.state, PacketState::Succeeded | PacketState::Failed))
            .collect();
        if ended.is_empty() {
            continue;
        }
        // The models of each packet's own role, in the order they first answered.
        let mut models: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let kinds = [EventKind::AgentModelCall, EventKind::AgentState];
        for entry in store.events_of_kinds(&run.id, &kinds)? {
            let (packet, role, model) = match entry.event {
                Event::AgentModelCall {
                    packet,
                    role,
                    model,
                    ..
                } => (packet, role, Some(model)),
                Event::AgentState { packet, role, .. } => (packet, role, None),
                _ => continue,
            };
            let Some(rec) = ended.iter().find(|p| p.id == packet) else {
                continue;
            };
            // An agent CLI journals its events under `<role>/<cli>`: it is the worker, whatever
            // model it reports (a CLI printing text reports none, only its states).
            let name = if let Some(cli) = role.strip_prefix(&format!("{}/", rec.role)) {
                format!("cli:{cli}")
            } else if let (true, Some(model)) = (role == rec.role, model) {
                crate::config::price_key(&model).to_string()
            } else {
                continue;
            };
            let list = models.entry(packet).or_default();
            list.retain(|m| *m != name);
            list.push(name);
        }
        for rec in &ended {
            let (Some(packet), Some(list)) = (
                plan.packets.iter().find(|p| p.id == rec.id),
                models.get(&rec.id),
            ) else {
                continue;
            };
            let t = traits(packet);
            for (i, model) in list.iter().enumerate() {
                out.push(Observation {
                    traits: t.clone(),
                    model: model.clone(),
                    passed: rec.state == PacketState::Succeeded && i + 1 == list.len(),
                });
            }
        }
    }
    Ok(out)
}

/// Returns the worker of `workers` (cheapest first) that `packet` goes to: the first with at
/// least `min_observations` observations like it in `history` and a pass rate of at least
/// `min_pass_rate`, with the evidence on each worker up to it.
pub fn decide(
    packet: &Packet,
    workers: &[RoutedWorker],
    history: &[Observation],
    min_observations: usize,
    min_pass_rate: f64,
) -> Decision {
    let traits = traits(packet);
    let mut evidence = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        let like: Vec<&Observation> = history
            .iter()
            .filter(|o| o.traits == traits && worker_of(&o.model, workers) == Some(i))
            .collect();
        let passed = like.iter().filter(|o| o.passed).count();
        let observations = like.len();
        let skipped = if observations < min_observations {
            Some(format!(
                "{observations} of the {min_observations} observations needed"
            ))
        } else if (passed as f64) < min_pass_rate * observations as f64 {
            Some(format!(
                "passed {passed}/{observations}, below the pass rate {min_pass_rate}"
            ))
        } else {
            None
        };
        let chosen = skipped.is_none();
        evidence.push(Evidence {
            worker: w.name.clone(),
            observations,
            passed,
            skipped,
        });
        if chosen {
            return Decision {
                traits,
                worker: Some(w.name.clone()),
                evidence,
            };
        }
    }
    Decision {
        traits,
        worker: None,
        evidence,
    }
}

/// Returns the index of the worker in `workers` whose model answered as `model`: the same
/// name, or the longest that `model` extends with a version (`gpt-4o` answers as
/// `gpt-4o-2024-08-06`).
fn worker_of(model: &str, workers: &[RoutedWorker]) -> Option<usize> {
    workers
        .iter()
        .enumerate()
        .filter(|(_, w)| {
            model == w.model
                || model
                    .strip_prefix(w.model.as_str())
                    .is_some_and(|rest| rest.starts_with(['-', '@', ':']))
        })
        .max_by_key(|(_, w)| w.model.len())
        .map(|(i, _)| i)
}

/// Returns the index in the worker list of the worker for fix round `round` of a packet that
/// started with worker `start`: each fix round after the first goes one worker further, up to
/// the strongest.
pub fn escalated(start: usize, round: u32, workers: usize) -> usize {
    let steps = round.saturating_sub(1) as usize;
    start.saturating_add(steps).min(workers.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(role: &str, files: &[&str]) -> Packet {
        toml::from_str(&format!(
            "id = \"p\"\ntitle = \"p\"\nrole = \"{role}\"\ndescription = \"d\"\nfiles = {files:?}\n"
        ))
        .unwrap()
    }

    fn worker(name: &str) -> RoutedWorker {
        RoutedWorker {
            name: name.into(),
            profile: name.into(),
            model: format!("{name}-model"),
            cli: None,
        }
    }

    fn seen(p: &Packet, name: &str, passed: bool, times: usize) -> Vec<Observation> {
        vec![
            Observation {
                traits: traits(p),
                model: format!("{name}-model"),
                passed,
            };
            times
        ]
    }

    #[test]
    fn traits_are_role_main_language_and_size_bucket() {
        let t = traits(&packet("", &["a.py", "b.py", "README.md"]));
        assert_eq!(t.role, crate::plan::DEFAULT_ROLE);
        assert_eq!(t.language.as_deref(), Some("python"));
        assert_eq!(t.size, SizeBucket::Medium);
        let t = traits(&packet("docs", &["docs/usage.md"]));
        assert_eq!(
            (t.language.as_deref(), t.size),
            (Some("md"), SizeBucket::Small)
        );
        assert_eq!(traits(&packet("coder", &[])).language, None);
    }

    #[test]
    fn the_cheapest_worker_with_enough_passes_on_alike_packets_wins() {
        let p = packet("coder", &["src/a.rs"]);
        let workers = [worker("cheap"), worker("mid"), worker("strong")];
        let mut history = seen(&p, "cheap", true, 2);
        history.extend(seen(&p, "mid", true, 3));
        history.extend(seen(&p, "mid", false, 1));
        // Observations on other packets do not count: another role, language or size.
        history.extend(seen(&packet("docs", &["src/a.rs"]), "cheap", true, 5));
        history.extend(seen(&packet("coder", &["a.py"]), "cheap", true, 5));
        history.extend(seen(
            &packet("coder", &["a.rs", "b.rs", "c.rs"]),
            "cheap",
            true,
            5,
        ));
        let d = decide(&p, &workers, &history, 3, 0.7);
        assert_eq!(d.worker.as_deref(), Some("mid"));
        assert_eq!(d.evidence.len(), 2);
        assert_eq!(
            d.evidence[0].skipped.as_deref(),
            Some("2 of the 3 observations needed")
        );
        assert_eq!((d.evidence[1].passed, d.evidence[1].observations), (3, 4));
        assert!(
            d.text("p")
                .starts_with("p → mid (packets like it: coder rust small;")
        );
        // A stricter pass rate skips the mid worker too: the role's own worker gets it.
        let d = decide(&p, &workers, &history, 3, 0.8);
        assert_eq!(d.worker, None);
        assert_eq!(
            d.evidence[1].skipped.as_deref(),
            Some("passed 3/4, below the pass rate 0.8")
        );
        assert_eq!(d.evidence.len(), 3);
        // A provider answering with a versioned name counts for the worker of that model,
        // and only the longest such model's.
        let versioned = |model: &str| Observation {
            traits: traits(&p),
            model: model.into(),
            passed: true,
        };
        let named = |name: &str, model: &str| RoutedWorker {
            name: name.into(),
            profile: name.into(),
            model: model.into(),
            cli: None,
        };
        let pair = [named("mini", "gpt-4o-mini"), named("big", "gpt-4o")];
        let seen = [
            versioned("gpt-4o-2024-08-06"),
            versioned("gpt-4o-mini-2024-07-18"),
        ];
        let d = decide(&p, &pair, &seen, 1, 1.0);
        assert_eq!(d.worker.as_deref(), Some("mini"));
        assert_eq!(d.evidence[0].observations, 1);
        let d = decide(&p, &pair[1..], &seen[..1], 1, 1.0);
        assert_eq!(d.worker.as_deref(), Some("big"));
        // Without history, nobody qualifies.
        assert_eq!(decide(&p, &workers, &[], 1, 0.0).worker, None);
    }

    #[test]
    fn each_rejected_fix_round_escalates_one_worker_up_to_the_strongest() {
        assert_eq!(escalated(0, 0, 3), 0);
        assert_eq!(escalated(0, 1, 3), 0);
        assert_eq!(escalated(0, 2, 3), 1);
        assert_eq!(escalated(0, 3, 3), 2);
        assert_eq!(escalated(1, 9, 3), 2);
    }

    #[test]
    fn observations_credit_the_model_that_answered_last_and_fail_the_escalated_from() {
        use crate::store::{NewPacket, NewRun};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let new = |id: &str| NewPacket {
            id: id.into(),
            title: id.into(),
            role: "coder".into(),
            branch: format!("b/{id}"),
            worktree: format!("/w/{id}"),
        };
        let plan = "objective = \"o\"\n\n[[packet]]\nid = \"a\"\ntitle = \"a\"\nrole = \"coder\"\ndescription = \"a\"\nfiles = [\"a.py\"]\nvalidation = [\"true\"]\n\n[[packet]]\nid = \"b\"\ntitle = \"b\"\nrole = \"coder\"\ndescription = \"b\"\nfiles = [\"b.py\"]\nvalidation = [\"true\"]\n";
        store
            .create_run(&NewRun {
                id: "r".into(),
                objective: "o".into(),
                base: "b".into(),
                plan_toml: plan.into(),
                plan_path: "plan.toml".into(),
                worker_cmd: None,
                max_parallel: 1,
                timeout_secs: 1,
                worktree_root: "/w".into(),
                packets: vec![new("a"), new("b")],
            })
            .unwrap();
        let call = |packet: &str, role: &str, model: &str| Event::AgentModelCall {
            packet: packet.into(),
            role: role.into(),
            model: model.into(),
            turn: 1,
            input_tokens: 1,
            output_tokens: 1,
            cost_nanos: None,
            duration_ms: 1,
        };
        for e in [
            call("a", "coder", "openai-compatible:cheap"),
            call("a", "reviewer", "openai-compatible:judge"),
            call("a", "coder", "openai-compatible:strong"),
            call("b", "coder", "openai-compatible:cheap"),
            // An agent CLI counts by its name, also when it reports no model.
            Event::AgentState {
                packet: "b".into(),
                role: "coder/mine".into(),
                from: "starting".into(),
                to: "working".into(),
                reason: String::new(),
            },
            Event::PacketSucceeded {
                packet: "a".into(),
                commit: "c".into(),
            },
            Event::PacketFailed {
                packet: "b".into(),
                reason: "no".into(),
            },
        ] {
            store.record("r", &e).unwrap();
        }
        let got: Vec<(String, bool)> = observations(&store)
            .unwrap()
            .into_iter()
            .map(|o| (o.model, o.passed))
            .collect();
        assert_eq!(
            got,
            vec![
                ("cheap".to_string(), false),
                ("strong".to_string(), true),
                ("cheap".to_string(), false),
                ("cli:mine".to_string(), false),
            ]
        );
    }
}
