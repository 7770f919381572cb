//! Arms of an eval: what works each task, parsed from `--arm <name>=<spec>[,<option>…]`.
//!
//! Four kinds: `cmd:<shell>`, an external worker command under the worker contract;
//! `agent:<role>[@<profile>]`, one of our agents in that role; `cli:<name>`, one packet worked
//! by a configured agent CLI; `start[@<profile>]`, the whole flow (clarify, plan, packets,
//! gates, merge) unattended. Every kind but `cmd:` (whose command may hold any character)
//! takes options after its spec, separated by commas: `budget=<cost>`, `tokens=<n>`,
//! `best_of=<n>`, `profile.<role>=<profile>` and `model.<role>=<model>` (see [`ArmOptions`]);
//! a `cmd:` arm takes `budget`, `tokens` and `best_of` in brackets before its command
//! (`cmd[best_of=3]:./solve.sh`).

use std::collections::BTreeMap;

use orchestra_core::config::{MODEL_WORKER, RepoConfig};
use serde::Serialize;

/// One arm: a name and what works each task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arm {
    /// The arm's name in reports (`[a-z0-9-_.]`, unique in the eval).
    pub name: String,
    /// The spec as given after `=`, options included, kept for the journal and reports.
    pub spec: String,
    /// What works each task.
    #[serde(skip)]
    pub kind: ArmKind,
    /// The arm's profile and budget choices.
    #[serde(skip)]
    pub options: ArmOptions,
}

/// What works an arm's tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmKind {
    /// An external worker command, run with `sh -c` in the packet's worktree of the attempt.
    Cmd(String),
    /// One of our agents in this role, with the role's configured model profile.
    Agent(String),
    /// One packet worked by the agent CLI of this name (`[agents.cli.<name>]` or a built-in).
    Cli(String),
    /// The whole `start` flow, unattended, landing on the attempt's target branch.
    Start,
}

/// An arm's choices besides its kind: which profile each role uses and its budget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArmOptions {
    /// `@<profile>`: the profile of the arm's role (`agent:`) or of every role (`start`).
    pub profile: Option<String>,
    /// `profile.<role>=<profile>`: the profile of one role, over `@<profile>`.
    pub role_profiles: BTreeMap<String, String>,
    /// `model.<role>=<model>`: the model of one role, on the profile it has otherwise.
    pub role_models: BTreeMap<String, String>,
    /// `budget=<cost>`: most an attempt may spend, in `[prices]`' currency.
    pub budget: Option<f64>,
    /// `tokens=<n>`: most tokens (input plus output) an attempt may spend.
    pub tokens: Option<u64>,
    /// `best_of=<n>`: the attempt's packet is worked by n candidates (2 to 8), the project's
    /// test command (`--test`) as their validation; the one that passes it with the smallest
    /// change lands. Not for `start` arms.
    pub best_of: Option<u32>,
}

/// Why an `--arm` value is not an arm.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArmError {
    #[error(
        "arm `{given}` has no name: write `--arm <name>=<spec>`, e.g. `--arm mine=cmd:./solve.sh`"
    )]
    NoName { given: String },
    #[error("arm `{name}`: the name may hold only letters, digits, `-`, `_` and `.`; rename it")]
    BadName { name: String },
    #[error("arm `{name}` is given twice; give each arm its own name")]
    Duplicate { name: String },
    #[error("arm `{name}`: `cmd:` needs a command after it, e.g. `cmd:./solve.sh`")]
    EmptyCommand { name: String },
    #[error(
        "arm `{name}`: `agent:` needs a role name after it (letters, digits, `-`, `_`), e.g. `agent:coder`"
    )]
    BadRole { name: String },
    #[error(
        "arm `{name}`: `cli:` needs an agent CLI name after it (letters, digits, `-`, `_`), e.g. `cli:claude`"
    )]
    BadCli { name: String },
    #[error(
        "arm `{name}`: `@` needs a profile name after it (letters, digits, `-`, `_`, `.`), e.g. `agent:coder@small`"
    )]
    BadProfile { name: String },
    #[error(
        "arm `{name}`: a `cmd:` arm's options go in brackets before its command, e.g. `cmd[best_of=3]:./solve.sh`; {problem}"
    )]
    CmdOptions { name: String, problem: String },
    #[error("arm `{name}`: `{kind}` arms take no `@<profile>`: {why}")]
    NoProfileHere {
        name: String,
        kind: String,
        why: String,
    },
    #[error(
        "arm `{name}`: option `{option}` is not one of `budget=<cost>`, `tokens=<n>`, `best_of=<n>`, `profile.<role>=<profile>`, `model.<role>=<model>`"
    )]
    UnknownOption { name: String, option: String },
    #[error("arm `{name}`: option `{option}` needs {what}")]
    BadOption {
        name: String,
        option: String,
        what: String,
    },
    #[error(
        "arm `{name}`: profile `{profile}` is not defined; define [profiles.{profile}] in the configuration or pick a defined one ({defined})"
    )]
    UndefinedProfile {
        name: String,
        profile: String,
        defined: String,
    },
    #[error(
        "arm `{name}`: `model.{role}` changes the model of role `{role}`'s profile, and the configuration gives it none; add `profile.{role}=<profile>` to the arm or define [profiles.default]"
    )]
    NoProfileForModel { name: String, role: String },
    #[error(
        "arm `{name}`: unknown kind in `{spec}`; write `cmd:<shell>`, `agent:<role>`, `cli:<name>` or `start`"
    )]
    Unknown { name: String, spec: String },
}

/// Returns the arms `values` (`<name>=<spec>` each) describe, in order, or the first problem.
pub fn parse_all(values: &[String]) -> Result<Vec<Arm>, ArmError> {
    let mut arms: Vec<Arm> = Vec::with_capacity(values.len());
    for value in values {
        let arm = parse(value)?;
        if arms.iter().any(|a| a.name == arm.name) {
            return Err(ArmError::Duplicate { name: arm.name });
        }
        arms.push(arm);
    }
    Ok(arms)
}

/// Returns true if and only if `s` is a non-empty name of letters, digits and `extra`.
fn is_name(s: &str, extra: &[char]) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_') || extra.contains(&c))
}

/// Returns the arm `value` (`<name>=<spec>[,<option>…]`) describes.
pub fn parse(value: &str) -> Result<Arm, ArmError> {
    let Some((name, spec)) = value.split_once('=').filter(|(n, _)| !n.trim().is_empty()) else {
        return Err(ArmError::NoName {
            given: value.to_string(),
        });
    };
    let name = name.trim().to_string();
    if !is_name(&name, &['.']) {
        return Err(ArmError::BadName { name });
    }
    if let Some(rest) = spec.strip_prefix("cmd") {
        let (options, command) = cmd_parts(&name, rest)?;
        if let Some(command) = command {
            if command.trim().is_empty() {
                return Err(ArmError::EmptyCommand { name });
            }
            return Ok(Arm {
                kind: ArmKind::Cmd(command.to_string()),
                name,
                spec: spec.to_string(),
                options,
            });
        }
    }
    let mut parts = spec.split(',');
    let head = parts.next().unwrap_or_default().trim();
    let (head, profile) = match head.split_once('@') {
        Some((h, p)) if is_name(p.trim(), &['.']) => (h, Some(p.trim().to_string())),
        Some(_) => return Err(ArmError::BadProfile { name }),
        None => (head, None),
    };
    let kind = kind_of(&name, head, spec)?;
    if let (Some(_), ArmKind::Cli(_)) = (&profile, &kind) {
        return Err(ArmError::NoProfileHere {
            name,
            kind: "cli:".to_string(),
            why: "the CLI picks its model (`[agents.cli.<name>] model`)".to_string(),
        });
    }
    let mut options = ArmOptions {
        profile,
        ..ArmOptions::default()
    };
    for option in parts {
        parse_option(&name, option.trim(), &mut options)?;
    }
    if kind == ArmKind::Start && options.best_of.is_some() {
        return Err(ArmError::BadOption {
            name,
            option: "best_of".to_string(),
            what: "an arm of one packet (`cmd:`, `agent:` or `cli:`): a `start` arm's packets take their candidates from `[start] best_of`".to_string(),
        });
    }
    Ok(Arm {
        name,
        spec: spec.to_string(),
        kind,
        options,
    })
}

/// Returns the options and the command of a `cmd` arm's spec after `cmd`: `:<command>` or
/// `[<option>,…]:<command>`; no command when the spec is no `cmd:` arm at all.
fn cmd_parts<'a>(name: &str, rest: &'a str) -> Result<(ArmOptions, Option<&'a str>), ArmError> {
    let mut options = ArmOptions::default();
    if let Some(command) = rest.strip_prefix(':') {
        return Ok((options, Some(command)));
    }
    let Some(inner) = rest.strip_prefix('[') else {
        return Ok((options, None));
    };
    let Some((list, command)) = inner.split_once("]:") else {
        return Err(ArmError::CmdOptions {
            name: name.to_string(),
            problem: "the `]:` after the options is missing".to_string(),
        });
    };
    for option in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        if option.starts_with("profile.") || option.starts_with("model.") {
            return Err(ArmError::CmdOptions {
                name: name.to_string(),
                problem: format!("`{option}` does not apply: the command picks its own models"),
            });
        }
        parse_option(name, option, &mut options)?;
    }
    Ok((options, Some(command)))
}

/// Returns the kind `head` (the spec before `@` and options) names.
fn kind_of(name: &str, head: &str, spec: &str) -> Result<ArmKind, ArmError> {
    let name = name.to_string();
    match head.split_once(':') {
        Some(("agent", role)) if is_name(role.trim(), &[]) => {
            Ok(ArmKind::Agent(role.trim().to_string()))
        }
        Some(("agent", _)) => Err(ArmError::BadRole { name }),
        Some(("cli", cli)) if is_name(cli.trim(), &[]) => Ok(ArmKind::Cli(cli.trim().to_string())),
        Some(("cli", _)) => Err(ArmError::BadCli { name }),
        None if head == "start" => Ok(ArmKind::Start),
        _ => Err(ArmError::Unknown {
            name,
            spec: spec.to_string(),
        }),
    }
}

/// Reads one `<key>=<value>` option of arm `name` into `options`.
fn parse_option(name: &str, option: &str, options: &mut ArmOptions) -> Result<(), ArmError> {
    let bad = |what: &str| ArmError::BadOption {
        name: name.to_string(),
        option: option.to_string(),
        what: what.to_string(),
    };
    let Some((key, value)) = option.split_once('=') else {
        return Err(ArmError::UnknownOption {
            name: name.to_string(),
            option: option.to_string(),
        });
    };
    let (key, value) = (key.trim(), value.trim());
    match key {
        "budget" => {
            let cost = value
                .parse::<f64>()
                .ok()
                .filter(|c| c.is_finite() && *c > 0.0)
                .ok_or_else(|| bad("a positive cost, e.g. `budget=0.50`"))?;
            options.budget = Some(cost);
        }
        "tokens" => {
            let n = value
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("a positive whole number of tokens, e.g. `tokens=200000`"))?;
            options.tokens = Some(n);
        }
        "best_of" => {
            let max = orchestra_core::plan::MAX_ATTEMPTS;
            let n = value
                .parse::<u32>()
                .ok()
                .filter(|n| (2..=max).contains(n))
                .ok_or_else(|| {
                    bad(&format!(
                        "a number of candidates from 2 to {max}, e.g. `best_of=3`"
                    ))
                })?;
            options.best_of = Some(n);
        }
        _ => match key.strip_prefix("profile.") {
            Some(role) if is_name(role, &[]) && is_name(value, &['.']) => {
                options
                    .role_profiles
                    .insert(role.to_string(), value.to_string());
            }
            Some(_) => return Err(bad("a role and a profile name, e.g. `profile.planner=big`")),
            None => match key.strip_prefix("model.") {
                Some(role)
                    if is_name(role, &[])
                        && !value.is_empty()
                        && !value.chars().any(char::is_whitespace) =>
                {
                    options
                        .role_models
                        .insert(role.to_string(), value.to_string());
                }
                Some(_) => {
                    return Err(bad(
                        "a role and a model name, e.g. `model.coder=gpt-4.1-mini`",
                    ));
                }
                None => {
                    return Err(ArmError::UnknownOption {
                        name: name.to_string(),
                        option: option.to_string(),
                    });
                }
            },
        },
    }
    Ok(())
}

impl Arm {
    /// Returns `base` with the arm's profile choices applied: `@<profile>` for the arm's role
    /// (`agent:`) or for every role in `roles` (`start`), then each `profile.<role>`, then each
    /// `model.<role>` as a copy of the role's profile (its `[roles]` one, else `default`) with
    /// that model. Every profile named must be defined in `base`.
    pub fn config(&self, base: &RepoConfig, roles: &[String]) -> Result<RepoConfig, ArmError> {
        let mut config = base.clone();
        let mut chosen: BTreeMap<String, String> = BTreeMap::new();
        if let Some(profile) = &self.options.profile {
            let targets: Vec<String> = match &self.kind {
                ArmKind::Agent(role) => vec![role.clone()],
                _ => roles.to_vec(),
            };
            for role in targets {
                chosen.insert(role, profile.clone());
            }
        }
        chosen.extend(self.options.role_profiles.clone());
        for (role, profile) in chosen {
            if !config.profiles.contains_key(&profile) {
                let defined: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
                return Err(ArmError::UndefinedProfile {
                    name: self.name.clone(),
                    profile,
                    defined: if defined.is_empty() {
                        "none is defined yet".to_string()
                    } else {
                        format!("defined: {}", defined.join(", "))
                    },
                });
            }
            let entry = config.roles.entry(role).or_default();
            entry.profile = Some(profile);
        }
        for (role, model) in &self.options.role_models {
            let current = config
                .roles
                .get(role)
                .and_then(|r| r.profile.clone())
                .or_else(|| {
                    config
                        .profiles
                        .contains_key("default")
                        .then(|| "default".into())
                });
            if !current.is_some_and(|p| config.profiles.contains_key(&p)) {
                return Err(ArmError::NoProfileForModel {
                    name: self.name.clone(),
                    role: role.clone(),
                });
            }
            // The role's profile asks for this model where every role's model is decided.
            config = config.with_worker(role, &format!("{MODEL_WORKER}{model}"));
        }
        Ok(config)
    }

    /// Returns why an attempt that spent `tokens` and `cost` went over the arm's budget, if it
    /// did.
    pub fn over_budget(&self, tokens: u64, cost: Option<f64>) -> Option<String> {
        if let (Some(limit), Some(cost)) = (self.options.budget, cost)
            && cost > limit
        {
            return Some(format!(
                "spent {cost:.4}, over the arm's budget of {limit:.4}"
            ));
        }
        if let Some(limit) = self.options.tokens
            && tokens > limit
        {
            return Some(format!(
                "spent {tokens} tokens, over the arm's budget of {limit}"
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cmd_arms_and_names_what_is_wrong_with_others() {
        let arm = parse("solver=cmd:sh solve.sh --fast,x=1").unwrap();
        assert_eq!(arm.name, "solver");
        assert_eq!(arm.kind, ArmKind::Cmd("sh solve.sh --fast,x=1".into()));
        assert!(matches!(parse("cmd:x"), Err(ArmError::NoName { .. })));
        assert!(matches!(parse("a b=cmd:x"), Err(ArmError::BadName { .. })));
        assert!(matches!(
            parse("a=cmd: "),
            Err(ArmError::EmptyCommand { .. })
        ));
        assert_eq!(
            parse("a=agent:coder").unwrap().kind,
            ArmKind::Agent("coder".into())
        );
        assert!(matches!(
            parse("a=agent:co der"),
            Err(ArmError::BadRole { .. })
        ));
        assert_eq!(
            parse("a=cli:claude").unwrap().kind,
            ArmKind::Cli("claude".into())
        );
        assert_eq!(parse("a=start").unwrap().kind, ArmKind::Start);
        assert!(matches!(parse("a=bogus:x"), Err(ArmError::Unknown { .. })));
        let two = ["a=cmd:x".to_string(), "a=cmd:y".to_string()];
        assert!(matches!(parse_all(&two), Err(ArmError::Duplicate { .. })));
    }

    #[test]
    fn reads_profiles_and_budgets_and_refuses_bad_options() {
        let arm = parse("cheap=agent:worker@small,budget=0.50,tokens=900").unwrap();
        assert_eq!(arm.kind, ArmKind::Agent("worker".into()));
        assert_eq!(arm.options.profile.as_deref(), Some("small"));
        assert_eq!(arm.options.budget, Some(0.5));
        assert_eq!(arm.options.tokens, Some(900));
        let arm = parse("full=start@big, profile.coder=small").unwrap();
        assert_eq!(arm.kind, ArmKind::Start);
        assert_eq!(arm.options.role_profiles["coder"], "small");
        assert!(matches!(
            parse("a=agent:c@"),
            Err(ArmError::BadProfile { .. })
        ));
        assert!(matches!(
            parse("a=cli:claude@big"),
            Err(ArmError::NoProfileHere { .. })
        ));
        assert!(matches!(
            parse("a=start,budget=-1"),
            Err(ArmError::BadOption { .. })
        ));
        assert!(matches!(
            parse("a=start,tokens=many"),
            Err(ArmError::BadOption { .. })
        ));
        assert!(matches!(
            parse("a=start,colour=red"),
            Err(ArmError::UnknownOption { .. })
        ));
        assert!(matches!(
            parse("a=start,verbose"),
            Err(ArmError::UnknownOption { .. })
        ));
    }

    #[test]
    fn applies_profiles_to_the_roles_and_refuses_undefined_ones() {
        let mut base = RepoConfig::default();
        base.profiles.insert(
            "small".into(),
            toml::from_str("provider = \"ollama\"\nmodel = \"m\"\n").unwrap(),
        );
        let arm = parse("a=agent:coder@small").unwrap();
        let config = arm.config(&base, &[]).unwrap();
        assert_eq!(config.roles["coder"].profile.as_deref(), Some("small"));
        let arm = parse("a=start@small").unwrap();
        let roles = ["planner".to_string(), "coder".to_string()];
        let config = arm.config(&base, &roles).unwrap();
        assert_eq!(config.roles["planner"].profile.as_deref(), Some("small"));
        let err = parse("a=agent:coder@big").unwrap().config(&base, &[]);
        assert!(matches!(err, Err(ArmError::UndefinedProfile { .. })));
        let arm = parse("a=agent:coder@small,model.coder=tiny").unwrap();
        let config = arm.config(&base, &[]).unwrap();
        assert_eq!(config.roles["coder"].profile.as_deref(), Some("small"));
        assert_eq!(config.roles["coder"].model.as_deref(), Some("tiny"));
        assert_eq!(config.profiles["small"].model, "m");
        let err = parse("a=agent:coder,model.coder=tiny")
            .unwrap()
            .config(&base, &[]);
        assert!(matches!(err, Err(ArmError::NoProfileForModel { .. })));
        assert!(matches!(
            parse("a=start,model.coder="),
            Err(ArmError::BadOption { .. })
        ));
        let arm = parse("a=agent:coder,budget=0.1,tokens=10").unwrap();
        assert!(arm.over_budget(5, Some(0.05)).is_none());
        assert!(arm.over_budget(5, Some(0.2)).is_some());
        assert!(arm.over_budget(11, None).is_some());
    }

    #[test]
    fn reads_best_of_for_one_packet_arms_and_bracketed_cmd_options() {
        let arm = parse("b=agent:coder,best_of=3").unwrap();
        assert_eq!(arm.options.best_of, Some(3));
        assert_eq!(
            parse("b=cli:claude,best_of=2").unwrap().options.best_of,
            Some(2)
        );
        let arm = parse("b=cmd[best_of=3, tokens=50]:sh solve.sh a,b").unwrap();
        assert_eq!(arm.kind, ArmKind::Cmd("sh solve.sh a,b".into()));
        assert_eq!(
            (arm.options.best_of, arm.options.tokens),
            (Some(3), Some(50))
        );
        assert_eq!(arm.spec, "cmd[best_of=3, tokens=50]:sh solve.sh a,b");
        for bad in [
            "b=agent:coder,best_of=1",
            "b=agent:coder,best_of=9",
            "b=cmd[best_of=x]:s",
        ] {
            assert!(
                matches!(parse(bad), Err(ArmError::BadOption { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            parse("b=start,best_of=3"),
            Err(ArmError::BadOption { .. })
        ));
        assert!(matches!(
            parse("b=cmd[best_of=3:s"),
            Err(ArmError::CmdOptions { .. })
        ));
        assert!(matches!(
            parse("b=cmd[model.coder=x]:s"),
            Err(ArmError::CmdOptions { .. })
        ));
        assert!(matches!(
            parse("b=cmd[]: "),
            Err(ArmError::EmptyCommand { .. })
        ));
    }
}
