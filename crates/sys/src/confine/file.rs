//! Reading a configuration or context file the engine is given — `.orchestra/config.toml`, the
//! user's configuration, role files, `.mcp.json`, `ORCHESTRA.md`, manifests and CI workflows —
//! without trusting what sits at its path.
//!
//! A cloned repository can put a named pipe there (opening it for reading blocks until someone
//! writes, so every command would hang), a device, a file of gigabytes, or a symlink to a file
//! elsewhere on the machine (`~/.bashrc`, `/etc/passwd`) whose text would then be parsed and
//! quoted in messages or prompts. [`read_text_file`] refuses each with a message saying what
//! is there and what to do.

use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Most bytes read of a configuration, role or context file.
pub const MAX_TEXT_FILE: u64 = 4 << 20;

/// Returns the text of the file at `path`: `NotFound` when nothing is there, and an error
/// naming what is wrong when it is not a regular file, holds more than `max` bytes or is not
/// UTF-8, or — with `within` (a repository's top directory) — when it resolves outside
/// `within`.
///
/// The kind of file is checked before it is opened and again on the open descriptor, which is
/// opened without blocking, so a pipe swapped in between cannot block the read either; the
/// place checked is the one the descriptor refers to.
pub fn read_text_file(path: &Path, within: Option<&Path>, max: u64) -> io::Result<String> {
    check_kind(&std::fs::metadata(path)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    check_kind(&meta)?;
    if meta.len() > max {
        return Err(too_large(meta.len(), max));
    }
    if let Some(root) = within {
        check_inside(&file, path, root)?;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64, max));
    }
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "it is not UTF-8 text; save it as UTF-8",
        )
    })
}

/// Returns an error unless `meta` describes a regular file.
fn check_kind(meta: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let ty = meta.file_type();
    let what = if ty.is_file() {
        return Ok(());
    } else if ty.is_dir() {
        "a directory"
    } else if ty.is_fifo() {
        "a named pipe (FIFO)"
    } else if ty.is_socket() {
        "a socket"
    } else if ty.is_char_device() || ty.is_block_device() {
        "a device"
    } else {
        "a special file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file; replace it with a regular file or remove it"),
    ))
}

fn too_large(len: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("it holds {len} bytes, more than the {max} read of such a file; make it smaller"),
    )
}

/// Returns an error when the file open as `file` (opened at `path`) lies outside `root`.
fn check_inside(file: &std::fs::File, path: &Path, root: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let root = std::fs::canonicalize(root)?;
    // What the descriptor refers to, so a link changed after the open cannot mislead the
    // check; without /proc, the path resolved now.
    let real: PathBuf = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .or_else(|_| std::fs::canonicalize(path))?;
    if real.starts_with(&root) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "it resolves to {}, outside the repository {}: a repository's files are read only inside it; replace the symlink with the file itself",
            real.display(),
            root.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_large_files_and_links_out_are_refused_regular_files_read() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, out) = (tmp.path().join("repo"), tmp.path().join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(&out, "secret").unwrap();
        std::fs::write(root.join("ok.toml"), "a = 1").unwrap();
        assert_eq!(
            read_text_file(&root.join("ok.toml"), Some(&root), 10).unwrap(),
            "a = 1"
        );
        let big = read_text_file(&root.join("ok.toml"), Some(&root), 3).unwrap_err();
        assert!(big.to_string().contains("more than the 3"), "{big}");
        let missing = read_text_file(&root.join("none"), Some(&root), 10).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let fifo = root.join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let err = read_text_file(&fifo, None, 10).unwrap_err();
        assert!(err.to_string().contains("named pipe"), "{err}");
        std::os::unix::fs::symlink(&out, root.join("link")).unwrap();
        let err = read_text_file(&root.join("link"), Some(&root), 10).unwrap_err();
        assert!(err.to_string().contains("outside the repository"), "{err}");
        assert_eq!(
            read_text_file(&root.join("link"), None, 10).unwrap(),
            "secret"
        );
        std::os::unix::fs::symlink("ok.toml", root.join("inner")).unwrap();
        assert_eq!(
            read_text_file(&root.join("inner"), Some(&root), 10).unwrap(),
            "a = 1"
        );
    }
}
