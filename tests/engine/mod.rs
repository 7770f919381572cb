//! Integration tests of the packet engine: plans, worktrees, confined file access, runs and their
//! crash safety, fix rounds, `retry`, bad run input, symbol-aware scheduling, and the manual
//! pages behind `--help`.
//!
//! Every test works on real temporary repositories with the real `git`, in a hermetic
//! environment (see `support::hermetic`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod actions;
mod best_of;
mod best_of_arms;
mod best_of_checks;
mod best_of_compare;
mod best_of_parallel;
mod best_of_strategy;
mod best_of_tester;
mod confine;
mod executor;
mod executor_fixtures;
mod fix_rounds;
mod gc;
mod git_starts;
mod help;
mod hostile_input;
mod init;
mod parallel_checkout;
mod park_early;
mod plan;
mod recycle;
mod recycle_starts;
mod retry;
mod run;
mod run_input;
mod scheduling_reads;
mod sparse;
mod sshd;
mod symbols;
mod timings;
mod trust_attacks;
mod validation_batch;
mod worker_attacks;
mod worktree;
mod worktree_overlap;
