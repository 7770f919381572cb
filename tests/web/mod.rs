//! Integration tests of the web view (`git orchestra ui`, `start --ui`): its access rules and
//! limits over plain HTTP, and a real headless Chromium driven over WebDriver against a
//! scripted `start` run — live packet states, plan approval, comments on a diff that reach the
//! agent — and against a hostile worker's output (shown as text, without keys).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod agent_cli;
mod best_of;
mod browser;
mod controls;
mod eval_page;
mod failure;
mod landing;
mod notify;
mod packet_diff;
mod packet_page;
mod run_list;
mod spend;
mod steering;
pub(crate) mod view;
mod webdriver;
