//! Integration tests of the web view (`git orchestra ui`, `start --ui`): its access rules over
//! plain HTTP, and a real headless Chromium driven over WebDriver against a scripted `start`
//! run — live packet states, plan approval, comments on a diff that reach the agent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod browser;
mod notify;
mod steering;
#[path = "../support/mod.rs"]
mod support;
mod view;
mod webdriver;
