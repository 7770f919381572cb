//! A person answering our agents' questions in runs the engine drives (`run`, `agent`,
//! `resume`): the `ask` tool journals the question in the run store and waits until the answer
//! is typed at the terminal or given with `git orchestra answer` from another shell, as a
//! `start` run's agents do through its workflow journal.
//!
//! The library does no terminal I/O: the CLI implements [`Person`], which shows the question
//! and hands over what was typed; this module journals both and watches the store.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::runner::{Host, Reply};
use orchestra_core::store::{Event, Store};

/// How long one look at the terminal lasts between looks at the run store.
pub const ANSWER_POLL: Duration = Duration::from_millis(200);

/// The person at the terminal, as the front end sees them.
pub trait Person: Send + Sync {
    /// Shows `packet`'s `question` to the person, if one is at a terminal.
    fn show(&self, packet: &str, question: &str);

    /// Returns the answer the person typed for `packet`'s question, waiting at most `wait`;
    /// `None` when nothing was typed (or nobody is at a terminal).
    fn typed(&self, packet: &str, wait: Duration) -> Option<String>;
}

/// The `ask` tool's host for one packet: questions go to the person, never to other roles.
pub(super) struct AskPerson<'a> {
    pub person: &'a dyn Person,
    pub common_dir: &'a Path,
    pub run: &'a str,
    pub packet: &'a str,
    pub stop: &'a AtomicBool,
    /// The engine's journal for the packet's events.
    pub journal: &'a (dyn Fn(Event) + Sync),
}

impl AskPerson<'_> {
    /// Waits for the answer to `question`, journaled already: from `git orchestra answer`
    /// (read from the store) or typed at the terminal (journaled here). `None` when the run
    /// stops first.
    fn wait(&self, question: &str) -> Option<String> {
        self.person.show(self.packet, question);
        let store = Store::open(self.common_dir).ok()?;
        while !self.stop.load(Ordering::SeqCst) {
            if store.open_question(self.run, self.packet).ok()?.is_none() {
                return store.answer_to(self.run, self.packet, question).ok()?;
            }
            if let Some(text) = self.person.typed(self.packet, ANSWER_POLL) {
                (self.journal)(Event::QuestionAnswered {
                    packet: self.packet.to_string(),
                    text: text.clone(),
                });
                return Some(text);
            }
        }
        None
    }
}

impl Host for AskPerson<'_> {
    fn answer(&self, question: &str, to: Option<&str>) -> Reply {
        if let Some(role) = to.filter(|r| *r != "human") {
            return Reply::Refused(format!(
                "no role is consulted in this run, only the person running it: ask again without `to` (not `{role}`), or decide yourself"
            ));
        }
        // A question asked before (by this agent before a restart) keeps its answer.
        if let Ok(Some(answer)) =
            Store::open(self.common_dir).and_then(|s| s.answer_to(self.run, self.packet, question))
        {
            return Reply::Answer(answer);
        }
        (self.journal)(Event::QuestionAsked {
            packet: self.packet.to_string(),
            question: question.to_string(),
        });
        self.wait(question).map_or(Reply::Pending, Reply::Answer)
    }
}
