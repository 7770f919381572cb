//! Checks that a role's answer is an answer before the next role builds on it: a small model
//! that echoes the list of its tools (`read_file, list_dir, grep`) or replies with nothing
//! must be asked again, not have its words passed on as the requirements of a plan.
//!
//! Each check returns why the text is not an answer, in words a person reads in the error
//! when the role still does not answer after being asked again. A planner's answer gets only
//! [`any_answer`] here: whether it is a plan is for plan validation, whose problems go back
//! to the planner in the next planning round.

use super::models::{extract_json, strings};

/// A check of a role's answer: `Err` says why the text is not one.
pub type Check<'a> = &'a dyn Fn(&str) -> Result<(), String>;

/// Words that may stand beside tool names in a reply that only lists tools.
const FILLER: [&str; 9] = [
    "and", "or", "then", "tool", "tools", "use", "using", "call", "calling",
];

/// Returns the answer shown in a message: its first line, clipped.
fn quoted(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("");
    orchestra_sys::redact::clip(line, 80)
}

/// Returns why `text` is no role's answer, whatever the role: it is empty, it only names
/// tools, or it is a tool call written out as text.
pub fn any_answer(text: &str) -> Result<(), String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the reply is empty".into());
    }
    let tools = crate::agent::tools::Registry::builtin().names();
    let is_tool = |w: &str| tools.iter().any(|t| t == w);
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let named = words.iter().filter(|w| is_tool(w)).count();
    if named > 0
        && words
            .iter()
            .all(|w| is_tool(w) || FILLER.contains(&w.to_lowercase().as_str()))
    {
        return Err(format!(
            "the reply only names tools (`{}`) instead of answering",
            quoted(text)
        ));
    }
    if let Some(v) = extract_json(text)
        && v.get("name").and_then(|n| n.as_str()).is_some_and(is_tool)
        && ["arguments", "args", "parameters"]
            .iter()
            .any(|k| v.get(k).is_some())
    {
        return Err(format!(
            "the reply is a tool call written as text (`{}`), not an answer",
            quoted(text)
        ));
    }
    Ok(())
}

/// Checks a clarifier's answer: an answer at all, and when it is the requested JSON object,
/// one that has requirements or questions that are not themselves only tool names.
pub fn clarification(text: &str) -> Result<(), String> {
    any_answer(text)?;
    let Some(v) = extract_json(text) else {
        return Ok(());
    };
    let said: Vec<String> = ["requirements", "questions"]
        .iter()
        .flat_map(|k| strings(&v, k))
        .collect();
    if said.is_empty() && v.get("outcome").and_then(|o| o.as_str()) != Some("clear") {
        return Err("the reply has neither requirements nor questions".into());
    }
    match said.iter().find_map(|s| any_answer(s).err()) {
        Some(why) => Err(format!("a requirement or question is no answer: {why}")),
        None => Ok(()),
    }
}

/// Checks a plan reviewer's answer: a JSON object with a `verdict` (anything but `approve`
/// counts as sending the plan back).
pub fn verdict(text: &str) -> Result<(), String> {
    any_answer(text)?;
    let verdict = extract_json(text).and_then(|v| {
        v.get("verdict")
            .and_then(|s| s.as_str())
            .map(str::to_string)
    });
    match verdict {
        Some(v) if !v.trim().is_empty() => Ok(()),
        _ => Err(format!(
            "the reply has no verdict: expected a JSON object with \"verdict\": \"approve\" or \"revise\", got `{}`",
            quoted(text)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_and_empty_replies_are_not_answers() {
        assert!(any_answer("read_file, list_dir, grep").is_err());
        assert!(any_answer("`read_file` and `grep`").is_err());
        assert!(any_answer("  \n").is_err());
        assert!(any_answer("{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}").is_err());
        assert!(any_answer("Use read_file to read the config, then add a flag.").is_ok());
        assert!(clarification("{\"requirements\": [\"read_file, list_dir\"]}").is_err());
        assert!(
            clarification("{\"outcome\": \"clear\", \"requirements\": [\"--json prints JSON\"]}")
                .is_ok()
        );
        assert!(verdict("looks fine").is_err());
        assert!(verdict("{\"verdict\": \"approve\", \"findings\": []}").is_ok());
    }
}
