//! Reads the doc comments of a module's structs and enums from its source text, for the
//! reference pages: what each configuration key, plan key and event means is written once,
//! beside the field or variant, and the pages quote it.
//!
//! The parser knows only the shape rustfmt gives a type: the item at the start of a line, its
//! fields or variants indented by four spaces, a variant's fields by eight.

/// A struct or enum of the source, with its doc comment and members.
#[derive(Debug, Clone, Default)]
pub struct Item {
    /// The type's name.
    pub name: String,
    /// Its doc comment, lines joined by spaces.
    pub doc: String,
    /// Its fields (a struct) or variants (an enum), in order.
    pub members: Vec<Member>,
}

/// A field of a struct or a variant of an enum.
#[derive(Debug, Clone, Default)]
pub struct Member {
    /// The name in Rust.
    pub name: String,
    /// The name serde reads instead (`#[serde(rename = "…")]`).
    pub rename: Option<String>,
    /// Its doc comment, lines joined by spaces.
    pub doc: String,
    /// A variant's fields, by name.
    pub fields: Vec<String>,
}

impl Item {
    /// Returns the member serde reads as `key`: renamed to it, or named so.
    pub fn member(&self, key: &str) -> Option<&Member> {
        self.members
            .iter()
            .find(|m| m.rename.as_deref() == Some(key))
            .or_else(|| {
                self.members
                    .iter()
                    .find(|m| m.rename.is_none() && m.name == key)
            })
    }
}

/// Returns every `pub struct` and `pub enum` of `source` with its doc comments.
pub fn items(source: &str) -> Vec<Item> {
    let mut out = Vec::new();
    let mut doc: Vec<String> = Vec::new();
    let mut current: Option<Item> = None;
    let mut member: Option<Member> = None;
    let mut rename: Option<String> = None;
    for line in source.lines() {
        let trimmed = line.trim();
        if let Some(item) = current.as_mut() {
            if line == "}" {
                if let Some(m) = member.take() {
                    item.members.push(m);
                }
                out.extend(current.take());
                doc.clear();
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if indent == 8 && member.is_some() {
                if let Some((name, _)) = trimmed
                    .strip_prefix("pub ")
                    .unwrap_or(trimmed)
                    .split_once(':')
                    && !trimmed.starts_with("///")
                    && !trimmed.starts_with("#[")
                    && let Some(m) = member.as_mut()
                {
                    m.fields.push(name.trim().to_string());
                }
                continue;
            }
            if indent != 4 {
                continue;
            }
            if let Some(text) = trimmed.strip_prefix("///") {
                doc.push(text.trim().to_string());
            } else if trimmed.starts_with("#[") {
                if let Some(r) = renamed(trimmed) {
                    rename = Some(r);
                }
            } else if trimmed == "}," || trimmed == "}" {
                if let Some(m) = member.take() {
                    item.members.push(m);
                }
            } else if !trimmed.is_empty() && !trimmed.starts_with("//") {
                if let Some(m) = member.take() {
                    item.members.push(m);
                }
                let decl = trimmed
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ");
                let name: String = decl
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let m = Member {
                    name,
                    rename: rename.take(),
                    doc: doc.join(" "),
                    fields: Vec::new(),
                };
                doc.clear();
                if decl.ends_with('{') {
                    member = Some(m);
                } else {
                    let fields = decl
                        .split_once('{')
                        .map(|(_, rest)| {
                            rest.trim_end_matches(',')
                                .trim_end_matches('}')
                                .split(',')
                                .filter_map(|f| {
                                    f.split_once(':').map(|(n, _)| n.trim().to_string())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    item.members.push(Member { fields, ..m });
                }
            }
            continue;
        }
        if let Some(text) = line.strip_prefix("///") {
            doc.push(text.trim().to_string());
            continue;
        }
        if line.starts_with("#[") {
            continue;
        }
        let head = line
            .strip_prefix("pub struct ")
            .or_else(|| line.strip_prefix("pub enum "));
        match head {
            Some(rest) if line.ends_with('{') => {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                current = Some(Item {
                    name,
                    doc: doc.join(" "),
                    members: Vec::new(),
                });
                doc.clear();
                rename = None;
            }
            _ => doc.clear(),
        }
    }
    out
}

/// Returns the name a `#[serde(…)]` attribute renames its field or variant to.
fn renamed(attribute: &str) -> Option<String> {
    let inner = attribute.strip_prefix("#[serde(")?;
    let at = inner.find("rename = \"")? + "rename = \"".len();
    let rest = inner.get(at..)?;
    Some(rest.split('"').next()?.to_string())
}

/// Returns `name` (`CamelCase`) in `snake_case`, as `rename_all = "snake_case"` spells it.
pub fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_variants_renames_and_docs() {
        let source = r#"
/// A table.
#[derive(Deserialize)]
pub struct T {
    /// The first
    /// key.
    pub a: Option<u64>,
    #[serde(default, rename = "b-b")]
    pub b: Vec<String>,
}

/// Events.
pub enum E {
    /// Started.
    Started {
        /// When.
        at: u64,
        base: String,
    },
    /// Stopped.
    Stopped,
    Short { x: u32, y: u32 },
}
"#;
        let items = items(source);
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0].name, "T");
        assert_eq!(items[0].doc, "A table.");
        assert_eq!(
            items[0].member("a").map(|m| m.doc.as_str()),
            Some("The first key.")
        );
        assert!(items[0].member("b").is_none());
        assert_eq!(items[0].member("b-b").map(|m| m.name.as_str()), Some("b"));
        let e = &items[1];
        let names: Vec<&str> = e.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Started", "Stopped", "Short"]);
        assert_eq!(e.members[0].fields, ["at", "base"]);
        assert_eq!(e.members[0].doc, "Started.");
        assert_eq!(e.members[2].fields, ["x", "y"]);
        assert_eq!(snake_case("PlanSentBack"), "plan_sent_back");
    }
}
