//! The page's JSON: the runs, one run (its status as `status --json` gives it, its plan as
//! waves and dependencies, one card per packet), one packet (its agent's activity, its diff).

use std::path::Path;

use git_orchestra::orchestrator::WorkflowState;
use git_orchestra::plan::Plan;
use git_orchestra::run::{Run, RunRef};
use git_orchestra::status::{self, Overview};
use git_orchestra::store::{AgentUsage, PacketRecord, PacketState};
use serde_json::{Value, json};

use super::{Reply, Shared, json};

/// Activity lines shown per packet: the newest ones.
const ACTIVITY_LINES: usize = 400;
/// The largest diff sent to the page.
const MAX_DIFF: usize = 2 << 20;
/// The end of each transcript that is read: a worker's log may be as large as it likes.
const LOG_TAIL: u64 = 4 << 20;

fn error(status: u16, message: impl std::fmt::Display) -> Reply {
    json(status, &json!({"error": message.to_string()}))
}

/// Every run of the repository, newest first.
pub(super) fn runs(shared: &Shared) -> Reply {
    match list_runs(shared) {
        Ok(list) => json(200, &json!({ "runs": list })),
        Err(e) => error(500, e),
    }
}

/// Returns the run list from the one query `status --all` reads, with each run's packets,
/// tokens and cost added.
fn list_runs(shared: &Shared) -> Result<Vec<Value>, String> {
    let common = &shared.repo.common_dir;
    let price = |model: &str| shared.config.price(model);
    let mut list = Vec::new();
    for r in status::all_runs(common).map_err(|e| e.to_string())? {
        let opened = Run::listed(&shared.repo, &r);
        let packets = opened.packets().map_err(|e| e.to_string())?;
        // The one accounting `status` and the run page show.
        let spend = status::run_spend(common, &r.id, &price);
        let (tokens, cost) = (spend.input_tokens + spend.output_tokens, spend.cost);
        list.push(json!({
            "id": r.id, "kind": r.kind, "state": r.state, "objective": r.objective,
            "created_ms": r.started_ms, "driven": r.driven, "next": r.next,
            "packets": packets.len(),
            "done": packets.iter().filter(|p| p.state == PacketState::Succeeded).count(),
            "failed": packets.iter().filter(|p| p.state == PacketState::Failed).count(),
            "tokens": tokens, "cost": cost,
        }));
    }
    Ok(list)
}

/// One run: its status, plan graph, packet cards and the approval it waits for.
pub(super) fn run(shared: &Shared, id: &str) -> Reply {
    let price = |model: &str| shared.config.price(model);
    let opened = match Run::open(&shared.repo, RunRef::Id(id.to_string())) {
        Ok(r) => r,
        Err(e) => return error(404, e),
    };
    let overview = match opened.status(&price) {
        Ok(o) => o,
        Err(e) => return error(404, e),
    };
    let (status_json, plan_text, cards) = match &overview {
        Overview::Run(s) => {
            let cards = cards(&opened, &s.packets, &s.agents);
            (
                serde_json::to_value(s).unwrap_or(Value::Null),
                Some(s.run.plan_toml.clone()),
                cards,
            )
        }
        Overview::Planning(s) => (
            serde_json::to_value(s).unwrap_or(Value::Null),
            opened.proposed_plan(),
            Vec::new(),
        ),
        Overview::NoRun => return error(404, format!("no run `{id}`")),
    };
    let phase = opened.start_state().map(|s| s.phase);
    let approval = approval(shared, &opened, phase);
    let plan = plan_text
        .as_deref()
        .or(approval["plan"].as_str())
        .map(graph)
        .unwrap_or(Value::Null);
    json(
        200,
        &json!({
            "id": id,
            "phase": phase.map(|p| p.to_string()),
            "status": status_json,
            "plan": plan,
            "cards": cards,
            "approval": approval,
            "controls": opened.controls(),
            "progress": opened.planning(),
            "gates": opened.gates(&price).map_or(Value::Null, |g| {
                serde_json::to_value(g).unwrap_or(Value::Null)
            }),
            "report": opened
                .report()
                .map_or(Value::Null, |text| Value::String(git_orchestra::redact::clip(&text, 200_000))),
        }),
    )
}

/// The approval a `start` run waits for: in this process (`start --ui`, with the last edit's
/// problems) or in the journal (the run stopped to wait for it).
fn approval(shared: &Shared, run: &Run, phase: Option<WorkflowState>) -> Value {
    if phase != Some(WorkflowState::AwaitingApproval) {
        return Value::Null;
    }
    let forecast = |plan: &str| {
        git_orchestra::orchestrator::approval_forecast(&shared.repo, &shared.config, run.id(), plan)
            .map_or(Value::Null, |f| {
                let packets: serde_json::Map<String, Value> = f
                    .packets
                    .iter()
                    .map(|p| (p.packet.clone(), Value::String(p.text())))
                    .collect();
                json!({"total": f.text(), "packets": packets, "detail": f})
            })
    };
    if let Some((plan, problems)) = shared.live.waiting() {
        let forecast = forecast(&plan);
        return json!({"plan": plan, "problems": problems, "live": true, "forecast": forecast});
    }
    match run.proposed_plan() {
        Some(plan) => {
            let forecast = forecast(&plan);
            json!({"plan": plan, "problems": [], "live": false, "forecast": forecast})
        }
        None => Value::Null,
    }
}

/// The plan as a graph: packets with their dependencies and files, the waves they run in,
/// and the pairs sharing files (kept apart, or allowed together and why).
pub(super) fn graph(toml_text: &str) -> Value {
    let Ok(plan) = Plan::from_toml_str(toml_text, "plan.toml") else {
        return Value::Null;
    };
    let schedule = git_orchestra::plan::schedule(&plan);
    let packets: Vec<Value> = plan
        .packets
        .iter()
        .map(|p| {
            json!({"id": p.id, "title": p.title, "role": p.role, "depends_on": p.depends_on,
                   "files": p.files, "wave": schedule.wave_of(&p.id)})
        })
        .collect();
    json!({
        "objective": plan.objective,
        "packets": packets,
        "waves": schedule.waves,
        "serialized": schedule.serialized,
        "parallel": schedule.parallel,
    })
}

/// One card per packet: its record, worker state, model, tokens and when it started.
fn cards(run: &Run, packets: &[PacketRecord], agents: &[AgentUsage]) -> Vec<Value> {
    let started = run.packet_starts();
    let run_dir = run.dir();
    packets
        .iter()
        .map(|p| {
            let mine: Vec<&AgentUsage> = agents.iter().filter(|a| a.packet == p.id).collect();
            let worker = mine.iter().find(|a| a.role == p.role).or(mine.first());
            let (worker_state, model, tokens) = match worker {
                Some(w) => (
                    Some(w.state.clone()),
                    w.model.clone(),
                    mine.iter().map(|a| a.input_tokens + a.output_tokens).sum(),
                ),
                // A `start` run keeps its agents' events in their transcripts only.
                None => from_transcripts(&run_dir.packet(&p.id)),
            };
            let since = started
                .iter()
                .rev()
                .find(|(id, _)| *id == p.id)
                .map(|(_, ts)| *ts);
            json!({
                "id": p.id, "title": p.title, "role": p.role, "state": p.state.as_str(),
                "phase": p.phase.map(|ph| ph.as_str()), "attempt": p.attempt,
                "worker_state": worker_state,
                "model": model,
                "tokens": tokens, "started_ms": since, "updated_ms": p.updated_ms,
                "reason": p.reason, "branch": p.branch,
            })
        })
        .collect()
}

/// The worker state, model and tokens a packet's transcripts (`<run dir>/<packet>/*.log`)
/// record: the latest state and model, the tokens of every model call.
fn from_transcripts(dir: &Path) -> (Option<String>, Option<String>, u64) {
    let (mut state, mut model, mut tokens) = (None, None, 0);
    for item in activity_of(dir, usize::MAX) {
        let e = &item["event"];
        match e["type"].as_str() {
            Some("state") => state = e["to"].as_str().map(str::to_string),
            Some("model_call") => {
                model = e["model"].as_str().map(str::to_string);
                tokens += e["input_tokens"].as_u64().unwrap_or(0)
                    + e["output_tokens"].as_u64().unwrap_or(0);
            }
            _ => {}
        }
    }
    (state, model, tokens)
}

/// One packet: its record, its agent's activity (every transcript of its directory, oldest
/// first) and its diff against its start (`?diff=0` leaves the diff out).
pub(super) fn packet(shared: &Shared, rest: &str, query: &str) -> Reply {
    let Some((run, id)) = rest.split_once('/') else {
        return error(404, "use /api/packet/<run>/<packet>");
    };
    let opened = match Run::open(&shared.repo, RunRef::Id(run.to_string())) {
        Ok(r) => r,
        Err(e) => return error(404, e),
    };
    let found = opened
        .packets()
        .ok()
        .and_then(|list| list.into_iter().find(|p| p.id == id));
    let Some(rec) = found else {
        return error(404, format!("no packet `{id}` in run `{run}`"));
    };
    let activity = activity_of(&opened.dir().packet(id), ACTIVITY_LINES);
    let diff = if super::query_value(query, "diff").as_deref() == Some("0") {
        Value::Null
    } else {
        diff(shared, &opened, &rec)
    };
    let questions = opened.open_question(id).ok().flatten();
    // Its review rounds, apart from its attempts: each verdict with its fix round.
    let reviews: Vec<Value> = opened
        .reviews_of(id)
        .into_iter()
        .map(|e| json!({"ts_ms": e.ts_ms, "event": e.event}))
        .collect();
    let candidates = opened.candidates_of(id);
    // Its pull request while the run is landed: the same row the run page shows.
    let landing = opened.landing().into_iter().find(|l| l.packet == id);
    json(
        200,
        &json!({"run": run, "packet": rec, "activity": activity, "diff": diff,
                "question": questions, "reviews": reviews, "candidates": candidates,
                "landing": landing}),
    )
}

/// The newest `limit` events of the packet's transcripts (of each, its last [`LOG_TAIL`]
/// bytes), oldest transcript first.
fn activity_of(dir: &Path, limit: usize) -> Vec<Value> {
    let mut logs: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        // An agent CLI's output in its own format is shown through its activity transcript.
        .filter(|p| !git_orchestra::agent::cli::record::transcript_of(p).exists())
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    logs.sort();
    let texts: Vec<(String, String)> = logs
        .iter()
        .map(|(_, path)| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, tail_of(path))
        })
        .collect();
    // Only the lines shown become JSON: a log of many short lines stays small in memory.
    let lines: Vec<(&str, &str)> = texts
        .iter()
        .flat_map(|(name, text)| text.lines().map(move |l| (name.as_str(), l)))
        .collect();
    let skip = lines.len().saturating_sub(limit);
    lines[skip..]
        .iter()
        .map(|(name, line)| {
            json!({"log": name, "section": section_of(name), "event": activity_item(line)})
        })
        .collect()
}

/// Returns the heading of the transcript `log` on the packet page, as the terminal names the
/// step it records: `worker-2-fix-1-try-2.log` is "attempt 2 · fix round 1 · try 2",
/// `validate-1.log` "validation command 1", `setup.log` "setup"; another name is itself.
fn section_of(log: &str) -> String {
    let stem = log.strip_suffix(".log").unwrap_or(log);
    if let Some(n) = stem.strip_prefix("validate-") {
        return format!("validation command {n}");
    }
    if stem == "setup" {
        return "setup".to_string();
    }
    let Some(rest) = stem.strip_prefix("worker-") else {
        return log.to_string();
    };
    let (rest, tries) = match rest.split_once("-try-") {
        Some((head, t)) => (head, Some(t)),
        None => (rest, None),
    };
    let (attempt, round) = match rest.split_once("-fix-") {
        Some((a, r)) => (a, Some(r)),
        None => (rest, None),
    };
    if attempt.is_empty() || !attempt.bytes().all(|b| b.is_ascii_digit()) {
        return log.to_string();
    }
    let mut out = format!("attempt {attempt}");
    if let Some(r) = round {
        out.push_str(&format!(" · fix round {r}"));
    }
    if let Some(t) = tries {
        out.push_str(&format!(" · try {t}"));
    }
    out
}

/// The last [`LOG_TAIL`] bytes of the file at `path` from the first whole line in them, lossily
/// decoded; empty when it cannot be read.
fn tail_of(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = fs_err::File::open(path) else {
        return String::new();
    };
    let start = file
        .metadata()
        .map(|m| m.len().saturating_sub(LOG_TAIL))
        .unwrap_or(0);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err()
        || file.take(LOG_TAIL).read_to_end(&mut bytes).is_err()
    {
        return String::new();
    }
    if start > 0 {
        let first = bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        bytes.drain(..first);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One transcript line as an activity item: an object with a string `type` as it is (the page
/// shows each field as text, and a line its type's fields do not fit as the line itself);
/// anything else — a command's output, a line that only looks like JSON — as `output` text.
fn activity_item(line: &str) -> Value {
    serde_json::from_str::<Value>(line)
        .ok()
        .filter(|v| v["type"].is_string())
        .unwrap_or_else(|| json!({"type": "output", "text": line}))
}

/// The packet's own change, as `git orchestra diff` shows it: its branch tip (the engine's last
/// commit) against its start, or against the integration tip its conflict resolution merged.
fn diff(shared: &Shared, opened: &Run, rec: &PacketRecord) -> Value {
    let git = git_orchestra::git::Git::new(&shared.repo.common_dir);
    let (start, tip) = match opened.own_change(rec) {
        Ok(Some(c)) => (c.base, c.tip),
        Ok(None) => return json!({"patch": "", "note": "no commit yet"}),
        Err(e) => return json!({"patch": "", "note": e.to_string()}),
    };
    match git.diff_patch(&start, &tip) {
        Ok(mut patch) => {
            let clipped = patch.len() > MAX_DIFF;
            if clipped {
                let mut cut = MAX_DIFF;
                while !patch.is_char_boundary(cut) {
                    cut -= 1;
                }
                patch.truncate(cut);
            }
            json!({"patch": patch, "start": start, "tip": tip, "clipped": clipped})
        }
        Err(e) => json!({"patch": "", "note": e.to_string()}),
    }
}
