//! Integration tests of the `start` workflow: `git orchestra start` and `demo` end to end
//! against the scripted model, kill -9 and resume at many points, refusals of bad input, and
//! agents that spawn subtasks, consult other roles or hit a provider's rate limits; what the
//! report and the errors tell the user. `environments` walks the same journey users take in a
//! bare environment and a configured one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod answer;
mod best_of_auto;
mod best_of_start_arms;
mod best_of_start_tester;
mod environments;
mod eval_arms;
mod eval_arms_e2e;
mod eval_attempt;
mod eval_classes;
pub(crate) mod eval_fixtures;
mod eval_gave_up;
mod eval_limits;
mod eval_measures;
mod eval_per_test;
mod eval_report;
mod eval_resume;
mod eval_run;
mod eval_run_suite;
mod eval_setup;
mod eval_suite;
mod eval_tasks;
mod failure_reason;
mod forecast;
use crate::forge::forge_mock;
mod messages;
mod review_reads;
mod routing;
mod run_listing;
mod slow_model;
mod soft_budget;
mod start;
mod start_agents;
mod start_interrupt;
mod start_park;
