//! Graph stores: an index version's skeleton and `RELATED_TO` links
//! written to a graph database, and stage 2 of retrieval run there.
//!
//! The embedded index is always built and always serves; a graph store is
//! a copy of it for teams that keep their knowledge graph in Neo4j or
//! FalkorDB. Both backends run the same openCypher statements
//! ([`cypher`]) behind one [`GraphStore`] trait; only their schema
//! statements differ. Every node is tagged with its index version, so a
//! re-index never mixes with the version before it, and a corpus' versions
//! no route serves are deleted ([`export::remove_versions`]).
//!
//! ```text
//! (:Document)-[:HAS_SECTION]->(:Section)<-[:SUBSECTION_OF]-(:Section)
//! (:Sentence)-[:PART_OF]->(:Paragraph)-[:PART_OF]->(:Section)
//! (:Sentence|:Paragraph)-[:PART_OF]->(:TextChunk)-[:IN_DOCUMENT]->(:Document)
//! (:Sentence)-[:IN_SECTION]->(:Section), (:Sentence)-[:IN_DOCUMENT]->(:Document)
//! (:Sentence)-[:NEXT]->(:Sentence), (:Paragraph)-[:NEXT]->(:Paragraph)
//! (:Sentence)-[:RELATED_TO {similarity, source: "knn_sentence"}]->(:Sentence)
//! ```

pub mod anchors;
pub mod cypher;
pub mod expand;
pub mod export;
mod falkordb;
mod neo4j;
mod pool;
mod value;
pub mod version_files;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::index::IndexVersion;
use crate::spec::{
    AnchorSource, ExpansionSource, GraphSpec, GraphStoreKind, RetrievalRouteSpec, SecretKeyRef,
};

pub use export::{ExportOptions, ExportReport, GraphCounts};
pub use falkordb::FalkorStore;
pub use neo4j::Neo4jStore;
pub use pool::{Pool, Pooled};
pub use value::Value;

#[derive(Debug, Error)]
pub enum GraphError {
    #[error("{store} at {address} is unreachable: {reason}")]
    Unreachable {
        store: &'static str,
        address: String,
        reason: String,
    },
    #[error("{store}: {statement} failed: {reason}")]
    Statement {
        store: &'static str,
        statement: String,
        reason: String,
        /// Whether trying again may succeed (connection lost, timeout).
        transient: bool,
    },
    #[error("{store}: unexpected reply to {statement}: {reason}")]
    Reply {
        store: &'static str,
        statement: String,
        reason: String,
    },
    #[error("graph store: {0}")]
    Config(String),
    #[error("graph store password: {path}: {source}")]
    Password {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

impl GraphError {
    /// Whether the statement may succeed if run again.
    pub fn is_transient(&self) -> bool {
        match self {
            GraphError::Unreachable { .. } => true,
            GraphError::Statement { transient, .. } => *transient,
            _ => false,
        }
    }
}

/// One statement: its name (for errors and spans), its text and its
/// parameters.
#[derive(Clone, Debug)]
pub struct Statement<'a> {
    pub name: &'a str,
    pub text: &'a str,
    pub params: Vec<(&'a str, Value)>,
}

impl<'a> Statement<'a> {
    pub fn new(name: &'a str, text: &'a str) -> Self {
        Self {
            name,
            text,
            params: Vec::new(),
        }
    }

    pub fn param(mut self, name: &'a str, value: impl Into<Value>) -> Self {
        self.params.push((name, value.into()));
        self
    }
}

/// The rows a statement returned, each a list of values in the order of
/// its `RETURN` clause.
pub type Rows = Vec<Vec<Value>>;

/// A graph database that runs openCypher.
pub trait GraphStore: Send {
    /// `neo4j` or `falkordb`, for messages.
    fn name(&self) -> &'static str;

    /// Creates the indexes and constraints this backend needs for vectors
    /// of `dims` dimensions; those that exist are left as they are.
    fn prepare(&mut self, dims: usize) -> Result<(), GraphError>;

    /// The expression that turns `list`, a list of floats, into what this
    /// store's vector index reads.
    fn vector(&self, list: &str) -> String;

    /// What this store's vector and full-text indexes are asked, and how
    /// they answer ([`anchors`]).
    fn search(&self) -> anchors::Search;

    /// Runs one statement (a write is committed when it returns).
    fn run(&mut self, statement: &Statement<'_>) -> Result<Rows, GraphError>;
}

/// A reply of `store` to `statement` that is not what the statement
/// returns.
fn reply_error(store: &dyn GraphStore, statement: &str, reason: String) -> GraphError {
    GraphError::Reply {
        store: store.name(),
        statement: statement.to_string(),
        reason,
    }
}

/// Runs `statement`, trying again up to `retries` times with backoff when
/// it fails for a reason that may pass. Every write Trellis makes is an
/// idempotent `MERGE`, so running one twice is harmless.
pub fn run_with_retries(
    store: &mut dyn GraphStore,
    statement: &Statement<'_>,
    retries: u32,
) -> Result<Rows, GraphError> {
    let mut attempt = 0;
    loop {
        match store.run(statement) {
            Err(e) if e.is_transient() && attempt < retries => {
                attempt += 1;
                let wait = Duration::from_millis(200 << attempt.min(6));
                tracing::warn!(
                    store = store.name(),
                    statement = statement.name,
                    attempt,
                    "{e}; retrying in {wait:?}"
                );
                std::thread::sleep(wait);
            }
            result => return result,
        }
    }
}

/// Connects to the store `spec` names; `None` for the embedded store.
pub fn connect(spec: &GraphSpec) -> Result<Option<Box<dyn GraphStore>>, GraphError> {
    match spec.store {
        GraphStoreKind::Embedded => Ok(None),
        GraphStoreKind::Falkordb => {
            let falkordb = spec.falkordb.as_ref().ok_or_else(|| {
                GraphError::Config("graph.store is falkordb but graph.falkordb is not set".into())
            })?;
            let password = password(
                falkordb.password_secret_ref.as_ref(),
                falkordb.password_env.as_deref(),
            )?;
            let store = FalkorStore::connect(falkordb, password, spec.timeout())?;
            Ok(Some(Box::new(store)))
        }
        GraphStoreKind::Neo4j => {
            let neo4j = spec.neo4j.as_ref().ok_or_else(|| {
                GraphError::Config("graph.store is neo4j but graph.neo4j is not set".into())
            })?;
            let password = password(
                neo4j.password_secret_ref.as_ref(),
                neo4j.password_env.as_deref(),
            )?;
            let store = Neo4jStore::connect(neo4j, password, spec.timeout())?;
            Ok(Some(Box::new(store)))
        }
    }
}

/// The password a spec points at: an environment variable, or a key of a
/// Secret mounted under the secret root.
fn password(
    secret: Option<&SecretKeyRef>,
    env: Option<&str>,
) -> Result<Option<String>, GraphError> {
    if let Some(variable) = env {
        return std::env::var(variable).map(Some).map_err(|_| {
            GraphError::Config(format!(
                "passwordEnv names {variable}, which is not set in the environment"
            ))
        });
    }
    let Some(secret) = secret else {
        return Ok(None);
    };
    let path = crate::locations::secret_root()
        .join(&secret.name)
        .join(&secret.key);
    let text =
        std::fs::read_to_string(&path).map_err(|source| GraphError::Password { path, source })?;
    Ok(Some(text.trim_end_matches(['\r', '\n']).to_string()))
}

/// The graph store `route` searches anchors or expands through, when its
/// anchor or expansion source is `graph`: a pool of up to `connections`
/// connections to the store of `index`'s profile, which must hold
/// `index`'s version completely. `None` for routes that run both stages
/// in the embedded index.
pub fn for_route(
    route: &RetrievalRouteSpec,
    index: &IndexVersion,
    connections: usize,
) -> Result<Option<Pool>, GraphError> {
    let stages = match (route.anchors.source, route.expansion.source) {
        (AnchorSource::Graph, ExpansionSource::Graph) => "searches anchors and expands",
        (AnchorSource::Graph, _) => "searches anchors",
        (_, ExpansionSource::Graph) => "expands",
        _ => return Ok(None),
    };
    let spec = &index.profile.graph;
    let mut store = connect(spec)?.ok_or_else(|| {
        GraphError::Config(format!(
            "the route {stages} through the graph store, but index version {} was built \
             with graph.store embedded",
            index.manifest.version
        ))
    })?;
    let version = &index.manifest.version;
    if !export::is_complete(store.as_mut(), version)? {
        return Err(GraphError::Config(format!(
            "{} does not hold index version {version} completely (its export failed or \
             has not run); run `trellis ingest` again, or serve the route with \
             anchors.source and expansion.source embedded",
            store.name()
        )));
    }
    Ok(Some(Pool::new(store, spec.clone(), connections)))
}

/// Reads version `version` of `corpus` from the store `spec` names into
/// `data_dir` ([`version_files::fetch`]), for a retrieval pod that mounts
/// no index volume; returns the version's directory.
pub fn fetch_version(
    spec: &GraphSpec,
    data_dir: &Path,
    corpus: &str,
    version: &str,
) -> Result<PathBuf, GraphError> {
    let mut store = connect(spec)?.ok_or_else(|| {
        GraphError::Config(
            "the index version is to be read from the graph store, but graph.store is embedded"
                .into(),
        )
    })?;
    version_files::fetch(store.as_mut(), data_dir, corpus, version, spec.retries())
}

/// What the graph store step of an ingest did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GraphOutcome {
    /// `neo4j` or `falkordb`.
    pub store: String,
    pub version: String,
    /// The store held the version completely already; nothing was written.
    pub already_exported: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<ExportReport>,
    /// The corpus' versions deleted from the store because no route
    /// serves them.
    #[serde(default)]
    pub removed: Vec<String>,
    /// Why the step failed. The embedded index was published and serves
    /// regardless; the next ingest tries again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl GraphOutcome {
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// The graph store step of an ingest: writes `version` of `corpus` (just
/// published under `data_dir`) to the store `spec` names, unless the store
/// holds it completely already, then deletes the corpus' versions in the
/// store that are neither `version` nor `served`. `None` for the embedded
/// store.
pub fn sync(
    spec: &GraphSpec,
    data_dir: &Path,
    corpus: &str,
    version: &str,
    served: &[String],
) -> Option<GraphOutcome> {
    let store_name = match spec.store {
        GraphStoreKind::Embedded => return None,
        GraphStoreKind::Neo4j => "neo4j",
        GraphStoreKind::Falkordb => "falkordb",
    };
    let mut outcome = GraphOutcome {
        store: store_name.to_string(),
        version: version.to_string(),
        already_exported: false,
        export: None,
        removed: Vec::new(),
        error: None,
    };
    let options = ExportOptions {
        batch_size: spec.batch_size(),
        retries: spec.retries(),
    };
    let result = (|| {
        let mut store =
            connect(spec)?.ok_or_else(|| GraphError::Config("no graph store".into()))?;
        let store = store.as_mut();
        if export::is_complete(store, version)? {
            outcome.already_exported = true;
        } else {
            let index = IndexVersion::open(data_dir, corpus, Some(version))?;
            outcome.export = Some(export::export(store, &index, options)?);
        }
        let mut keep = served.to_vec();
        keep.push(version.to_string());
        outcome.removed = export::remove_versions(store, corpus, &keep, options)?;
        Ok::<(), GraphError>(())
    })();
    if let Err(e) = result {
        let reason = crate::error_chain(&e);
        tracing::error!(store = store_name, %version, error = %reason, "graph export failed; the embedded index serves");
        outcome.error = Some(reason);
    }
    Some(outcome)
}
