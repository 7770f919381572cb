//! Between the protocol's terms and the graph's: `file://` URIs and repository-relative paths,
//! zero-based positions counted in UTF-16 or UTF-8 units and one-based byte columns, and the
//! graph's definition kinds as symbol kinds.

use std::path::{Path, PathBuf};

use lsp_types::{PositionEncodingKind, SymbolKind, Uri};

/// How the client counts characters within a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

impl Encoding {
    /// The protocol's name of the encoding.
    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }
    }

    /// Returns the protocol column of byte offset `byte` of `line` (clamped to the line).
    pub fn column(self, line: &str, byte: usize) -> u32 {
        let mut end = byte.min(line.len());
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        match self {
            Encoding::Utf8 => end as u32,
            Encoding::Utf16 => line[..end].encode_utf16().count() as u32,
        }
    }

    /// Returns the byte offset within `line` of protocol column `col` (clamped to the line).
    pub fn byte(self, line: &str, col: u32) -> usize {
        match self {
            Encoding::Utf8 => {
                let mut b = (col as usize).min(line.len());
                while !line.is_char_boundary(b) {
                    b -= 1;
                }
                b
            }
            Encoding::Utf16 => {
                let mut units = 0u32;
                for (i, c) in line.char_indices() {
                    if units >= col {
                        return i;
                    }
                    units += c.len_utf16() as u32;
                }
                line.len()
            }
        }
    }
}

/// Returns line `line` (zero-based) of `text` without its end of line; empty past the end.
pub fn line_of(text: &str, line: u32) -> &str {
    text.split('\n')
        .nth(line as usize)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or("")
}

/// Returns the byte offset in `text` of a protocol position; past the end, the end.
pub fn offset_of(text: &str, enc: Encoding, line: u32, col: u32) -> usize {
    let mut start = 0usize;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let l = text[start..end]
        .strip_suffix('\r')
        .unwrap_or(&text[start..end]);
    start + enc.byte(l, col)
}

/// Returns the path a `file://` URI names, percent-decoded; `None` for other schemes.
pub fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path` is not local; `file:///path` is.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// Returns the `file://` URI of an absolute path, percent-encoding what a URI path may not hold.
pub fn path_uri(path: &Path) -> Uri {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s.parse().unwrap_or_else(|_| {
        "file:///"
            .parse()
            .unwrap_or_else(|_| unreachable!("a constant URI parses"))
    })
}

/// A worktree's root as given and as the file system resolves it, to map URIs both ways.
#[derive(Debug, Clone)]
pub struct Root {
    given: PathBuf,
    real: PathBuf,
}

impl Root {
    pub fn new(root: &Path) -> Root {
        Root {
            given: root.to_path_buf(),
            real: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
        }
    }

    /// Returns the repository-relative path `uri` names, if it lies in the worktree.
    pub fn relative(&self, uri: &str) -> Option<String> {
        let path = uri_path(uri)?;
        let rel = path
            .strip_prefix(&self.given)
            .or_else(|_| path.strip_prefix(&self.real))
            .map(Path::to_path_buf)
            .ok()
            .or_else(|| {
                // A path through a symbolic link to the worktree: resolve its directory.
                let dir = path.parent()?.canonicalize().ok()?;
                let rel = dir.strip_prefix(&self.real).ok()?;
                Some(rel.join(path.file_name()?))
            })?;
        let rel = rel.to_str()?;
        (!rel.is_empty() && !rel.split('/').any(|c| c == "..")).then(|| rel.to_string())
    }

    /// Returns the URI of repository-relative `path`.
    pub fn uri(&self, path: &str) -> Uri {
        path_uri(&self.given.join(path))
    }
}

/// Returns the symbol kind of a graph definition kind.
pub fn symbol_kind(kind: &str) -> SymbolKind {
    match kind {
        "function" => SymbolKind::FUNCTION,
        "method" | "overload" => SymbolKind::METHOD,
        "class" => SymbolKind::CLASS,
        "struct" => SymbolKind::STRUCT,
        "interface" | "trait" => SymbolKind::INTERFACE,
        "enum" => SymbolKind::ENUM,
        "module" => SymbolKind::MODULE,
        "constant" => SymbolKind::CONSTANT,
        "field" => SymbolKind::FIELD,
        "type_parameter" => SymbolKind::TYPE_PARAMETER,
        "type" => SymbolKind::CLASS,
        "macro" => SymbolKind::FUNCTION,
        "impl" => SymbolKind::NAMESPACE,
        _ => SymbolKind::VARIABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_between_bytes_and_utf16() {
        let line = "s = 'é𝄞' + name";
        let b = line.find("name").unwrap();
        let c = Encoding::Utf16.column(line, b);
        assert_eq!(c, 12);
        assert_eq!(Encoding::Utf16.byte(line, c), b);
        assert_eq!(Encoding::Utf8.column(line, b), b as u32);
        assert_eq!(Encoding::Utf16.byte(line, 99), line.len());
    }

    #[test]
    fn uris_map_to_paths_and_back() {
        let dir = std::env::temp_dir();
        let root = Root::new(&dir);
        let uri = root.uri("a b/ü.py");
        assert!(
            uri.as_str().ends_with("/a%20b/%C3%BC.py"),
            "{}",
            uri.as_str()
        );
        assert_eq!(root.relative(uri.as_str()).as_deref(), Some("a b/ü.py"));
        assert_eq!(root.relative("file:///elsewhere/x.py"), None);
        assert_eq!(root.relative("untitled:1"), None);
    }

    #[test]
    fn offsets_follow_lines() {
        let text = "ab\r\ncé\nxyz";
        assert_eq!(offset_of(text, Encoding::Utf16, 1, 2), 4 + "cé".len());
        assert_eq!(offset_of(text, Encoding::Utf16, 2, 1), text.len() - 2);
        assert_eq!(offset_of(text, Encoding::Utf16, 9, 0), text.len());
        assert_eq!(line_of(text, 0), "ab");
    }
}
