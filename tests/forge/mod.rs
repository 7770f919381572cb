//! Integration tests of publishing to a forge: stacked pull requests from `run --pr` and
//! `git orchestra pr` against a fake GitHub, Gitea or GitLab on a loopback port, with real
//! pushes to a local bare remote.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub(crate) mod forge_mock;
mod gitea_landing;
mod gitlab_landing;
mod land;
mod land_act;
mod land_agent;
mod land_auto_merge;
mod land_conflict;
mod land_fix;
mod land_fixtures;
mod land_local_model;
mod land_regate;
mod land_restack;
mod land_start;
pub(crate) mod land_view;
mod landing_api;
pub(crate) mod pull_requests;
mod webhook;
