//! The `[notify]` table: who hears that a run needs them or ended.

use serde::Deserialize;

/// The `[notify]` table: where to tell people that a run needs them or ended.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// An address that gets a JSON post (Slack- and Discord-compatible) when a packet waits for
    /// a person, a plan waits for approval, or a run ends.
    pub webhook: Option<String>,
}

impl NotifyConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: NotifyConfig) -> NotifyConfig {
        NotifyConfig {
            webhook: self.webhook.or(base.webhook),
        }
    }
}
