//! Reads a suite task's fields one by one, so that a bad one is reported by its name (serde's
//! own messages name a line and a column, not the field).

use serde_json::{Map, Value};

/// What is wrong with one field of a task.
#[derive(Debug)]
pub(super) struct Problem {
    /// The field's name as the suite spells it.
    pub field: String,
    /// What is wrong and how to fix it.
    pub problem: String,
}

impl Problem {
    /// Returns the problem `problem` with the field `field`.
    pub fn new(field: &str, problem: impl Into<String>) -> Self {
        Problem {
            field: field.to_string(),
            problem: problem.into(),
        }
    }
}

/// One task's fields.
pub(super) struct Fields<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// Returns the fields of `map`.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Fields { map }
    }

    /// Returns how errors name the task at `place`: `line 3 (task `fix-add`)` when its id reads.
    pub fn label(&self, place: &str) -> String {
        let id = ["id", "instance_id"]
            .iter()
            .find_map(|k| self.map.get(*k).and_then(Value::as_str));
        match id {
            Some(id) if !id.trim().is_empty() => format!("{place} (task `{id}`)"),
            _ => place.to_string(),
        }
    }

    /// Returns a problem naming the first field not in `known`.
    pub fn only(&self, known: &[&str]) -> Result<(), Problem> {
        match self.map.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(Problem::new(
                k,
                format!("is not a task field; the fields are {}", known.join(", ")),
            )),
            None => Ok(()),
        }
    }

    /// Returns the string `field`, `None` when it is absent.
    pub fn text(&self, field: &str) -> Result<Option<String>, Problem> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Problem::new(field, "must be a string")),
        }
    }

    /// Returns the string `field`, which must be present and not blank.
    pub fn required(&self, field: &str) -> Result<String, Problem> {
        match self.text(field)? {
            None => Err(Problem::new(field, "is missing")),
            Some(s) if s.trim().is_empty() => Err(Problem::new(field, "is empty")),
            Some(s) => Ok(s),
        }
    }

    /// Returns the list of strings `field` (empty when absent); with `encoded`, a string
    /// holding a JSON list (as SWE-bench's published files store them) is read too.
    pub fn list(&self, field: &str, encoded: bool) -> Result<Vec<String>, Problem> {
        let bad = || Problem::new(field, "must be a list of strings");
        let value = match self.map.get(field) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::String(s)) if encoded => serde_json::from_str::<Value>(s).map_err(|e| {
                Problem::new(
                    field,
                    format!("must be a list of strings or a JSON-encoded one: {e}"),
                )
            })?,
            Some(v) => v.clone(),
        };
        let Value::Array(items) = value else {
            return Err(bad());
        };
        items
            .into_iter()
            .map(|v| match v {
                Value::String(s) if !s.trim().is_empty() => Ok(s),
                _ => Err(bad()),
            })
            .collect()
    }
}
