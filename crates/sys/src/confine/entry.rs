//! What listing and metadata calls report about an entry.

use cap_std::fs::{FileType, Metadata};

/// The kind of a directory entry, never following a symlink to find it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A device, socket or pipe; such entries are listed but never opened.
    Other,
}

impl EntryKind {
    /// Returns the kind of an entry of type `ty`.
    pub(crate) fn of(ty: FileType) -> EntryKind {
        if ty.is_symlink() {
            EntryKind::Symlink
        } else if ty.is_dir() {
            EntryKind::Dir
        } else if ty.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DirEntryInfo {
    /// The entry's name; names that are not UTF-8 are shown lossily and cannot be opened by it.
    pub name: String,
    pub kind: EntryKind,
    /// The size in bytes (for a symlink, the length of its target).
    pub size: u64,
}

/// Facts about one path, describing the entry itself rather than a symlink's target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EntryInfo {
    /// The path, normalised (`a/./b/../c` becomes `a/c`; `.` for the root).
    pub path: String,
    pub kind: EntryKind,
    /// The size in bytes (for a symlink, the length of its target).
    pub size: u64,
    /// Where a symlink points, as written in the link; `None` for other kinds.
    pub symlink_target: Option<String>,
    /// True if and only if the entry is a file with an execute bit set.
    pub executable: bool,
}

impl EntryInfo {
    /// Returns the facts for the entry at `path` described by `meta`.
    pub(crate) fn new(path: String, meta: &Metadata, symlink_target: Option<String>) -> Self {
        use cap_std::fs::PermissionsExt;
        let kind = EntryKind::of(meta.file_type());
        EntryInfo {
            path,
            kind,
            size: meta.len(),
            symlink_target,
            executable: kind == EntryKind::File && meta.permissions().mode() & 0o111 != 0,
        }
    }
}
