//! Manual pages generated from the command-line definitions, kept beside the installed binary.
//!
//! git turns `git orchestra --help` into `git help orchestra`, which opens the manual page
//! `git-orchestra(1)`; `cargo install` copies only the binary. So the binary writes its pages
//! to `<prefix>/share/man/man1` when it runs from `<prefix>/bin` (where man-db looks for the
//! pages of every `PATH` entry's `bin/`), once per version, and `--help` works from then on.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

/// Returns every manual page: `git-orchestra.1` and one `git-orchestra-<command>.1` per
/// subcommand, as (file name, roff text).
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let top = super::Cli::command();
    let version = top.get_version().unwrap_or_default().to_string();
    let mut out = Vec::new();
    let mut render = |name: String, cmd: clap::Command| {
        let mut buf = Vec::new();
        let cmd = cmd.name(name.clone()).version(version.clone());
        if clap_mangen::Man::new(cmd).render(&mut buf).is_ok() {
            out.push((format!("{name}.1"), buf));
        }
    };
    for sub in top.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(format!("git-orchestra-{}", sub.get_name()), sub.clone());
    }
    render("git-orchestra".to_string(), top);
    out
}

/// Returns where the pages belong for a binary at `exe`: `<prefix>/share/man/man1` when the
/// binary sits in a `bin` directory, else `None` (a development build).
fn man_dir(exe: &Path) -> Option<PathBuf> {
    let bin = exe.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    Some(bin.parent()?.join("share").join("man").join("man1"))
}

/// Writes the manual pages beside the running binary unless this version's are there already.
///
/// Best effort: a read-only prefix or any other failure is logged and ignored, since the
/// command the user asked for matters more than its manual.
pub fn install_beside_binary() {
    let Some(dir) = std::env::current_exe().ok().as_deref().and_then(man_dir) else {
        return;
    };
    let stamp = format!("git-orchestra {}", env!("CARGO_PKG_VERSION"));
    let main_page = dir.join("git-orchestra.1");
    if std::fs::read(&main_page)
        .is_ok_and(|text| String::from_utf8_lossy(&text).contains(stamp.as_str()))
    {
        return;
    }
    if let Err(e) = write_pages(&dir) {
        tracing::debug!("could not write the manual pages to {}: {e}", dir.display());
    }
}

/// Writes every page into `dir`, each through a temporary file renamed into place.
pub fn write_pages(dir: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(dir)?;
    for (name, text) in pages() {
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let mut file = fs_err::File::create(&tmp)?;
        file.write_all(&text)?;
        drop(file);
        fs_err::rename(&tmp, dir.join(&name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_every_command_and_name_the_version() {
        let pages = pages();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"git-orchestra.1"), "{names:?}");
        assert!(names.contains(&"git-orchestra-merge.1"), "{names:?}");
        assert!(names.contains(&"git-orchestra-start.1"), "{names:?}");
        let main = String::from_utf8_lossy(
            &pages
                .iter()
                .find(|(n, _)| n == "git-orchestra.1")
                .map(|(_, t)| t.clone())
                .unwrap_or_default(),
        )
        .into_owned();
        assert!(
            main.contains(&format!("git-orchestra {}", env!("CARGO_PKG_VERSION"))),
            "{main}"
        );
        assert!(main.contains("Runs several coding agents"), "{main}");
    }

    #[test]
    fn only_a_binary_in_a_bin_directory_gets_pages() {
        assert_eq!(
            man_dir(Path::new("/opt/x/bin/git-orchestra")),
            Some(PathBuf::from("/opt/x/share/man/man1"))
        );
        assert_eq!(man_dir(Path::new("/src/target/debug/git-orchestra")), None);
    }
}
