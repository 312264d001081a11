//! `CallGraph`: a built call graph of one view, shared read-only with Python.

use std::sync::Arc;

use coderecall_core::graph::{Edge, Graph, Target};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The call graph of a view at one generation. Immutable; queries never touch the store.
#[pyclass(frozen, module = "coderecall._native")]
pub(crate) struct CallGraph {
    graph: Arc<Graph>,
}

impl CallGraph {
    pub(crate) fn new(graph: Arc<Graph>) -> Self {
        CallGraph { graph }
    }

    fn node<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyDict>> {
        let g = &self.graph;
        let n = &g.nodes[id as usize];
        let f = &g.files[n.file as usize];
        let d = PyDict::new(py);
        d.set_item("id", id)?;
        d.set_item("path", &f.path)?;
        d.set_item("language", f.language.name())?;
        d.set_item("name", &n.name)?;
        d.set_item("symbol_path", g.symbol_path(id))?;
        d.set_item("kind", n.kind.name())?;
        d.set_item("start_line", n.start_line)?;
        d.set_item("end_line", n.end_line)?;
        let (callers, callees) = g.degree(id);
        d.set_item("callers", callers)?;
        d.set_item("callees", callees)?;
        Ok(d)
    }

    fn edge<'py>(&self, py: Python<'py>, id: u32, depth: usize) -> PyResult<Bound<'py, PyDict>> {
        let e: &Edge = &self.graph.edges[id as usize];
        let d = PyDict::new(py);
        d.set_item("kind", e.kind.name())?;
        d.set_item("from", self.node(py, e.from)?)?;
        d.set_item("path", self.graph.path_of(e.from))?;
        d.set_item("line", e.line)?;
        d.set_item("callee", &e.callee)?;
        d.set_item("confidence", e.confidence.name())?;
        d.set_item("depth", depth)?;
        let candidates = PyList::empty(py);
        let (to, reason, external) = match &e.target {
            Target::Node(t) => (Some(self.node(py, *t)?), None, None),
            Target::Ambiguous(c) => {
                for &t in c {
                    candidates.append(self.node(py, t)?)?;
                }
                (None, Some("ambiguous"), None)
            }
            Target::External(m) => (None, Some("external"), Some(m.as_str())),
            Target::Unknown => (None, Some("unknown"), None),
        };
        d.set_item("to", to)?;
        d.set_item("reason", reason)?;
        d.set_item("external", external)?;
        d.set_item("candidates", candidates)?;
        Ok(d)
    }
}

#[pymethods]
impl CallGraph {
    /// Counts: files, nodes (definitions), edges by confidence, inheritance edges.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.graph.stats();
        let d = PyDict::new(py);
        d.set_item("files", s.files)?;
        d.set_item("definitions", s.nodes)?;
        d.set_item("edges", s.edges)?;
        d.set_item("resolved", s.resolved)?;
        d.set_item("inferred", s.inferred)?;
        d.set_item("unresolved", s.unresolved)?;
        d.set_item("ambiguous", s.ambiguous)?;
        d.set_item("external", s.external)?;
        d.set_item("unknown", s.unknown)?;
        d.set_item("inherits", s.inherits)?;
        d.set_item("build_seconds", self.graph.build_time.as_secs_f64())?;
        Ok(d)
    }

    /// Calls per language of the calling file, by confidence.
    fn language_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (lang, [resolved, inferred, unresolved]) in self.graph.language_stats() {
            let d = PyDict::new(py);
            d.set_item("resolved", resolved)?;
            d.set_item("inferred", inferred)?;
            d.set_item("unresolved", unresolved)?;
            out.set_item(lang.name(), d)?;
        }
        Ok(out)
    }

    /// Definitions matching a name, a qualified name or `path:line`, implementation first.
    #[pyo3(signature = (symbol, limit = 20))]
    fn find<'py>(
        &self,
        py: Python<'py>,
        symbol: &str,
        limit: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let graph = Arc::clone(&self.graph);
        let ids = py.detach(|| graph.find(symbol));
        let out = PyList::empty(py);
        for id in ids.into_iter().take(limit) {
            out.append(self.node(py, id)?)?;
        }
        Ok(out)
    }

    /// Defined names spelled like the last part of `symbol`, nearest first (for a name that
    /// is not defined: a typo's suggestions).
    #[pyo3(signature = (symbol, limit = 3))]
    fn similar_names(&self, py: Python<'_>, symbol: &str, limit: usize) -> Vec<String> {
        let graph = Arc::clone(&self.graph);
        py.detach(|| graph.similar_names(symbol, limit))
    }

    fn node_info<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyDict>> {
        if id as usize >= self.graph.nodes.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "no node {id}"
            )));
        }
        self.node(py, id)
    }

    /// Edges around node `id`, breadth first up to `depth`: `callers=True` for edges that
    /// reach it, else edges that leave it.
    #[pyo3(signature = (id, callers, depth = 1, limit = 200))]
    fn edges<'py>(
        &self,
        py: Python<'py>,
        id: u32,
        callers: bool,
        depth: usize,
        limit: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        if id as usize >= self.graph.nodes.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "no node {id}"
            )));
        }
        let graph = Arc::clone(&self.graph);
        let found = py.detach(|| graph.walk(id, callers, depth, limit));
        let out = PyList::empty(py);
        for (e, depth) in found {
            out.append(self.edge(py, e, depth)?)?;
        }
        Ok(out)
    }

    /// Calls of node `id`'s name that resolved to nothing: callers that may exist unseen.
    fn unresolved_named(&self, py: Python<'_>, id: u32) -> usize {
        let graph = Arc::clone(&self.graph);
        py.detach(|| graph.unresolved_named(id))
    }

    /// The shortest call chain from node `source` to node `target` (edge dicts), or None.
    #[pyo3(signature = (source, target, max_depth = 8))]
    fn path<'py>(
        &self,
        py: Python<'py>,
        source: u32,
        target: u32,
        max_depth: usize,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let graph = Arc::clone(&self.graph);
        let Some(chain) = py.detach(|| graph.path(source, target, max_depth)) else {
            return Ok(None);
        };
        let out = PyList::empty(py);
        for (i, e) in chain.into_iter().enumerate() {
            out.append(self.edge(py, e, i + 1)?)?;
        }
        Ok(Some(out))
    }

    /// The definitions of one file in source order.
    fn outline<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for id in self.graph.outline(path) {
            out.append(self.node(py, id)?)?;
        }
        Ok(out)
    }
}
