//! Adaptive concurrency: a provider that answers 429 above a concurrency cap makes the
//! profile's gate shrink for every caller sharing it, and the gate grows back once the
//! provider relents — with the real client over loopback HTTP.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use git_orchestra::llm::{
    self, ChatModel, ChatRequest, Gates, LimitCause, LimitChange, Limited, Message, Profile,
    Provider, RetryPolicy,
};

use crate::agent::llm::{KEY_VAR, export_key};
use crate::agent::mock::ThrottledServer;

type Changes = Arc<Mutex<Vec<(Instant, LimitChange)>>>;

fn gates(recover_after: usize) -> (Gates, Changes) {
    let changes: Changes = Arc::new(Mutex::new(Vec::new()));
    let log = changes.clone();
    let gates = Gates::with_listener(Arc::new(move |c: &LimitChange| {
        log.lock().unwrap().push((Instant::now(), c.clone()));
    }))
    .recover_after(recover_after);
    (gates, changes)
}

/// Runs `threads` callers making `calls` calls each through one profile gate of `capacity`
/// places against `url`; returns how many calls succeeded.
fn hammer(url: &str, gates: &Gates, capacity: usize, threads: usize, calls: usize) -> usize {
    export_key();
    let mut p = Profile::new("openai-main", Provider::OpenaiCompatible, "mock-model", url);
    p.api_key_env = Some(KEY_VAR.to_string());
    p.timeout = Duration::from_secs(5);
    let gate = gates.get("openai-main", capacity);
    let policy = RetryPolicy {
        max_retries: 200,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(1),
    };
    let stop = AtomicBool::new(false);
    let ok = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let model = Limited::new(llm::connect(&p).unwrap(), gate.clone());
                let models: [&dyn ChatModel; 1] = [&model];
                for _ in 0..calls {
                    let req = ChatRequest {
                        messages: vec![Message::user("hi")],
                        ..Default::default()
                    };
                    let r = llm::chat_with_retry(
                        &models,
                        &req,
                        &policy,
                        &stop,
                        &mut |_| true,
                        &mut |_| {},
                    );
                    if r.is_ok() {
                        ok.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
        }
    });
    ok.into_inner()
}

#[test]
fn rate_limits_halve_the_shared_concurrency_until_the_provider_stops_refusing() {
    const CAP: usize = 2;
    const DELAY: u64 = 60;
    let server = ThrottledServer::start(CAP, DELAY, usize::MAX);
    // No recovery in this test: it watches the decrease settle.
    let (gates, changes) = gates(1_000_000);
    let ok = hammer(&server.url, &gates, 8, 8, 5);
    assert_eq!(ok, 40, "every call completed despite the 429s");
    let changes = changes.lock().unwrap().clone();
    let texts: Vec<String> = changes.iter().map(|(_, c)| c.to_string()).collect();
    assert_eq!(
        texts.first().map(String::as_str),
        Some("openai-main: concurrency 8 → 4 after rate limit"),
        "{texts:?}"
    );
    assert!(
        changes
            .iter()
            .all(|(_, c)| c.cause == LimitCause::RateLimit),
        "{texts:?}"
    );
    let last = changes.last().unwrap();
    assert!(
        last.1.to <= CAP,
        "the limit settled at the provider's cap: {texts:?}"
    );
    assert_eq!(gates.get("openai-main", 8).limit(), last.1.to);
    // Once the calls admitted under the old limit drained, the provider never again saw more
    // than its cap in flight, and refused nothing.
    let settled = last.0 + Duration::from_millis(2 * DELAY);
    let arrivals = server.arrivals();
    let before = arrivals.iter().filter(|a| a.at <= last.0).count();
    let late: Vec<_> = arrivals.iter().filter(|a| a.at > settled).collect();
    assert!(
        late.len() >= 10,
        "enough calls after the decrease to judge it: {}",
        late.len()
    );
    let peak = late.iter().map(|a| a.in_flight).max().unwrap();
    assert!(peak <= CAP, "peak in flight after the 429s: {peak}");
    assert!(late.iter().all(|a| !a.refused));
    let refused = arrivals.iter().filter(|a| a.refused).count();
    assert!(refused > 0 && before > 0);
    let peak_before = arrivals
        .iter()
        .take(before)
        .map(|a| a.in_flight)
        .max()
        .unwrap();
    assert!(
        peak_before > CAP,
        "the first burst went over the cap: {peak_before}"
    );
}

#[test]
fn the_concurrency_grows_back_to_the_configured_limit_once_rate_limits_stop() {
    // The provider caps the first 30 requests at 1 in flight, then lets everything through.
    let server = ThrottledServer::start(1, 20, 30);
    let (gates, changes) = gates(1);
    let ok = hammer(&server.url, &gates, 6, 6, 20);
    assert_eq!(ok, 120);
    let changes = changes.lock().unwrap().clone();
    let texts: Vec<String> = changes.iter().map(|(_, c)| c.to_string()).collect();
    let lowest = changes.iter().map(|(_, c)| c.to).min().unwrap();
    assert!(lowest <= 2, "{texts:?}");
    assert_eq!(gates.get("openai-main", 6).limit(), 6, "{texts:?}");
    let last = &changes.last().unwrap().1;
    assert_eq!(
        (last.to, last.cause),
        (6, LimitCause::Recovery),
        "{texts:?}"
    );
    assert!(texts.contains(&"openai-main: concurrency 5 → 6 after successful calls".to_string()));
    // The recovered limit is used: late requests overlap again.
    let arrivals = server.arrivals();
    let peak_late = arrivals.iter().skip(90).map(|a| a.in_flight).max().unwrap();
    assert!(peak_late > 2, "late peak {peak_late}");
}
