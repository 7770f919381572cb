//! A chat model wrapper that journals every finished turn and replays it when the same request
//! comes again, so a resumed run never pays twice for a turn it already finished.
//!
//! Requests are keyed by a hash of the role, the model and the whole conversation: a resumed
//! agent that sees the same files asks the same questions and gets the journaled answers; one
//! whose world changed asks something new and reaches the model.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use sha2::{Digest, Sha256};

use super::start_journal::{StartJournal, TurnRecord, WorkflowEvent};
use orchestra_core::llm::{
    ChatModel, ChatRequest, ChatResponse, Delta, LlmError, StopReason, ToolCall,
};

/// The journal shared by every model wrapper of a run.
pub type SharedJournal = Arc<Mutex<StartJournal>>;

/// A model whose finished turns are journaled under `role`.
pub struct Replaying<'a> {
    inner: &'a dyn ChatModel,
    journal: SharedJournal,
    role: String,
    guard: Option<&'a (dyn Fn() -> Option<String> + Sync)>,
    /// How many times the run failed before this wrapper was made: turns journaled before a
    /// failure are not replayed to a retry (see [`request_key`]).
    epoch: u64,
}

impl<'a> Replaying<'a> {
    /// Wraps `inner`, journaling its turns as `role`'s.
    pub fn new(inner: &'a dyn ChatModel, journal: SharedJournal, role: &str) -> Replaying<'a> {
        let epoch = journal
            .lock()
            .ok()
            .and_then(|j| j.failures().ok())
            .unwrap_or(0);
        Replaying {
            inner,
            journal,
            role: role.to_string(),
            guard: None,
            epoch,
        }
    }

    /// Refuses new (not replayed) calls while `guard` returns a reason, e.g. a spent budget.
    pub fn with_guard(mut self, guard: &'a (dyn Fn() -> Option<String> + Sync)) -> Replaying<'a> {
        self.guard = Some(guard);
        self
    }
}

impl Replaying<'_> {
    /// Journals that model call `call`, sent at `started`, ended with `outcome`.
    fn ended(&self, call: &str, started: Instant, outcome: String) {
        super::calls::journal(
            &self.journal,
            &WorkflowEvent::ModelCallEnded {
                call: call.to_string(),
                role: self.role.clone(),
                ms: started.elapsed().as_millis() as u64,
                outcome,
            },
        );
    }
}

/// Returns the journal key of a request: a hash of role, model label, messages and tool names,
/// and of the replay epoch once the run has failed.
///
/// A resumed run (killed, paused, out of budget) replays its finished turns; a run that failed
/// and is started again is in a new epoch, so the turns that led to the failure are asked
/// again — a retry that replayed them would fail the same way without asking anyone.
pub fn request_key(role: &str, model: &str, req: &ChatRequest, epoch: u64) -> String {
    let mut h = Sha256::new();
    if epoch > 0 {
        h.update(b"epoch");
        h.update(epoch.to_le_bytes());
    }
    h.update(role.as_bytes());
    h.update([0]);
    h.update(model.as_bytes());
    h.update([0]);
    h.update(
        serde_json::to_string(&req.messages)
            .unwrap_or_default()
            .as_bytes(),
    );
    for t in &req.tools {
        h.update([0]);
        h.update(t.name.as_bytes());
    }
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn to_json(r: &ChatResponse) -> serde_json::Value {
    json!({"text": r.text, "tool_calls": r.tool_calls, "stop": r.stop, "model": r.model})
}

fn from_record(t: &TurnRecord) -> Option<ChatResponse> {
    let v = &t.response;
    Some(ChatResponse {
        text: v.get("text")?.as_str()?.to_string(),
        tool_calls: serde_json::from_value::<Vec<ToolCall>>(v.get("tool_calls")?.clone()).ok()?,
        stop: serde_json::from_value::<StopReason>(v.get("stop")?.clone()).ok()?,
        usage: t.usage,
        model: v.get("model")?.as_str()?.to_string(),
    })
}

impl ChatModel for Replaying<'_> {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let label = self.inner.label();
        let key = request_key(&self.role, &label, req, self.epoch);
        let recorded = self
            .journal
            .lock()
            .ok()
            .and_then(|j| j.turn(&key).ok().flatten());
        if let Some(resp) = recorded.as_ref().and_then(from_record) {
            return Ok(resp);
        }
        if let Some(reason) = self.guard.and_then(|g| g()) {
            return Err(LlmError::Protocol {
                model: label,
                message: reason,
            });
        }
        let started = Instant::now();
        let call = super::calls::next_id();
        super::calls::journal(
            &self.journal,
            &WorkflowEvent::ModelCallStarted {
                call: call.clone(),
                role: self.role.clone(),
                model: label.clone(),
                prompt_tokens: orchestra_core::llm::wait::prompt_tokens(req),
            },
        );
        let result = self.inner.chat(req, &mut |d| {
            if let Delta::Unreachable { retry_in } = d {
                super::calls::journal(
                    &self.journal,
                    &WorkflowEvent::ModelUnreachable {
                        call: call.clone(),
                        role: self.role.clone(),
                        model: label.clone(),
                        retry_in_secs: retry_in.as_secs(),
                    },
                );
            }
            on_delta(d)
        });
        let resp = match result {
            Ok(resp) => resp,
            Err(e) => {
                self.ended(&call, started, e.to_string());
                return Err(e);
            }
        };
        let record = TurnRecord {
            role: self.role.clone(),
            model: label,
            usage: resp.usage,
            ms: started.elapsed().as_millis() as u64,
            response: to_json(&resp),
        };
        // A journal that cannot be written costs a replay on resume, not the answer.
        if let Ok(j) = self.journal.lock()
            && let Err(e) = j.record_turn(&key, &record)
        {
            tracing::warn!(error = %e, "model turn not journaled");
        }
        self.ended(&call, started, "answered".to_string());
        Ok(resp)
    }

    fn label(&self) -> String {
        self.inner.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::{Message, Usage};
    use std::sync::atomic::{AtomicU32, Ordering};

    struct Counting(AtomicU32);

    impl ChatModel for Counting {
        fn chat(
            &self,
            req: &ChatRequest,
            _: &mut dyn FnMut(Delta<'_>) -> bool,
        ) -> Result<ChatResponse, LlmError> {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            Ok(ChatResponse {
                text: format!("answer {n} to {}", req.messages.len()),
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "complete".into(),
                    arguments: "{}".into(),
                }],
                stop: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 7,
                    output_tokens: 3,
                },
                model: "m".into(),
            })
        }

        fn label(&self) -> String {
            "test:m".into()
        }
    }

    #[test]
    fn a_finished_turn_is_replayed_not_redone() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Arc::new(Mutex::new(StartJournal::open(dir.path(), "r").unwrap()));
        let model = Counting(AtomicU32::new(0));
        let wrapped = Replaying::new(&model, journal.clone(), "coder");
        let req = ChatRequest {
            messages: vec![Message::user("hi")],
            ..Default::default()
        };
        let first = wrapped.chat(&req, &mut |_| true).unwrap();
        let again = wrapped.chat(&req, &mut |_| true).unwrap();
        assert_eq!(first, again);
        assert_eq!(model.0.load(Ordering::SeqCst), 1);
        let other = ChatRequest {
            messages: vec![Message::user("hi"), Message::user("more")],
            ..Default::default()
        };
        wrapped.chat(&other, &mut |_| true).unwrap();
        assert_eq!(model.0.load(Ordering::SeqCst), 2);
        // Another role asking the same thing is a different turn.
        Replaying::new(&model, journal, "reviewer")
            .chat(&req, &mut |_| true)
            .unwrap();
        assert_eq!(model.0.load(Ordering::SeqCst), 3);
    }
}
