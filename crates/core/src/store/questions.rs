//! Questions our agents ask a person in runs the engine drives (`run`, `agent`, `resume`),
//! read back from the journal: the one a packet waits on, and the answer a question got.
//!
//! An answer belongs to the latest question its packet asked before it; a packet asks one
//! question at a time, so a later question starts a new wait.

use super::{Event, JournalEntry, Store, StoreError};

impl Store {
    /// Returns the question `packet`'s agent in `run` waits on: its latest question, when no
    /// answer came after it.
    pub fn open_question(&self, run: &str, packet: &str) -> Result<Option<String>, StoreError> {
        Ok(open_question(&self.questions(run)?, packet))
    }

    /// Returns the answer `packet`'s agent in `run` got to `question` the last time it asked
    /// it, if it was answered: a resumed agent asking again is answered at once.
    pub fn answer_to(
        &self,
        run: &str,
        packet: &str,
        question: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(answer_to(&self.questions(run)?, packet, question))
    }

    /// Returns the packets of `run` waiting on a question, with the question, in the order
    /// they asked.
    pub fn open_questions(&self, run: &str) -> Result<Vec<(String, String)>, StoreError> {
        let entries = self.questions(run)?;
        let mut packets: Vec<&str> = Vec::new();
        for e in &entries {
            if let Event::QuestionAsked { packet, .. } = &e.event
                && !packets.contains(&packet.as_str())
            {
                packets.push(packet);
            }
        }
        Ok(packets
            .into_iter()
            .filter_map(|p| open_question(&entries, p).map(|q| (p.to_string(), q)))
            .collect())
    }

    /// Returns the run's questions and answers, oldest first.
    fn questions(&self, run: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let mut all = self.events_of_kind(run, super::EventKind::QuestionAsked)?;
        all.extend(self.events_of_kind(run, super::EventKind::QuestionAnswered)?);
        all.sort_by_key(|e| e.seq);
        Ok(all)
    }
}

/// Returns each question `packet` asked in `entries` with the answer it got, if any.
fn asked(entries: &[JournalEntry], packet: &str) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for e in entries {
        match &e.event {
            Event::QuestionAsked {
                packet: p,
                question,
            } if p == packet => out.push((question.clone(), None)),
            Event::QuestionAnswered { packet: p, text } if p == packet => {
                if let Some((_, answer @ None)) = out.last_mut() {
                    *answer = Some(text.clone());
                }
            }
            _ => {}
        }
    }
    out
}

fn open_question(entries: &[JournalEntry], packet: &str) -> Option<String> {
    match asked(entries, packet).pop() {
        Some((question, None)) => Some(question),
        _ => None,
    }
}

fn answer_to(entries: &[JournalEntry], packet: &str, question: &str) -> Option<String> {
    asked(entries, packet)
        .into_iter()
        .rev()
        .find(|(q, a)| q == question && a.is_some())
        .and_then(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: i64, event: Event) -> JournalEntry {
        JournalEntry {
            seq,
            ts_ms: 0,
            event,
        }
    }

    fn ask(seq: i64, packet: &str, question: &str) -> JournalEntry {
        entry(
            seq,
            Event::QuestionAsked {
                packet: packet.into(),
                question: question.into(),
            },
        )
    }

    fn answer(seq: i64, packet: &str, text: &str) -> JournalEntry {
        entry(
            seq,
            Event::QuestionAnswered {
                packet: packet.into(),
                text: text.into(),
            },
        )
    }

    #[test]
    fn an_answer_belongs_to_the_latest_question_of_its_packet() {
        let log = vec![
            ask(1, "a", "Which limiter?"),
            ask(2, "b", "Which port?"),
            answer(3, "a", "the bucket"),
            ask(4, "a", "Which file?"),
        ];
        assert_eq!(open_question(&log, "a").as_deref(), Some("Which file?"));
        assert_eq!(open_question(&log, "b").as_deref(), Some("Which port?"));
        assert_eq!(open_question(&log, "c"), None);
        assert_eq!(
            answer_to(&log, "a", "Which limiter?").as_deref(),
            Some("the bucket")
        );
        assert_eq!(answer_to(&log, "a", "Which file?"), None);
        assert_eq!(answer_to(&log, "b", "Which limiter?"), None);
        // A second answer to one question does not answer the next one.
        let log = vec![
            ask(1, "a", "Q"),
            answer(2, "a", "first"),
            answer(3, "a", "second"),
            ask(4, "a", "R"),
        ];
        assert_eq!(open_question(&log, "a").as_deref(), Some("R"));
        assert_eq!(answer_to(&log, "a", "Q").as_deref(), Some("first"));
    }
}
