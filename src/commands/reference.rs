//! `git orchestra reference <dir>` (hidden): writes the user guide's reference pages from the
//! code — every command and flag from the clap definition, every configuration key, the plan
//! format's keys and the journal's event kinds from the types' doc comments — so the guide
//! cannot drift from the binary. `tests/layout` checks the committed pages against it.

use std::fmt::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory};

use super::CommandError;
use super::reference_cli::{GENERATED, cell, page as commands_page, prose};
use super::reference_keys::{Key, keys};
use super::reference_source::{Item, items, snake_case};

/// Writes the reference pages of the user guide.
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// The directory to write the pages into (the guide's is `docs/src/reference`).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

/// Writes every reference page into the directory given.
pub fn cmd_reference(cwd: &std::path::Path, args: &ReferenceArgs) -> Result<(), CommandError> {
    let dir = cwd.join(&args.dir);
    fs_err::create_dir_all(&dir).map_err(CommandError::user)?;
    for (name, text) in pages()? {
        fs_err::write(dir.join(name), text).map_err(CommandError::user)?;
    }
    Ok(())
}

/// Returns every reference page as (file name, Markdown).
pub fn pages() -> Result<Vec<(&'static str, String)>, CommandError> {
    Ok(vec![
        ("commands.md", commands_page(super::Cli::command())),
        ("config.md", config_page()?),
        ("plan.md", plan_page()?),
        ("events.md", events_page()?),
    ])
}

/// Returns the configuration page: every key of `.orchestra/config.toml`, table by table.
fn config_page() -> Result<String, CommandError> {
    let keys = keys::<git_orchestra::config::RepoConfig>().map_err(CommandError::internal)?;
    // `[nav.lsp]` is defined beside the language-server client, not in `config`.
    let mut found = items(git_orchestra::config::SOURCE);
    found.extend(items(git_orchestra::lsp::config::SOURCE));
    let items = found;
    let mut out = String::from("# Configuration keys\n\n");
    out.push_str(GENERATED);
    out.push_str(
        "Every key of `.orchestra/config.toml` (the repository's) and \
         `~/.config/git-orchestra/config.toml` (yours). Every key is optional; an unknown key \
         is an error naming its line. `<name>` stands for a name you choose. \
         [Configuration](../configuration.md) explains how the two files combine and what a \
         repository's file may not do until you trust it.\n\n",
    );
    tables(&mut out, &keys, &items, |table| {
        if table.is_empty() {
            "Top level".to_string()
        } else {
            format!("[{table}]")
        }
    })?;
    Ok(out)
}

/// Returns the plan format page: every key of a plan file.
fn plan_page() -> Result<String, CommandError> {
    let keys = keys::<git_orchestra::plan::Plan>().map_err(CommandError::internal)?;
    let items = items(git_orchestra::plan::MODEL_SOURCE);
    let mut out = String::from("# Plan keys\n\n");
    out.push_str(GENERATED);
    out.push_str(
        "Every key of a plan file (`plan.toml`): the top-level keys, then one `[[packet]]` \
         table per packet. [The plan format](../plan-format.md) shows an example and how scopes, \
         schedules and symbols work.\n\n",
    );
    tables(&mut out, &keys, &items, |table| match table {
        "" => "Top level".to_string(),
        t => format!("[[{}]]", t.trim_end_matches("[]")),
    })?;
    Ok(out)
}

/// Writes one section per table of `keys`, each a table of its keys with their doc comments,
/// failing on a key whose field has none (a key is documented where it is declared).
fn tables(
    out: &mut String,
    keys: &[Key],
    items: &[Item],
    heading: impl Fn(&str) -> String,
) -> Result<(), CommandError> {
    let mut order: Vec<&str> = Vec::new();
    for k in keys {
        if !order.contains(&k.table.as_str()) {
            order.push(&k.table);
        }
    }
    for table in order {
        let _ = writeln!(out, "## {}\n", heading(table));
        let owner = keys.iter().find(|k| k.table == table).map(|k| k.owner);
        if let Some(doc) = owner
            .and_then(|o| items.iter().find(|i| i.name == o))
            .map(|i| i.doc.as_str())
            .filter(|d| !d.is_empty())
        {
            let _ = writeln!(out, "{}\n", prose(doc));
        }
        out.push_str("| key | value | meaning |\n|---|---|---|\n");
        for k in keys.iter().filter(|k| k.table == table) {
            let doc_of = |owner: &str, member: Option<&str>| {
                let item = items.iter().find(|i| i.name == owner);
                match member {
                    Some(m) => item.and_then(|i| i.member(m)).map(|m| m.doc.clone()),
                    None => item.map(|i| i.doc.clone()),
                }
                .unwrap_or_default()
            };
            let mut doc = doc_of(k.owner, Some(&k.name));
            if doc.is_empty() {
                // A table's key without words of its own is described by the table's type.
                let path = if k.table.is_empty() {
                    k.name.clone()
                } else {
                    format!("{}.{}", k.table, k.name)
                };
                let inner = [path.clone(), format!("{path}.<name>"), format!("{path}[]")];
                if let Some(child) = keys.iter().find(|c| inner.contains(&c.table)) {
                    doc = doc_of(child.owner, None);
                }
            }
            if doc.is_empty() {
                return Err(CommandError::internal(format!(
                    "the key `{}` (field `{}` of `{}`) has no doc comment: document it where it is declared",
                    k.name, k.name, k.owner
                )));
            }
            let _ = writeln!(out, "| `{}` | {} | {} |", k.name, cell(&k.kind), cell(&doc));
        }
        out.push('\n');
    }
    Ok(())
}

/// Returns the event kinds page: the packet engine's journal and a `start` run's workflow.
fn events_page() -> Result<String, CommandError> {
    let mut out = String::from("# Event kinds\n\n");
    out.push_str(GENERATED);
    out.push_str(
        "A run's journal is a list of events, stored as JSON objects whose `type` names the \
         kind (`{\"type\": \"packet_started\", …}`); `status --json`, the web view and the \
         report are read from them.\n\n",
    );
    let engine = variants::<git_orchestra::store::Event>();
    kinds(
        &mut out,
        "Run and packet events",
        git_orchestra::store::EVENTS_SOURCE,
        "Event",
        &engine,
    )?;
    let workflow = variants::<git_orchestra::orchestrator::WorkflowEvent>();
    kinds(
        &mut out,
        "Workflow events of a start run",
        git_orchestra::orchestrator::JOURNAL_SOURCE,
        "WorkflowEvent",
        &workflow,
    )?;
    Ok(out)
}

/// Returns the `type` names serde accepts for an internally tagged enum, from the error it
/// gives for a name it does not know (which lists them all).
fn variants<T: serde::de::DeserializeOwned>() -> Vec<String> {
    let Err(e) = serde_json::from_str::<T>(r#"{"type": "\u0000"}"#) else {
        return Vec::new();
    };
    let message = e.to_string();
    let list = message
        .split_once("expected one of")
        .map(|(_, l)| l)
        .unwrap_or_default();
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Writes the section of enum `name` of `source`, checking its variants are the `tags` serde
/// reads, in the same order.
fn kinds(
    out: &mut String,
    title: &str,
    source: &str,
    name: &str,
    tags: &[String],
) -> Result<(), CommandError> {
    let all = items(source);
    let item = all
        .iter()
        .find(|i| i.name == name)
        .ok_or_else(|| CommandError::internal(format!("no enum `{name}` in its source")))?;
    let parsed: Vec<String> = item.members.iter().map(|m| snake_case(&m.name)).collect();
    if parsed != tags {
        return Err(CommandError::internal(format!(
            "the variants read from `{name}`'s source ({parsed:?}) are not the kinds serde reads ({tags:?})"
        )));
    }
    let _ = writeln!(out, "## {title}\n");
    for m in &item.members {
        let tag = snake_case(&m.name);
        let _ = writeln!(out, "### `{tag}`\n");
        if !m.doc.is_empty() {
            let _ = writeln!(out, "{}\n", prose(&m.doc));
        }
        if !m.fields.is_empty() {
            let fields: Vec<String> = m.fields.iter().map(|f| format!("`{f}`")).collect();
            let _ = writeln!(out, "Fields: {}.\n", fields.join(", "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Sample {
        documented: Option<u64>,
        bare: Option<String>,
    }

    const SOURCE: &str = "
pub struct Sample {
    /// A documented key (default 3).
    pub documented: Option<u64>,
    pub bare: Option<String>,
}
";

    #[test]
    fn a_key_without_a_doc_comment_fails_the_generation() {
        let keys = keys::<Sample>().unwrap();
        let mut out = String::new();
        let err = tables(&mut out, &keys, &items(SOURCE), |t| t.to_string()).unwrap_err();
        assert!(err.message.contains("`bare`"), "{}", err.message);
        assert!(
            err.message.contains("document it where it is declared"),
            "{}",
            err.message
        );
    }

    #[test]
    fn every_page_is_generated_and_names_what_it_lists() {
        let pages = pages().unwrap();
        let page = |name: &str| {
            pages
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.clone())
                .unwrap_or_default()
        };
        assert!(page("commands.md").contains("## git orchestra start"));
        assert!(page("commands.md").contains("`--max-parallel <N>`"));
        assert!(page("config.md").contains("## [run]"));
        assert!(page("config.md").contains("| `fix_rounds` | integer |"));
        assert!(page("config.md").contains("## [executor.github-actions]"));
        assert!(page("plan.md").contains("## [[packet]]"));
        assert!(page("events.md").contains("### `packet_succeeded`"));
        assert!(page("events.md").contains("### `plan_approved`"));
    }
}
