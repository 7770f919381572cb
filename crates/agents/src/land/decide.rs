//! What landing does next with one pull request, decided from what the forge shows: a pure
//! function, so every rule (parents first, checks green, reviews allow it, one re-run per
//! failed check) is tested without a forge.

use orchestra_core::forge::{
    Check, CheckSource, PrComment, PrState, PrStatus, Review, ReviewState,
};

/// Where a parent (a packet this one depends on) of a pull request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    /// The parent's packet id.
    pub packet: String,
    /// Its pull request's head branch.
    pub head: String,
    /// Its pull request's state.
    pub state: PrState,
    /// The branch its pull request targets (where it landed, once merged).
    pub base: String,
}

/// What is known about one open pull request when deciding.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub status: &'a PrStatus,
    pub checks: &'a [Check],
    pub reviews: &'a [Review],
    /// Inline comments on the diff, quoted (file and line) when their author requests changes.
    pub inline: &'a [PrComment],
    /// Accounts whose reviews count; `None`: those who may write to the repository.
    pub reviewers: Option<&'a [String]>,
    pub parents: &'a [Parent],
    /// Names of checks already re-run on this head.
    pub rerun: &'a [String],
    /// Whether landing merges (`[land] merge`).
    pub merge: bool,
}

/// The next step for one pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Merged: nothing more to do.
    Landed,
    /// Closed without merging by a person: left alone.
    Closed,
    /// Point it at `to`: the parent it targeted has landed there.
    Retarget { to: String },
    /// Run this failed check once more (a failure that passes then is flaky).
    Rerun(Check),
    /// Merge it now.
    Merge,
    /// Send what failed back to the packet's worker as a fix round: `reason` is what a person
    /// is told when no round is left, `feedback` what the worker gets (the check's name,
    /// conclusion and log tail, or the review and its inline comments), `review` the review
    /// requesting changes it answers (`None` for failed checks).
    Fix {
        reason: String,
        feedback: String,
        review: Option<Answer>,
    },
    /// Rebase it onto its base, which moved and now conflicts with it: restacked, the conflict
    /// sent to the packet's worker; `reason` is what a person is told when it cannot be.
    Rebase { reason: String },
    /// Nothing to do yet; the reason says what landing waits for.
    Wait(String),
    /// A person must act; the reason says why and what to do.
    Person(String),
}

/// The review a fix round answers, and where its reply goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The review's id.
    pub review: u64,
    /// The reviewer's login.
    pub author: String,
    /// The reviewer's inline comments on the diff: each gets the reply on its thread.
    pub threads: Vec<u64>,
}

/// Returns the next step for the pull request `facts` describes.
pub fn decide(facts: &Facts<'_>) -> Step {
    match facts.status.state {
        PrState::Merged => return Step::Landed,
        PrState::Closed => return Step::Closed,
        PrState::Open => {}
    }
    if let Some(p) = facts.parents.iter().find(|p| p.state == PrState::Closed) {
        return Step::Person(format!(
            "the pull request of `{}`, which this one builds on, was closed without merging; \
             retarget or close this one",
            p.packet
        ));
    }
    let open: Vec<&str> = facts
        .parents
        .iter()
        .filter(|p| p.state == PrState::Open)
        .map(|p| p.packet.as_str())
        .collect();
    if !open.is_empty() {
        return Step::Wait(format!("{} to land first", open.join(", ")));
    }
    if let Some(p) = facts.parents.iter().find(|p| p.head == facts.status.base) {
        return Step::Retarget { to: p.base.clone() };
    }
    if let Some(step) = checks_step(facts) {
        return step;
    }
    if let Some(review) = blocking(facts.reviews, facts.reviewers) {
        let inline: Vec<&PrComment> = facts
            .inline
            .iter()
            .filter(|c| c.author == review.author)
            .collect();
        return Step::Fix {
            reason: with_inline(reason_of(review), facts),
            feedback: review_feedback(review, &inline),
            review: Some(Answer {
                review: review.id,
                author: review.author.clone(),
                threads: inline.iter().map(|c| c.id).collect(),
            }),
        };
    }
    if facts.status.mergeable == Some(false) {
        return Step::Rebase {
            reason: format!(
                "it conflicts with `{}`; rebase its branch and push",
                facts.status.base
            ),
        };
    }
    if facts.status.draft {
        return Step::Wait("a person to mark the draft ready for review".into());
    }
    if !facts.merge {
        return Step::Wait("a person to merge it ([land] merge = false)".into());
    }
    Step::Merge
}

/// Returns the step the head's checks call for: a re-run, a wait, a person; `None` when
/// they all passed.
fn checks_step(facts: &Facts<'_>) -> Option<Step> {
    let failed: Vec<&Check> = facts
        .checks
        .iter()
        .filter(|c| c.conclusion.failed())
        .collect();
    if let Some(c) = failed
        .iter()
        .find(|c| c.source == CheckSource::CheckRun && !facts.rerun.contains(&c.name))
    {
        return Some(Step::Rerun((*c).clone()));
    }
    if let Some(c) = failed.first() {
        let tail = c.log_tail.lines().last().unwrap_or_default();
        return Some(Step::Fix {
            review: None,
            feedback: feedback(&failed),
            reason: format!(
                "check `{}` failed ({}){}: fix it on the branch and push",
                c.name,
                c.conclusion.as_str(),
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ),
        });
    }
    let pending: Vec<&str> = facts
        .checks
        .iter()
        .filter(|c| c.conclusion == orchestra_core::forge::CheckConclusion::Pending)
        .map(|c| c.name.as_str())
        .collect();
    if !pending.is_empty() {
        return Some(Step::Wait(format!(
            "checks to finish: {}",
            pending.join(", ")
        )));
    }
    None
}

/// Returns what a fix round tells the worker about the `failed` checks of the pull request's
/// head: each check's name and conclusion, then the tail of its output or log.
fn feedback(failed: &[&Check]) -> String {
    let mut text = String::from(
        "The pull request's CI failed on your change. Fix what made these checks fail:\n",
    );
    for c in failed {
        text.push_str(&format!(
            "\n## Check `{}` failed ({})\n",
            c.name,
            c.conclusion.as_str()
        ));
        if !c.log_tail.is_empty() {
            text.push_str(&format!(
                "\nThe end of its log:\n\n```\n{}\n```\n",
                c.log_tail
            ));
        }
    }
    text
}

/// Returns what a fix round tells the worker about `review` requesting changes, with the
/// reviewer's `inline` comments on the diff (file, line, text).
fn review_feedback(review: &Review, inline: &[&PrComment]) -> String {
    let mut text = format!(
        "A reviewer asked for changes on the pull request. Make them:\n\n## Review by {} (changes requested)\n",
        review.author
    );
    if !review.body.is_empty() {
        text.push_str(&format!("\n{}\n", review.body));
    }
    if !inline.is_empty() {
        text.push_str("\n## Comments on the diff\n\n");
        for c in inline {
            let place = match (&c.path, c.line) {
                (Some(p), Some(l)) => format!("{p}:{l}"),
                (Some(p), None) => p.clone(),
                _ => "the diff".into(),
            };
            text.push_str(&format!("- {place}: {}\n", c.body));
        }
    }
    text
}

/// Returns `reason` (which starts with the reviewer's login) followed by that reviewer's inline
/// comments, each as `file:line: first line`.
fn with_inline(reason: String, facts: &Facts<'_>) -> String {
    let author = reason.split_whitespace().next().unwrap_or_default();
    let quoted: Vec<String> = facts
        .inline
        .iter()
        .filter(|c| c.author == author)
        .map(|c| {
            let place = match (&c.path, c.line) {
                (Some(p), Some(l)) => format!("{p}:{l}"),
                (Some(p), None) => p.clone(),
                _ => "the diff".into(),
            };
            format!("{place}: {}", c.body.lines().next().unwrap_or_default())
        })
        .collect();
    if quoted.is_empty() {
        reason
    } else {
        format!("{reason} ({})", quoted.join("; "))
    }
}

/// Returns true if and only if landing acts on what `author` (with the forge's `association`
/// of them) says: they are in `reviewers`, or, without that list, may write to the repository.
pub fn counted(author: &str, association: &str, reviewers: Option<&[String]>) -> bool {
    match reviewers {
        Some(list) => list.iter().any(|a| a == author),
        None => orchestra_core::forge::may_write(association),
    }
}

/// Returns why the reviews block landing: a counted reviewer whose latest verdict requests
/// changes. Reviews by accounts not [`counted`] are shown on the forge, never acted on.
pub fn changes_requested(reviews: &[Review], reviewers: Option<&[String]>) -> Option<String> {
    blocking(reviews, reviewers).map(reason_of)
}

/// Returns why `review` blocks landing: its author and the first line of its body.
fn reason_of(review: &Review) -> String {
    let body = review.body.lines().next().unwrap_or_default();
    format!(
        "{} requested changes{}",
        review.author,
        if body.is_empty() {
            String::new()
        } else {
            format!(": {body}")
        }
    )
}

/// Returns the first counted reviewer's latest review when it requests changes.
fn blocking<'r>(reviews: &'r [Review], reviewers: Option<&[String]>) -> Option<&'r Review> {
    let counted = |r: &&Review| counted(&r.author, &r.association, reviewers);
    let mut latest: Vec<&Review> = Vec::new();
    for r in reviews.iter().filter(counted).filter(|r| {
        matches!(
            r.state,
            ReviewState::Approved | ReviewState::ChangesRequested | ReviewState::Dismissed
        )
    }) {
        latest.retain(|l| l.author != r.author);
        latest.push(r);
    }
    let blocking: Vec<&&Review> = latest
        .iter()
        .filter(|r| r.state == ReviewState::ChangesRequested)
        .collect();
    blocking.first().map(|r| **r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::forge::CheckConclusion;

    fn status(base: &str) -> PrStatus {
        PrStatus {
            number: 2,
            state: PrState::Open,
            head: "b2".into(),
            head_sha: "s".into(),
            base: base.into(),
            draft: false,
            mergeable: Some(true),
        }
    }

    fn check(name: &str, conclusion: CheckConclusion) -> Check {
        Check {
            id: 1,
            name: name.into(),
            source: CheckSource::CheckRun,
            conclusion,
            log_tail: "error: boom".into(),
        }
    }

    fn review(author: &str, state: ReviewState) -> Review {
        Review {
            id: 1,
            author: author.into(),
            association: if author == "mallory" {
                "NONE"
            } else {
                "MEMBER"
            }
            .into(),
            state,
            body: "rename it".into(),
        }
    }

    fn facts<'a>(
        status: &'a PrStatus,
        checks: &'a [Check],
        reviews: &'a [Review],
        parents: &'a [Parent],
        rerun: &'a [String],
    ) -> Facts<'a> {
        Facts {
            status,
            checks,
            reviews,
            inline: &[],
            reviewers: None,
            parents,
            rerun,
            merge: true,
        }
    }

    #[test]
    fn a_child_waits_for_its_parent_then_is_retargeted_to_where_the_parent_landed() {
        let s = status("b1");
        let mut parent = Parent {
            packet: "p1".into(),
            head: "b1".into(),
            state: PrState::Open,
            base: "main".into(),
        };
        let step = decide(&facts(&s, &[], &[], std::slice::from_ref(&parent), &[]));
        assert_eq!(step, Step::Wait("p1 to land first".into()));
        parent.state = PrState::Merged;
        let step = decide(&facts(&s, &[], &[], std::slice::from_ref(&parent), &[]));
        assert_eq!(step, Step::Retarget { to: "main".into() });
    }

    #[test]
    fn a_failed_check_is_rerun_once_then_goes_back_as_a_fix_and_pending_ones_wait() {
        let s = status("main");
        let checks = [check("test", CheckConclusion::Failure)];
        assert!(matches!(
            decide(&facts(&s, &checks, &[], &[], &[])),
            Step::Rerun(c) if c.name == "test"
        ));
        let step = decide(&facts(&s, &checks, &[], &[], &["test".into()]));
        assert!(
            matches!(&step, Step::Fix { reason, feedback, review: None } if reason.contains("`test` failed")
                && reason.contains("boom") && feedback.contains("## Check `test` failed (failure)")
                && feedback.contains("error: boom")),
            "{step:?}"
        );
        let running = [check("lint", CheckConclusion::Pending)];
        assert_eq!(
            decide(&facts(&s, &running, &[], &[], &[])),
            Step::Wait("checks to finish: lint".into())
        );
        let green = [check("lint", CheckConclusion::Success)];
        assert_eq!(decide(&facts(&s, &green, &[], &[], &[])), Step::Merge);
        let draft = PrStatus {
            draft: true,
            ..s.clone()
        };
        assert_eq!(
            decide(&facts(&draft, &green, &[], &[], &[])),
            Step::Wait("a person to mark the draft ready for review".into())
        );
    }

    #[test]
    fn changes_requested_quote_the_reviewers_inline_comments() {
        let s = status("main");
        let reviews = [review("bob", ReviewState::ChangesRequested)];
        let comment = |author: &str, body: &str| PrComment {
            id: 1,
            author: author.into(),
            association: "MEMBER".into(),
            body: body.into(),
            path: Some("src/lib.rs".into()),
            line: Some(12),
        };
        let inline = [
            comment("bob", "off by one\nsee above"),
            comment("carol", "nit"),
        ];
        let mut f = facts(&s, &[], &reviews, &[], &[]);
        f.inline = &inline;
        let Step::Fix {
            reason,
            feedback,
            review,
        } = decide(&f)
        else {
            panic!("{:?}", decide(&f));
        };
        assert_eq!(
            reason,
            "bob requested changes: rename it (src/lib.rs:12: off by one)"
        );
        assert!(feedback.contains("## Review by bob (changes requested)\n\nrename it"));
        assert!(feedback.contains("- src/lib.rs:12: off by one\nsee above"));
        assert!(
            !feedback.contains("nit"),
            "only the reviewer's own comments"
        );
        assert_eq!(
            review.map(|a| (a.review, a.author)),
            Some((1, "bob".into()))
        );
    }

    #[test]
    fn only_counted_reviewers_latest_verdicts_block() {
        let alice = "alice".to_string();
        let reviewers = [alice];
        let outsider = [review("mallory", ReviewState::ChangesRequested)];
        assert_eq!(changes_requested(&outsider, Some(&reviewers)), None);
        assert_eq!(changes_requested(&outsider, None), None, "no write access");
        let member = [review("bob", ReviewState::ChangesRequested)];
        assert!(changes_requested(&member, None).is_some());
        let changed_mind = [
            review("alice", ReviewState::ChangesRequested),
            review("alice", ReviewState::Commented),
            review("alice", ReviewState::Approved),
        ];
        assert_eq!(changes_requested(&changed_mind, Some(&reviewers)), None);
        let blocking = [review("alice", ReviewState::ChangesRequested)];
        assert_eq!(
            changes_requested(&blocking, Some(&reviewers)).as_deref(),
            Some("alice requested changes: rename it")
        );
    }
}
