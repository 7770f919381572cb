//! The started step: the commit a packet starts from, its start (or resumption) journaled,
//! and the environment its commands see, with what the packets it depends on did. A packet
//! that runs elsewhere starts here too (`engine/remote/coordinator.rs`).

use super::{Context, Halt, Step, record};
use crate::plan::Packet;
use crate::store::{Event, PacketRecord, PacketState, Phase};
use orchestra_git::git::commit;
use orchestra_git::git::{self as gitops};
use orchestra_sys::names;

/// How a packet (re)starts: the commit it starts from, the attempt it makes and the phase
/// its pipeline goes on from.
pub(in crate::engine) struct Begun {
    pub start: String,
    pub attempt: u32,
    pub phase: Phase,
}

/// Returns true if and only if the packet was running when its run stopped (it resumes where
/// it was rather than starting again).
pub(in crate::engine) fn in_flight(rec: &PacketRecord) -> bool {
    matches!(rec.state, PacketState::Running | PacketState::Interrupted)
}

/// Journals that the packet of `rec` starts — its next attempt, from [`start_point`] — or,
/// when it was in flight, resumes from its recorded start and phase (its state then follows
/// this run, not the one that stopped).
pub(in crate::engine) fn begin(
    ctx: &Context<'_>,
    packet: &Packet,
    rec: &PacketRecord,
) -> Result<Begun, Halt> {
    if in_flight(rec) {
        let start = rec.start.clone().unwrap_or_else(|| ctx.run.base.clone());
        let phase = rec.phase.unwrap_or(Phase::Worktree);
        let attempt = rec.attempt.max(1);
        record(
            ctx,
            Event::PacketResumed {
                packet: packet.id.clone(),
                attempt,
                phase: phase.as_str().to_string(),
            },
        )?;
        return Ok(Begun {
            start,
            attempt,
            phase,
        });
    }
    let start = start_point(ctx, packet)?;
    // A packet started again (retried) is on its next attempt; its logs keep the old ones.
    let attempt = rec.attempt + 1;
    record(
        ctx,
        Event::PacketStarted {
            packet: packet.id.clone(),
            branch: rec.branch.clone(),
            worktree: rec.worktree.clone(),
            start: start.clone(),
            attempt,
        },
    )?;
    Ok(Begun {
        start,
        attempt,
        phase: Phase::Worktree,
    })
}

/// Returns the commit a packet starts from: the run's base without dependencies, the single
/// dependency's work, or the in-memory merge of all its dependencies' work.
fn start_point(ctx: &Context<'_>, packet: &Packet) -> Result<String, Halt> {
    let mut start: Option<String> = None;
    for dep in &packet.depends_on {
        let commit = ctx
            .journal
            .packet(dep)
            .map_err(|_| Halt::Journal)?
            .and_then(|r| r.commit)
            .ok_or_else(|| Halt::Fail(format!("dependency `{dep}` has no recorded commit")))?;
        start = Some(match start {
            None => commit,
            Some(acc) => {
                let message = format!(
                    "Merge the dependencies of {}\n\nOrchestra-Run: {}\nOrchestra-Packet: {}\n",
                    packet.id, ctx.run.id, packet.id
                );
                match ctx.repo.git().merge_in_memory(&acc, &commit, &message) {
                    Ok(gitops::MergeOutcome::Merged(id)) => id,
                    Ok(gitops::MergeOutcome::Conflict(paths)) => {
                        return Err(Halt::Fail(format!(
                            "its dependencies' work conflicts in {}; resolve by making one depend on the other",
                            paths.join(", ")
                        )));
                    }
                    Err(e) => return Err(Halt::Fail(format!("cannot merge dependencies: {e}"))),
                }
            }
        });
    }
    Ok(start.unwrap_or_else(|| ctx.run.base.clone()))
}

/// Most characters of one dependency's account in a dependent's task.
const DEPENDENCY_CHARS: usize = 1_200;

/// Returns what each packet `packet` depends on did, for its worker: the files its work
/// changed and what its worker said of it, bounded per dependency.
pub(in crate::engine) fn dependency_summary(ctx: &Context<'_>, packet: &Packet) -> String {
    if let Some(known) = ctx.dependencies {
        return known.to_string();
    }
    if packet.depends_on.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for dep in &packet.depends_on {
        let Ok(Some(rec)) = ctx.journal.packet(dep) else {
            continue;
        };
        let changed = match (&rec.start, &rec.commit) {
            (Some(start), Some(commit)) => {
                commit::changed_paths(&ctx.repo.git(), start, commit).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let said = ctx.journal.worker_account(dep).unwrap_or_default();
        let title = ctx
            .plan
            .packets
            .iter()
            .find(|p| &p.id == dep)
            .map_or("", |p| p.title.as_str());
        let text = format!(
            "- `{dep}` ({title}), now in this worktree: changed {}. Its worker said: {}",
            if changed.is_empty() {
                "no file".to_string()
            } else {
                changed.join(", ")
            },
            orchestra_sys::redact::clip(said.trim(), DEPENDENCY_CHARS)
        );
        out.push_str(&text);
        out.push('\n');
    }
    out
}

impl Step<'_, '_> {
    /// Returns the first port of the step's range: the packet's, or its candidate's own (so
    /// candidates working at once can each serve on their ports).
    fn port_base(&self) -> u16 {
        let (run, index) = (&self.ctx.run.id, self.index);
        match self.candidate {
            Some(k) => {
                let counts: Vec<u32> = self
                    .ctx
                    .plan
                    .packets
                    .iter()
                    .map(Packet::candidates)
                    .collect();
                names::candidate_port_base(run, &counts, index, k)
            }
            None => names::port_base(run, index),
        }
    }

    /// Returns the variables every command of the packet sees, writing the packet file they
    /// name.
    pub(in crate::engine) fn environment(&self) -> Result<Vec<(String, String)>, Halt> {
        let (ctx, packet, wt) = (self.ctx, self.packet, &self.wt);
        // Candidates work at once: each has its own packet file naming its own worktree, and
        // the packet's (which the watch guards) stays as it is.
        let file = match self.candidate {
            Some(_) => self.dir.join("packet.json"),
            None if self.tester => self.dir.join("packet.json"),
            None => ctx.run_dir.packet_file(&packet.id),
        };
        let mut value = serde_json::to_value(packet)
            .map_err(|e| Halt::Fail(format!("cannot serialise the packet: {e}")))?;
        if let Some(map) = value.as_object_mut() {
            map.insert("run".into(), ctx.run.id.clone().into());
            map.insert("objective".into(), ctx.run.objective.clone().into());
            map.insert("base".into(), self.start.clone().into());
            map.insert(
                "branch".into(),
                names::packet_branch(&ctx.run.id, &packet.id).into(),
            );
            map.insert("worktree".into(), wt.to_string_lossy().into_owned().into());
            let deps = dependency_summary(ctx, packet);
            if !deps.is_empty() {
                map.insert("dependencies".into(), deps.into());
            }
        }
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| Halt::Fail(format!("cannot serialise the packet: {e}")))?;
        fs_err::create_dir_all(&self.dir)
            .and_then(|()| fs_err::write(&file, text))
            .map_err(|e| Halt::Fail(format!("cannot write the packet file: {e}")))?;
        Ok(vec![
            ("ORCHESTRA_RUN".into(), ctx.run.id.clone()),
            ("ORCHESTRA_PACKET".into(), packet.id.clone()),
            (
                "ORCHESTRA_PACKET_FILE".into(),
                file.to_string_lossy().into_owned(),
            ),
            (
                "ORCHESTRA_WORKTREE".into(),
                wt.to_string_lossy().into_owned(),
            ),
            ("ORCHESTRA_BASE".into(), self.start.clone()),
            ("ORCHESTRA_PORT_BASE".into(), self.port_base().to_string()),
            (
                "ORCHESTRA_PORT_COUNT".into(),
                names::PORTS_PER_PACKET.to_string(),
            ),
        ])
    }
}
