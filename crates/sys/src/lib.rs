//! The system leaf of git-orchestra: confined file access, processes and their environment, the
//! names of refs and branches, and secret redaction.

pub mod confine;
pub mod exec;
pub mod names;
pub mod redact;
