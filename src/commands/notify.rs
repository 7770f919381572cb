//! `[notify] webhook = "…"`: a JSON post when a packet's agent waits for a person, a plan waits
//! for approval, or a run ends. The body carries `text` (Slack) and `content` (Discord) beside
//! the event's fields, so one address of either works as it is.
//!
//! A watcher thread reads the run's status through the same query as `status` twice a second
//! and posts each thing once; `finish` looks a last time before the command returns, so a run
//! that ends (or stops to wait for approval) is always told.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use git_orchestra::config::RepoConfig;
use git_orchestra::orchestrator::WorkflowState;
use git_orchestra::status::{self, Overview};
use serde_json::{Value, json};

/// How often the watcher looks.
const TICK: Duration = Duration::from_millis(500);

/// A running watcher; `finish` stops it after a last look.
pub struct Notifier {
    inner: Arc<Inner>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Inner {
    url: String,
    common_dir: PathBuf,
    config: RepoConfig,
    sent: Mutex<BTreeSet<String>>,
    stop: AtomicBool,
}

impl Notifier {
    /// Starts watching the newest run when `[notify] webhook` is set; `None` otherwise.
    pub fn start(common_dir: &std::path::Path, config: &RepoConfig) -> Option<Notifier> {
        let url = config.notify.webhook.clone()?;
        let inner = Arc::new(Inner {
            url,
            common_dir: common_dir.to_path_buf(),
            config: config.clone(),
            sent: Mutex::new(BTreeSet::new()),
            stop: AtomicBool::new(false),
        });
        // What is already true when the command starts was told by the process that saw it.
        for (key, _) in inner.pending() {
            inner
                .sent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key);
        }
        let watcher = inner.clone();
        let thread = std::thread::Builder::new()
            .name("notify".into())
            .spawn(move || {
                while !watcher.stop.load(Ordering::SeqCst) {
                    watcher.post_new();
                    std::thread::sleep(TICK);
                }
            })
            .ok();
        Some(Notifier { inner, thread })
    }

    /// Stops watching after posting what is new now.
    pub fn finish(mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.inner.post_new();
    }
}

impl Inner {
    /// What deserves a notification now: (key, body), the key naming it once.
    fn pending(&self) -> Vec<(String, Value)> {
        let price = |m: &str| self.config.price(m);
        let mut out = Vec::new();
        let (run, phase, questions, engine_state) =
            match status::overview(&self.common_dir, None, &price) {
                Ok(Overview::Run(s)) => {
                    let phase = s
                        .start
                        .as_ref()
                        .filter(|st| !st.parent_of_phase)
                        .map(|st| st.phase);
                    let questions = s.waiting_questions().to_vec();
                    let state = s
                        .run
                        .state
                        .is_finished()
                        .then(|| s.run.state.as_str().to_string());
                    (s.run.id.clone(), phase, questions, state)
                }
                Ok(Overview::Planning(p)) => {
                    let qs = p
                        .start
                        .as_ref()
                        .map(|st| st.questions.clone())
                        .unwrap_or_default();
                    (p.planning.id.clone(), Some(p.planning.phase), qs, None)
                }
                _ => return out,
            };
        for q in questions {
            let text = format!(
                "{run}: packet {} waits for a person: {}",
                q.packet, q.question
            );
            out.push((
                format!("question {run} {} {}", q.packet, q.question),
                body("waiting_for_person", &run, Some(&q.packet), &text),
            ));
        }
        if phase == Some(WorkflowState::AwaitingApproval) {
            let text = format!("{run}: the plan waits for approval");
            out.push((
                format!("approval {run}"),
                body("plan_awaiting_approval", &run, None, &text),
            ));
        }
        let ended = match phase {
            Some(p) if p.is_final() => Some(p.to_string()),
            Some(_) => None,
            None => engine_state,
        };
        if let Some(state) = ended {
            let text = format!("{run}: the run ended ({state})");
            out.push((
                format!("end {run} {state}"),
                body("run_ended", &run, None, &text),
            ));
        }
        out
    }

    fn post_new(&self) {
        for (key, body) in self.pending() {
            if !self
                .sent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key)
            {
                continue;
            }
            if let Err(e) = post(&self.url, &body) {
                eprintln!("notify: the webhook refused or failed: {e}");
            }
        }
    }
}

fn body(event: &str, run: &str, packet: Option<&str>, text: &str) -> Value {
    json!({"event": event, "run": run, "packet": packet, "message": text,
           "text": text, "content": text})
}

fn post(url: &str, body: &Value) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map(|_| ())
        // The address may hold a secret (Slack and Discord put one in the path): never shown.
        .map_err(|e| match e {
            ureq::Error::StatusCode(code) => format!("HTTP {code}"),
            _ => "the request failed".to_string(),
        })
}
