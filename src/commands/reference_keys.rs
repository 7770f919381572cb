//! Lists every key a `Deserialize` type accepts, by deserializing it from a probe that records
//! what the type asks for.
//!
//! serde hands a deserializer each struct's field names and each enum's variant names, so a
//! probe that answers every request with one sample value walks the whole shape of a type:
//! tables, keys, maps of named tables, arrays and the values an enum allows. The reference
//! pages take key names from here (what the parser really accepts, renames included) and the
//! words about each key from the source's doc comments.

use std::cell::RefCell;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

/// One key a type accepts, where it sits and what kind of value it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The dotted path of the table holding the key (empty at the top), with `<name>` for the
    /// names of a map's entries and `[]` for an array's elements.
    pub table: String,
    /// The Rust type holding the key (whose doc comments describe it).
    pub owner: &'static str,
    /// The key as written in the file.
    pub name: String,
    /// What the value is: `string`, `integer`, `table`, `array of …`, one of the names, ….
    pub kind: String,
}

/// What the probe saw: a struct's field at a path, or the kind of value asked for at one.
enum Mark {
    Field { path: String, owner: &'static str },
    Kind { path: String, kind: String },
}

/// Returns every key `T` accepts, in the order its types declare them.
pub fn keys<T: de::DeserializeOwned>() -> Result<Vec<Key>, String> {
    let found = RefCell::new(Vec::new());
    let probe = Probe {
        path: String::new(),
        found: &found,
    };
    T::deserialize(probe).map_err(|e| e.to_string())?;
    let marks = found.into_inner();
    let kind_at = |path: &str| -> String {
        let first = |p: &str| {
            marks.iter().find_map(|m| match m {
                Mark::Kind { path, kind } if path == p => Some(kind.clone()),
                _ => None,
            })
        };
        let mut words = Vec::new();
        let mut p = path.to_string();
        loop {
            match first(&p).unwrap_or_default().as_str() {
                "array" => {
                    words.push("array of".to_string());
                    p.push_str("[]");
                }
                "map" => {
                    p.push_str(".<name>");
                    if first(&p).as_deref() == Some("table") {
                        words.push("tables by name".to_string());
                        break;
                    }
                    words.push("map of names to".to_string());
                }
                "table" if !words.is_empty() => {
                    words.push("tables".to_string());
                    break;
                }
                other => {
                    words.push(other.to_string());
                    break;
                }
            }
        }
        words.join(" ")
    };
    Ok(marks
        .iter()
        .filter_map(|m| match m {
            Mark::Field { path, owner } => {
                let (table, name) = path.rsplit_once('.').unwrap_or(("", path));
                Some(Key {
                    table: table.to_string(),
                    owner,
                    name: name.to_string(),
                    kind: kind_at(path),
                })
            }
            Mark::Kind { .. } => None,
        })
        .collect())
}

/// The error a probe reports when a type asks for something it cannot sample.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProbeError(String);

impl de::Error for ProbeError {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        ProbeError(msg.to_string())
    }
}

/// A key's kind, recorded when the type asks for the value under `path`.
struct Probe<'a> {
    path: String,
    found: &'a RefCell<Vec<Mark>>,
}

/// Sets the kind of the key the probe stands for.
fn mark(probe: &Probe<'_>, kind: &str) {
    probe.found.borrow_mut().push(Mark::Kind {
        path: probe.path.clone(),
        kind: kind.to_string(),
    });
}

macro_rules! scalar {
    ($($method:ident => $kind:literal, $visit:ident($($value:expr)?);)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
            mark(&self, $kind);
            visitor.$visit($($value)?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    scalar! {
        deserialize_bool => "boolean", visit_bool(false);
        deserialize_i8 => "integer", visit_i64(0);
        deserialize_i16 => "integer", visit_i64(0);
        deserialize_i32 => "integer", visit_i64(0);
        deserialize_i64 => "integer", visit_i64(0);
        deserialize_u8 => "integer", visit_u64(0);
        deserialize_u16 => "integer", visit_u64(0);
        deserialize_u32 => "integer", visit_u64(0);
        deserialize_u64 => "integer", visit_u64(0);
        deserialize_f32 => "number", visit_f64(0.0);
        deserialize_f64 => "number", visit_f64(0.0);
        deserialize_char => "string", visit_char('x');
        deserialize_str => "string", visit_str("");
        deserialize_string => "string", visit_str("");
        deserialize_bytes => "string", visit_str("");
        deserialize_byte_buf => "string", visit_str("");
        deserialize_unit => "nothing", visit_unit();
        deserialize_any => "any value", visit_unit();
        deserialize_ignored_any => "any value", visit_unit();
        deserialize_identifier => "string", visit_str("");
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        mark(&self, "array");
        visitor.visit_seq(OneElement {
            probe: Some(Probe {
                path: format!("{}[]", self.path),
                found: self.found,
            }),
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        mark(&self, "map");
        let path = join(&self.path, "<name>");
        visitor.visit_map(Fields {
            names: vec![("<name>", path)],
            owner: "",
            at: 0,
            found: self.found,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        mark(&self, "table");
        let names = fields.iter().map(|f| (*f, join(&self.path, f))).collect();
        visitor.visit_map(Fields {
            names,
            owner: name,
            at: 0,
            found: self.found,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        let names: Vec<String> = variants.iter().map(|v| format!("`\"{v}\"`")).collect();
        mark(&self, &format!("one of {}", names.join(", ")));
        let first = variants
            .first()
            .ok_or_else(|| ProbeError(format!("enum at `{}` has no variant", self.path)))?;
        visitor.visit_enum((*first).into_deserializer())
    }
}

/// Returns `path.key`, or `key` at the top.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The fields of a struct (or the one sample entry of a map), handed out one by one.
struct Fields<'a> {
    names: Vec<(&'static str, String)>,
    owner: &'static str,
    at: usize,
    found: &'a RefCell<Vec<Mark>>,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        let Some((name, path)) = self.names.get(self.at) else {
            return Ok(None);
        };
        if !self.owner.is_empty() {
            self.found.borrow_mut().push(Mark::Field {
                path: path.clone(),
                owner: self.owner,
            });
        }
        let key: de::value::StrDeserializer<'_, ProbeError> = name.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProbeError> {
        let path = self
            .names
            .get(self.at)
            .map(|(_, p)| p.clone())
            .unwrap_or_default();
        self.at += 1;
        seed.deserialize(Probe {
            path,
            found: self.found,
        })
    }
}

/// An array holding one sample element.
struct OneElement<'a> {
    probe: Option<Probe<'a>>,
}

impl<'de> SeqAccess<'de> for OneElement<'_> {
    type Error = ProbeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ProbeError> {
        match self.probe.take() {
            Some(probe) => seed.deserialize(probe).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Auto,
        Off,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        mode: Option<Mode>,
        list: Vec<Mode>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Top {
        #[serde(rename = "the-inner")]
        inner: Inner,
        named: BTreeMap<String, Inner>,
        env: Option<BTreeMap<String, String>>,
        flag: bool,
    }

    #[test]
    fn walks_tables_maps_arrays_enums_and_renames() {
        let keys = keys::<Top>().unwrap();
        let seen: Vec<(String, String, String)> = keys
            .iter()
            .map(|k| (k.table.clone(), k.name.clone(), k.kind.clone()))
            .collect();
        let row = |t: &str, n: &str, k: &str| (t.to_string(), n.to_string(), k.to_string());
        assert_eq!(
            seen,
            [
                row("", "the-inner", "table"),
                row("the-inner", "mode", "one of `\"auto\"`, `\"off\"`"),
                row("the-inner", "list", "array of one of `\"auto\"`, `\"off\"`"),
                row("", "named", "tables by name"),
                row("named.<name>", "mode", "one of `\"auto\"`, `\"off\"`"),
                row(
                    "named.<name>",
                    "list",
                    "array of one of `\"auto\"`, `\"off\"`"
                ),
                row("", "env", "map of names to string"),
                row("", "flag", "boolean"),
            ]
        );
        assert_eq!(keys[1].owner, "Inner");
    }
}
