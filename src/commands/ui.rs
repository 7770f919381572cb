//! `git orchestra ui`: the local web view of this repository's runs, served until interrupted.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;
use git_orchestra::git::RepoInfo;

use super::CommandError;
use crate::web;

/// Serves a live view of the runs in the browser: watch packets and agents, read diffs and
/// comment on them, approve plans, answer agents, pause, resume, cancel and retry.
///
/// Prints the address and opens it when it can; each address carries a one-time code (the
/// printed one good for 10 minutes, the one given to the browser for one), so open it in the
/// browser you will use, once. The server listens on loopback only unless --listen says
/// otherwise.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// Only print the address; do not open a browser.
    #[arg(long)]
    no_open: bool,
    #[command(flatten)]
    listen: ListenArgs,
}

/// Where the web view listens.
#[derive(Debug, Args, Clone)]
pub struct ListenArgs {
    /// The address to listen on (default 127.0.0.1 on a free port). Anything other than a
    /// loopback address lets other machines reach the view (the one-time code still guards it).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
}

/// Starts the web view of `repo` and prints its address; `start --ui` shares it.
pub fn start_view(
    repo: &RepoInfo,
    listen: &ListenArgs,
    live: Arc<web::Live>,
) -> Result<web::Server, CommandError> {
    let config = super::load_config(repo)?;
    let addr = listen
        .listen
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: the web view listens on {addr}: other machines that reach this address can open it with its one-time code"
        );
    }
    // Resumes and retries asked for on the page run in a process of their own, which
    // outlives the view.
    let launcher = Arc::new(super::detach::Detached {
        toplevel: repo.toplevel.clone(),
        common_dir: repo.common_dir.clone(),
    });
    let server =
        web::serve(repo.clone(), config, addr, live, launcher).map_err(CommandError::user)?;
    eprintln!("web view: {}", server.url);
    Ok(server)
}

/// Runs `ui`.
pub fn cmd_ui(cwd: &Path, args: &UiArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let stop = git_orchestra::exec::install_signal_handlers();
    let server = start_view(&repo, &args.listen, Arc::new(web::Live::default()))?;
    // The URL on stdout too, alone on its line, for scripts.
    println!("{}", server.url);
    if !args.no_open {
        // Its own address: the one in the browser's command line is good for a minute.
        match server.browser_url() {
            Ok(url) => open_browser(&url),
            Err(e) => eprintln!("warning: {e}; open the address above"),
        }
    }
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// Opens `url` with the desktop's opener, when there is one; quietly does nothing otherwise.
fn open_browser(url: &str) {
    for opener in ["xdg-open", "open"] {
        let spawned = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut child) = spawned {
            std::thread::spawn(move || child.wait());
            return;
        }
    }
}
