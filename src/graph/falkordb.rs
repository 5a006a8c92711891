//! The FalkorDB backend: the official `falkordb` client over the Redis
//! protocol (`GRAPH.QUERY`, compact replies).
//!
//! FalkorDB binds no parameters server-side: the client writes them as
//! Cypher literals in a `CYPHER name=value …` preamble, escaping strings
//! itself. Embeddings are sent as `vecf32([…])` literals, each float
//! written in the shortest form that reads back as the same `f32`, and
//! come back exactly through the compact reply.

use std::time::Duration;

use falkordb::{FalkorClientBuilder, FalkorDBError, FalkorSyncClient, FalkorValue, SyncGraph};

use super::{GraphError, GraphStore, Rows, Statement, Value, anchors, cypher};
use crate::spec::FalkorDbSpec;

const NAME: &str = "falkordb";

pub struct FalkorStore {
    // The client owns the connection pool the graph handle uses.
    _client: FalkorSyncClient,
    graph: SyncGraph,
    address: String,
    timeout: Duration,
}

impl FalkorStore {
    /// Connects to the server `spec` names and selects its graph; fails
    /// with [`GraphError::Unreachable`] when no connection can be made
    /// within `timeout`.
    pub fn connect(
        spec: &FalkorDbSpec,
        password: Option<String>,
        timeout: Duration,
    ) -> Result<Self, GraphError> {
        let address = spec.url.clone();
        let unreachable = |reason: String| GraphError::Unreachable {
            store: NAME,
            address: spec.url.clone(),
            reason,
        };
        let url = with_password(&spec.url, password.as_deref())?;
        let info: falkordb::FalkorConnectionInfo = url
            .as_str()
            .try_into()
            .map_err(|e: FalkorDBError| GraphError::Config(format!("graph.falkordb.url: {e}")))?;
        let client = FalkorClientBuilder::new()
            .with_connection_info(info)
            .with_num_connections(std::num::NonZeroU8::MIN)
            .with_connect_timeout(Some(timeout))
            // A statement's own deadline is sent with it; the socket waits
            // a little longer, for the server to say it timed out.
            .with_response_timeout(Some(timeout + Duration::from_secs(5)))
            // Trellis retries whole statements itself (`run_with_retries`).
            .with_retry_policy(falkordb::RetryPolicy::disabled())
            .build()
            .map_err(|e| unreachable(e.to_string()))?;
        let graph = client.select_graph(&spec.graph);
        let mut store = Self {
            _client: client,
            graph,
            address,
            timeout,
        };
        // `build` may connect lazily: a trivial statement proves the
        // server answers and has the graph module loaded.
        store
            .run(&Statement::new("ping", "RETURN 1"))
            .map_err(|e| match e {
                GraphError::Statement { reason, .. } => unreachable(reason),
                other => other,
            })?;
        Ok(store)
    }
}

/// The URL with the password set, when there is one.
fn with_password(url: &str, password: Option<&str>) -> Result<String, GraphError> {
    let Some(password) = password else {
        return Ok(url.to_string());
    };
    let mut parsed = reqwest::Url::parse(url)
        .map_err(|e| GraphError::Config(format!("graph.falkordb.url {url:?}: {e}")))?;
    parsed.set_password(Some(password)).map_err(|()| {
        GraphError::Config(format!("graph.falkordb.url {url:?} takes no password"))
    })?;
    Ok(parsed.to_string())
}

impl GraphStore for FalkorStore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn prepare(&mut self, dims: usize) -> Result<(), GraphError> {
        for text in cypher::falkordb_schema(dims) {
            match self.run(&Statement::new("schema", &text)) {
                Ok(_) => {}
                // FalkorDB has no `IF NOT EXISTS`.
                Err(GraphError::Statement { reason, .. }) if reason.contains("already indexed") => {
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn vector(&self, list: &str) -> String {
        cypher::falkordb_vector(list)
    }

    fn search(&self) -> anchors::Search {
        anchors::Search {
            nearest: cypher::FALKORDB_NEAREST,
            matching: cypher::FALKORDB_MATCHING,
            matching_paragraphs: cypher::FALKORDB_MATCHING_PARAGRAPHS,
            similarity: anchors::falkordb_similarity,
            any_word: anchors::redisearch_any,
            weighs_rarity: false,
        }
    }

    fn run(&mut self, statement: &Statement<'_>) -> Result<Rows, GraphError> {
        let _span =
            tracing::debug_span!("graph_statement", store = NAME, name = statement.name).entered();
        let mut query = self.graph.query(statement.text);
        for (name, value) in &statement.params {
            let mut text = String::new();
            literal(value, &mut text).map_err(|reason| GraphError::Statement {
                store: NAME,
                statement: statement.name.to_string(),
                reason: format!("parameter {name}: {reason}"),
                transient: false,
            })?;
            query = query.with_raw_param(name, text);
        }
        let timeout_ms = i64::try_from(self.timeout.as_millis()).unwrap_or(i64::MAX);
        let result = query
            .with_timeout(timeout_ms)
            .execute()
            .map_err(|e| statement_error(statement.name, &self.address, e))?;
        let mut rows = Vec::new();
        for row in result.data {
            let row = row.map_err(|e| GraphError::Reply {
                store: NAME,
                statement: statement.name.to_string(),
                reason: e.to_string(),
            })?;
            rows.push(
                row.into_values()
                    .into_iter()
                    .map(from_falkor)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|reason| GraphError::Reply {
                        store: NAME,
                        statement: statement.name.to_string(),
                        reason,
                    })?,
            );
        }
        Ok(rows)
    }
}

fn statement_error(statement: &str, address: &str, error: FalkorDBError) -> GraphError {
    match error {
        FalkorDBError::NoConnection
        | FalkorDBError::ConnectionDown
        | FalkorDBError::EmptyConnection => GraphError::Unreachable {
            store: NAME,
            address: address.to_string(),
            reason: error.to_string(),
        },
        other => {
            let reason = other.to_string();
            let lower = reason.to_lowercase();
            let transient = [
                "timed out",
                "timeout",
                "connection",
                "broken pipe",
                "loading",
            ]
            .iter()
            .any(|word| lower.contains(word));
            GraphError::Statement {
                store: NAME,
                statement: statement.to_string(),
                reason,
                transient,
            }
        }
    }
}

/// A parameter as a Cypher literal, through the client's encoders (its
/// string escaping is verified against the server). The parameter
/// preamble takes literals only, so an embedding is a list of floats here
/// (each `f32` written as the `f64` it is exactly, which the server's
/// `vecf32` turns back into the same `f32`); the statement converts it.
pub(super) fn literal(value: &Value, out: &mut String) -> Result<(), String> {
    use falkordb::to_cypher_param as encode;
    let encoded = match value {
        Value::Null => Ok("null".to_string()),
        Value::Bool(b) => encode(b),
        Value::Int(i) => encode(i),
        Value::Float(f) => encode(f),
        Value::Str(s) => encode(s.as_str()),
        Value::Vector(v) => {
            let exact: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
            encode(exact.as_slice())
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(item, out)?;
            }
            out.push(']');
            return Ok(());
        }
        Value::Map(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                let identifier = key
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !identifier {
                    return Err(format!("map key {key:?} is not an identifier"));
                }
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(key);
                out.push_str(": ");
                literal(item, out)?;
            }
            out.push('}');
            return Ok(());
        }
    };
    out.push_str(&encoded.map_err(|e| e.to_string())?);
    Ok(())
}

/// A reply value; nodes, edges, paths and temporal values are not read.
fn from_falkor(value: FalkorValue) -> Result<Value, String> {
    Ok(match value {
        FalkorValue::None => Value::Null,
        FalkorValue::Bool(b) => Value::Bool(b),
        FalkorValue::I64(i) => Value::Int(i),
        FalkorValue::F64(f) => Value::Float(f),
        FalkorValue::String(s) => Value::Str(s),
        FalkorValue::Vec32(v) => Value::Vector(v.values),
        FalkorValue::Array(items) => Value::List(
            items
                .into_iter()
                .map(from_falkor)
                .collect::<Result<_, _>>()?,
        ),
        FalkorValue::Map(map) => Value::Map(
            map.into_iter()
                .map(|(k, v)| Ok((k, from_falkor(v)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => return Err(format!("a value Trellis does not read: {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_falkordb_literals_with_exact_floats() {
        let row = Value::map([
            ("text", "it's \"quoted\"\nand on two lines".into()),
            ("embedding", Value::Vector(vec![0.1, -2.5e-8])),
            ("page", Value::Null),
        ]);
        let mut literal = String::new();
        super::literal(&Value::List(vec![row]), &mut literal).unwrap();
        assert!(
            literal.contains(r#"text: 'it\'s "quoted"\nand on two lines'"#),
            "{literal}"
        );
        assert!(
            literal.contains("embedding: [0.10000000149011612, -2.5000000292152436e-8]"),
            "{literal}"
        );
        assert!(literal.contains("page: null"), "{literal}");
    }

    #[test]
    fn a_password_goes_into_the_url() {
        assert_eq!(
            with_password("falkor://db.example:6379", Some("p@ss")).unwrap(),
            "falkor://:p%40ss@db.example:6379"
        );
        assert_eq!(
            with_password("falkor://db:6379", None).unwrap(),
            "falkor://db:6379"
        );
    }
}
