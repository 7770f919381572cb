//! `git orchestra init`: writes the project context file `ORCHESTRA.md` that every agent reads.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::project;

use super::CommandError;

/// Writes ORCHESTRA.md: the languages, the build, test, lint and format commands the project's
/// own files declare (CI workflows, Cargo.toml, package.json scripts, pyproject/tox/nox,
/// go.mod, Makefile, justfile), what CI runs, the layout and the key definitions, within a
/// token budget.
///
/// For each purpose, what CI runs comes first, then the project's task runners, then what tool
/// configuration implies (left out when either of the others names a command). A lint command
/// never rewrites files: `ruff check` gets `--no-fix` when the configuration sets `fix = true`,
/// and a lint target or script that fixes or formats is left out with a note.
///
/// Running it again rewrites only the generated part, between its two marker lines; what you
/// write around it is kept as it is. Agents read the file with their task.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Estimated tokens the generated part may use (about four characters each).
    #[arg(long, value_name = "N", default_value_t = project::DEFAULT_TOKENS)]
    tokens: usize,
    /// Print what would be written, without writing it.
    #[arg(long)]
    dry_run: bool,
    /// Print what was detected as JSON.
    #[arg(long)]
    json: bool,
    /// Write only what detection finds, even when a model profile resolves for the `init`
    /// role (which otherwise reads the code and adds the architecture and conventions).
    #[arg(long)]
    no_model: bool,
}

/// Detects the project's facts and writes (or updates) its context file.
pub fn cmd_init(cwd: &Path, args: &InitArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let tokens = args.tokens.max(200);
    let stop = git_orchestra::exec::install_signal_handlers();
    let improve = |detected: &str| -> Result<String, String> {
        if !args.json {
            eprintln!(
                "the init role's model reads the code (transcript: .git/orchestra/init.log)…"
            );
        }
        git_orchestra::orchestrator::explore::project_notes(
            &repo.toplevel,
            &repo.common_dir,
            &config,
            detected,
            tokens * 4 / 3,
            stop,
            &|line: &str| {
                if !args.json {
                    eprintln!("init: {}", git_orchestra::redact::terminal_safe(line));
                }
            },
        )
    };
    // Why the model part is skipped when no profile resolves for the role (not asked for
    // with --no-model): said, so that a user expecting it knows what to configure.
    let skipped = if args.no_model {
        None
    } else {
        git_orchestra::orchestrator::explore::model_check(&repo.toplevel, &config, "init").err()
    };
    let with_model = !args.no_model && skipped.is_none();
    let mut written = project::init_with(
        &repo.toplevel,
        tokens,
        args.dry_run,
        with_model.then_some(&improve as project::Improve<'_>),
    )
    .map_err(CommandError::user)?;
    if let Some(why) = &skipped {
        written.model = Some(format!("skipped: {why}"));
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&written).map_err(CommandError::internal)?
        );
        return Ok(());
    }
    let verb = match (args.dry_run, written.created, written.changed) {
        (_, _, false) => "is up to date",
        (true, true, _) => "would be created",
        (true, false, _) => "would be updated",
        (false, true, _) => "created",
        (false, false, _) => "updated",
    };
    println!("{} {verb}", written.path.display());
    for c in &written.facts.commands {
        let note = c
            .note
            .as_ref()
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        println!(
            "  {:<7} {}  ({}{note})",
            c.purpose.as_str(),
            c.command,
            c.source
        );
    }
    for l in &written.facts.left_out {
        println!(
            "  not listed as the {} command: `{}` ({}): it {}",
            l.purpose.as_str(),
            l.command,
            l.source,
            l.why
        );
    }
    match (written.model.as_deref(), &skipped) {
        (_, Some(why)) => println!(
            "  the init role's model was skipped: {why}; configure a model profile to have it add the architecture and conventions, or pass --no-model to write detection alone"
        ),
        (Some("added"), _) => {
            println!("  the init role's model added the architecture and conventions")
        }
        (Some(why), _) => println!("  the init role's model added nothing: {why}"),
        (None, _) => {}
    }
    for note in &written.facts.skipped {
        println!("  skipped {}", git_orchestra::redact::terminal_safe(note));
    }
    if written.facts.commands.is_empty() {
        println!(
            "  no build or test command found in the project's files; add yours by hand outside the generated part"
        );
    }
    Ok(())
}
