//! The setup phase: `[worktree] setup` run once in a packet's readied worktree, confined as
//! setup commands are.

use super::{Halt, Step};

impl Step<'_, '_> {
    /// Runs the configured setup command in the worktree (nothing when there is none); its
    /// failure fails the packet with the end of its output.
    pub(super) fn setup(&self) -> Result<(), Halt> {
        let Some(setup) = self.ctx.setup else {
            return Ok(());
        };
        let log = self.dir.join("setup.log");
        let confine = self.ctx.sandboxes.setup.as_deref();
        let out = self.run_command(setup, &self.env, &log, confine)?;
        if !out.success() {
            return Err(Halt::Fail(format!(
                "setup command `{setup}` failed ({}): {}",
                out.describe(self.ctx.timeout),
                out.tail
            )));
        }
        Ok(())
    }
}
