//! What `status`, the web view and the report show of a landing run: where each packet's pull
//! request stands (its state, address, checks, reviews, whether it merges, the fix rounds it
//! used) and what landing waits for, since when — read from the journal `land` writes, so
//! every view agrees and a `land` killed at any moment leaves a true picture behind.
//!
//! Each poll journals a [`Event::PrLooked`] only when what it saw changed, so a pull request
//! followed for days adds an event per change, not per poll.

use std::path::Path;

use orchestra_core::forge::{Check, PrStatus, Review, ReviewState};
use orchestra_core::store::{Event, EventKind, SeenCheck, SeenReview, Store, StoreError};
use serde::Serialize;

use super::{Journal, LandError, decide::counted};

/// Where one packet's pull request stood at the last look `land` journaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrLanding {
    pub packet: String,
    pub number: u64,
    /// The pull request's address on the forge; empty when landing never saw it.
    pub url: String,
    /// `open`, `merged` or `closed`.
    pub state: String,
    /// The head commit last seen.
    pub head_sha: String,
    /// The head's checks and commit statuses, the latest of each name.
    pub checks: Vec<SeenCheck>,
    /// Each reviewer's latest verdict.
    pub reviews: Vec<SeenReview>,
    /// Whether the forge would merge it; `None` while it computes or before the first look.
    pub mergeable: Option<bool>,
    /// Fix rounds started for it (failures and reviews sent back to the packet's worker).
    pub rounds: u32,
    /// Checks that failed and then passed when re-run.
    pub flaky: Vec<String>,
    /// What landing waits for; empty when nothing.
    pub waiting: String,
    /// When this state (or the fix round running now) began, in milliseconds since the epoch.
    pub since_ms: i64,
    /// Whether a `git orchestra land` process follows the pull requests now.
    pub followed: bool,
    /// How the forge merges it itself, when landing handed it over (a merge train, merge when
    /// the pipeline succeeds) and that is still what it waits for; `None` otherwise.
    pub auto_merge: Option<AutoMerge>,
}

/// How the forge merges a pull request itself, since when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoMerge {
    /// What landing waits for, as the forge put it (`GitLab to merge it when its pipeline
    /// succeeds`, `GitLab's merge train to merge it`).
    pub how: String,
    /// Its place on the merge train (1 merges next), when the forge said.
    pub position: Option<u64>,
    /// When landing handed it over, in milliseconds since the epoch.
    pub since_ms: i64,
}

/// Returns where each packet's pull request of run `run` stood at the last look `land`
/// journaled, in the order they were first seen; empty when the run was never landed.
pub fn states(common_dir: &Path, store: &Store, run: &str) -> Result<Vec<PrLanding>, StoreError> {
    let kinds = [
        EventKind::PrLooked,
        EventKind::PrObserved,
        EventKind::PrMerged,
        EventKind::PrQueued,
        EventKind::CheckFlaky,
        EventKind::LandFixStarted,
        EventKind::LandFixEnded,
    ];
    let followed = orchestra_sys::exec::RunLock::is_held(&land_dir(common_dir, run));
    let mut out: Vec<PrLanding> = Vec::new();
    // The fix round running now per packet: its number and when it started.
    let mut fixing: Vec<(String, u32, i64)> = Vec::new();
    for e in store.events_of_kinds(run, &kinds)? {
        let Some(packet) = e.event.packet().map(str::to_string) else {
            continue;
        };
        let at = match out.iter().position(|p| p.packet == packet) {
            Some(at) => at,
            None => {
                out.push(PrLanding {
                    packet: packet.clone(),
                    number: 0,
                    url: String::new(),
                    state: "open".into(),
                    head_sha: String::new(),
                    checks: Vec::new(),
                    reviews: Vec::new(),
                    mergeable: None,
                    rounds: 0,
                    flaky: Vec::new(),
                    waiting: String::new(),
                    since_ms: e.ts_ms,
                    followed,
                    auto_merge: None,
                });
                out.len() - 1
            }
        };
        apply(&mut out[at], &mut fixing, e.event, e.ts_ms);
    }
    for (packet, round, ts) in fixing {
        if let Some(p) = out.iter_mut().find(|p| p.packet == packet) {
            p.waiting = format!("its worker to fix it (fix round {round})");
            p.since_ms = ts;
        }
    }
    Ok(out)
}

/// Applies one journaled landing event to the pull request it is about.
fn apply(p: &mut PrLanding, fixing: &mut Vec<(String, u32, i64)>, event: Event, ts_ms: i64) {
    let seen = |p: &mut PrLanding, state: String, waiting: String| {
        if p.state != state || p.waiting != waiting {
            p.since_ms = ts_ms;
        }
        p.state = state;
        p.waiting = waiting;
    };
    match event {
        Event::PrLooked {
            number,
            url,
            head_sha,
            checks,
            reviews,
            mergeable,
            ..
        } => {
            p.number = number;
            if !url.is_empty() {
                p.url = url;
            }
            p.head_sha = head_sha;
            p.checks = checks;
            p.reviews = reviews;
            p.mergeable = mergeable;
        }
        Event::PrObserved {
            number,
            state,
            head_sha,
            waiting,
            ..
        } => {
            p.number = number;
            p.head_sha = head_sha;
            seen(p, state, waiting);
            let still = p
                .auto_merge
                .as_ref()
                .is_some_and(|a| p.waiting == super::queued::waiting_text(&a.how, a.position));
            if !still {
                p.auto_merge = None;
            }
        }
        Event::PrMerged { number, .. } => {
            p.number = number;
            seen(p, "merged".into(), String::new());
            p.auto_merge = None;
        }
        Event::PrQueued {
            number,
            head_sha,
            how,
            position,
            ..
        } => {
            p.number = number;
            p.head_sha = head_sha;
            seen(
                p,
                "open".into(),
                super::queued::waiting_text(&how, position),
            );
            // Its place changed, not since when the forge has it.
            let since_ms = p
                .auto_merge
                .as_ref()
                .filter(|a| a.how == how)
                .map_or(ts_ms, |a| a.since_ms);
            p.since_ms = since_ms;
            p.auto_merge = Some(AutoMerge {
                how,
                position,
                since_ms,
            });
        }
        Event::CheckFlaky { check, .. } if !p.flaky.contains(&check) => p.flaky.push(check),
        Event::LandFixStarted { round, .. } => {
            p.rounds = p.rounds.max(round);
            fixing.retain(|(packet, ..)| *packet != p.packet);
            fixing.push((p.packet.clone(), round, ts_ms));
        }
        Event::LandFixEnded { .. } => fixing.retain(|(packet, ..)| *packet != p.packet),
        _ => {}
    }
}

/// Returns the directory whose lock a `land` of run `run` holds while it follows.
fn land_dir(common_dir: &Path, run: &str) -> std::path::PathBuf {
    orchestra_sys::exec::RunDir::new(common_dir, run)
        .path()
        .join("land")
}

impl PrLanding {
    /// Returns the lines that show this pull request: its state and what it waits for since
    /// when (relative to `now_ms`), then its address, checks, reviews, mergeability, fix rounds
    /// and flaky checks, each on its own line when known.
    pub fn lines(&self, now_ms: i64) -> Vec<String> {
        let mut head = format!("{} #{}: {}", self.packet, self.number, self.state);
        if !self.waiting.is_empty() {
            let clock = orchestra_core::gate::rfc3339_utc(self.since_ms.div_euclid(1000));
            let hm = clock.get(11..16).unwrap_or(&clock);
            head.push_str(&format!(
                ", waiting for {} since {hm} UTC ({} ago)",
                self.waiting,
                ago((now_ms - self.since_ms).max(0) / 1000)
            ));
        }
        let mut out = vec![head];
        if !self.url.is_empty() {
            out.push(self.url.clone());
        }
        if !self.checks.is_empty() {
            out.push(format!("checks: {}", self.checks_text()));
        }
        if !self.reviews.is_empty() {
            out.push(format!("reviews: {}", self.reviews_text()));
        }
        if self.state == "open" {
            out.push(format!("mergeable: {}", self.mergeable_text()));
        }
        if self.rounds > 0 {
            out.push(format!("fix rounds used: {}", self.rounds));
        }
        if !self.flaky.is_empty() {
            out.push(format!("flaky: {}", self.flaky.join(", ")));
        }
        out
    }

    /// Returns the checks as `name passing`, `name failing` or `name pending`, comma-separated.
    pub fn checks_text(&self) -> String {
        self.checks
            .iter()
            .map(|c| format!("{} {}", c.name, check_word(&c.conclusion)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Returns the reviewers' verdicts as `login approved` or `login changes requested`, those
    /// landing does not act on marked so, comma-separated.
    pub fn reviews_text(&self) -> String {
        self.reviews
            .iter()
            .map(|r| {
                format!(
                    "{} {}{}",
                    r.author,
                    r.verdict.replace('_', " "),
                    if r.counted { "" } else { " (not counted)" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Returns whether the forge would merge it: `yes`, `no (conflicts)` or `unknown`.
    pub fn mergeable_text(&self) -> &'static str {
        match self.mergeable {
            Some(true) => "yes",
            Some(false) => "no (conflicts with its base)",
            None => "unknown",
        }
    }
}

/// Returns the word a check's conclusion is shown as.
fn check_word(conclusion: &str) -> &str {
    match conclusion {
        "success" | "neutral" => "passing",
        "failure" | "error" => "failing",
        "pending" => "pending",
        other => other,
    }
}

/// Returns `secs` as the terminal shows a duration: seconds, minutes or hours.
fn ago(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s => format!("{}h", s / 3600),
    }
}

/// Returns the report's section on the run's pull requests (Markdown), or `None` when the run
/// was never landed.
pub fn markdown(landing: &[PrLanding], now_ms: i64) -> Option<String> {
    if landing.is_empty() {
        return None;
    }
    let mut out = String::from("## Pull requests\n\n");
    for p in landing {
        let mut lines = p.lines(now_ms).into_iter();
        let head = lines.next().unwrap_or_default();
        out.push_str(&format!("- {head}\n"));
        for l in lines {
            out.push_str(&format!("  - {l}\n"));
        }
    }
    Some(out)
}

/// What one look at a pull request found, for [`look`].
pub(super) struct Look<'a> {
    pub run: &'a str,
    pub packet: &'a str,
    pub url: &'a str,
    pub status: &'a PrStatus,
    pub checks: &'a [Check],
    pub reviews: &'a [Review],
    pub reviewers: Option<&'a [String]>,
}

/// Journals what this look at a pull request saw when it differs from the last look journaled
/// (read back from the journal, so a restarted `land` does not repeat it).
pub(super) fn look(
    store: &mut Store,
    seen: &Look<'_>,
    journal: &mut Journal<'_>,
) -> Result<(), LandError> {
    let mut checks: Vec<SeenCheck> = Vec::new();
    for c in seen.checks {
        // A re-run adds a newer check of the same name: the latest says where it stands.
        checks.retain(|k| k.name != c.name);
        checks.push(SeenCheck {
            name: c.name.clone(),
            conclusion: c.conclusion.as_str().to_string(),
        });
    }
    // By name: the forge's order changes between looks, which would journal a change.
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let mut reviews: Vec<SeenReview> = Vec::new();
    for r in seen.reviews.iter().filter(|r| {
        matches!(
            r.state,
            ReviewState::Approved | ReviewState::ChangesRequested | ReviewState::Dismissed
        )
    }) {
        reviews.retain(|k| k.author != r.author);
        reviews.push(SeenReview {
            author: r.author.clone(),
            verdict: verdict(r.state).to_string(),
            counted: counted(&r.author, &r.association, seen.reviewers),
        });
    }
    let event = Event::PrLooked {
        packet: seen.packet.to_string(),
        number: seen.status.number,
        url: seen.url.to_string(),
        head_sha: seen.status.head_sha.clone(),
        checks,
        reviews,
        mergeable: seen.status.mergeable,
    };
    let last = store
        .events_of_kind(seen.run, EventKind::PrLooked)?
        .into_iter()
        .rev()
        .find(|e| e.event.packet() == Some(seen.packet));
    if last.is_none_or(|e| e.event != event) {
        journal(store, event)?;
    }
    Ok(())
}

/// Returns the name a review's verdict is journaled as.
fn verdict(state: ReviewState) -> &'static str {
    match state {
        ReviewState::Approved => "approved",
        ReviewState::ChangesRequested => "changes_requested",
        ReviewState::Commented => "commented",
        ReviewState::Dismissed => "dismissed",
        ReviewState::Pending => "pending",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landing() -> PrLanding {
        PrLanding {
            packet: "p2".into(),
            number: 12,
            url: "https://forge.example/acme/widgets/pull/12".into(),
            state: "open".into(),
            head_sha: "abc".into(),
            checks: vec![
                SeenCheck {
                    name: "test".into(),
                    conclusion: "failure".into(),
                },
                SeenCheck {
                    name: "lint".into(),
                    conclusion: "pending".into(),
                },
            ],
            reviews: vec![SeenReview {
                author: "mallory".into(),
                verdict: "changes_requested".into(),
                counted: false,
            }],
            mergeable: Some(false),
            rounds: 3,
            flaky: vec!["lint".into()],
            waiting: "a person: check `test` failed".into(),
            since_ms: 9 * 3_600_000 + 14 * 60_000,
            followed: true,
            auto_merge: None,
        }
    }

    #[test]
    fn a_pull_request_is_shown_with_its_checks_reviews_rounds_and_since_when() {
        let lines = landing().lines(9 * 3_600_000 + 17 * 60_000);
        assert_eq!(
            lines,
            [
                "p2 #12: open, waiting for a person: check `test` failed since 09:14 UTC (3m ago)",
                "https://forge.example/acme/widgets/pull/12",
                "checks: test failing, lint pending",
                "reviews: mallory changes requested (not counted)",
                "mergeable: no (conflicts with its base)",
                "fix rounds used: 3",
                "flaky: lint",
            ]
        );
        let md = markdown(&[landing()], 9 * 3_600_000 + 17 * 60_000).unwrap();
        assert!(md.starts_with("## Pull requests\n\n- p2 #12: open"), "{md}");
        assert!(
            md.contains("\n  - checks: test failing, lint pending\n"),
            "{md}"
        );
        assert_eq!(markdown(&[], 0), None);
    }
}
