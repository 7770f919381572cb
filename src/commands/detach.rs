//! How the web view starts a process that drives a run on its own: this program, run again
//! detached (`git orchestra resume <run>`), its output in the run's directory.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use git_orchestra::run::{Launch, Launched, Verb};

/// Starts `git orchestra <verb> <run>` in the repository at `toplevel`, in its own process
/// group so it outlives the view that asked for it.
pub struct Detached {
    /// The repository's working tree.
    pub toplevel: PathBuf,
    /// Its common git directory, under which each run's directory is.
    pub common_dir: PathBuf,
}

impl Launch for Detached {
    fn launch(&self, run: &str, verb: Verb) -> Result<Launched, String> {
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        let dir = git_orchestra::exec::RunDir::new(&self.common_dir, run);
        let log_path = dir.ui_log(verb.as_str());
        let cannot_write = || format!("cannot write {}", log_path.display());
        let log = fs_err::create_dir_all(dir.path())
            .and_then(|()| fs_err::File::create(&log_path))
            .map_err(|_| cannot_write())?;
        let err = log.file().try_clone().map_err(|_| cannot_write())?;
        let mut child = Command::new(exe)
            .arg("-C")
            .arg(&self.toplevel)
            .args([verb.as_str(), run])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.into_parts().0))
            .stderr(Stdio::from(err))
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", verb.as_str()))?;
        std::thread::spawn(move || child.wait());
        Ok(Launched {
            message: format!(
                "`git orchestra {} {run}` runs now; its output goes to {}",
                verb.as_str(),
                log_path.display()
            ),
        })
    }
}
