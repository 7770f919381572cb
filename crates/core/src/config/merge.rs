//! The `[merge]` table, read by the merge coordinator (`merge`, `run --merge`, `start --merge`).

use serde::Deserialize;

/// The `[merge]` table: what the merge coordinator validates on a batch's merged tree.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeConfig {
    /// Run the validation commands of every packet integrated before a batch again on that
    /// batch's merged tree (default false: a batch's merged tree runs the commands of the
    /// packets in it, each distinct command once; an earlier packet's commands passed on the
    /// tree it landed in). True catches a later packet breaking an earlier one's commands at
    /// a cost that grows with the square of the packets.
    #[serde(default)]
    pub revalidate_integrated: Option<bool>,
}

impl MergeConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: MergeConfig) -> MergeConfig {
        MergeConfig {
            revalidate_integrated: self.revalidate_integrated.or(base.revalidate_integrated),
        }
    }

    /// Returns true if and only if earlier-integrated packets' commands run on every batch.
    pub fn revalidates_integrated(&self) -> bool {
        self.revalidate_integrated.unwrap_or(false)
    }
}
