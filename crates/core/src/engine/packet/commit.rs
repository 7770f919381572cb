//! The commit phase: what the worker left in the worktree committed with the engine's
//! identity and trailers, an external worker's own commits folded in first.

use super::{Halt, Step};
use crate::store::Event;
use orchestra_git::git::commit::{self, Trailers};

impl Step<'_, '_> {
    /// Commits what the worker left in the worktree, with the engine's identity and trailers,
    /// and returns the branch tip with the paths it changed since the start.
    ///
    /// An external worker's own commits are taken back first (to `last`, the engine's previous
    /// commit, see `commit::take_back_worker_commits`): only the engine's commits, whose whole
    /// diff the scope check sees, enter the branch. Our agents cannot commit (their commands
    /// cannot write the git directory), and the merges of their subtasks are the engine's.
    pub(in crate::engine) fn commit(
        &self,
        last: Option<&str>,
    ) -> Result<(String, Vec<String>), Halt> {
        let (ctx, packet) = (self.ctx, self.packet);
        let message = commit::message(
            &packet.title,
            &Trailers {
                run: &ctx.run.id,
                packet: &packet.id,
                role: &packet.role,
            },
        );
        let git = self.git()?;
        // Whether HEAD is the packet's start now: then what is staged is the packet's whole
        // change, and no diff against the start is needed after the commit.
        if ctx.worker_cmd.is_some() || ctx.worker.is_some_and(|w| w.commits_itself()) {
            // With no earlier engine commit, the branch is taken back to the start.
            let taken = commit::take_back_worker_commits(&git, &self.start, last).map_err(|e| {
                Halt::Fail(format!("cannot take back the worker's own commits: {e}"))
            })?;
            if let Some(tip) = taken {
                tracing::warn!(%tip, "the worker committed itself; its commits are folded into the engine's");
            }
        }
        // Read from the ref files, no process: an agent that ran `git commit` itself, or an
        // earlier round's commit, leaves HEAD elsewhere, and then a diff lists the change.
        let at_start = git.head().is_ok_and(|h| h == self.start);
        let (made, staged) = commit::commit_all_listing(&git, &message)
            .map_err(|e| Halt::Fail(format!("could not commit the worker's changes: {e}")))?;
        let head = match made {
            Some(head) => head,
            None => git
                .head()
                .map_err(|e| Halt::Fail(format!("cannot read the packet branch: {e}")))?,
        };
        let changed = match staged {
            Some(paths) if at_start => paths,
            _ => commit::changed_paths(&git, &self.start, &head)
                .map_err(|e| Halt::Fail(format!("cannot list the packet's changes: {e}")))?,
        };
        self.record(Event::PacketCommitted {
            packet: packet.id.clone(),
            commit: head.clone(),
            // Journaled and shown: a file named after a token is named redacted.
            changed: changed
                .iter()
                .map(|p| crate::gate::mask_secrets(p))
                .collect(),
        })?;
        Ok((head, changed))
    }
}
