//! Attempts run with nobody there: an agent's question gets one standing answer, "decide
//! yourself", and an agent that stops short of completing (blocked, stalled, waiting on an
//! answer) has given up, which is the agent's failure, not the program's.

use std::time::Duration;

use crate::agent::Person;

/// The answer every question of an attempt's agent gets.
pub(super) const NO_PERSON: &str = "No person is available to answer during this evaluation. Decide yourself, state your assumption in your summary, and go on.";

/// The person of an attempt: never there, always answering [`NO_PERSON`].
pub(super) struct NoPerson;

impl Person for NoPerson {
    fn show(&self, _packet: &str, _question: &str) {}

    fn typed(&self, _packet: &str, _wait: Duration) -> Option<String> {
        Some(NO_PERSON.to_string())
    }
}

/// Returns true if and only if a packet's or run's failure reason (in lower case) says its
/// agent gave up: it signalled `blocked`, the stall guard stopped it, or it waited on a
/// question nobody answered.
pub(super) fn gave_up(reason: &str) -> bool {
    [
        "blocked:",
        "stalled",
        "waiting_for_input",
        "waiting for an answer",
    ]
    .iter()
    .any(|w| reason.contains(w))
}

#[cfg(test)]
mod tests {
    use super::super::Failure;
    use super::super::attempt::classify;

    #[test]
    fn an_agent_that_stops_short_gave_up_and_a_failing_program_crashed() {
        for reason in [
            "agent did not complete: blocked: stalled: the same tool calls 3 times in a row",
            "agent did not complete: blocked: I cannot tell which shell",
            "agent did not complete: waiting_for_input: waiting for an answer to: which one?",
            "stalled: the model sent nothing for 30s after its output began",
        ] {
            assert_eq!(classify(reason), Failure::GaveUp, "{reason}");
        }
        assert_eq!(
            classify("worker failed (exit 3); its work stays in /tmp/w"),
            Failure::Crash
        );
        assert_eq!(
            classify("agent did not complete: error: m: refused: the budget of 9 tokens is spent"),
            Failure::Budget
        );
        assert_eq!(classify("the worker changed no file"), Failure::NoChange);
    }
}
