//! The events of a run: every state change is one of these, journaled before it is acted on.

use serde::{Deserialize, Serialize};

/// One durable fact about a run or one of its packets.
///
/// The journal stores these as JSON (`{"type": "packet_started", …}`); the `runs` and `packets`
/// tables are a projection of them, updated in the same transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run was created from a plan.
    RunCreated {
        objective: String,
        base: String,
        packets: usize,
    },
    /// A process took charge of the run (first start or resume).
    RunStarted {
        pid: u32,
        resumed: bool,
    },
    /// A packet was picked by the scheduler; its worktree is about to be prepared on `branch`
    /// starting at `start` (the run's base, or the merge of its dependencies' work).
    PacketStarted {
        packet: String,
        branch: String,
        worktree: String,
        start: String,
        attempt: u32,
    },
    /// The packet's worktree exists, is on its branch and was validated.
    WorktreeReady {
        packet: String,
        how: String,
    },
    /// The worker command is about to run in its own process group.
    WorkerStarted {
        packet: String,
        command: String,
        log: String,
    },
    /// The worker's process group id, recorded so a resume can stop an orphan.
    WorkerSpawned {
        packet: String,
        pgid: i32,
    },
    /// The worker command ended.
    WorkerFinished {
        packet: String,
        exit_code: Option<i32>,
        duration_ms: u64,
        timed_out: bool,
        tail: String,
    },
    /// The engine committed the worker's changes (or found them committed already).
    PacketCommitted {
        packet: String,
        commit: String,
        changed: Vec<String>,
    },
    /// One validation command ended.
    ValidationFinished {
        packet: String,
        command: String,
        exit_code: Option<i32>,
        duration_ms: u64,
        timed_out: bool,
        tail: String,
    },
    /// The worker failed in a way another try may get past; it runs again after `delay_ms`.
    WorkerRetrying {
        packet: String,
        /// The try about to start (2 for the first retry).
        attempt: u32,
        reason: String,
        delay_ms: u64,
    },
    /// A reviewer starts judging the packet's validated commit.
    ReviewStarted {
        packet: String,
        commit: String,
        reviewer: String,
        round: u32,
    },
    /// A reviewer judged the packet's validated commit (`round` 0 first, then fix rounds).
    PacketReviewed {
        packet: String,
        commit: String,
        reviewer: String,
        approved: bool,
        blocking: usize,
        round: u32,
        /// One line per blocking finding (at most a few, each bounded), for reports.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        findings: Vec<String>,
    },
    PacketSucceeded {
        packet: String,
        commit: String,
    },
    /// The packet failed; `reason` says why in words a person can act on.
    PacketFailed {
        packet: String,
        reason: String,
    },
    /// The packet will not run because a dependency did not succeed.
    PacketSkipped {
        packet: String,
        reason: String,
    },
    /// The packet was stopped by an interrupt and will restart from its worktree on resume.
    PacketInterrupted {
        packet: String,
    },
    /// A packet a crash or an interrupt stopped midway runs again, in the same attempt, from
    /// `phase` (its worktree kept, work in progress included).
    PacketResumed {
        packet: String,
        attempt: u32,
        phase: String,
    },
    /// The run stopped before finishing (Ctrl-C, SIGTERM); `resume` continues it.
    RunInterrupted {
        reason: String,
    },
    /// The run was cancelled; its packets will not be started again.
    RunCancelled,
    /// A finished run was opened again (`git orchestra retry`): `packets` go back to pending,
    /// the run becomes resumable, and their workers get `note` with their next task.
    RunReopened {
        packets: Vec<String>,
        note: Option<String>,
    },
    /// Every packet reached a final state.
    RunFinished {
        outcome: RunOutcome,
    },
    /// A packet's worktree was removed, after unsaved work was saved to `backup` if any.
    WorktreeRemoved {
        packet: String,
        backup: Option<String>,
    },
    /// A succeeded packet's clean worktree was parked in the worktree pool (`pool`, the
    /// directory it moved to) as soon as the packet succeeded in a run that integrates its
    /// packets, so that the next packet to start takes it instead of a fresh checkout; whatever
    /// needs the packet's worktree again (a conflict to resolve) checks it out anew on the
    /// packet's branch.
    WorktreeParked {
        packet: String,
        pool: String,
    },
    /// A packet's worktree, parked or removed after the packet succeeded, was checked out
    /// again on the packet's branch for work that needs it (`how`: fresh, recreated at the
    /// branch tip, or recycled from the pool).
    WorktreeRestored {
        packet: String,
        how: String,
    },
    /// Integration was asked of the run (`run --merge`, or `retry` of a run merged before):
    /// once every packet is final, the engine integrates the succeeded ones with these
    /// settings, and the run finishes only after the merge has. Journaled before anything
    /// runs, so a resume after a crash integrates too.
    IntegrationRequested {
        /// The branch to advance; `None`: the plan's base branch, else the current one.
        target: Option<String>,
        /// Longest one validation command of the merge may run, in seconds.
        timeout_secs: u64,
        /// Largest batch validated at once.
        max_batch: usize,
        /// How many times a conflicting packet goes back to its worker.
        resolve_rounds: u32,
        /// Keep the integrated packets' worktrees.
        keep_worktrees: bool,
        /// How many clean worktrees of integrated packets are parked for new packets.
        recycle_worktrees: usize,
        /// Whether every batch runs the commands of the packets integrated before it too
        /// (`[merge] revalidate_integrated`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        revalidate_integrated: bool,
    },
    /// The merge coordinator started integrating `packets` into `integration`, for `target`;
    /// `already` are the succeeded packets found on the integration branch before it began.
    MergeStarted {
        target: String,
        integration: String,
        packets: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        already: Vec<String>,
    },
    /// A packet merged in memory conflicts with the integration branch on `paths`.
    PacketConflicted {
        packet: String,
        paths: Vec<String>,
    },
    /// The packet's conflicts (or a validation its merge broke) were resolved by merging
    /// `onto`, the integration tip then, into its branch as `commit`: from then on the packet's
    /// own change is measured against `onto`, no longer against its start.
    PacketResolved {
        packet: String,
        commit: String,
        onto: String,
    },
    /// One validation command ran on a merge candidate holding the batch `packets`.
    MergeValidationFinished {
        packets: Vec<String>,
        command: String,
        exit_code: Option<i32>,
        duration_ms: u64,
        timed_out: bool,
        tail: String,
    },
    /// The packet is on the integration branch, whose tip became `commit`.
    PacketIntegrated {
        packet: String,
        commit: String,
    },
    /// The packet was not integrated and goes back to its author; `reason` says why.
    PacketSentBack {
        packet: String,
        reason: String,
    },
    /// The target branch is about to be fast-forwarded to the validated integration tip
    /// `commit`.
    TargetAdvancing {
        target: String,
        commit: String,
    },
    /// The merge ended: the integration branch is at `commit`; `target_advanced` says whether
    /// the target branch now points there too.
    MergeFinished {
        integration: String,
        commit: String,
        integrated: Vec<String>,
        sent_back: Vec<String>,
        target_advanced: bool,
        /// Why the target was not advanced, when it was not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_note: Option<String>,
        /// Whether the target's ref moved during this merge (it already pointed at `commit`
        /// when false); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_moved: Option<bool>,
    },
    /// An agent working on `packet` moved from one worker state to another, for `reason`.
    AgentState {
        packet: String,
        role: String,
        from: String,
        to: String,
        reason: String,
    },
    /// An agent's call to its model ended: tokens counted by the provider and, when the price
    /// table knows the model, the cost in billionths of the table's currency unit.
    AgentModelCall {
        packet: String,
        role: String,
        model: String,
        turn: u32,
        input_tokens: u64,
        output_tokens: u64,
        cost_nanos: Option<u64>,
        duration_ms: u64,
    },
    /// An agent's tool call ended. Only the tool's name is kept: arguments and output may
    /// carry file contents or secrets and stay in the packet's transcript.
    AgentToolCall {
        packet: String,
        role: String,
        turn: u32,
        tool: String,
        ok: bool,
        duration_ms: u64,
        /// The call's key argument (a path, a symbol, a command's first line), clipped to a
        /// line and scrubbed of keys; never file contents or output.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        target: String,
    },
    /// An agent's model call began; the next `AgentModelCall` of the packet ends it.
    AgentWaiting {
        packet: String,
        role: String,
        turn: u32,
    },
    /// A failed model call will be retried after `delay_ms`.
    AgentRetry {
        packet: String,
        role: String,
        model: String,
        attempt: u32,
        delay_ms: u64,
        error: String,
    },
    /// The agent's model kept failing; the next profile of its chain takes over.
    AgentFallback {
        packet: String,
        role: String,
        from: String,
        to: String,
        error: String,
    },
    /// The agent of `packet` asked a person `question` (the `ask` tool) and waits for the
    /// answer, typed at the terminal or given with `git orchestra answer`.
    QuestionAsked {
        packet: String,
        question: String,
    },
    /// A person answered the question `packet`'s agent waits on.
    QuestionAnswered {
        packet: String,
        text: String,
    },
    /// A person commented on `packet`'s diff (the web view's "send to agent"): `fixes` are
    /// required fixes its worker gets in a fix round before the packet is done.
    CommentsSent {
        packet: String,
        fixes: String,
    },
    /// The comments sent so far for `packet` went to its worker in fix round `round`.
    CommentsDelivered {
        packet: String,
        round: u32,
    },
    /// Packets `first` and `second` share `files` but edit declared symbols far enough apart
    /// there, so the scheduler may run them at the same time; `note` says so in a sentence.
    PacketsShareFiles {
        first: String,
        second: String,
        files: Vec<String>,
        note: String,
    },
    /// The packet changed `lines` (of its start commit) of a file outside the symbols it
    /// declared there. The commit is kept; the merge's conflict path is the safety net.
    ScopeFinding {
        packet: String,
        file: String,
        lines: String,
        declared: Vec<String>,
    },
    /// The packet's work (fix round `round`) was handed to `host` of executor `executor`;
    /// what the host did follows as the events it sent back.
    PacketDispatched {
        packet: String,
        executor: String,
        host: String,
        round: u32,
    },
    /// `git orchestra land` (process `pid`) began following the run's pull requests; `merge`
    /// says whether it merges them or leaves merging to people.
    LandStarted {
        pid: u32,
        merge: bool,
    },
    /// The pull request `number` of `packet` was seen in a new state: `state` (open, merged,
    /// closed) at head `head_sha`, and what landing waits for (`waiting`, empty when nothing).
    PrObserved {
        packet: String,
        number: u64,
        state: String,
        head_sha: String,
        waiting: String,
    },
    /// Landing looked at `packet`'s pull request `number` (at `url`) on head `head_sha` and saw
    /// its checks, each counted reviewer's and outsider's latest verdict, and whether the forge
    /// would merge it (`mergeable`: `None` while the forge still computes it). Journaled when
    /// any of it changed since the last look, so `status`, the web view and the report show it.
    PrLooked {
        packet: String,
        number: u64,
        #[serde(default)]
        url: String,
        head_sha: String,
        #[serde(default)]
        checks: Vec<SeenCheck>,
        #[serde(default)]
        reviews: Vec<SeenReview>,
        #[serde(default)]
        mergeable: Option<bool>,
    },
    /// The failed check `check` on `head_sha` of `packet`'s pull request is run once more, to
    /// tell a flaky failure from a real one; a check is re-run at most once per head.
    CheckRerun {
        packet: String,
        number: u64,
        check: String,
        head_sha: String,
    },
    /// The check `check` that failed on `head_sha` passed when re-run: reported as flaky, not
    /// sent back to the packet's worker.
    CheckFlaky {
        packet: String,
        number: u64,
        check: String,
        head_sha: String,
    },
    /// `packet`'s pull request `number` now targets `to` (it targeted `from`, a parent that
    /// landed).
    PrRetargeted {
        packet: String,
        number: u64,
        from: String,
        to: String,
    },
    /// `packet`'s pull request `number` was restacked: its parent landed by squash or rebase
    /// (the parent's commits are not in `onto`), so its own commits moved from `from` onto
    /// `onto` and the branch now points at `to`. The old head is kept under `saved` before the
    /// branch is pushed with a lease on it.
    PrRestacked {
        packet: String,
        number: u64,
        from: String,
        to: String,
        onto: String,
        saved: String,
    },
    /// Restacking `packet`'s pull request `number` onto `onto` conflicts in `files`; nothing
    /// was pushed and no side was dropped.
    RestackConflicted {
        packet: String,
        number: u64,
        onto: String,
        files: Vec<String>,
    },
    /// The run merged `packet`'s pull request `number` with `method`.
    PrMerged {
        packet: String,
        number: u64,
        method: String,
    },
    /// The forge took over merging `packet`'s pull request `number` at `head_sha` (a merge
    /// train, merge when the pipeline succeeds): `how` says what landing now waits for,
    /// `position` its place on the train (1 merges next) when the forge said. Journaled once
    /// per head, way and place, so `status` shows since when the forge has it.
    PrQueued {
        packet: String,
        number: u64,
        head_sha: String,
        how: String,
        #[serde(default)]
        position: Option<u64>,
    },
    /// `packet`'s pull request `number` waits for a person; `reason` says why and what to do.
    LandWaiting {
        packet: String,
        number: u64,
        reason: String,
    },
    /// A `/orchestra <command>` comment (`comment`, by `author`) on `packet`'s pull request was
    /// read: `acted` when its author counts (`[land] reviewers`) and the command is known, else
    /// it is only shown. Each comment is read once.
    LandCommand {
        packet: String,
        number: u64,
        comment: u64,
        author: String,
        command: String,
        acted: bool,
    },
    /// Fix round `round` of `packet`'s pull request `number` started on head `head_sha`: what
    /// failed there (`reason`: a failed check, a review asking for changes) went back to the
    /// packet's worker.
    LandFixStarted {
        packet: String,
        number: u64,
        round: u32,
        head_sha: String,
        reason: String,
    },
    /// Fix round `round` of `packet`'s pull request ended: `pushed` is the commit pushed over
    /// `head_sha` (with a lease on it), empty when nothing was pushed; `outcome` says what
    /// happened; `review` is the id of the review requesting changes it answered (absent for
    /// a failed check).
    LandFixEnded {
        packet: String,
        number: u64,
        round: u32,
        head_sha: String,
        pushed: String,
        outcome: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review: Option<u64>,
    },
    /// `land` stopped following the run's pull requests: how many were `merged`, `closed` by
    /// a person, and `waiting` for one.
    LandFinished {
        merged: usize,
        closed: usize,
        waiting: usize,
    },
    /// Candidate `candidate` (1…N) of a packet worked on `attempt` starts, in its own worktree
    /// on its own branch.
    CandidateStarted {
        packet: String,
        attempt: u32,
        candidate: u32,
        branch: String,
        worktree: String,
        /// The arm of `[best_of] arms` the candidate works with, when candidates vary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    /// A candidate ended: its `commit` (when it made one), whether it `passed` the scope check
    /// and the packet's validation, the size of its change and, when it did not pass, why.
    CandidateEnded {
        packet: String,
        attempt: u32,
        candidate: u32,
        commit: Option<String>,
        passed: bool,
        changed_lines: u64,
        reason: String,
        /// The arm of `[best_of] arms` the candidate worked with, when candidates vary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    /// The tester of a best-of-N packet on `attempt` ended (`[best_of] tester`): the `commit`
    /// holding the tests it wrote for the candidates to pass (kept as
    /// `refs/orchestra/tests/<run>/<packet>` until `gc`) and the test `files`, or, without a
    /// commit, why there are none (`reason`), so the candidates are chosen without them.
    TesterEnded {
        packet: String,
        attempt: u32,
        commit: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// The packet's work is candidate `candidate`'s `commit`, chosen for `reasons`; the
    /// packet's branch now holds it and its pipeline goes on with validation.
    CandidateChosen {
        packet: String,
        attempt: u32,
        candidate: u32,
        commit: String,
        reasons: String,
        /// The reviewer that compared the surviving candidates side by side, when one was
        /// asked (whether or not its answer could be used; `reasons` says).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reviewer: Option<String>,
        /// Tokens (input plus output) the comparison used; its model call is journaled as the
        /// reviewer's, so it counts with the packet's other costs.
        #[serde(default, skip_serializing_if = "is_zero")]
        review_tokens: u64,
        /// What the comparison cost, in billionths of `[prices]`' currency unit, when priced.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review_cost_nanos: Option<u64>,
    },
}

/// One check or commit status of a pull request's head as landing saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenCheck {
    pub name: String,
    /// `pending`, `success`, `neutral`, `failure` or `error`.
    pub conclusion: String,
}

/// A reviewer's latest verdict on a pull request as landing saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenReview {
    /// The reviewer's login.
    pub author: String,
    /// `approved`, `changes_requested`, `commented`, `dismissed` or `pending`.
    pub verdict: String,
    /// Whether landing acts on it (`[land] reviewers`, or write access without that list).
    pub counted: bool,
}

/// How a finished run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Every packet succeeded.
    Completed,
    /// At least one packet failed or was skipped.
    Failed,
}

impl Event {
    /// Returns the packet this event is about, if it is about one.
    pub fn packet(&self) -> Option<&str> {
        match self {
            Event::PacketStarted { packet, .. }
            | Event::WorktreeReady { packet, .. }
            | Event::WorkerStarted { packet, .. }
            | Event::WorkerSpawned { packet, .. }
            | Event::WorkerFinished { packet, .. }
            | Event::PacketCommitted { packet, .. }
            | Event::ValidationFinished { packet, .. }
            | Event::ReviewStarted { packet, .. }
            | Event::WorkerRetrying { packet, .. }
            | Event::PacketReviewed { packet, .. }
            | Event::PacketSucceeded { packet, .. }
            | Event::PacketFailed { packet, .. }
            | Event::PacketSkipped { packet, .. }
            | Event::PacketInterrupted { packet }
            | Event::PacketResumed { packet, .. }
            | Event::WorktreeRemoved { packet, .. }
            | Event::WorktreeParked { packet, .. }
            | Event::WorktreeRestored { packet, .. }
            | Event::PacketConflicted { packet, .. }
            | Event::PacketResolved { packet, .. }
            | Event::PacketIntegrated { packet, .. }
            | Event::PacketSentBack { packet, .. }
            | Event::AgentState { packet, .. }
            | Event::AgentModelCall { packet, .. }
            | Event::AgentToolCall { packet, .. }
            | Event::AgentWaiting { packet, .. }
            | Event::AgentRetry { packet, .. }
            | Event::AgentFallback { packet, .. }
            | Event::QuestionAsked { packet, .. }
            | Event::QuestionAnswered { packet, .. }
            | Event::CommentsSent { packet, .. }
            | Event::CommentsDelivered { packet, .. }
            | Event::ScopeFinding { packet, .. }
            | Event::PacketDispatched { packet, .. }
            | Event::PrObserved { packet, .. }
            | Event::PrLooked { packet, .. }
            | Event::CheckRerun { packet, .. }
            | Event::CheckFlaky { packet, .. }
            | Event::PrRetargeted { packet, .. }
            | Event::PrRestacked { packet, .. }
            | Event::RestackConflicted { packet, .. }
            | Event::PrMerged { packet, .. }
            | Event::PrQueued { packet, .. }
            | Event::LandWaiting { packet, .. }
            | Event::LandCommand { packet, .. }
            | Event::CandidateStarted { packet, .. }
            | Event::CandidateEnded { packet, .. }
            | Event::TesterEnded { packet, .. }
            | Event::CandidateChosen { packet, .. }
            | Event::LandFixStarted { packet, .. }
            | Event::LandFixEnded { packet, .. } => Some(packet),
            Event::RunCreated { .. }
            | Event::RunStarted { .. }
            | Event::RunInterrupted { .. }
            | Event::RunCancelled
            | Event::RunReopened { .. }
            | Event::RunFinished { .. }
            | Event::IntegrationRequested { .. }
            | Event::MergeStarted { .. }
            | Event::MergeValidationFinished { .. }
            | Event::TargetAdvancing { .. }
            | Event::MergeFinished { .. }
            | Event::PacketsShareFiles { .. }
            | Event::LandStarted { .. }
            | Event::LandFinished { .. } => None,
        }
    }
}

/// Returns true if and only if `n` is zero: a count an event leaves out when nothing was spent.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
