//! Waiting for an answer without being stuck in it: the request runs on a thread of its own
//! while the caller's thread keeps the two clocks — time to first token, then the stall limit
//! once output began — and hands the caller a [`Delta::Waiting`] every tenth of a second, so
//! a cancelled call ends at once even while the server has not sent a single byte.
//!
//! A local server sends nothing until it has read the whole prompt, which takes minutes on a
//! small machine: that silence is not a stall, and it gets its own, generous limit scaled by
//! the prompt's size. A request whose first token does not come in time is not sent again —
//! the server may still be working on it, and a second request would pay for it twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::LlmError;
use super::profile::Profile;
use super::types::{ChatRequest, ChatResponse, Delta};

/// How often the waiting caller hears from the call.
pub const TICK: Duration = Duration::from_millis(100);

/// A piece of the answer, owned so it can cross threads.
enum Piece {
    Text(String),
    ToolCallStarted(String),
    ToolArguments(String),
    Done(Result<ChatResponse, LlmError>),
}

/// The work of one request: sends it and reads the answer, streaming pieces to its argument.
pub(super) type Work =
    Box<dyn FnOnce(&mut dyn FnMut(Delta<'_>) -> bool) -> Result<ChatResponse, LlmError> + Send>;

/// How a provider client sends one request and reads its answer on the calling thread.
pub(super) type Stream<C> =
    fn(&C, &ChatRequest, &mut dyn FnMut(Delta<'_>) -> bool) -> Result<ChatResponse, LlmError>;

/// Answers `req` the way every provider client does: `stream` runs on a thread of its own
/// ([`detached`]: the time-to-first-token and stall limits, the stop within a [`TICK`]), and
/// an unreachable server is waited for ([`super::outage::ride_out`]).
pub(super) fn call<C: Clone + Send + 'static>(
    client: &C,
    stream: Stream<C>,
    profile: &Profile,
    req: &ChatRequest,
    on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
) -> Result<ChatResponse, LlmError> {
    super::outage::ride_out(profile, on_delta, &mut |on_delta| {
        let client = client.clone();
        let owned = req.clone();
        let work: Work = Box::new(move |sink| stream(&client, &owned, sink));
        detached(profile, req, work, on_delta)
    })
}

/// Returns the rough number of tokens of `req`'s prompt (four characters a token).
pub fn prompt_tokens(req: &ChatRequest) -> u64 {
    let chars: usize = req.messages.iter().map(|m| m.text_len()).sum::<usize>()
        + req
            .tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum::<usize>();
    (chars / 4) as u64
}

/// Returns the longest the transport itself waits for a byte of an answer to a prompt of
/// `tokens`: beyond both limits, so that a call the caller gave up on does not keep its
/// thread forever.
pub(super) fn backstop(profile: &Profile, tokens: u64) -> Duration {
    profile.first_token_limit(tokens).max(profile.timeout) + Duration::from_secs(60)
}

/// Runs `work` (the request of `req` under `profile`) on its own thread and forwards its
/// pieces to `on_delta`, which also gets a [`Delta::Waiting`] every [`TICK`] while nothing
/// arrives; `on_delta` returning false ends the call at once with [`LlmError::Cancelled`].
pub(super) fn detached(
    profile: &Profile,
    req: &ChatRequest,
    work: Work,
    on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
) -> Result<ChatResponse, LlmError> {
    let model = profile.label();
    let tokens = prompt_tokens(req);
    let first_token = profile.first_token_limit(tokens);
    let abort = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let spawned = {
        let abort = abort.clone();
        std::thread::Builder::new()
            .name("model-call".into())
            .spawn(move || {
                let result = work(&mut |d| {
                    let piece = match d {
                        Delta::Text(t) => Piece::Text(t.to_string()),
                        Delta::ToolCallStarted { name } => Piece::ToolCallStarted(name.into()),
                        Delta::ToolArguments(a) => Piece::ToolArguments(a.to_string()),
                        _ => return !abort.load(Ordering::SeqCst),
                    };
                    tx.send(piece).is_ok() && !abort.load(Ordering::SeqCst)
                });
                let _ = tx.send(Piece::Done(result));
            })
    };
    if let Err(e) = spawned {
        return Err(LlmError::Protocol {
            model,
            message: format!("cannot start the model call's thread: {e}"),
        });
    }
    // The thread ends on its own once its read returns; a caller that gave up does not wait.
    let give_up = |e: LlmError| {
        abort.store(true, Ordering::SeqCst);
        Err(e)
    };
    let started = Instant::now();
    let mut last_output: Option<Instant> = None;
    loop {
        let piece = match rx.recv_timeout(TICK) {
            Ok(p) => p,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return give_up(LlmError::Protocol {
                    model,
                    message: "the model call ended without an answer".into(),
                });
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !on_delta(Delta::Waiting) {
                    return give_up(LlmError::Cancelled { model });
                }
                match last_output {
                    None if started.elapsed() >= first_token => {
                        return give_up(LlmError::FirstTokenTimeout {
                            model,
                            limit: first_token,
                            prompt_tokens: tokens,
                        });
                    }
                    Some(at) if at.elapsed() >= profile.timeout => {
                        return give_up(LlmError::Timeout {
                            model,
                            timeout: profile.timeout,
                        });
                    }
                    _ => continue,
                }
            }
        };
        let go_on = match &piece {
            Piece::Done(_) => true,
            Piece::Text(t) => on_delta(Delta::Text(t)),
            Piece::ToolCallStarted(n) => on_delta(Delta::ToolCallStarted { name: n }),
            Piece::ToolArguments(a) => on_delta(Delta::ToolArguments(a)),
        };
        if let Piece::Done(result) = piece {
            return result;
        }
        last_output = Some(Instant::now());
        if !go_on {
            return give_up(LlmError::Cancelled { model });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::llm::{ChatModel, Message, OpenAiClient, Provider};

    /// Reads one request from `s` (headers and a `content-length` body).
    fn read_request(s: &TcpStream) {
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut len = 0;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        let _ = r.read_exact(&mut body);
    }

    /// Serves `listener`: each request gets nothing for `silence`, then a one-word answer. Returns the count of requests received.
    fn serve(listener: TcpListener, silence: Duration) -> Arc<AtomicUsize> {
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    read_request(&s);
                    seen.fetch_add(1, Ordering::SeqCst);
                    // Like a local server reading the prompt: not a byte, headers included.
                    std::thread::sleep(silence);
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
                    let _ = s.write_all(b"data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hello\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
                });
            }
        });
        count
    }

    fn client(port: u16, configure: impl FnOnce(&mut Profile)) -> OpenAiClient {
        let mut p = Profile::new(
            "t",
            Provider::OpenaiCompatible,
            "m",
            &format!("http://127.0.0.1:{port}/v1"),
        );
        configure(&mut p);
        OpenAiClient::new(p, None)
    }

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![Message::user("hi")],
            ..Default::default()
        }
    }

    #[test]
    fn a_silent_call_is_cancelled_within_a_second_of_the_stop() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        serve(listener, Duration::from_secs(30));
        let model = client(port, |_| {});
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::SeqCst);
            });
            let started = Instant::now();
            let result = model.chat(&request(), &mut |_| !stop.load(Ordering::SeqCst));
            assert!(
                matches!(result, Err(LlmError::Cancelled { .. })),
                "{result:?}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
        });
    }

    #[test]
    fn silence_before_the_first_token_is_not_a_stall_and_is_not_sent_twice() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = serve(listener, Duration::from_millis(2500));
        // The stall limit is shorter than the silence; the time to first token is not.
        let model = client(port, |p| {
            p.timeout = Duration::from_secs(1);
            p.first_token_timeout = Duration::from_secs(10);
        });
        let resp = crate::llm::chat_with_retry(
            &[&model],
            &request(),
            &crate::llm::RetryPolicy::default(),
            &AtomicBool::new(false),
            &mut |_| true,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(resp.0.text, "hello");
        assert_eq!(requests.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn no_first_token_in_time_names_that_limit_and_asks_only_once() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = serve(listener, Duration::from_secs(30));
        let model = client(port, |p| {
            p.first_token_timeout = Duration::from_secs(1);
            p.first_token_per_1k = Duration::ZERO;
        });
        let started = Instant::now();
        let err = crate::llm::chat_with_retry(
            &[&model],
            &request(),
            &crate::llm::RetryPolicy::default(),
            &AtomicBool::new(false),
            &mut |_| true,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(
            err.to_string().contains("no first token within 1s"),
            "{err}"
        );
        assert!(
            err.to_string().contains("first_token_timeout_secs"),
            "{err}"
        );
        assert_eq!(requests.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_server_down_for_a_while_is_waited_for_and_said_to_be_unreachable() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2500));
            serve(
                TcpListener::bind(("127.0.0.1", port)).unwrap(),
                Duration::ZERO,
            );
        });
        let model = client(port, |p| p.outage_retry = Duration::from_secs(60));
        let mut told = Vec::new();
        let resp = model
            .chat(&request(), &mut |d| {
                if let Delta::Unreachable { retry_in } = d {
                    told.push(retry_in.as_secs());
                }
                true
            })
            .unwrap();
        assert_eq!(resp.text, "hello");
        assert_eq!(told[..2], [1, 2], "{told:?}");
    }
}
