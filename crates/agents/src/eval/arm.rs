//! Arms of an eval: what works each task, parsed from `--arm <name>=<spec>`.
//!
//! Two kinds are built: `cmd:<shell>`, an external worker command under the worker contract,
//! and `agent:<role>`, one of our agents with the role's configured profile. The other kinds
//! the design names (`cli:<name>`, `start`) are refused with a message saying so, before
//! anything runs.

use serde::Serialize;

/// One arm: a name and what works each task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Arm {
    /// The arm's name in reports (`[a-z0-9-_.]`, unique in the eval).
    pub name: String,
    /// The spec as given after `=`, kept for the journal and reports.
    pub spec: String,
    /// What works each task.
    #[serde(skip)]
    pub kind: ArmKind,
}

/// What works an arm's tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmKind {
    /// An external worker command, run with `sh -c` in the packet's worktree of the attempt.
    Cmd(String),
    /// One of our agents in this role, with the role's configured model profile.
    Agent(String),
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
        "arm `{name}`: `{kind}` arms are not supported yet; use `cmd:<shell>` (an external worker command)"
    )]
    Unsupported { name: String, kind: String },
    #[error("arm `{name}`: unknown kind in `{spec}`; write `cmd:<shell>` or `agent:<role>`")]
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

/// Returns the arm `value` (`<name>=<spec>`) describes.
pub fn parse(value: &str) -> Result<Arm, ArmError> {
    let Some((name, spec)) = value.split_once('=').filter(|(n, _)| !n.trim().is_empty()) else {
        return Err(ArmError::NoName {
            given: value.to_string(),
        });
    };
    let name = name.trim().to_string();
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(ArmError::BadName { name });
    }
    let kind = match spec.split_once(':') {
        Some(("cmd", command)) if command.trim().is_empty() => {
            return Err(ArmError::EmptyCommand { name });
        }
        Some(("cmd", command)) => ArmKind::Cmd(command.to_string()),
        Some(("agent", role)) => {
            let role = role.trim();
            if role.is_empty()
                || !role
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            {
                return Err(ArmError::BadRole { name });
            }
            ArmKind::Agent(role.to_string())
        }
        Some((kind @ "cli", _)) => {
            return Err(ArmError::Unsupported {
                name,
                kind: format!("{kind}:"),
            });
        }
        None if spec.trim() == "start" => {
            return Err(ArmError::Unsupported {
                name,
                kind: "start".to_string(),
            });
        }
        _ => {
            return Err(ArmError::Unknown {
                name,
                spec: spec.to_string(),
            });
        }
    };
    Ok(Arm {
        name,
        spec: spec.to_string(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cmd_arms_and_names_what_is_wrong_with_others() {
        let arm = parse("solver=cmd:sh solve.sh --fast").unwrap();
        assert_eq!(arm.name, "solver");
        assert_eq!(arm.kind, ArmKind::Cmd("sh solve.sh --fast".into()));
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
        assert!(matches!(
            parse("a=cli:claude"),
            Err(ArmError::Unsupported { .. })
        ));
        assert!(matches!(
            parse("a=start"),
            Err(ArmError::Unsupported { .. })
        ));
        assert!(matches!(parse("a=bogus:x"), Err(ArmError::Unknown { .. })));
        let two = ["a=cmd:x".to_string(), "a=cmd:y".to_string()];
        assert!(matches!(parse_all(&two), Err(ArmError::Duplicate { .. })));
    }
}
