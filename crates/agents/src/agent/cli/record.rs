//! Where an agent CLI's activity goes: each event into the run's journal, as the run store
//! keeps it, and as a JSON line into an activity transcript beside the CLI's own output, both
//! scrubbed of the API keys the CLI was given.
//!
//! The CLI's output is its own format (Claude Code's stream-json, Codex's events, plain text);
//! the transcript holds the same kinds of lines as our agents' transcripts, so the web view's
//! packet page shows a CLI's tool calls, tokens and notes as it shows our agents', reading the
//! transcript instead of the output it came from.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::agent::AgentEvent;
use orchestra_core::engine::WorkerJob;
use orchestra_core::llm::ApiKey;
use orchestra_core::store::Event;

/// Returns the activity transcript of the CLI run whose output goes to `log`.
pub fn transcript_of(log: &Path) -> PathBuf {
    log.with_extension("activity.log")
}

/// Records the events of one CLI run on one packet.
pub struct Recorder<'a> {
    packet: &'a str,
    role: String,
    keys: Vec<ApiKey>,
    journal: &'a (dyn Fn(Event) + Sync),
    transcript: Option<Mutex<fs_err::File>>,
}

impl<'a> Recorder<'a> {
    /// Returns the recorder of CLI `cli` working `job`, appending to the transcript of its log
    /// (none when it cannot be opened: the journal still gets every event).
    pub fn new(job: &'a WorkerJob<'_>, cli: &str) -> Recorder<'a> {
        let transcript = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(transcript_of(job.log))
            .ok()
            .map(Mutex::new);
        Recorder {
            packet: &job.packet.id,
            role: format!("{}/{cli}", job.packet.role),
            keys: super::secrets(),
            journal: job.journal,
            transcript,
        }
    }

    /// Journals `event` and appends it to the transcript.
    pub fn emit(&self, event: AgentEvent) {
        if let Some(t) = &self.transcript
            && let Ok(line) = serde_json::to_string(&event)
            && let Ok(mut file) = t.lock()
        {
            let _ = writeln!(file, "{}", ApiKey::scrub_all(&self.keys, &line));
        }
        if let Some(stored) =
            crate::agent::activity::store_event(self.packet, &self.role, &self.keys, &event)
        {
            (self.journal)(stored);
        }
    }
}
