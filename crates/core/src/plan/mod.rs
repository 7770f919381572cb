//! The plan file: an objective split into packets of work, each with a declared file scope,
//! dependencies and validation commands.
//!
//! A plan goes through four steps, each in its own file: `parse` reads TOML and keeps source
//! locations; `validate` reports every problem at once; `scope` and `overlap` say which paths a
//! packet may change and whether two packets could touch the same one; `schedule` orders the
//! packets into waves that never run overlapping packets side by side. `graph` holds the
//! relations (dependents, dependency paths, overlaps) a run-time scheduler needs; `fan_out`
//! gives a `start` plan's packets their best-of-N candidates under `[start] best_of`.

mod fan_out;
mod graph;
mod model;
mod overlap;
mod parse;
mod schedule;
mod scope;
mod symbols;
mod validate;

use std::path::{Path, PathBuf};

pub use fan_out::{BestOfMode, fan_out};
pub use graph::{Overlap, Overlaps, SharedFiles};
pub use model::{DEFAULT_ROLE, MAX_ATTEMPTS, Packet, Plan};
pub use overlap::overlap;
pub use parse::Location;
pub use schedule::{Schedule, schedule, schedule_with};
pub use scope::{PatternError, PatternProblem, Scope};
pub use symbols::{
    LINE_MARGIN, LineSpan, SymbolEntry, SymbolSpans, apart, parse_entry,
    resolve as resolve_symbols, spans_at,
};
pub use validate::{MAX_ID_LEN, PlanIssue, sort_by_location, validate};

/// The source text of the plan's types, whose doc comments the generated reference quotes.
pub const MODEL_SOURCE: &str = include_str!("model.rs");

/// Why a plan could not be read or one of its scopes compiled.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot read plan {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Malformed TOML, a value of the wrong type, an unknown or a missing key.
    #[error("{}: {message}", location.as_ref().map_or_else(|| file.clone(), ToString::to_string))]
    Syntax {
        file: String,
        location: Option<Location>,
        message: String,
    },
    #[error("packet `{packet}`: file pattern `{pattern}` {problem}")]
    Pattern {
        packet: String,
        pattern: String,
        problem: PatternProblem,
    },
}

/// Returns the plan in the file at `path`, naming the path as given in any error.
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    let text = fs_err::read_to_string(path).map_err(|source| PlanError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Plan::from_toml_str(&text, &path.display().to_string())
}
