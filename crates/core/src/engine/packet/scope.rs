//! The scope phase: a packet's commit may change only its declared files (enforced, not
//! advised), and must change one of them unless it may be empty; edits outside its declared
//! symbols are journaled as findings.

use super::validation::Checked;
use super::{Halt, Step};
use crate::engine::symbol_scope;
use crate::store::Event;

impl Step<'_, '_> {
    /// Checks the paths `changed` between the start and `head` against the packet's scope;
    /// returns what failed with the fixes its worker needs to make, or `None` when the scope
    /// holds.
    pub(super) fn check_scope(
        &self,
        head: &str,
        changed: &[String],
    ) -> Result<Option<Checked>, Halt> {
        let packet = self.packet;
        if changed.is_empty() && !packet.files.is_empty() && !packet.may_be_empty {
            return Ok(Some(Checked::Failed {
                reason: format!(
                    "the worker changed no file (declared: {}); nothing was committed. If the packet may rightly change nothing, mark it `may_be_empty = true` in the plan",
                    packet.files.join(", ")
                ),
                fixes: format!(
                    "- No file changed: the worktree is exactly as the packet started, so none of the work this packet asks for was done. Make the changes in {} and check them before you finish.\n",
                    packet.files.join(", ")
                ),
            }));
        }
        let scope = packet
            .scope()
            .map_err(|e| Halt::Fail(format!("invalid file scope: {e}")))?;
        let outside: Vec<String> = scope
            .violations(changed.iter().map(String::as_str))
            .into_iter()
            .map(|p| orchestra_sys::redact::quote_path(&crate::gate::mask_secrets(&p)).into_owned())
            .collect();
        if !outside.is_empty() {
            return Ok(Some(Checked::Failed {
                reason: format!(
                    "changed files outside the packet's declared scope: {} (declared: {}); the commit is kept on {}",
                    outside.join(", "),
                    packet.files.join(", "),
                    self.rec.branch
                ),
                fixes: format!(
                    "- The scope check failed: this packet may change only {}, but it changed {}. Undo the changes to those files (restore them as they were at the start), and keep your work inside the declared files.\n",
                    packet.files.join(", "),
                    outside.join(", ")
                ),
            }));
        }
        if !packet.symbols.is_empty() {
            let toplevel = &self.ctx.repo.toplevel;
            for f in symbol_scope::findings(toplevel, packet, &self.start, head, changed) {
                tracing::warn!(file = %f.file, lines = %f.lines, "edits outside declared symbols");
                self.record(Event::ScopeFinding {
                    packet: packet.id.clone(),
                    file: f.file,
                    lines: f.lines,
                    declared: f.declared,
                })?;
            }
        }
        Ok(None)
    }
}
