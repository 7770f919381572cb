//! The kinds of journal event as a type: each [`Event`] variant has an [`EventKind`] naming
//! its `type` tag, so a query for events of a kind is checked by the compiler and a misspelt
//! kind cannot reach the store.

use super::Event;

/// Declares [`EventKind`] with one variant per [`Event`] variant and its stored tag, and
/// [`Event::kind`] mapping an event to its kind; one list keeps the three in step.
macro_rules! event_kinds {
    ($($variant:ident => $tag:literal,)*) => {
        /// The kind of a journal event: the variant of [`Event`] without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $(
                #[doc = concat!("A `", $tag, "` event.")]
                $variant,
            )*
        }

        impl EventKind {
            /// Every kind, in the order [`Event`] declares its variants.
            pub const ALL: &[EventKind] = &[$(EventKind::$variant,)*];

            /// Returns the kind's type tag, as stored in the journal's `type` column.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $tag,)*
                }
            }
        }

        impl Event {
            /// Returns the event's kind; its [`EventKind::as_str`] is the stored type tag.
            pub fn event_kind(&self) -> EventKind {
                match self {
                    $(Event::$variant { .. } => EventKind::$variant,)*
                }
            }
        }
    };
}

event_kinds! {
    RunCreated => "run_created",
    RunStarted => "run_started",
    PacketStarted => "packet_started",
    WorktreeReady => "worktree_ready",
    WorkerStarted => "worker_started",
    WorkerSpawned => "worker_spawned",
    WorkerFinished => "worker_finished",
    PacketCommitted => "packet_committed",
    ValidationFinished => "validation_finished",
    ReviewStarted => "review_started",
    WorkerRetrying => "worker_retrying",
    PacketReviewed => "packet_reviewed",
    PacketSucceeded => "packet_succeeded",
    PacketFailed => "packet_failed",
    PacketSkipped => "packet_skipped",
    PacketInterrupted => "packet_interrupted",
    PacketResumed => "packet_resumed",
    RunInterrupted => "run_interrupted",
    RunCancelled => "run_cancelled",
    RunReopened => "run_reopened",
    RunFinished => "run_finished",
    WorktreeRemoved => "worktree_removed",
    WorktreeParked => "worktree_parked",
    WorktreeRestored => "worktree_restored",
    IntegrationRequested => "integration_requested",
    MergeStarted => "merge_started",
    PacketConflicted => "packet_conflicted",
    PacketResolved => "packet_resolved",
    MergeValidationFinished => "merge_validation_finished",
    PacketIntegrated => "packet_integrated",
    PacketSentBack => "packet_sent_back",
    TargetAdvancing => "target_advancing",
    MergeFinished => "merge_finished",
    AgentState => "agent_state",
    AgentModelCall => "agent_model_call",
    AgentToolCall => "agent_tool_call",
    AgentWaiting => "agent_waiting",
    AgentRetry => "agent_retry",
    AgentFallback => "agent_fallback",
    QuestionAsked => "question_asked",
    QuestionAnswered => "question_answered",
    CommentsSent => "comments_sent",
    CommentsDelivered => "comments_delivered",
    PacketsShareFiles => "packets_share_files",
    ScopeFinding => "scope_finding",
    PacketDispatched => "packet_dispatched",
    LandStarted => "land_started",
    PrObserved => "pr_observed",
    PrLooked => "pr_looked",
    CheckRerun => "check_rerun",
    CheckFlaky => "check_flaky",
    PrRetargeted => "pr_retargeted",
    PrRestacked => "pr_restacked",
    RestackConflicted => "restack_conflicted",
    PrMerged => "pr_merged",
    PrQueued => "pr_queued",
    LandWaiting => "land_waiting",
    LandCommand => "land_command",
    LandFinished => "land_finished",
    CandidateStarted => "candidate_started",
    CandidateEnded => "candidate_ended",
    TesterEnded => "tester_ended",
    CandidateChosen => "candidate_chosen",
    LandFixStarted => "land_fix_started",
    LandFixEnded => "land_fix_ended",
}

impl Event {
    /// Returns the event's type tag, as stored in the journal's `type` column.
    pub fn kind(&self) -> &'static str {
        self.event_kind().as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored tag is the variant's name in snake case, as `#[serde(rename_all)]` writes it.
    #[test]
    fn each_kind_is_stored_under_the_tag_serde_writes() {
        for kind in EventKind::ALL {
            let name = format!("{kind:?}");
            let mut snake = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    snake.push('_');
                }
                snake.push(c.to_ascii_lowercase());
            }
            assert_eq!(kind.as_str(), snake);
        }
        let cancelled: Event = serde_json::from_str(r#"{"type":"run_cancelled"}"#).unwrap();
        assert_eq!(cancelled.event_kind(), EventKind::RunCancelled);
    }
}
