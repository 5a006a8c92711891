//! Statement parameters and reply values, independent of the backend.
//!
//! Each backend maps [`Value`] to its own wire type: FalkorDB to Cypher
//! literals (its protocol has no parameter binding), Neo4j to Bolt values.
//! A [`Value::Vector`] is an embedding: FalkorDB keeps it as a `vecf32`
//! (what its vector index reads), Neo4j as a list of floats.

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// An embedding.
    Vector(Vec<f32>),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
}

impl Value {
    /// A map from `(key, value)` pairs.
    pub fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
        Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    /// An embedding read back: a vector, or a list of numbers.
    pub fn as_vector(&self) -> Option<Vec<f32>> {
        match self {
            Value::Vector(v) => Some(v.clone()),
            Value::List(items) => items
                .iter()
                .map(|i| i.as_float().map(|f| f as f32))
                .collect(),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}

impl From<u32> for Value {
    fn from(i: u32) -> Self {
        Value::Int(i64::from(i))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<f32> for Value {
    fn from(f: f32) -> Self {
        Value::Float(f64::from(f))
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}

impl From<Vec<String>> for Value {
    fn from(items: Vec<String>) -> Self {
        Value::List(items.into_iter().map(Value::Str).collect())
    }
}
