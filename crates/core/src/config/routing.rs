//! The `[routing]` table, read by the `start` workflow when it picks each packet's worker.

use serde::Deserialize;

use super::RepoConfig;

/// Observations a worker needs on packets like a new one before routing trusts it, unless
/// `[routing] min_observations` says otherwise.
pub const DEFAULT_MIN_OBSERVATIONS: usize = 3;
/// Share of those observations it must have passed, unless `[routing] min_pass_rate` says
/// otherwise.
pub const DEFAULT_MIN_PASS_RATE: f64 = 0.8;

/// How packets find their worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoutingMode {
    /// Every packet goes to its role's configured worker.
    #[default]
    Off,
    /// Each packet goes to the cheapest worker of `workers` that has passed the gates for
    /// packets like it in this repository's run history.
    History,
}

/// The `[routing]` table: which worker a `start` run's packets go to, learned from the run
/// store.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// `off` (default): every packet goes to its role's profile; `history`: to the cheapest
    /// of `workers` that passed packets like it before (same role, main language and size),
    /// and one step stronger after each rejected fix round.
    #[serde(default)]
    pub mode: Option<RoutingMode>,
    /// The workers routing chooses from, cheapest first: each the name of a `[profiles]`
    /// entry, a model one of them uses, `model:<name>` for the packet's own profile asking
    /// its provider for that model, or `cli:<name>` for an agent CLI (a built-in one or an
    /// `[agents.cli.<name>]`). Earlier runs' packets count for the worker whose model
    /// answered them, or for the agent CLI that worked them.
    #[serde(default)]
    pub workers: Option<Vec<String>>,
    /// Packets like a new one (same role, language and size) a worker must have worked before
    /// it gets the packet (default 3).
    #[serde(default)]
    pub min_observations: Option<usize>,
    /// Share of those packets it must have passed (succeeded through validation and review),
    /// from 0 to 1 (default 0.8).
    #[serde(default)]
    pub min_pass_rate: Option<f64>,
}

impl RoutingConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: RoutingConfig) -> RoutingConfig {
        RoutingConfig {
            mode: self.mode.or(base.mode),
            workers: self.workers.or(base.workers),
            min_observations: self.min_observations.or(base.min_observations),
            min_pass_rate: self.min_pass_rate.or(base.min_pass_rate),
        }
    }

    /// Returns true if and only if packets are routed from history.
    pub fn enabled(&self) -> bool {
        self.mode == Some(RoutingMode::History)
    }

    /// Returns the observations a worker needs (`min_observations`, at least 1).
    pub fn min_observations(&self) -> usize {
        self.min_observations
            .unwrap_or(DEFAULT_MIN_OBSERVATIONS)
            .max(1)
    }

    /// Returns the pass rate a worker needs (`min_pass_rate`).
    pub fn min_pass_rate(&self) -> f64 {
        self.min_pass_rate.unwrap_or(DEFAULT_MIN_PASS_RATE)
    }
}

/// One worker of `[routing] workers`, resolved against the configured profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutedWorker {
    /// The entry as written in `workers`.
    pub name: String,
    /// The profile the worker's agents use, or `model:<name>` for their role's own profile
    /// asking for that model (as `RepoConfig::with_worker` reads it); empty for an agent CLI.
    pub profile: String,
    /// The model that profile answers with, or `cli:<name>` for an agent CLI: what history
    /// knows the worker by.
    pub model: String,
    /// The agent CLI that works the packet instead of our agents (`cli:<name>` entries).
    pub cli: Option<String>,
}

impl RepoConfig {
    /// Returns the workers of `[routing]`, cheapest first, each resolved to its profile and
    /// model, or a message naming the entry that is wrong and how to fix it. Empty when
    /// routing is off.
    pub fn routed_workers(&self) -> Result<Vec<RoutedWorker>, String> {
        let routing = &self.routing;
        if !routing.enabled() {
            return Ok(Vec::new());
        }
        let rate = routing.min_pass_rate();
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!(
                "`[routing] min_pass_rate = {rate}` is not a share: give a number from 0 to 1 (e.g. 0.8)"
            ));
        }
        let names = routing.workers.clone().unwrap_or_default();
        if names.is_empty() {
            return Err("`[routing] mode = \"history\"` needs `workers = [...]`: the profiles (or their models) to route packets to, cheapest first".to_string());
        }
        let defined = self.profiles.keys().cloned().collect::<Vec<_>>().join(", ");
        let mut out: Vec<RoutedWorker> = Vec::new();
        for name in names {
            if let Some(cli) = name.strip_prefix("cli:") {
                let cli = cli.trim().to_string();
                if cli.is_empty() {
                    return Err("`[routing] workers` entry `cli:` names no agent CLI: write `cli:<name>`, e.g. `cli:claude` or a CLI of `[agents.cli.<name>]`".to_string());
                }
                if out.iter().any(|w| w.cli.as_ref() == Some(&cli)) {
                    return Err(format!(
                        "`[routing] workers` lists `{name}` twice; list each worker once"
                    ));
                }
                out.push(RoutedWorker {
                    model: format!("cli:{cli}"),
                    name,
                    profile: String::new(),
                    cli: Some(cli),
                });
                continue;
            }
            if let Some(model) = super::worker_model(&name, "`[routing] workers`")? {
                let model = model.to_string();
                if let Some(twin) = out.iter().find(|w| w.model == model) {
                    return Err(format!(
                        "`[routing] workers` entries `{}` and `{name}` both answer with model `{model}`, so history cannot tell them apart; list one of them",
                        twin.name
                    ));
                }
                // The role's own profile asking for this model: `with_worker` reads the entry.
                out.push(RoutedWorker {
                    profile: name.clone(),
                    name,
                    model,
                    cli: None,
                });
                continue;
            }
            let (profile, model) = match self.profiles.get(&name) {
                Some(p) => (name.clone(), p.model.clone()),
                None => match self.profiles.iter().find(|(_, p)| p.model == name) {
                    Some((profile, p)) => (profile.clone(), p.model.clone()),
                    None => {
                        return Err(format!(
                            "`[routing] workers` entry `{name}` is neither a profile nor the model of one; defined profiles: {}; add a `[profiles.{name}]` table or list one of them",
                            if defined.is_empty() { "none" } else { &defined }
                        ));
                    }
                },
            };
            if let Some(twin) = out.iter().find(|w| w.model == model) {
                return Err(format!(
                    "`[routing] workers` entries `{}` and `{name}` both answer with model `{model}`, so history cannot tell them apart; list one of them",
                    twin.name
                ));
            }
            out.push(RoutedWorker {
                name,
                profile,
                model,
                cli: None,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> RepoConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn workers_resolve_to_profiles_and_bad_entries_say_what_to_fix() {
        let profiles = "[profiles.cheap]\nprovider = \"ollama\"\nmodel = \"small\"\n[profiles.strong]\nprovider = \"openai\"\nmodel = \"big\"\n";
        let off = config(profiles);
        assert_eq!(off.routed_workers().unwrap(), Vec::new());
        let on = config(&format!(
            "{profiles}[routing]\nmode = \"history\"\nworkers = [\"cheap\", \"big\"]\n"
        ));
        let workers = on.routed_workers().unwrap();
        assert_eq!(
            workers
                .iter()
                .map(|w| (w.name.as_str(), w.profile.as_str(), w.model.as_str()))
                .collect::<Vec<_>>(),
            vec![("cheap", "cheap", "small"), ("big", "strong", "big")]
        );
        assert_eq!(on.routing.min_observations(), DEFAULT_MIN_OBSERVATIONS);
        for (workers, says) in [
            (
                "[\"nope\"]",
                "`nope` is neither a profile nor the model of one",
            ),
            ("[]", "needs `workers = [...]`"),
            ("[\"cli:\"]", "names no agent CLI"),
            ("[\"cli:codex\", \"cli:codex\"]", "lists `cli:codex` twice"),
            ("[\"cheap\", \"small\"]", "both answer with model `small`"),
        ] {
            let c = config(&format!(
                "{profiles}[routing]\nmode = \"history\"\nworkers = {workers}\n"
            ));
            let err = c.routed_workers().unwrap_err();
            assert!(err.contains(says), "{err}");
        }
        let c = config(&format!(
            "{profiles}[routing]\nmode = \"history\"\nworkers = [\"cheap\"]\nmin_pass_rate = 80\n"
        ));
        assert!(c.routed_workers().unwrap_err().contains("from 0 to 1"));
        // An agent CLI is a worker history knows by its name.
        let c = config(&format!(
            "{profiles}[routing]\nmode = \"history\"\nworkers = [\"cli:mine\", \"strong\"]\n"
        ));
        let workers = c.routed_workers().unwrap();
        assert_eq!(
            (workers[0].cli.as_deref(), workers[0].model.as_str()),
            (Some("mine"), "cli:mine")
        );
        assert_eq!(workers[1].cli, None);
        // A model entry keeps the packet's profile and asks it for that model.
        let c = config(&format!(
            "{profiles}[routing]\nmode = \"history\"\nworkers = [\"model:tiny\", \"strong\"]\n"
        ));
        let workers = c.routed_workers().unwrap();
        assert_eq!(
            (
                workers[0].profile.as_str(),
                workers[0].model.as_str(),
                workers[0].cli.as_deref()
            ),
            ("model:tiny", "tiny", None)
        );
        for (workers, says) in [
            ("[\"model:\"]", "`model:` names no model"),
            (
                "[\"model:big\", \"strong\"]",
                "both answer with model `big`",
            ),
        ] {
            let c = config(&format!(
                "{profiles}[routing]\nmode = \"history\"\nworkers = {workers}\n"
            ));
            let err = c.routed_workers().unwrap_err();
            assert!(err.contains(says), "{err}");
        }
        // A configuration without the table still loads.
        assert!(!config("").routing.enabled());
    }
}
