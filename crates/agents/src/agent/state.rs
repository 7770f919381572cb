//! Worker states and the transitions between them: explicit, validated, each with a reason.

use serde::{Deserialize, Serialize};

/// Where an agent is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    #[default]
    Initializing,
    Running,
    WaitingForInput,
    WaitingForSubtask,
    Blocked,
    Completing,
    Completed,
    Error,
    Cancelled,
}

impl WorkerState {
    /// Returns the state's snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Initializing => "initializing",
            WorkerState::Running => "running",
            WorkerState::WaitingForInput => "waiting_for_input",
            WorkerState::WaitingForSubtask => "waiting_for_subtask",
            WorkerState::Blocked => "blocked",
            WorkerState::Completing => "completing",
            WorkerState::Completed => "completed",
            WorkerState::Error => "error",
            WorkerState::Cancelled => "cancelled",
        }
    }

    /// Parses a state an agent may signal itself; the others are the runtime's to set, and
    /// the message says what to do instead.
    pub fn parse(name: &str) -> Result<WorkerState, String> {
        match name {
            "running" => Ok(WorkerState::Running),
            "waiting_for_input" => Ok(WorkerState::WaitingForInput),
            "waiting_for_subtask" => Ok(WorkerState::WaitingForSubtask),
            "blocked" => Ok(WorkerState::Blocked),
            "completing" | "completed" => Err("to finish, call `complete` with your summary; `signal_state` cannot mark work completed".into()),
            other => Err(format!(
                "`{other}` is not a state you can signal; use running, waiting_for_input, waiting_for_subtask or blocked"
            )),
        }
    }

    /// Returns true if and only if nothing follows this state.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            WorkerState::Completed | WorkerState::Error | WorkerState::Cancelled
        )
    }

    /// Returns true if and only if `self → to` is a valid transition.
    pub fn can_move_to(self, to: WorkerState) -> bool {
        use WorkerState::*;
        if self.is_final() {
            return false;
        }
        if matches!(to, Error | Cancelled) {
            return true;
        }
        matches!(
            (self, to),
            (Initializing, Running)
                | (
                    Running,
                    WaitingForInput | WaitingForSubtask | Blocked | Completing
                )
                | (
                    WaitingForInput | WaitingForSubtask,
                    Running | Blocked | Completing
                )
                | (Blocked, Running)
                | (Completing, Completed | Running)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::WorkerState::*;
    use super::*;

    #[test]
    fn transitions_are_validated() {
        assert!(Initializing.can_move_to(Running));
        assert!(!Initializing.can_move_to(Completed));
        assert!(Running.can_move_to(Blocked));
        assert!(
            !Running.can_move_to(Completed),
            "completion goes through completing"
        );
        assert!(Completing.can_move_to(Completed));
        assert!(!Completed.can_move_to(Running));
        assert!(Blocked.can_move_to(Cancelled));
        assert!(
            WorkerState::parse("completed")
                .unwrap_err()
                .contains("complete")
        );
        assert!(WorkerState::parse("asleep").is_err());
    }
}
