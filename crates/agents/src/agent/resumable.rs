//! What a packet's agent leaves on disk so a fix round in a later process continues it: our
//! agent's conversation, an agent CLI's session id. Landing sends a pull request's CI failures
//! and review comments back days after the run ended; the packet's worker then takes them as
//! the next turn of the same conversation (or the same CLI session), not as a new task.
//!
//! Both sit in the packet's directory of the run (`RunDir::packet`). A conversation is kept
//! with the provider keys it might quote replaced; a file that cannot be written or read only
//! costs the continuation (the round starts afresh with the task), never the work.

use std::path::{Path, PathBuf};

use orchestra_core::llm::{ApiKey, Message};
use orchestra_sys::exec::RunDir;

/// Returns where packet `packet`'s conversation of run `run` is kept.
fn conversation_file(common_dir: &Path, run: &str, packet: &str) -> PathBuf {
    RunDir::new(common_dir, run)
        .packet(packet)
        .join("conversation.json")
}

/// Returns where the session of agent CLI `cli` for packet `packet` of run `run` is kept.
fn session_file(common_dir: &Path, run: &str, packet: &str, cli: &str) -> PathBuf {
    RunDir::new(common_dir, run)
        .packet(packet)
        .join(format!("{cli}-session"))
}

/// Keeps `messages`, packet `packet`'s conversation, with every one of `keys` replaced.
pub fn save_conversation(
    common_dir: &Path,
    run: &str,
    packet: &str,
    messages: &[Message],
    keys: &[ApiKey],
) {
    let Ok(json) = serde_json::to_string(messages) else {
        return;
    };
    let path = conversation_file(common_dir, run, packet);
    let written = path
        .parent()
        .map(fs_err::create_dir_all)
        .transpose()
        .and_then(|_| fs_err::write(&path, ApiKey::scrub_all(keys, &json)));
    if let Err(e) = written {
        tracing::warn!(error = %e, packet, "the conversation was not kept for fix rounds");
    }
}

/// Returns packet `packet`'s kept conversation; empty when none was kept or it cannot be read.
pub fn load_conversation(common_dir: &Path, run: &str, packet: &str) -> Vec<Message> {
    fs_err::read_to_string(conversation_file(common_dir, run, packet))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Keeps `session`, the session agent CLI `cli` reported for packet `packet`.
pub fn save_session(common_dir: &Path, run: &str, packet: &str, cli: &str, session: &str) {
    let path = session_file(common_dir, run, packet, cli);
    let written = path
        .parent()
        .map(fs_err::create_dir_all)
        .transpose()
        .and_then(|_| fs_err::write(&path, session));
    if let Err(e) = written {
        tracing::warn!(error = %e, packet, "the CLI's session was not kept for fix rounds");
    }
}

/// Returns the session agent CLI `cli` reported last for packet `packet`, if one was kept.
pub fn load_session(common_dir: &Path, run: &str, packet: &str, cli: &str) -> Option<String> {
    let text = fs_err::read_to_string(session_file(common_dir, run, packet, cli)).ok()?;
    let id = text.trim();
    // A session id is one word; anything else is not what was kept.
    (!id.is_empty() && !id.contains(char::is_whitespace)).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_conversation_comes_back_without_the_keys_it_quoted() {
        let tmp = tempfile::tempdir().unwrap();
        let key = ApiKey::new("sk-secret-0123456789");
        let messages = vec![
            Message::system("# Coder"),
            Message::user("the key is sk-secret-0123456789"),
        ];
        save_conversation(tmp.path(), "r1", "p1", &messages, &[key]);
        let back = load_conversation(tmp.path(), "r1", "p1");
        assert_eq!(back.len(), 2);
        let text = serde_json::to_string(&back).unwrap();
        assert!(!text.contains("sk-secret-0123456789"), "{text}");
        assert!(load_conversation(tmp.path(), "r1", "p2").is_empty());
    }

    #[test]
    fn a_kept_session_comes_back_for_its_cli_only() {
        let tmp = tempfile::tempdir().unwrap();
        save_session(tmp.path(), "r1", "p1", "claude", "abc-123\n");
        assert_eq!(
            load_session(tmp.path(), "r1", "p1", "claude").as_deref(),
            Some("abc-123")
        );
        assert_eq!(load_session(tmp.path(), "r1", "p1", "codex"), None);
    }
}
