//! Integration tests of the review gates: `git orchestra review` and its verdicts in git notes,
//! the pre-push hook with real `git push` to a local bare remote, what its refusals say, and
//! the hook's in-process fast path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hook;
mod hook_fast;
mod hook_messages;
mod link_attacks;
mod push_attacks;
mod review;
mod secret_attacks;
