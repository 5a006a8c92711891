//! The Neo4j backend: `neo4rs` over Bolt (`bolt://`, `neo4j://`, and with
//! TLS `bolt+s://`, `neo4j+s://`), Neo4j 5.11 or later (vector indexes).
//!
//! `neo4rs` is asynchronous; the store owns a small runtime of its own and
//! blocks on it, on a scoped thread when the caller is itself inside a
//! Tokio runtime (the retrieval service's blocking pool), where blocking
//! on another runtime is not allowed. Every statement runs under the
//! profile's timeout, which also bounds the Bolt handshake that `neo4rs`
//! itself does not time.

use std::future::Future;
use std::time::Duration;

use neo4rs::{
    BoltFloat, BoltInteger, BoltList, BoltMap, BoltNull, BoltString, BoltType, ConfigBuilder,
};

use super::{GraphError, GraphStore, Rows, Statement, Value, anchors, cypher};
use crate::spec::Neo4jSpec;

const NAME: &str = "neo4j";

pub struct Neo4jStore {
    graph: neo4rs::Graph,
    runtime: tokio::runtime::Runtime,
    address: String,
    timeout: Duration,
}

impl Neo4jStore {
    /// Connects to the server `spec` names; fails with
    /// [`GraphError::Unreachable`] when it does not answer a trivial
    /// statement within `timeout`.
    pub fn connect(
        spec: &Neo4jSpec,
        password: Option<String>,
        timeout: Duration,
    ) -> Result<Self, GraphError> {
        let mut config = ConfigBuilder::default()
            .uri(spec.uri.as_str())
            .user(spec.username.as_str())
            .password(password.unwrap_or_default())
            .fetch_size(500)
            .max_connections(4)
            .connection_timeout(timeout);
        if let Some(database) = &spec.database {
            config = config.db(database.as_str());
        }
        let config = config
            .build()
            .map_err(|e| GraphError::Config(format!("graph.neo4j: {e}")))?;
        let graph = neo4rs::Graph::connect(config)
            .map_err(|e| GraphError::Config(format!("graph.neo4j.uri {:?}: {e}", spec.uri)))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| GraphError::Config(format!("starting the Neo4j client's runtime: {e}")))?;
        let mut store = Self {
            graph,
            runtime,
            address: spec.uri.clone(),
            timeout,
        };
        // `neo4rs` connects lazily: a trivial statement proves the server
        // answers and accepts the credentials.
        store
            .run(&Statement::new("ping", "RETURN 1 AS one"))
            .map_err(|e| match e {
                GraphError::Statement {
                    reason,
                    transient: true,
                    ..
                } => GraphError::Unreachable {
                    store: NAME,
                    address: spec.uri.clone(),
                    reason,
                },
                other => other,
            })?;
        Ok(store)
    }

    /// Runs `future` to completion on the store's runtime.
    fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|scope| {
                scope
                    .spawn(|| self.runtime.block_on(future))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        } else {
            self.runtime.block_on(future)
        }
    }
}

impl GraphStore for Neo4jStore {
    fn name(&self) -> &'static str {
        NAME
    }

    fn prepare(&mut self, dims: usize) -> Result<(), GraphError> {
        for text in cypher::neo4j_schema(dims) {
            self.run(&Statement::new("schema", &text))?;
        }
        Ok(())
    }

    fn vector(&self, list: &str) -> String {
        cypher::neo4j_vector(list)
    }

    fn search(&self) -> anchors::Search {
        anchors::Search {
            nearest: cypher::NEO4J_NEAREST,
            matching: cypher::NEO4J_MATCHING,
            matching_paragraphs: cypher::NEO4J_MATCHING_PARAGRAPHS,
            similarity: anchors::neo4j_similarity,
            any_word: anchors::lucene_any,
            weighs_rarity: true,
        }
    }

    fn run(&mut self, statement: &Statement<'_>) -> Result<Rows, GraphError> {
        let _span =
            tracing::debug_span!("graph_statement", store = NAME, name = statement.name).entered();
        let mut query = neo4rs::query(statement.text);
        for (name, value) in &statement.params {
            query = query.param(name, to_bolt(value));
        }
        let columns = return_columns(statement.text);
        let graph = &self.graph;
        let timeout = self.timeout;
        let result = self.block_on(async move {
            let work = async {
                let mut stream = graph.execute(query).await?;
                let mut rows = Vec::new();
                while let Some(row) = stream.next().await? {
                    let mut values = Vec::with_capacity(columns.len());
                    for column in &columns {
                        let value: BoltType = row
                            .get(column)
                            .map_err(neo4rs::Error::DeserializationError)?;
                        values.push(value);
                    }
                    rows.push(values);
                }
                Ok::<_, neo4rs::Error>(rows)
            };
            tokio::time::timeout(timeout, work).await
        });
        let rows = match result {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => return Err(statement_error(statement.name, &self.address, e)),
            Err(_) => {
                return Err(GraphError::Statement {
                    store: NAME,
                    statement: statement.name.to_string(),
                    reason: format!("no answer within {timeout:?}"),
                    transient: true,
                });
            }
        };
        rows.into_iter()
            .map(|row| {
                row.into_iter()
                    .map(from_bolt)
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Rows, _>>()
            .map_err(|reason| GraphError::Reply {
                store: NAME,
                statement: statement.name.to_string(),
                reason,
            })
    }
}

fn statement_error(statement: &str, address: &str, error: neo4rs::Error) -> GraphError {
    use neo4rs::Error as E;
    let reason = error.to_string();
    match &error {
        E::IOError { .. } | E::ConnectionTimedOut | E::ConnectionError => GraphError::Unreachable {
            store: NAME,
            address: address.to_string(),
            reason,
        },
        E::UnsupportedScheme(_) | E::UrlParseError(_) | E::InvalidConfig => {
            GraphError::Config(format!("graph.neo4j: {reason}"))
        }
        E::Neo4j(server) => GraphError::Statement {
            store: NAME,
            statement: statement.to_string(),
            transient: server.kind() == neo4rs::Neo4jErrorKind::Transient,
            reason,
        },
        _ => GraphError::Statement {
            store: NAME,
            statement: statement.to_string(),
            reason,
            transient: false,
        },
    }
}

/// The columns a statement returns, in order: each item of its last
/// `RETURN` clause, by alias where it has one. Bolt hands rows over as
/// maps keyed by column; [`Rows`] are lists in `RETURN` order.
fn return_columns(text: &str) -> Vec<String> {
    let Some(at) = text.rfind("RETURN ") else {
        return Vec::new();
    };
    let clause = text[at + "RETURN ".len()..].trim();
    let clause = clause.strip_prefix("DISTINCT ").unwrap_or(clause);
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in clause.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&clause[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&clause[start..]);
    items
        .into_iter()
        .map(|item| {
            let item = item.trim();
            match item.rfind(" AS ") {
                Some(alias) => item[alias + 4..].trim().to_string(),
                None => item.to_string(),
            }
        })
        .collect()
}

/// A parameter as a Bolt value. An embedding is a list of Bolt floats
/// (each `f32` widened exactly), which is what Neo4j's vector index reads.
pub(super) fn to_bolt(value: &Value) -> BoltType {
    match value {
        Value::Null => BoltType::Null(BoltNull),
        Value::Bool(b) => BoltType::from(*b),
        Value::Int(i) => BoltType::Integer(BoltInteger::new(*i)),
        Value::Float(f) => BoltType::Float(BoltFloat::new(*f)),
        Value::Str(s) => BoltType::String(BoltString::from(s.as_str())),
        Value::Vector(v) => BoltType::List(BoltList::from(
            v.iter()
                .map(|&x| BoltType::Float(BoltFloat::new(f64::from(x))))
                .collect::<Vec<_>>(),
        )),
        Value::List(items) => BoltType::List(BoltList::from(
            items.iter().map(to_bolt).collect::<Vec<_>>(),
        )),
        Value::Map(map) => {
            let mut bolt = BoltMap::with_capacity(map.len());
            for (key, item) in map {
                bolt.put(BoltString::from(key.as_str()), to_bolt(item));
            }
            BoltType::Map(bolt)
        }
    }
}

/// A reply value; nodes, relationships, paths and temporal values are not
/// read.
fn from_bolt(value: BoltType) -> Result<Value, String> {
    Ok(match value {
        BoltType::Null(_) => Value::Null,
        BoltType::Boolean(b) => Value::Bool(b.value),
        BoltType::Integer(i) => Value::Int(i.value),
        BoltType::Float(f) => Value::Float(f.value),
        BoltType::String(s) => Value::Str(s.value),
        BoltType::List(items) => Value::List(
            items
                .value
                .into_iter()
                .map(from_bolt)
                .collect::<Result<_, _>>()?,
        ),
        BoltType::Map(map) => Value::Map(
            map.value
                .into_iter()
                .map(|(k, v)| Ok((k.value, from_bolt(v)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => return Err(format!("a value Trellis does not read: {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_map_to_bolt_floats_nulls_and_nested_maps() {
        let row = Value::map([
            ("id", "d:s0".into()),
            ("embedding", Value::Vector(vec![1.0, -0.25, 0.1])),
            ("page", Value::Null),
            ("position", Value::Int(3)),
            ("similarity", Value::Float(0.5)),
            ("section_path", vec!["1. Terms".to_string()].into()),
            ("nested", Value::map([("inner", Value::Bool(true))])),
        ]);
        let BoltType::Map(map) = to_bolt(&row) else {
            panic!("a map")
        };
        let get = |key: &str| map.value.get(key).cloned().unwrap();
        // Whole-number floats stay Bolt floats: Neo4j would not take an
        // integer in a float vector.
        let BoltType::List(embedding) = get("embedding") else {
            panic!("a list")
        };
        assert_eq!(
            embedding.value,
            vec![
                BoltType::Float(BoltFloat::new(1.0)),
                BoltType::Float(BoltFloat::new(-0.25)),
                BoltType::Float(BoltFloat::new(f64::from(0.1f32))),
            ]
        );
        assert_eq!(get("page"), BoltType::Null(BoltNull));
        assert_eq!(get("position"), BoltType::Integer(BoltInteger::new(3)));
        assert_eq!(get("similarity"), BoltType::Float(BoltFloat::new(0.5)));
        assert_eq!(
            get("section_path"),
            BoltType::List(BoltList::from(vec![BoltType::String("1. Terms".into())]))
        );
        let BoltType::Map(nested) = get("nested") else {
            panic!("a map")
        };
        assert_eq!(
            nested.value.get("inner"),
            Some(&BoltType::Boolean(neo4rs::BoltBoolean::new(true)))
        );
        // And back: the embedding reads as the same f32s.
        let back = from_bolt(BoltType::Map(map)).unwrap();
        let Value::Map(back) = back else { panic!() };
        assert_eq!(
            back["embedding"].as_vector(),
            Some(vec![1.0f32, -0.25, 0.1])
        );
        assert_eq!(back["nested"], Value::map([("inner", Value::Bool(true))]));
    }

    #[test]
    fn rows_are_read_in_return_order() {
        assert_eq!(
            return_columns(cypher::EXPAND_CONTEXT),
            ["anchor", "paragraph", "section", "chunks"]
        );
        assert_eq!(return_columns(&cypher::expand_window(2)), ["anchor", "id"]);
        assert_eq!(
            return_columns(&cypher::expand_clause(3, 8)),
            ["anchor", "id", "clause", "anchor_clause", "distance"]
        );
        assert_eq!(return_columns(cypher::VERSIONS), ["version"]);
        assert_eq!(return_columns(&cypher::count_nodes("Sentence")), ["count"]);
        assert_eq!(return_columns("MATCH (c) RETURN c.text"), ["c.text"]);
        assert!(return_columns(&cypher::upsert_statement(cypher::HAS_SECTION)).is_empty());
    }

    #[test]
    fn an_unreachable_server_and_a_bad_scheme_are_told_apart() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let spec = |uri: String| Neo4jSpec {
            uri,
            database: None,
            username: "neo4j".into(),
            password_secret_ref: None,
            password_env: None,
        };
        let err = Neo4jStore::connect(
            &spec(format!("bolt://127.0.0.1:{port}")),
            None,
            Duration::from_secs(2),
        )
        .err()
        .unwrap();
        assert!(matches!(err, GraphError::Unreachable { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains(&format!("neo4j at bolt://127.0.0.1:{port}"))
        );
        let err = Neo4jStore::connect(
            &spec("http://127.0.0.1:1".into()),
            None,
            Duration::from_secs(2),
        )
        .err()
        .unwrap();
        assert!(matches!(err, GraphError::Config(_)), "{err:?}");
    }
}
