//! The control tools: signal_state, ask and complete. They change no file; they tell the
//! runtime something, and the loop acts on the [`Signal`].

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolFailure, ToolResult, arg_str};
use crate::agent::state::WorkerState;
use crate::llm::ToolDef;

/// What a control tool asks the runtime to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    State {
        state: WorkerState,
        reason: String,
    },
    Ask {
        question: String,
        to: Option<String>,
    },
    Complete {
        summary: String,
        touched_files: Vec<String>,
        learnings: Vec<String>,
    },
}

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            def: ToolDef {
                name: "signal_state".into(),
                description: "Reports a change of your state with the reason: blocked, waiting_for_input, waiting_for_subtask, running.".into(),
                parameters: json!({"type": "object", "properties": {
                    "state": {"type": "string", "enum": ["running", "waiting_for_input", "waiting_for_subtask", "blocked"]},
                    "reason": {"type": "string"}},
                    "required": ["state", "reason"]}),
            },
            mutating: false,
            handler: signal_state,
        },
        Tool {
            def: ToolDef {
                name: "ask".into(),
                description: "Asks a human (or the named role) a question you cannot answer from the code.".into(),
                parameters: json!({"type": "object", "properties": {
                    "question": {"type": "string"},
                    "to": {"type": "string", "description": "a role name; default the human"}},
                    "required": ["question"]}),
            },
            mutating: false,
            handler: ask,
        },
        Tool {
            def: ToolDef {
                name: "complete".into(),
                description: "Ends your work: a summary of what you did, the files you touched, and what you learned that others should know.".into(),
                parameters: json!({"type": "object", "properties": {
                    "summary": {"type": "string"},
                    "touched_files": {"type": "array", "items": {"type": "string"}},
                    "learnings": {"type": "array", "items": {"type": "string"}}},
                    "required": ["summary"]}),
            },
            mutating: false,
            handler: complete,
        },
    ]
}

fn signal_state(_: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let name = arg_str(args, "state")?;
    let reason = arg_str(args, "reason").unwrap_or("").to_string();
    let state = WorkerState::parse(name).map_err(ToolFailure::Model)?;
    Ok(ToolResult::Signal(
        Signal::State { state, reason },
        format!("state noted: {name}"),
    ))
}

fn ask(_: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let question = arg_str(args, "question")?.to_string();
    let to = args["to"].as_str().map(str::to_string);
    Ok(ToolResult::Signal(
        Signal::Ask { question, to },
        "question recorded".into(),
    ))
}

fn complete(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let summary = arg_str(args, "summary")?.to_string();
    let list = |k: &str| -> Vec<String> {
        args[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let mut touched = list("touched_files");
    if let Ok(t) = ctx.touched.lock() {
        for p in t.iter() {
            if !touched.contains(p) {
                touched.push(p.clone());
            }
        }
    }
    Ok(ToolResult::Signal(
        Signal::Complete {
            summary,
            touched_files: touched,
            learnings: list("learnings"),
        },
        "completion recorded".into(),
    ))
}
