//! The `github-actions` executor: each job is one run of a `workflow_dispatch` workflow
//! (`git orchestra executor init github-actions` writes it) whose runner calls
//! `git orchestra packet exec <run> <packet> --remote <url>`.
//!
//! For each job the coordinator pushes the job, the start commit and (for a fix round) the
//! packet branch to the forge remote, dispatches the workflow through GitHub's REST API with
//! the run, the packet and the job's name (`<attempt>.<round>`) as inputs, follows the
//! workflow run until it completes, and fetches the branch and the events ref back. The
//! workflow's `run-name` carries the job's name, so a coordinator that was stopped finds the
//! run it dispatched (or the result it pushed) instead of dispatching again. Model keys reach
//! the runner only as the repository's Actions secrets, which the workflow maps to its
//! environment; nothing secret is in the inputs, the job or the refs.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use orchestra_core::config::ActionsConfig;
use orchestra_core::engine::remote::{
    Dispatch, Dispatched, Executor, Line, base_ref, events_ref, job_ref, parse_lines, result_of,
};
use orchestra_core::forge::{Api, ForgeError, ForgeKind, ForgeSettings, find_token};
use orchestra_git::git::RepoInfo;

/// The workflow file's name unless `[executor.github-actions] workflow` says.
pub const DEFAULT_WORKFLOW: &str = "orchestra-packet.yml";
/// Time between two looks at a workflow run unless `poll_ms` says.
const DEFAULT_POLL: Duration = Duration::from_secs(10);
/// How long a dispatched run may take to show up in the runs list.
const FIND_RUN_WITHIN: Duration = Duration::from_secs(120);

/// Runs packets as GitHub Actions workflow runs.
pub struct ActionsExecutor {
    api: Api,
    /// `/repos/<owner>/<name>`.
    repo_path: String,
    slug: String,
    workflow: String,
    git_ref: String,
    /// The git remote jobs are pushed to and results fetched from (a name or a URL).
    remote: String,
    /// The `remote` input of a dispatch: empty for the repository on the forge, whose URL
    /// the workflow knows itself, or the path of the forge remote when that is on disk.
    runner_remote: String,
    poll: Duration,
}

/// A workflow run as the API reports it.
#[derive(Debug, Clone)]
struct WorkflowRun {
    id: u64,
    title: String,
    completed: bool,
    conclusion: String,
    url: String,
}

impl WorkflowRun {
    fn parse(v: &Value) -> Option<WorkflowRun> {
        Some(WorkflowRun {
            id: v.get("id")?.as_u64()?,
            title: v
                .get("display_title")
                .or_else(|| v.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            completed: v.get("status").and_then(Value::as_str) == Some("completed"),
            conclusion: v
                .get("conclusion")
                .and_then(Value::as_str)
                .unwrap_or("none")
                .to_string(),
            url: v
                .get("html_url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    fn place(&self) -> String {
        if self.url.is_empty() {
            format!("workflow run {}", self.id)
        } else {
            self.url.clone()
        }
    }
}

/// Returns the title the workflow's `run-name` gives the run of `job` (see the workflow
/// `executor init` writes), which is how a dispatched run is found again.
pub fn run_title(run: &str, packet: &str, attempt: u32, round: u32) -> String {
    format!("orchestra {run}/{packet} job {attempt}.{round}")
}

/// The install step's command unless `executor init --install` gives one.
pub const DEFAULT_INSTALL: &str =
    "command -v git-orchestra >/dev/null || cargo install --locked git-orchestra";

/// Returns the workflow file `git orchestra executor init github-actions` writes: one job that
/// installs git-orchestra (`install`, a shell command) and runs `packet exec` with the
/// repository's Actions secrets `secrets` as environment variables. Inputs reach the shell
/// only through the environment, never spliced into the script, and the `remote` input is
/// taken only when it is the repository's own URL or a path on the runner, so a dispatch
/// cannot send the repository's token elsewhere.
pub fn workflow_text(secrets: &[String], install: &str) -> String {
    let mut env = String::new();
    for name in secrets {
        env.push_str(&format!("          {name}: ${{{{ secrets.{name} }}}}\n"));
    }
    let install = install.replace('\n', "\n          ");
    format!(
        r#"# One packet of a git-orchestra run: `git orchestra run … --executor github-actions`
# dispatches this workflow once per packet (and fix round), follows the run, and fetches the
# packet branch and its events from the repository. Written by
# `git orchestra executor init github-actions`; adapt the install step (and install the
# worker command your runs use) as the project needs.
name: orchestra packet
run-name: "orchestra ${{{{ inputs.run }}}}/${{{{ inputs.packet }}}} job ${{{{ inputs.job }}}}"
on:
  workflow_dispatch:
    inputs:
      run:
        description: The run's id
        required: true
        type: string
      packet:
        description: The packet's id
        required: true
        type: string
      job:
        description: Attempt and round (the run's title names them)
        required: true
        type: string
      remote:
        description: Where jobs and results travel (default this repository; only its own URL or a path on the runner is taken)
        required: false
        type: string
        default: ""
permissions:
  contents: write
concurrency:
  group: orchestra-${{{{ inputs.run }}}}-${{{{ inputs.packet }}}}
  cancel-in-progress: false
jobs:
  packet:
    runs-on: ubuntu-latest
    timeout-minutes: 180
    steps:
      - name: Install git-orchestra
        run: |
          {install}
      - name: Work the packet
        env:
          RUN: ${{{{ inputs.run }}}}
          PACKET: ${{{{ inputs.packet }}}}
          REMOTE: ${{{{ inputs.remote }}}}
          # Fetches the job and pushes the results; never given to the worker.
          ORCHESTRA_REMOTE_TOKEN: ${{{{ github.token }}}}
{env}        run: |
          # The token goes where the results are pushed: only to this repository (or a
          # repository on the runner's own disk), whatever the input says.
          own="$GITHUB_SERVER_URL/$GITHUB_REPOSITORY"
          case "$REMOTE" in
            "" | "$own" | "$own.git") remote="$own.git" ;;
            /*) remote="$REMOTE" ;;
            *)
              echo "::error::the remote input is not this repository ($own); refusing to push to it with the repository's token"
              exit 1
              ;;
          esac
          git orchestra packet exec "$RUN" "$PACKET" --remote "$remote" --repo "$RUNNER_TEMP/orchestra-work"
"#
    )
}

/// Returns an error unless `workflow` (from `[executor.github-actions] workflow`) is the file
/// name of a workflow: no directory, ending in `.yml` or `.yaml`.
pub fn check_workflow_name(workflow: &str) -> Result<(), String> {
    if workflow.is_empty()
        || workflow.contains('/')
        || workflow.contains('\\')
        || workflow.starts_with('.')
        || !(workflow.ends_with(".yml") || workflow.ends_with(".yaml"))
    {
        return Err(format!(
            "`[executor.github-actions] workflow` is `{workflow}`; give the file name of a workflow in .github/workflows/ (`{DEFAULT_WORKFLOW}`)"
        ));
    }
    Ok(())
}

/// Returns the `remote` input of a dispatch: empty (the workflow then uses its own
/// repository's URL) when the runners' remote is this repository on the forge, the path when
/// the forge remote is a repository on disk (the runner's own), and an error for any other
/// place, since the runner pushes there with the repository's token.
fn runner_remote(
    config: &ActionsConfig,
    settings: &ForgeSettings,
    owner: &str,
    name: &str,
) -> Result<String, String> {
    let forge_url = settings
        .remote_url
        .clone()
        .ok_or_else(|| format!("there is no remote `{}`", settings.remote))?;
    let wanted = config
        .remote_url
        .clone()
        .unwrap_or_else(|| forge_url.clone());
    let parsed = orchestra_core::forge::parse_remote_url(&wanted);
    let forge_host = orchestra_core::forge::parse_remote_url(&forge_url).and_then(|u| u.host);
    match parsed {
        Some(u) if u.host.is_none() && wanted == forge_url => Ok(wanted),
        Some(u)
            if u.host.is_some()
                && u.host == forge_host
                && u.path.eq_ignore_ascii_case(&format!("{owner}/{name}")) =>
        {
            Ok(String::new())
        }
        _ => Err(format!(
            "`[executor.github-actions] remote_url` is `{wanted}`, which is not the repository {owner}/{name} of remote `{}` ({forge_url}); runners push with the repository's token, so they push only to the repository itself: remove remote_url",
            settings.remote
        )),
    }
}

impl ActionsExecutor {
    /// Returns the executor `[executor.github-actions]` and the forge settings of `repo`
    /// describe, or what is missing.
    pub fn new(config: &ActionsConfig, repo: &RepoInfo) -> Result<ActionsExecutor, String> {
        let settings = ForgeSettings::load(&repo.git(), None).map_err(|e| e.to_string())?;
        let (kind, api_url, owner, name) = settings.resolve()?;
        if kind != ForgeKind::GitHub {
            return Err(format!(
                "the github-actions executor needs a GitHub repository, and remote `{}` is on {}",
                settings.remote,
                kind.as_str()
            ));
        }
        let token = find_token(kind, &settings).ok_or(
            "no GitHub token to dispatch workflow runs with: set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`",
        )?;
        let workflow = config
            .workflow
            .clone()
            .unwrap_or_else(|| DEFAULT_WORKFLOW.to_string());
        check_workflow_name(&workflow)?;
        let git_ref = match (&config.git_ref, &repo.branch) {
            (Some(r), _) if !r.trim().is_empty() => r.trim().to_string(),
            (_, Some(b)) => b.clone(),
            _ => {
                return Err(
                    "HEAD is detached, so there is no branch whose workflow file to run; set `[executor.github-actions] ref = \"main\"`"
                        .into(),
                );
            }
        };
        let runner_remote = runner_remote(config, &settings, &owner, &name)?;
        Ok(ActionsExecutor {
            api: Api::new(
                &api_url,
                Some(token),
                "Bearer",
                "application/vnd.github+json",
                settings.writes_per_minute.unwrap_or(60),
            ),
            repo_path: format!("/repos/{owner}/{name}"),
            slug: format!("{owner}/{name}"),
            workflow,
            git_ref,
            remote: settings.remote,
            runner_remote,
            poll: config
                .poll_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_POLL),
        })
    }

    fn workflow_path(&self) -> String {
        format!("{}/actions/workflows/{}", self.repo_path, self.workflow)
    }

    /// Returns the newest workflow runs of the workflow that were dispatched.
    fn dispatched_runs(&self) -> Result<Vec<WorkflowRun>, ForgeError> {
        let listed = self.api.request(
            "GET",
            &format!(
                "{}/runs?event=workflow_dispatch&per_page=100",
                self.workflow_path()
            ),
            None,
        )?;
        Ok(listed
            .get("workflow_runs")
            .and_then(Value::as_array)
            .map(|runs| runs.iter().filter_map(WorkflowRun::parse).collect())
            .unwrap_or_default())
    }

    /// Returns the run titled `title` that has not completed, if there is one.
    fn running(&self, title: &str) -> Result<Option<WorkflowRun>, ForgeError> {
        Ok(self
            .dispatched_runs()?
            .into_iter()
            .find(|r| r.title == title && !r.completed))
    }

    /// Dispatches the workflow for `d`'s job and returns its run.
    fn start(&self, d: &Dispatch<'_>, title: &str) -> Result<WorkflowRun, String> {
        let job = d.job;
        let answer = self
            .api
            .request(
                "POST",
                &format!("{}/dispatches", self.workflow_path()),
                Some(&json!({
                    "ref": self.git_ref,
                    "inputs": {
                        "run": job.run,
                        "packet": job.packet.id,
                        "job": format!("{}.{}", job.attempt, job.round),
                        "remote": self.runner_remote,
                    },
                    "return_run_details": true,
                })),
            )
            .map_err(|e| format!("cannot dispatch workflow {}: {e}", self.workflow))?;
        if let Some(id) = answer.get("workflow_run_id").and_then(Value::as_u64) {
            return Ok(WorkflowRun {
                id,
                title: title.to_string(),
                completed: false,
                conclusion: "none".into(),
                url: answer
                    .get("html_url")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        // A forge that answers the dispatch without the run: find it by its title.
        let since = Instant::now();
        loop {
            let found = self
                .dispatched_runs()
                .map_err(|e| format!("cannot list workflow runs: {e}"))?
                .into_iter()
                .find(|r| r.title == title);
            if let Some(run) = found {
                return Ok(run);
            }
            if since.elapsed() > FIND_RUN_WITHIN || d.stop.load(Ordering::SeqCst) {
                return Err(format!(
                    "workflow {} was dispatched, but no run titled `{title}` showed up within {} s; does its `run-name` follow the one `git orchestra executor init github-actions` writes?",
                    self.workflow,
                    FIND_RUN_WITHIN.as_secs()
                ));
            }
            std::thread::sleep(self.poll);
        }
    }

    /// Waits for `run` to complete; `Err` when the run stops or times out first.
    fn follow(&self, d: &Dispatch<'_>, mut run: WorkflowRun) -> Result<WorkflowRun, String> {
        let started = Instant::now();
        let path = format!("{}/actions/runs/{}", self.repo_path, run.id);
        let mut failures = 0;
        while !run.completed {
            if d.stop.load(Ordering::SeqCst) {
                // The workflow run goes on; resuming the run finds it, or its result.
                return Err(format!("stopped while {} ran", run.place()));
            }
            if started.elapsed() > d.timeout {
                let _ = self.api.request("POST", &format!("{path}/cancel"), None);
                return Err(format!(
                    "{} did not complete within {} s and was cancelled",
                    run.place(),
                    d.timeout.as_secs()
                ));
            }
            std::thread::sleep(self.poll);
            match self.api.request("GET", &path, None) {
                Ok(v) => {
                    failures = 0;
                    if let Some(now) = WorkflowRun::parse(&v) {
                        run = WorkflowRun {
                            url: if now.url.is_empty() { run.url } else { now.url },
                            title: run.title,
                            ..now
                        };
                    }
                }
                // A forge that does not answer for a while is waited out, within reason.
                Err(e) => {
                    failures += 1;
                    if failures > 5 {
                        return Err(format!("cannot follow {}: {e}", run.place()));
                    }
                }
            }
        }
        Ok(run)
    }

    /// Fetches the packet's events and branch from the remote and returns the lines when they
    /// hold the job's result.
    fn fetch_result(&self, d: &Dispatch<'_>) -> Option<Vec<Line>> {
        let git = d.repo.git();
        let (id, job) = (&d.job.packet.id, d.job);
        let events = events_ref(&job.run, id);
        let branch = format!("refs/heads/{}", job.branch);
        let listed = git.remote_refs(&self.remote, &events).ok()?;
        if !listed.iter().any(|(n, _)| *n == events) {
            return None;
        }
        git.fetch_refs(&self.remote, &[format!("+{events}:{events}")])
            .ok()?;
        let lines = parse_lines(&git.read_blob_ref(&events).ok()??);
        result_of(&lines, job.attempt, job.round)?;
        // Only a job's result brings its branch: until then the branch here is the newer.
        git.fetch_refs(&self.remote, &[format!("+{branch}:{branch}")])
            .ok()?;
        Some(lines)
    }

    /// Pushes the job, its start and (for a fix round) the packet branch to the remote.
    fn push_job(&self, d: &Dispatch<'_>) -> Result<(), String> {
        let git = d.repo.git();
        let (id, job) = (&d.job.packet.id, d.job);
        let text = serde_json::to_vec(job).map_err(|e| e.to_string())?;
        let (jobs, base) = (job_ref(&job.run, id), base_ref(&job.run, id));
        git.write_blob_ref(&jobs, &text)
            .and_then(|_| git.set_ref(&base, &job.start))
            .map_err(|e| format!("cannot write the job: {e}"))?;
        let mut specs = vec![format!("+{jobs}:{jobs}"), format!("+{base}:{base}")];
        if d.with_branch {
            let branch = format!("refs/heads/{}", job.branch);
            specs.push(format!("+{branch}:{branch}"));
        }
        git.push(&self.remote, &specs)
            .map_err(|e| format!("cannot push the job to `{}`: {e}", self.remote))
    }
}

impl Executor for ActionsExecutor {
    fn kind(&self) -> &'static str {
        "github-actions"
    }

    fn places(&self) -> Vec<String> {
        vec![format!(
            "{} workflow {} on {}",
            self.slug, self.workflow, self.git_ref
        )]
    }

    fn dispatch(&self, d: &Dispatch<'_>) -> Result<Dispatched, String> {
        if let Some(lines) = orchestra_core::engine::remote::earlier_result(d) {
            return Ok(Dispatched {
                host: "an earlier dispatch".into(),
                lines,
            });
        }
        let job = d.job;
        let title = run_title(&job.run, &job.packet.id, job.attempt, job.round);
        // What a coordinator stopped before may have left: a result, or a run still going.
        if let Some(lines) = self.fetch_result(d) {
            return Ok(Dispatched {
                host: "an earlier workflow run".into(),
                lines,
            });
        }
        let running = self
            .running(&title)
            .map_err(|e| format!("cannot list workflow runs: {e}"))?;
        let run = match running {
            Some(run) => run,
            None => {
                self.push_job(d)?;
                self.start(d, &title)?
            }
        };
        if !(d.on_host)(&run.place()) {
            return Err("the journal could not be written".into());
        }
        let run = self.follow(d, run)?;
        match self.fetch_result(d) {
            Some(lines) => Ok(Dispatched {
                host: run.place(),
                lines,
            }),
            None => Err(format!(
                "{} completed ({}) without pushing a result for job {}.{} to {}",
                run.place(),
                run.conclusion,
                job.attempt,
                job.round,
                if self.runner_remote.is_empty() {
                    self.slug.clone()
                } else {
                    format!("`{}`", self.runner_remote)
                }
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatches_name_no_remote_but_the_forge_repository_or_its_path() {
        let settings = |url: &str| ForgeSettings {
            remote: "origin".into(),
            remote_url: Some(url.into()),
            ..ForgeSettings::default()
        };
        let config = |url: Option<&str>| ActionsConfig {
            remote_url: url.map(str::to_string),
            ..ActionsConfig::default()
        };
        let pick = |forge: &str, given: Option<&str>| {
            runner_remote(&config(given), &settings(forge), "acme", "widgets")
        };
        // The workflow's own URL serves, so no URL goes in the dispatch.
        assert_eq!(pick("git@github.com:acme/widgets.git", None).unwrap(), "");
        let https = Some("https://github.com/Acme/widgets.git");
        assert_eq!(pick("git@github.com:acme/widgets.git", https).unwrap(), "");
        assert_eq!(pick("/srv/widgets.git", None).unwrap(), "/srv/widgets.git");
        for other in [
            "https://evil.example/acme/widgets.git",
            "https://github.com/mallory/widgets.git",
            "/srv/elsewhere.git",
            "ext::sh -c x",
        ] {
            let err = pick("git@github.com:acme/widgets.git", Some(other)).unwrap_err();
            assert!(err.contains("remote_url") && err.contains(other), "{err}");
        }
        assert!(pick("/srv/widgets.git", Some("/srv/elsewhere.git")).is_err());
        assert!(check_workflow_name("../x.yml").is_err());
        assert!(check_workflow_name("ok.yaml").is_ok());
    }

    #[test]
    fn runs_parse_from_the_api_shape_and_titles_name_the_job() {
        let v = json!({
            "id": 42, "display_title": "orchestra r1/p1 job 1.0", "status": "in_progress",
            "conclusion": null, "html_url": "https://github.com/o/n/actions/runs/42"
        });
        let run = WorkflowRun::parse(&v).unwrap();
        assert_eq!(run.id, 42);
        assert!(!run.completed);
        assert_eq!(run.title, run_title("r1", "p1", 1, 0));
        assert_eq!(run.place(), "https://github.com/o/n/actions/runs/42");
        let done =
            WorkflowRun::parse(&json!({"id": 7, "status": "completed", "conclusion": "failure"}))
                .unwrap();
        assert!(done.completed);
        assert_eq!(done.conclusion, "failure");
        assert_eq!(done.place(), "workflow run 7");
        assert!(WorkflowRun::parse(&json!({"status": "completed"})).is_none());
    }
}
