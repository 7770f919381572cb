//! The settings kept with a run beside its `runs` row: the agent CLI (`--agent`) and the
//! executor (`--executor`) it was made with, as one record, so a resume does not depend on
//! the configuration of the day it resumes.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};

/// What a run keeps of how it was started, beyond its `runs` row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptSettings {
    /// The agent CLI working every packet (`--agent <name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_cli: Option<String>,
    /// Where the packets run (`--executor`), by its configured name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
}

impl Store {
    /// Returns the settings kept with `run`, `None` when it kept none.
    pub fn kept_settings(&self, run: &str) -> Result<Option<KeptSettings>, StoreError> {
        let payload: Option<String> = self
            .conn
            .query_row(
                "SELECT payload FROM run_settings WHERE run_id = ?1",
                params![run],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        payload
            .map(|p| {
                serde_json::from_str(&p).map_err(|e| StoreError::Corrupt {
                    path: self.path().to_path_buf(),
                    what: format!("the settings of run {run}: {e}"),
                })
            })
            .transpose()
    }

    /// Keeps `settings` with `run`, replacing what it kept before.
    pub fn keep_settings(&self, run: &str, settings: &KeptSettings) -> Result<(), StoreError> {
        let payload = serde_json::to_string(settings).map_err(|e| StoreError::Corrupt {
            path: self.path().to_path_buf(),
            what: format!("the settings of run {run}: {e}"),
        })?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO run_settings (run_id, payload) VALUES (?1, ?2)",
                params![run, payload],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_kept_per_run_and_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.kept_settings("r1").unwrap(), None);
        let s = KeptSettings {
            agent_cli: Some("claude".into()),
            executor: Some("ssh".into()),
        };
        store.keep_settings("r1", &s).unwrap();
        assert_eq!(store.kept_settings("r1").unwrap(), Some(s));
        store.keep_settings("r1", &KeptSettings::default()).unwrap();
        assert_eq!(
            store.kept_settings("r1").unwrap(),
            Some(KeptSettings::default())
        );
        assert_eq!(store.kept_settings("r2").unwrap(), None);
    }
}
