//! The seam through which a frontend starts a process that drives a run on its own.
//!
//! Driving a run takes the worker, reviewer and executor the binary assembles from the
//! configuration, and must outlive a web view that asked for it. So the library decides
//! whether an action applies and journals it; the frontend says how a driver starts (the CLI
//! drives in its own process, the web view starts a detached `git orchestra resume`).

/// What a launched driver does with the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Continues the run from where it stopped.
    Resume,
    /// Works the run's failed or skipped packets again, then goes on as it was started.
    Retry,
}

impl Verb {
    /// Returns the command that does it, e.g. "resume".
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Resume => "resume",
            Verb::Retry => "retry",
        }
    }
}

/// What a launch started, in words for the person who asked.
#[derive(Debug, Clone)]
pub struct Launched {
    pub message: String,
}

/// Starts a process that drives a run on its own.
pub trait Launch: Send + Sync {
    /// Starts a driver doing `verb` to `run`; the error says why none could start.
    fn launch(&self, run: &str, verb: Verb) -> Result<Launched, String>;
}
