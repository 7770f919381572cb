//! Integration tests of integration: `git orchestra merge` and `run --merge` on real temporary
//! repositories — in-memory merges, validation of the merged tree, conflicts, bisection of
//! failing batches, and `--predict`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator;
pub(crate) mod crash;
mod honest;
mod packet_diff;
mod scale;
mod scratch;
