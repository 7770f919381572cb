//! `/orchestra <command>` comments on a pull request: `stop` (stop following it), `land`
//! (merge it when ready even with `[land] merge = false`) and `retry` (re-run its failed
//! checks now). Commands by accounts that do not count are journaled as shown, never acted
//! on; each comment is read once, journaled before it acts, so a restarted `land` neither
//! repeats nor forgets one.

use orchestra_core::forge::{Check, CheckSource, Forge};
use orchestra_core::store::{Event, EventKind, Store};

use super::{Journal, LandError, decide::counted};

/// What the commands on one pull request ask of landing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Asked {
    /// Who stopped it, when the latest of `stop` and `land` was a `stop`.
    pub stopped_by: Option<String>,
    /// The latest of `stop` and `land` was a `land`.
    pub land: bool,
    /// A new `retry` arrived in this look.
    pub retry: bool,
}

/// Where the comment commands are read from and journaled to.
pub(super) struct Target<'a> {
    pub run: &'a str,
    pub packet: &'a str,
    pub number: u64,
    pub reviewers: Option<&'a [String]>,
}

/// Reads the new `/orchestra` comments on the pull request, journals each, and returns what
/// all the acted-on ones so far ask.
pub(super) fn read(
    store: &mut Store,
    forge: &dyn Forge,
    target: &Target<'_>,
    journal: &mut Journal<'_>,
) -> Result<Asked, LandError> {
    let earlier = commands_of(store, target)?;
    let mut asked = Asked::default();
    for c in forge.conversation(target.number)? {
        let Some(command) = parse(&c.body) else {
            continue;
        };
        if earlier.iter().any(|(id, ..)| *id == c.id) {
            continue;
        }
        let known = matches!(command.as_str(), "stop" | "land" | "retry");
        let acted = known && counted(&c.author, &c.association, target.reviewers);
        journal(
            store,
            Event::LandCommand {
                packet: target.packet.to_string(),
                number: target.number,
                comment: c.id,
                author: c.author.clone(),
                command: command.clone(),
                acted,
            },
        )?;
        asked.retry |= acted && command == "retry";
    }
    for (_, author, command) in commands_of(store, target)? {
        match command.as_str() {
            "stop" => {
                asked.stopped_by = Some(author);
                asked.land = false;
            }
            "land" => {
                asked.stopped_by = None;
                asked.land = true;
            }
            _ => {}
        }
    }
    Ok(asked)
}

/// Returns the command word of a `/orchestra <word>` comment, or `None`.
fn parse(body: &str) -> Option<String> {
    let rest = body.trim_start().strip_prefix("/orchestra")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(
        rest.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase(),
    )
}

/// Returns the acted-on commands journaled for the pull request, oldest first: comment id,
/// author, command; with the ignored ones' ids too (their command empty).
fn commands_of(
    store: &Store,
    target: &Target<'_>,
) -> Result<Vec<(u64, String, String)>, LandError> {
    Ok(store
        .events_of_kind(target.run, EventKind::LandCommand)?
        .into_iter()
        .filter_map(|e| match e.event {
            Event::LandCommand {
                packet,
                comment,
                author,
                command,
                acted,
                ..
            } if packet == target.packet => {
                Some((comment, author, if acted { command } else { String::new() }))
            }
            _ => None,
        })
        .collect())
}

/// Re-runs every failed check run of `checks` (a `retry`), journaling each first.
pub(super) fn rerun_failed(
    store: &mut Store,
    forge: &dyn Forge,
    target: &Target<'_>,
    head_sha: &str,
    checks: &[Check],
    journal: &mut Journal<'_>,
) -> Result<(), LandError> {
    for c in checks
        .iter()
        .filter(|c| c.conclusion.failed() && c.source == CheckSource::CheckRun)
    {
        journal(
            store,
            Event::CheckRerun {
                packet: target.packet.to_string(),
                number: target.number,
                check: c.name.clone(),
                head_sha: head_sha.to_string(),
            },
        )?;
        forge.rerun(c)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_orchestra_word_is_a_command() {
        assert_eq!(parse("/orchestra stop").as_deref(), Some("stop"));
        assert_eq!(parse("  /orchestra LAND please").as_deref(), Some("land"));
        assert_eq!(parse("/orchestra").as_deref(), Some(""));
        assert_eq!(parse("/orchestrator stop"), None);
        assert_eq!(parse("please /orchestra stop"), None);
    }
}
