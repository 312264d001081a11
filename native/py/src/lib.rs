//! `coderecall._native`: the PyO3 binding of coderecall-core.
//!
//! Thin by design: argument conversion, GIL release around every real piece of work, and the
//! one place where core errors become Python exceptions.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use coderecall_core::chunk::ChunkKind;
use coderecall_core::engine::{
    Engine, FileInput, Hit, SearchRequest, SimilarTo, Status, UpdateStats,
};
use coderecall_core::lang::Language;
use coderecall_core::semantic::SemanticOptions;
use coderecall_core::vectors::Quantization;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

mod embed;
mod graph;
mod text;

// Indexing and search allocate many small short-lived strings and vectors; mimalloc made a
// cold index of the 150k-chunk benchmark tree 7% faster and queries 3-5% faster than glibc's
// malloc, for ~10% more peak RSS. Tree-sitter's own C allocations stay on malloc: moving them
// too (`ts_set_allocator`) measured no faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(
    coderecall,
    Error,
    PyException,
    "Root of every coderecall exception."
);
create_exception!(
    coderecall,
    StoreError,
    Error,
    "The index database or one of its derived files could not be read or written."
);
create_exception!(
    coderecall,
    IndexCorruptError,
    StoreError,
    "An index file failed its integrity check; rebuilding the index repairs it."
);
create_exception!(
    coderecall,
    ModelError,
    Error,
    "An embedding model folder is missing a file, unreadable, or not a supported model."
);
create_exception!(
    coderecall,
    CancelledError,
    Error,
    "A long operation was cancelled; nothing was published."
);

/// The single mapping from core errors to Python exceptions.
pub(crate) fn to_py(err: coderecall_core::Error) -> PyErr {
    use coderecall_core::Error as E;
    let message = err.to_string();
    let corrupt = err.is_corruption();
    match err {
        E::Corrupt { .. } => IndexCorruptError::new_err(message),
        E::Store(_) if corrupt => IndexCorruptError::new_err(message),
        E::Store(_) | E::Io { .. } | E::SchemaTooNew { .. } => StoreError::new_err(message),
        E::Model { .. } => ModelError::new_err(message),
        E::InvalidArgument(_) => PyValueError::new_err(message),
        E::Cancelled => CancelledError::new_err(message),
        // A delegate's own exception, raised again as it was.
        E::Embedder(inner) => match inner.downcast::<PyErr>() {
            Ok(original) => *original,
            Err(other) => Error::new_err(other.to_string()),
        },
    }
}

#[allow(clippy::too_many_arguments)]
fn request(
    query: String,
    limit: usize,
    languages: Option<Vec<String>>,
    directories: Option<Vec<String>>,
    kinds: Option<Vec<String>>,
    per_file: usize,
    with_content: bool,
    lexical_only: bool,
) -> PyResult<SearchRequest> {
    Ok(SearchRequest {
        query,
        limit,
        languages: parse_names(
            languages,
            "language",
            Language::all().iter().map(|l| l.name()),
            Language::from_name,
        )?,
        directories: directories
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.trim_matches('/').to_owned())
            .collect(),
        kinds: parse_names(
            kinds,
            "chunk kind",
            ChunkKind::ALL.iter().map(|k| k.name()),
            ChunkKind::from_name,
        )?,
        per_file,
        with_content,
        lexical_only,
    })
}

fn hit_list<'py>(py: Python<'py>, hits: &[Hit]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for hit in hits {
        out.append(hit_dict(py, hit)?)?;
    }
    Ok(out)
}

/// Each name parsed; an unknown one is a ValueError that lists the valid `choices`.
fn parse_names<T>(
    names: Option<Vec<String>>,
    what: &str,
    choices: impl Iterator<Item = &'static str> + Clone,
    parse: impl Fn(&str) -> Option<T>,
) -> PyResult<Vec<T>> {
    names
        .unwrap_or_default()
        .iter()
        .map(|n| {
            parse(n).ok_or_else(|| {
                let valid: Vec<&str> = choices.clone().collect();
                PyValueError::new_err(format!("unknown {what} {n:?}; valid: {}", valid.join(", ")))
            })
        })
        .collect()
}

/// A handle on one index directory. Thread-safe: searches run concurrently, updates serialise.
#[pyclass(frozen, module = "coderecall._native")]
struct NativeIndex {
    /// Shared with running calls, so `close` never pulls the engine from under one of them;
    /// the files are released when the last call returns.
    engine: RwLock<Option<Arc<Engine>>>,
    /// The process that opened the index. A forked child must neither use the parent's SQLite
    /// connections nor close them (closing a file drops every POSIX lock the child holds on
    /// it, its own connections' too): there the handle refuses calls and leaks on drop.
    pid: u32,
}

impl NativeIndex {
    fn inherited(&self) -> bool {
        std::process::id() != self.pid
    }

    fn engine(&self) -> PyResult<Arc<Engine>> {
        if self.inherited() {
            return Err(StoreError::new_err(format!(
                "this index handle was opened by process {} before a fork; open the index \
                 again in this process",
                self.pid
            )));
        }
        self.engine
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| StoreError::new_err("the index is closed"))
    }
}

impl Drop for NativeIndex {
    fn drop(&mut self) {
        if self.inherited() {
            let engine = self
                .engine
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            std::mem::forget(engine);
        }
    }
}

#[pymethods]
impl NativeIndex {
    #[new]
    fn new(py: Python<'_>, index_dir: PathBuf, view: &str) -> PyResult<Self> {
        let engine = py
            .detach(|| Engine::open(&index_dir, view))
            .map_err(to_py)?;
        Ok(NativeIndex {
            engine: RwLock::new(Some(Arc::new(engine))),
            pid: std::process::id(),
        })
    }

    fn close(&self) {
        if self.inherited() {
            return; // the parent's to close; dropping leaks it here
        }
        self.engine
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }

    #[pyo3(signature = (under = None))]
    fn file_stats<'py>(
        &self,
        py: Python<'py>,
        under: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let engine = self.engine()?;
        let under: Option<Vec<&str>> = under
            .as_ref()
            .map(|u| u.iter().map(String::as_str).collect());
        let stats = py
            .detach(|| engine.file_stats(under.as_deref()))
            .map_err(to_py)?;
        let out = PyDict::new(py);
        for (path, mtime_ns, size, reason) in stats {
            out.set_item(path, (mtime_ns, size, reason))?;
        }
        Ok(out)
    }

    fn update<'py>(
        &self,
        py: Python<'py>,
        root: PathBuf,
        files: Vec<(String, i64, i64)>,
        removed: Vec<String>,
        max_file_bytes: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let files: Vec<FileInput> = files
            .into_iter()
            .map(|(path, mtime_ns, size)| FileInput {
                path,
                mtime_ns,
                size,
            })
            .collect();
        let engine = self.engine()?;
        let stats = py
            .detach(|| engine.update(&root, &files, &removed, max_file_bytes))
            .map_err(to_py)?;
        update_dict(py, &stats)
    }

    fn progress(&self) -> PyResult<(usize, usize)> {
        Ok(self.engine()?.progress())
    }

    fn cancel(&self) -> PyResult<()> {
        self.engine()?.cancel();
        Ok(())
    }

    /// Sets the embedding model of the semantic channel; `model` names it in the index (vectors
    /// of different names never mix). Natural-language searches then fuse both channels.
    /// `quantization` (`"bf16"`, `"f16"` or `"i8"`) is how the graph stores vectors (SQLite
    /// keeps f16); `weight` the channel's share in hybrid ranking (default: the engine's own).
    #[pyo3(signature = (embedder, model, quantization = "bf16", weight = None))]
    fn set_embedder(
        &self,
        py: Python<'_>,
        embedder: &embed::Embedder,
        model: &str,
        quantization: &str,
        weight: Option<f32>,
    ) -> PyResult<()> {
        let options = SemanticOptions {
            quantization: Quantization::parse(quantization).map_err(to_py)?,
            weight,
        };
        let engine = self.engine()?;
        let model_engine = embedder.engine();
        py.detach(|| engine.set_embedder(model, model_engine, options))
            .map_err(to_py)
    }

    /// Embeds the chunks that have no vector for the model yet, `batch_size` per call of the
    /// model; `progress(done, total)` after each batch. Returns how many were embedded.
    #[pyo3(signature = (batch_size = 64, progress = None))]
    fn embed_pending(
        &self,
        py: Python<'_>,
        batch_size: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<usize> {
        let engine = self.engine()?;
        py.detach(|| {
            let report = |done: usize, total: usize| {
                if let Some(callback) = &progress {
                    Python::attach(|py| {
                        if let Err(err) = callback.call1(py, (done, total)) {
                            err.write_unraisable(py, None);
                        }
                    });
                }
            };
            engine.embed_pending(batch_size, &report)
        })
        .map_err(to_py)
    }

    #[pyo3(signature = (query, limit=10, languages=None, directories=None, kinds=None, per_file=4, with_content=false, lexical_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: String,
        limit: usize,
        languages: Option<Vec<String>>,
        directories: Option<Vec<String>>,
        kinds: Option<Vec<String>>,
        per_file: usize,
        with_content: bool,
        lexical_only: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let request = request(
            query,
            limit,
            languages,
            directories,
            kinds,
            per_file,
            with_content,
            lexical_only,
        )?;
        let engine = self.engine()?;
        let hits = py.detach(|| engine.search(&request)).map_err(to_py)?;
        hit_list(py, &hits)
    }

    /// The chunks most like `text`, or like the chunk of `path` that holds `line`.
    #[pyo3(signature = (text=None, path=None, line=0, limit=10, languages=None, directories=None, kinds=None, per_file=4, with_content=false, lexical_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn similar<'py>(
        &self,
        py: Python<'py>,
        text: Option<String>,
        path: Option<String>,
        line: u32,
        limit: usize,
        languages: Option<Vec<String>>,
        directories: Option<Vec<String>>,
        kinds: Option<Vec<String>>,
        per_file: usize,
        with_content: bool,
        lexical_only: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let request = request(
            String::new(),
            limit,
            languages,
            directories,
            kinds,
            per_file,
            with_content,
            lexical_only,
        )?;
        let to = match (&text, &path) {
            (Some(text), None) => SimilarTo::Text(text),
            (None, Some(path)) => SimilarTo::Location { path, line },
            _ => {
                return Err(PyValueError::new_err(
                    "pass either text or path (with line)",
                ));
            }
        };
        let engine = self.engine()?;
        let hits = py.detach(|| engine.similar(to, &request)).map_err(to_py)?;
        hit_list(py, &hits)
    }

    /// Texts of the chunks without a vector for `model`, as they would be embedded.
    fn pending_texts(&self, py: Python<'_>, model: &str) -> PyResult<Vec<String>> {
        let engine = self.engine()?;
        py.detach(|| engine.pending_texts(model)).map_err(to_py)
    }

    fn generation(&self, py: Python<'_>) -> PyResult<u64> {
        let engine = self.engine()?;
        py.detach(|| engine.generation()).map_err(to_py)
    }

    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let engine = self.engine()?;
        let status = py.detach(|| engine.status()).map_err(to_py)?;
        status_dict(py, &status)
    }

    fn weights(&self) -> PyResult<BTreeMap<&'static str, f32>> {
        let weights = self.engine()?.weights();
        Ok(coderecall_core::rank::Weights::NAMES
            .iter()
            .filter_map(|name| Some((*name, weights.get(name)?)))
            .collect())
    }

    fn set_weights(&self, values: BTreeMap<String, f32>) -> PyResult<()> {
        let values: Vec<(String, f32)> = values.into_iter().collect();
        self.engine()?.set_weights(&values).map_err(to_py)
    }

    /// Deletes what no view has referenced for `grace_seconds`; returns what was deleted.
    fn collect_garbage<'py>(
        &self,
        py: Python<'py>,
        grace_seconds: f64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let grace = std::time::Duration::try_from_secs_f64(grace_seconds)
            .map_err(|_| PyValueError::new_err(format!("bad grace period {grace_seconds}")))?;
        let engine = self.engine()?;
        let stats = py.detach(|| engine.collect_garbage(grace)).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("views", stats.views)?;
        d.set_item("file_versions", stats.file_versions)?;
        d.set_item("chunks", stats.chunks)?;
        d.set_item("vectors", stats.vectors.len())?;
        Ok(d)
    }

    /// Checks the store against its derived files; `vectors` = (model, dims, quantization)
    /// names the graph to check. With `repair`, rebuilds derived files from the store.
    #[pyo3(signature = (repair = false, vectors = None))]
    fn health<'py>(
        &self,
        py: Python<'py>,
        repair: bool,
        vectors: Option<(String, usize, String)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let graph = match &vectors {
            Some((model, dims, quantization)) => Some((
                model.as_str(),
                *dims,
                Quantization::parse(quantization).map_err(to_py)?,
            )),
            None => None,
        };
        let engine = self.engine()?;
        let health = py.detach(|| engine.health(repair, graph)).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("problems", &health.problems)?;
        d.set_item("repaired", &health.repaired)?;
        Ok(d)
    }

    /// The call graph of this view as published (built on first use after a change).
    fn call_graph(&self, py: Python<'_>) -> PyResult<graph::CallGraph> {
        let engine = self.engine()?;
        let built = py.detach(|| engine.graph()).map_err(to_py)?;
        Ok(graph::CallGraph::new(built))
    }

    /// Vectors stored for the embedding model `model`.
    fn vector_count(&self, py: Python<'_>, model: &str) -> PyResult<usize> {
        let engine = self.engine()?;
        py.detach(|| engine.vector_count(model)).map_err(to_py)
    }

    /// Deletes another view (a removed knowledge base); False if there is none by that name.
    fn drop_view(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let engine = self.engine()?;
        py.detach(|| engine.drop_view(name)).map_err(to_py)
    }

    /// Lines `start..=end` of `path` as indexed (None when the path is not indexed).
    fn lines(&self, py: Python<'_>, path: &str, start: u32, end: u32) -> PyResult<Option<String>> {
        let engine = self.engine()?;
        py.detach(|| engine.lines(path, start, end)).map_err(to_py)
    }

    fn get_meta(&self, py: Python<'_>, key: &str) -> PyResult<Option<String>> {
        let engine = self.engine()?;
        py.detach(|| engine.get_meta(key)).map_err(to_py)
    }

    fn set_meta(&self, py: Python<'_>, key: &str, value: &str) -> PyResult<()> {
        let engine = self.engine()?;
        py.detach(|| engine.set_meta(key, value)).map_err(to_py)
    }
}

fn update_dict<'py>(py: Python<'py>, s: &UpdateStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("files_parsed", s.files_parsed)?;
    d.set_item("files_reused", s.files_reused)?;
    d.set_item("files_removed", s.files_removed)?;
    d.set_item("chunks_added", s.chunks_added)?;
    d.set_item("symbols_added", s.symbols_added)?;
    d.set_item("bytes_parsed", s.bytes_parsed)?;
    d.set_item("generation", s.generation)?;
    let skipped: Vec<(&str, &str)> = s
        .skipped
        .iter()
        .map(|(p, r)| (p.as_str(), r.name()))
        .collect();
    d.set_item("skipped", skipped)?;
    let decoded: Vec<(&str, &str)> = s
        .decoded
        .iter()
        .filter_map(|(p, e)| Some((p.as_str(), e.name()?)))
        .collect();
    d.set_item("decoded", decoded)?;
    Ok(d)
}

fn hit_dict<'py>(py: Python<'py>, h: &Hit) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", &h.path)?;
    d.set_item("start_line", h.start_line)?;
    d.set_item("end_line", h.end_line)?;
    d.set_item("language", h.language.name())?;
    d.set_item("kind", h.kind.name())?;
    d.set_item("symbol", &h.symbol)?;
    d.set_item("symbol_path", &h.symbol_path)?;
    d.set_item("score", h.score)?;
    d.set_item("content", &h.content)?;
    let channels: Vec<&str> = [
        (h.channels.lexical, "lexical"),
        (h.channels.semantic, "semantic"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    d.set_item("channels", channels)?;
    Ok(d)
}

fn status_dict<'py>(py: Python<'py>, s: &Status) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("schema_version", s.schema_version)?;
    d.set_item("generation", s.generation)?;
    d.set_item("files", s.files)?;
    d.set_item("chunks", s.chunks)?;
    d.set_item("symbols", s.symbols)?;
    d.set_item("file_versions", s.file_versions)?;
    let languages = PyDict::new(py);
    for (name, count) in &s.languages {
        languages.set_item(name, count)?;
    }
    d.set_item("languages", languages)?;
    d.set_item("db_bytes", s.db_bytes)?;
    d.set_item("lexical_bytes", s.lexical_bytes)?;
    Ok(d)
}

/// Names of every language the core can chunk.
#[pyfunction]
fn languages() -> Vec<&'static str> {
    Language::all().iter().map(|l| l.name()).collect()
}

/// Language name for a file, or None for text that is not indexed.
#[pyfunction]
fn detect_language(path: &str, head: &Bound<'_, PyBytes>) -> Option<&'static str> {
    Language::detect(path, head.as_bytes()).map(Language::name)
}

/// Definitions of a file as `(name, kind, local path, start line, end line)`, lines 1-based
/// and inclusive, the start including attached doc comments and decorators. Empty for files
/// without a grammar or a language that is not indexed.
#[pyfunction]
fn extract_symbols(
    py: Python<'_>,
    path: &str,
    text: &str,
) -> Vec<(String, &'static str, String, u32, u32)> {
    let Some(language) = Language::detect(path, text.as_bytes()) else {
        return Vec::new();
    };
    let text = text.to_owned();
    py.detach(move || coderecall_core::chunk::chunk_file(&text, language).symbols)
        .into_iter()
        .map(|s| {
            (
                s.name,
                s.kind.name(),
                s.local_path,
                s.start_line,
                s.end_line,
            )
        })
        .collect()
}

#[pymodule(gil_used = false)]
mod _native {
    #[pymodule_export]
    use super::embed::{Embedder, centred_nearest, distill, dot_rows, learn, model_recipe};
    #[pymodule_export]
    use super::graph::CallGraph;
    #[pymodule_export]
    use super::text::{KeySet, TextIndex, word_variants};
    #[pymodule_export]
    use super::{NativeIndex, detect_language, extract_symbols, languages};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        // SAFETY: module initialisation runs once, under the import lock, before this
        // library starts a thread.
        #[allow(unsafe_code)]
        unsafe {
            coderecall_core::embed::settle_thread_count();
        }
        let py = m.py();
        m.add("Error", py.get_type::<super::Error>())?;
        m.add("StoreError", py.get_type::<super::StoreError>())?;
        m.add(
            "IndexCorruptError",
            py.get_type::<super::IndexCorruptError>(),
        )?;
        m.add("CancelledError", py.get_type::<super::CancelledError>())?;
        m.add("ModelError", py.get_type::<super::ModelError>())?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("SCHEMA_VERSION", coderecall_core::store::SCHEMA_VERSION)?;
        Ok(())
    }
}
