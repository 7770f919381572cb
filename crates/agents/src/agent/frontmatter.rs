//! The YAML subset agent files use in their front matter: `key: value`, inline lists
//! `[a, "b"]`, comma-separated strings, and block lists (`- item` lines).
//!
//! A full YAML parser would be a large dependency for a header of a dozen scalar keys; this
//! reader accepts exactly what agent files in the wild (ours, `.claude/agents`,
//! `.github/agents`) use and reports the line of anything else.

/// A front-matter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Scalar(String),
    List(Vec<String>),
}

impl Value {
    /// Returns the value as a list: a list as is, a scalar split on commas.
    pub fn to_list(&self) -> Vec<String> {
        match self {
            Value::List(l) => l.clone(),
            Value::Scalar(s) => s
                .split(',')
                .map(|t| unquote(t.trim()))
                .filter(|t| !t.is_empty())
                .collect(),
        }
    }

    /// Returns the value as one string (a list joined with `, `).
    pub fn to_scalar(&self) -> String {
        match self {
            Value::Scalar(s) => s.clone(),
            Value::List(l) => l.join(", "),
        }
    }
}

/// Splits `text` into its front-matter entries (in order) and its body.
///
/// A file without a leading `---` line has no front matter: all of it is body.
pub fn split(text: &str) -> Result<(Vec<(String, Value)>, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Ok((Vec::new(), text.to_string()));
    }
    let mut entries: Vec<(String, Value)> = Vec::new();
    let mut closed = false;
    let mut consumed = 1;
    for (n, line) in lines.by_ref().enumerate() {
        consumed += 1;
        let lineno = n + 2;
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or(trimmed.strip_prefix('-').filter(|r| r.is_empty()))
        {
            match entries.last_mut() {
                Some((_, Value::List(list))) => list.push(unquote(item.trim())),
                Some((_, v @ Value::Scalar(_))) if v.to_scalar().is_empty() => {
                    *v = Value::List(vec![unquote(item.trim())]);
                }
                _ => return Err(format!("line {lineno}: a list item without a key above it")),
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // Continuation of a folded scalar (e.g. a long description).
            if let Some((_, Value::Scalar(s))) = entries.last_mut() {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(trimmed);
                continue;
            }
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(format!(
                "line {lineno}: expected `key: value`, got `{trimmed}`"
            ));
        };
        let value = value.trim();
        let value = if let Some(inner) = value.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| format!("line {lineno}: the list `{value}` has no closing `]`"))?;
            Value::List(
                inner
                    .split(',')
                    .map(|t| unquote(t.trim()))
                    .filter(|t| !t.is_empty())
                    .collect(),
            )
        } else if value == "|" || value == ">" {
            Value::Scalar(String::new())
        } else {
            Value::Scalar(unquote(value))
        };
        entries.push((key.trim().to_string(), value));
    }
    if !closed {
        return Err("the front matter has no closing `---` line".to_string());
    }
    let body: Vec<&str> = text.lines().skip(consumed).collect();
    Ok((entries, body.join("\n").trim().to_string()))
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_string();
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_lists_and_body() {
        let text = "---\nname: coder\ntools: [read_file, \"grep\"]\nscope:\n  - src/**\n  - 'tests/**'\ndescription: >\n  long\n  text\n---\n\n# Body\ntext\n";
        let (entries, body) = split(text).unwrap();
        assert_eq!(entries[0], ("name".into(), Value::Scalar("coder".into())));
        assert_eq!(entries[1].1.to_list(), ["read_file", "grep"]);
        assert_eq!(entries[2].1.to_list(), ["src/**", "tests/**"]);
        assert_eq!(entries[3].1.to_scalar(), "long text");
        assert_eq!(body, "# Body\ntext");
        assert_eq!(
            Value::Scalar("Read, Grep".into()).to_list(),
            ["Read", "Grep"]
        );
    }

    #[test]
    fn malformed_headers_name_the_line() {
        assert!(
            split("---\nname coder\n---\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(split("---\nname: x\n").unwrap_err().contains("closing"));
        assert!(split("no header").unwrap().0.is_empty());
    }
}
