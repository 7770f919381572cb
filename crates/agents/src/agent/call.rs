//! One model call under watch: the call runs on its own thread while the agent's thread
//! watches for progress, so a model that goes silent is noticed within a second of the
//! role's stall timeout — even while the transport is still blocked waiting for bytes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use orchestra_core::llm::{
    self, ChatModel, ChatRequest, ChatResponse, LlmError, RetryEvent, RetryPolicy,
};

/// How often the watching thread looks at the clock and the stop flag.
const TICK: Duration = Duration::from_millis(100);

/// What the watched call needs.
pub(super) struct Watched<'a> {
    pub models: &'a [&'a dyn ChatModel],
    pub req: &'a ChatRequest,
    pub policy: &'a RetryPolicy,
    /// The run's stop flag (cancellation).
    pub stop: &'a AtomicBool,
    /// The role's wall-clock deadline.
    pub deadline: Instant,
    /// Longest time without a streamed piece, once the model's output began, before the
    /// call is stalled.
    pub stall: Duration,
}

/// What the watching thread tells its caller while the call runs.
pub(super) enum Watch {
    /// Nothing arrived for this long after the model's output began: the call is stopped.
    Stalled(Duration),
    /// The model server could not be reached; the call tries again after `retry_in`.
    Unreachable { retry_in: Duration },
}

/// How a watched call ended.
pub(super) struct CallEnd {
    pub result: Result<(ChatResponse, usize), LlmError>,
    pub retries: Vec<RetryEvent>,
    /// Set when the stall timeout fired: how long nothing arrived.
    pub stalled: Option<Duration>,
}

/// Runs the call; `on_watch` hears (on the calling thread) each time the server was found
/// unreachable, and a stall as soon as it is detected, before the call itself has unwound, so
/// both are reported at once.
pub(super) fn watched(w: &Watched<'_>, on_watch: &mut dyn FnMut(Watch)) -> CallEnd {
    let started = Instant::now();
    // Milliseconds since `started` of the model's last output in the current attempt, plus
    // one; 0 while its output has not begun. Silence before the first token is not a stall:
    // the client's time-to-first-token limit (scaled by the prompt) governs it.
    let last = AtomicU64::new(0);
    // The wait before the next try, in milliseconds plus one, once the server was found
    // unreachable; 0 when there is nothing new to tell.
    let unreachable = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let mut stalled = None;
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let (last, abort, unreachable) = (&last, &abort, &unreachable);
        s.spawn(move || {
            let mut retries = Vec::new();
            let result = llm::chat_with_retry(
                w.models,
                w.req,
                w.policy,
                abort,
                &mut |d| {
                    if d.is_output() {
                        last.store(started.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
                    }
                    if let llm::Delta::Unreachable { retry_in } = d {
                        unreachable.store(retry_in.as_millis() as u64 + 1, Ordering::SeqCst);
                    }
                    !abort.load(Ordering::SeqCst)
                },
                &mut |e| {
                    // A new attempt waits for its own first token.
                    last.store(0, Ordering::SeqCst);
                    retries.push(e.clone());
                },
            );
            let _ = tx.send((result, retries));
        });
        loop {
            match rx.recv_timeout(TICK) {
                Ok((result, retries)) => {
                    return CallEnd {
                        result,
                        retries,
                        stalled,
                    };
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return CallEnd {
                        result: Err(LlmError::Protocol {
                            model: String::new(),
                            message: "the model call ended without an answer".into(),
                        }),
                        retries: Vec::new(),
                        stalled,
                    };
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if abort.load(Ordering::SeqCst) {
                continue;
            }
            match unreachable.swap(0, Ordering::SeqCst) {
                0 => {}
                ms => on_watch(Watch::Unreachable {
                    retry_in: Duration::from_millis(ms - 1),
                }),
            }
            let output = last.load(Ordering::SeqCst);
            let quiet = match output {
                0 => Duration::ZERO,
                at => started
                    .elapsed()
                    .saturating_sub(Duration::from_millis(at - 1)),
            };
            if w.stop.load(Ordering::SeqCst) || Instant::now() >= w.deadline {
                abort.store(true, Ordering::SeqCst);
            } else if quiet >= w.stall {
                abort.store(true, Ordering::SeqCst);
                stalled = Some(quiet);
                on_watch(Watch::Stalled(quiet));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::{Delta, Message, StopReason, Usage};

    /// A model that thinks for `silence` before its first token, like a local server reading
    /// a long prompt, then answers at once.
    struct SlowStart(Duration);

    impl ChatModel for SlowStart {
        fn chat(
            &self,
            _: &ChatRequest,
            on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
        ) -> Result<ChatResponse, LlmError> {
            std::thread::sleep(self.0);
            on_delta(Delta::Text("done"));
            Ok(ChatResponse {
                text: "done".into(),
                tool_calls: Vec::new(),
                stop: StopReason::End,
                usage: Usage::default(),
                model: "m".into(),
            })
        }

        fn label(&self) -> String {
            "test:m".into()
        }
    }

    #[test]
    fn silence_before_the_first_token_is_not_a_stall() {
        let model = SlowStart(Duration::from_millis(1500));
        let req = ChatRequest {
            messages: vec![Message::user("hi")],
            ..Default::default()
        };
        let stop = AtomicBool::new(false);
        let end = watched(
            &Watched {
                models: &[&model],
                req: &req,
                policy: &RetryPolicy::default(),
                stop: &stop,
                deadline: Instant::now() + Duration::from_secs(60),
                stall: Duration::from_millis(500),
            },
            &mut |_| {},
        );
        assert_eq!(end.stalled, None);
        assert_eq!(end.result.unwrap().0.text, "done");
    }
}
