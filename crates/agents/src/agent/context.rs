//! What the model sees: the system prompt of a run, and the conversation kept within the
//! model's context window.

use super::runner::AgentSpec;
use orchestra_core::llm::Message;

/// Returns the system prompt: the role's instructions plus the facts of this run.
pub(super) fn system_prompt(spec: &AgentSpec<'_>) -> String {
    let role = spec.role;
    let mut s = role.instructions.clone();
    s.push_str(&format!(
        "\n\n## This run\n\n- Role: {}\n- Tools: {}\n",
        role.name,
        spec.registry.names().join(", ")
    ));
    if role.write_scope.is_empty() {
        s.push_str("- You may not write files.\n");
    } else {
        s.push_str(&format!(
            "- You may write: {}\n",
            role.write_scope.join(", ")
        ));
    }
    if let Some(files) = &spec.packet_files {
        s.push_str(&format!(
            "- This packet declared the files: {}\n",
            files.join(", ")
        ));
    }
    s
}

/// Replaces the content of old tool outputs with a placeholder while the conversation is
/// larger than three quarters of `context_tokens` (≈ 4 characters a token); the last `keep`
/// messages are never touched. Returns how many outputs were dropped.
pub(super) fn bound_context(messages: &mut [Message], context_tokens: u64, keep: usize) -> usize {
    let budget = (context_tokens as usize).saturating_mul(3);
    let mut size: usize = messages.iter().map(Message::text_len).sum();
    let mut dropped = 0;
    let end = messages.len().saturating_sub(keep);
    for m in messages[..end].iter_mut() {
        if size <= budget {
            break;
        }
        if let Message::Tool { name, content, .. } = m
            && !content.starts_with("[output of")
        {
            let placeholder = format!(
                "[output of {name} dropped to save context; call the tool again if you need it]"
            );
            size = size - content.len() + placeholder.len();
            *content = placeholder;
            dropped += 1;
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_tool_outputs_are_dropped_first_and_recent_ones_kept() {
        let tool = |c: &str| Message::Tool {
            call_id: "1".into(),
            name: "read_file".into(),
            content: c.into(),
            is_error: false,
        };
        let big = "x".repeat(4000);
        let mut msgs = vec![Message::system("s"), tool(&big), tool(&big), tool(&big)];
        let dropped = bound_context(&mut msgs, 1000, 1);
        assert_eq!(dropped, 2);
        assert!(matches!(&msgs[3], Message::Tool { content, .. } if content.len() == 4000));
        assert_eq!(bound_context(&mut msgs, 1_000_000, 1), 0);
    }
}
