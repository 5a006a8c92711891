//! Opening a route: the index version it serves, the query embedder of
//! that version's profile, the graph store when the route expands
//! through one, and its reranker. `trellis query`, `trellis serve` and `trellis eval` all
//! answer from a [`LoadedRoute`].

use std::path::Path;

use crate::embed::{self, Embedder};
use crate::graph::Pool;
use crate::index::{IndexVersion, Opening};
use crate::spec::{AnchorSource, RetrievalRouteSpec};

use super::{Reranker, RetrieveError, Retriever};

/// Everything a route answers from, loaded once.
pub struct LoadedRoute {
    pub index: IndexVersion,
    pub embedder: Box<dyn Embedder>,
    /// Connections to the graph store holding the version, for a route
    /// that runs a stage there ([`crate::graph::for_route`]).
    pub graph: Option<Pool>,
    /// The route's reranker, when it sets one.
    pub reranker: Option<Box<dyn Reranker>>,
}

impl LoadedRoute {
    /// Opens index version `version` (the current one when `None`) of the
    /// route's corpus under `data_dir`, and what the route needs with it,
    /// for up to `queries` queries at once.
    pub fn open(
        data_dir: &Path,
        route: &RetrievalRouteSpec,
        version: Option<&str>,
        queries: usize,
    ) -> Result<Self, RetrieveError> {
        Self::open_expecting(data_dir, route, version, queries, None)
    }

    /// As [`open`](Self::open), and with `profile` (a
    /// [`served_hash`](crate::spec::IndexProfileSpec::served_hash))
    /// refuses a version whose profile is another, before anything of it
    /// is used: no embedder made, no graph store dialled.
    pub fn open_expecting(
        data_dir: &Path,
        route: &RetrievalRouteSpec,
        version: Option<&str>,
        queries: usize,
        profile: Option<&str>,
    ) -> Result<Self, RetrieveError> {
        let index =
            IndexVersion::open_as(data_dir, &route.corpus_ref.name, version, opening(route))?;
        if let Some(expected) = profile {
            let found = index.profile.served_hash();
            if found != expected {
                return Err(RetrieveError::ProfileNotRendered {
                    version: index.manifest.version.clone(),
                    found,
                    expected: expected.to_string(),
                });
            }
        }
        Self::with_index(index, route, queries)
    }

    /// The query embedder, graph store and reranker `route` needs over
    /// `index`: a graph connection per query that may run at once, opened
    /// as they come. The reranker's relative paths must have been resolved
    /// ([`crate::spec::RerankerSpec::resolve_paths`]; manifests read from
    /// files are).
    pub fn with_index(
        index: IndexVersion,
        route: &RetrievalRouteSpec,
        queries: usize,
    ) -> Result<Self, RetrieveError> {
        let embedder = embed::from_spec(&index.profile.embedding, None)?;
        if route.anchors.chunks > 0 {
            // Read now: a version without chunk vectors fails the route's
            // opening, not its first query.
            index.chunk_index()?;
        }
        let graph =
            crate::graph::for_route(route, &index, queries).map_err(RetrieveError::OpenGraph)?;
        let reranker = super::rerank::from_spec(&route.reranker, None)?;
        Ok(Self {
            index,
            embedder,
            graph,
            reranker,
        })
    }

    /// A retriever over the loaded version; fails when the embedder is not
    /// the model the version was built with.
    pub fn retriever(&self) -> Result<Retriever<'_>, RetrieveError> {
        let mut retriever = Retriever::new(&self.index, self.embedder.as_ref())?;
        if let Some(graph) = &self.graph {
            retriever = retriever.with_graph(graph);
        }
        if let Some(reranker) = &self.reranker {
            retriever = retriever.with_reranker(reranker.as_ref());
        }
        Ok(retriever)
    }
}

/// How much of a version `route` needs: a route that searches anchors in
/// the graph store reads sentence vectors from there too, and leaves the
/// version's vectors, HNSW graph and BM25 index on disk.
pub fn opening(route: &RetrievalRouteSpec) -> Opening {
    match route.anchors.source {
        AnchorSource::Graph => Opening::WithoutSearch,
        AnchorSource::Embedded => Opening::Whole,
    }
}
