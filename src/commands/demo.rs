//! `git orchestra demo`: the whole `start` flow offline, on a bundled sample repository with a
//! scripted model.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use git_orchestra::demo;
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{self, Approval, Interaction};
use git_orchestra::store::Event;

use super::CommandError;
use super::start::Terminal;

/// Runs the whole `start` flow offline on a bundled sample repository (no key, no network).
///
/// Runs `start --yes --merge` end to end on a small sample repository against a scripted
/// model served on a loopback port. Shows clarification with
/// assumptions, a plan revised after review, four packets in parallel worktrees with a
/// dependency and an overlap, a merge conflict resolved by its agent, integration with
/// validation, and the report.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the sample repository and its worktrees (a new or empty directory;
    /// default: a new directory under the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print only the report.
    #[arg(long, short)]
    quiet: bool,
}

/// The demo never waits for a person: questions become recorded assumptions.
struct DemoUi(Terminal);

impl Interaction for DemoUi {
    fn interactive(&self) -> bool {
        false
    }
    fn ask(&self, _question: &str) -> Option<String> {
        None
    }
    fn approve(&self, _plan: &str, _problems: &[String]) -> Approval {
        Approval::Approve
    }
    fn progress(&self, line: &str) {
        self.0.progress(line)
    }
    fn engine_event(&self, run: &str, event: &Event) {
        self.0.engine_event(run, event)
    }
}

/// Creates the sample repository, serves the scripted model and runs `start` on it.
pub fn cmd_demo(cwd: &Path, args: &DemoArgs) -> Result<(), CommandError> {
    let began = Instant::now();
    let base = match &args.dir {
        Some(d) => cwd.join(d),
        None => std::env::temp_dir().join(format!(
            "git-orchestra-demo-{}-{}",
            std::process::id(),
            git_orchestra::exec::now_ms()
        )),
    };
    let repo_dir = base.join("greeter");
    demo::create_sample(&repo_dir)
        .map_err(|e| CommandError::user(e).hint("pass --dir with a new or empty directory"))?;
    let model = demo::serve().map_err(CommandError::internal)?;
    let repo = RepoInfo::discover(&repo_dir)?;
    let config = demo::config(&model.url);
    let req = demo::request(&base.join("worktrees"));
    if !args.quiet {
        eprintln!(
            "sample repository: {}\nscripted model:    {}\nobjective:         {}\n",
            repo_dir.display(),
            model.url,
            req.objective
        );
    }
    let stop = git_orchestra::exec::install_signal_handlers();
    let ui = DemoUi(Terminal::new(args.quiet));
    let outcome =
        orchestrator::start(&repo, &config, &req, &ui, stop).map_err(super::start::start_error)?;
    let result = super::start::finish(&outcome);
    if !args.quiet {
        eprintln!(
            "\ndemo finished in {:.1} s ({} model requests); look around:\n  cd {} && git log --oneline --graph --all\n  git orchestra status --report",
            began.elapsed().as_secs_f64(),
            model.requests(),
            repo_dir.display()
        );
    }
    result
}
