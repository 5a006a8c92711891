//! Opening a route: the index version it serves, the query embedder of
//! that version's profile, and the graph store when the route expands
//! through one. `trellis query`, `trellis serve` and `trellis eval` all
//! answer from a [`LoadedRoute`].

use std::path::Path;

use crate::embed::{self, Embedder};
use crate::graph::Pool;
use crate::index::{IndexVersion, Opening};
use crate::spec::{AnchorSource, RetrievalRouteSpec};

use super::{RetrieveError, Retriever};

/// Everything a route answers from, loaded once.
pub struct LoadedRoute {
    pub index: IndexVersion,
    pub embedder: Box<dyn Embedder>,
    /// Connections to the graph store holding the version, for a route
    /// that runs a stage there ([`crate::graph::for_route`]).
    pub graph: Option<Pool>,
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
        let index =
            IndexVersion::open_as(data_dir, &route.corpus_ref.name, version, opening(route))?;
        Self::with_index(index, route, queries)
    }

    /// The query embedder and graph store `route` needs over `index`: a
    /// connection per query that may run at once, opened as they come.
    pub fn with_index(
        index: IndexVersion,
        route: &RetrievalRouteSpec,
        queries: usize,
    ) -> Result<Self, RetrieveError> {
        let embedder = embed::from_spec(&index.profile.embedding, None)?;
        let graph =
            crate::graph::for_route(route, &index, queries).map_err(RetrieveError::OpenGraph)?;
        Ok(Self {
            index,
            embedder,
            graph,
        })
    }

    /// A retriever over the loaded version; fails when the embedder is not
    /// the model the version was built with.
    pub fn retriever(&self) -> Result<Retriever<'_>, RetrieveError> {
        let retriever = Retriever::new(&self.index, self.embedder.as_ref())?;
        Ok(match &self.graph {
            Some(graph) => retriever.with_graph(graph),
            None => retriever,
        })
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
