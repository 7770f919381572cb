//! Where a run's packets run: `--executor` kept with the run (so a resumed run keeps it), else
//! `[executor] kind`, else here; and the executor built from it.

use git_orchestra::config::{ExecutorKind, RepoConfig};
use git_orchestra::crew::CrewError;
use git_orchestra::engine::Executor;
use git_orchestra::git::RepoInfo;

use super::CommandError;

/// `--executor` as the command line takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorArg {
    /// In worktrees beside the repository (the default).
    Local,
    /// On the hosts of `[executor.ssh]`, through the user's ssh.
    Ssh,
    /// As runs of the repository's GitHub Actions workflow (`executor init github-actions`).
    GithubActions,
}

impl ExecutorArg {
    pub fn kind(self) -> ExecutorKind {
        match self {
            ExecutorArg::Local => ExecutorKind::Local,
            ExecutorArg::Ssh => ExecutorKind::Ssh,
            ExecutorArg::GithubActions => ExecutorKind::GithubActions,
        }
    }
}

/// Keeps `--executor <kind>` with run `run`.
fn remember(repo: &RepoInfo, run: &str, kind: ExecutorKind) -> Result<(), CommandError> {
    git_orchestra::run::Run::keep_executor(repo, run, kind).map_err(super::lifecycle_error)
}

/// Keeps where a run's packets run with the run when it was just created or `--executor`
/// was given, so that resuming it later does not depend on the configuration of that day.
pub(crate) fn keep(
    repo: &RepoInfo,
    prepared: &git_orchestra::engine::Prepared,
    given: bool,
    kind: ExecutorKind,
) -> Result<(), CommandError> {
    if given || prepared.created {
        remember(repo, &prepared.run.id, kind)?;
    }
    Ok(())
}

/// Returns where run `run`'s packets run: its `--executor`, else the configuration's.
pub(crate) fn kind_of(repo: &RepoInfo, config: &RepoConfig, run: Option<&str>) -> ExecutorKind {
    let kept = run
        .and_then(|r| git_orchestra::run::Run::settings_of(repo, r).ok())
        .and_then(|s| s.executor);
    kept.or(config.executor.kind).unwrap_or(ExecutorKind::Local)
}

/// Returns the executor of `kind` (`None` for local), or what is wrong with its configuration.
pub(crate) fn build(
    repo: &RepoInfo,
    config: &RepoConfig,
    kind: ExecutorKind,
) -> Result<Option<Box<dyn Executor>>, CommandError> {
    git_orchestra::crew::executor_of(config, repo, kind).map_err(|e| executor_error(e, kind))
}

/// Returns the command's error for a run's crew that could not be assembled, its executor
/// being of `kind`.
pub(crate) fn crew_error(e: CrewError, kind: ExecutorKind) -> CommandError {
    match e {
        CrewError::AgentCli(e) => {
            CommandError::user(e).hint("`git orchestra agents` lists the agent CLIs it knows")
        }
        CrewError::Executor(e) => executor_error(e, kind),
    }
}

/// Returns the command's error for an executor of `kind` whose configuration is incomplete.
fn executor_error(e: String, kind: ExecutorKind) -> CommandError {
    CommandError::user(e).hint(match kind {
        ExecutorKind::GithubActions => {
            "the user guide's executors chapter (docs/src/executors.md) shows the set-up"
        }
        _ => "the user guide's executors chapter (docs/src/executors.md) shows an [executor.ssh] table",
    })
}

/// Returns where the packets of a run started with `arg` (or found `existing`) run, checked:
/// its executor's configuration is complete.
pub(crate) fn choose(
    repo: &RepoInfo,
    config: &RepoConfig,
    arg: Option<ExecutorArg>,
    existing: Option<&git_orchestra::store::RunRecord>,
) -> Result<ExecutorKind, CommandError> {
    let kind = match arg {
        Some(e) => e.kind(),
        None => kind_of(repo, config, existing.map(|r| r.id.as_str())),
    };
    build(repo, config, kind)?;
    Ok(kind)
}

/// Returns where a new `start` run's packets run (`None` here), checked like `run`'s.
pub(crate) fn for_start(
    repo: &RepoInfo,
    config: &RepoConfig,
    arg: Option<ExecutorArg>,
) -> Result<Option<ExecutorKind>, CommandError> {
    let kind = arg
        .map(ExecutorArg::kind)
        .or(config.executor.kind)
        .unwrap_or(ExecutorKind::Local);
    build(repo, config, kind)?;
    Ok((kind != ExecutorKind::Local).then_some(kind))
}

/// Sets up where packets can run elsewhere.
#[derive(Debug, clap::Args)]
pub struct ExecutorArgs {
    #[command(subcommand)]
    command: ExecutorCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ExecutorCommand {
    Init(InitArgs),
}

/// Writes what an executor needs in the repository: for `github-actions`, the workflow
/// `.github/workflows/orchestra-packet.yml` (or `[executor.github-actions] workflow`) that
/// runs one packet per workflow run with `git orchestra packet exec`. Nothing is committed:
/// commit and push the file, add the secrets it names to the repository
/// (`gh secret set NAME`), then run with `--executor github-actions`.
#[derive(Debug, clap::Args)]
struct InitArgs {
    /// The executor to set up.
    #[arg(value_enum)]
    kind: InitKind,
    /// A repository secret the worker needs, given to the packet step as the variable of the
    /// same name (repeatable). Default: the key variables of the configured model profiles and
    /// those in this environment (`*_API_KEY`), else ANTHROPIC_API_KEY.
    #[arg(long = "secret", value_name = "NAME")]
    secrets: Vec<String>,
    /// The shell command of the step that installs git-orchestra (and the worker) on the
    /// runner.
    #[arg(long, value_name = "COMMAND")]
    install: Option<String>,
    /// Replace an existing workflow file.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum InitKind {
    /// GitHub Actions: one workflow run per packet.
    GithubActions,
}

/// Runs `executor <command>`.
pub fn cmd_executor(cwd: &std::path::Path, args: &ExecutorArgs) -> Result<(), CommandError> {
    let ExecutorCommand::Init(init) = &args.command;
    match init.kind {
        InitKind::GithubActions => init_actions(cwd, init),
    }
}

fn init_actions(cwd: &std::path::Path, args: &InitArgs) -> Result<(), CommandError> {
    use git_orchestra::executor::actions;
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    let workflow = config
        .executor
        .github_actions
        .workflow
        .clone()
        .unwrap_or_else(|| actions::DEFAULT_WORKFLOW.to_string());
    let mut secrets = args.secrets.clone();
    if secrets.is_empty() {
        secrets.extend(
            config
                .profiles
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        );
        secrets.extend(
            git_orchestra::exec::secret_env::stashed()
                .iter()
                .map(|(n, _)| n.clone()),
        );
        if secrets.is_empty() {
            secrets.push("ANTHROPIC_API_KEY".into());
        }
    }
    secrets.sort();
    secrets.dedup();
    if let Some(bad) = secrets.iter().find(|n| !is_secret_name(n)) {
        return Err(
            CommandError::user(format!("`{bad}` cannot be an Actions secret's name"))
                .hint("use letters, digits and underscores, not starting with a digit or GITHUB_"),
        );
    }
    actions::check_workflow_name(&workflow).map_err(CommandError::user)?;
    let rel = format!(".github/workflows/{workflow}");
    let path = repo.toplevel.join(&rel);
    // Whatever sits there counts, a dangling symlink too.
    if fs_err::symlink_metadata(&path).is_ok() && !args.force {
        return Err(CommandError::user(format!(
            "{} exists already",
            path.display()
        ))
        .hint("pass --force to replace it, or set [executor.github-actions] workflow to another name"));
    }
    let install = args
        .install
        .clone()
        .unwrap_or_else(|| actions::DEFAULT_INSTALL.to_string());
    if install.trim().is_empty() {
        return Err(CommandError::user("--install is empty")
            .hint("leave it out for the default (cargo install git-orchestra)"));
    }
    // The repository may ship `.github/workflows` or the file itself as a symlink to a file
    // elsewhere (`~/.bashrc`): the workflow is written only inside it, through no symlink.
    git_orchestra::confine::ConfinedRoot::open(&repo.toplevel)
        .and_then(|root| root.write(&rel, actions::workflow_text(&secrets, &install).as_bytes()))
        .map_err(|e| {
            CommandError::user(format!("refusing to write {rel}: {e}")).hint(
                "replace the symlink with a directory or file of the repository, or remove it",
            )
        })?;
    println!("wrote {}", path.display());
    println!("next:");
    println!(
        "  git add {} && git commit -m 'Run git-orchestra packets on GitHub Actions' && git push",
        path.strip_prefix(&repo.toplevel).unwrap_or(&path).display()
    );
    for name in &secrets {
        println!("  gh secret set {name}");
    }
    println!("  git orchestra run <plan> --worker-cmd '<command>' --executor github-actions");
    Ok(())
}

/// Returns true when `name` can name an Actions secret.
fn is_secret_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.to_ascii_uppercase().starts_with("GITHUB_")
}
