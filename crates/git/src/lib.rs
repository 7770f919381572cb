//! git-orchestra's typed git layer: every git operation the product performs, behind one runner.

pub mod git;
