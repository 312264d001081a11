//! Local embedding engines for Python: vectors come back as numpy arrays, and the GIL is
//! released while a model loads or computes.

use std::path::PathBuf;
use std::sync::Arc;

use coderecall_core::embed::{
    DEFAULT_MAX_TOKENS, DistillOptions, StaticEmbedder, TransformerEmbedder,
};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::to_py;

// The signature below spells the default out, so Python's introspection shows the number.
const _: () = assert!(DEFAULT_MAX_TOKENS == 256);

/// A loaded local embedding model.
#[pyclass(frozen, module = "coderecall._native")]
pub(crate) struct Embedder {
    engine: Arc<dyn coderecall_core::embed::Embedder>,
    kind: &'static str,
    path: PathBuf,
}

impl Embedder {
    /// The engine, for the index that embeds with it.
    pub(crate) fn engine(&self) -> Arc<dyn coderecall_core::embed::Embedder> {
        Arc::clone(&self.engine)
    }
}

#[pymethods]
impl Embedder {
    /// A BERT-family sentence-embedding model from a folder with `config.json`,
    /// `tokenizer.json` and `model.safetensors`; inputs are cut to `max_tokens` tokens.
    #[staticmethod]
    #[pyo3(signature = (path, max_tokens = 256))]
    fn transformer(py: Python<'_>, path: PathBuf, max_tokens: usize) -> PyResult<Self> {
        let engine = py
            .detach(|| TransformerEmbedder::load(&path, max_tokens))
            .map_err(to_py)?;
        Ok(Embedder {
            engine: Arc::new(engine),
            kind: "transformer",
            path,
        })
    }

    /// A static (Model2Vec-format) model from a folder with `tokenizer.json` and
    /// `model.safetensors`.
    #[staticmethod]
    fn static_model(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let engine = py.detach(|| StaticEmbedder::load(&path)).map_err(to_py)?;
        Ok(Embedder {
            engine: Arc::new(engine),
            kind: "static",
            path,
        })
    }

    /// Length of every vector.
    #[getter]
    fn dims(&self) -> usize {
        self.engine.dims()
    }

    /// `"transformer"` or `"static"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// The model folder.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// One L2-normalised row per text: a `float32` array of shape `(len(texts), dims)`.
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let engine = Arc::clone(&self.engine);
        let rows = texts.len();
        let dims = engine.dims();
        let values = py
            .detach(move || {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                engine.embed(&refs)
            })
            .map_err(to_py)?;
        PyArray1::from_vec(py, values).reshape([rows, dims])
    }

    /// The token ids the model sees for each text, after truncation (with the special tokens
    /// for a transformer, without them for a static model).
    fn tokenize(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<u32>>> {
        let engine = Arc::clone(&self.engine);
        py.detach(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            engine.tokenize(&refs)
        })
        .map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!(
            "Embedder.{}({:?}, dims={})",
            if self.kind == "static" {
                "static_model"
            } else {
                "transformer"
            },
            self.path.display().to_string(),
            self.engine.dims()
        )
    }
}

/// Builds a static model in `dst` from the transformer in `src` (see
/// `coderecall_core::embed::distill`); `progress(done, total)` is called as tokens are embedded.
/// `frequencies[id]` counts token `id` in a representative corpus (else Zipf over the ids).
/// Returns what was built.
#[pyfunction]
#[pyo3(signature = (src, dst, dims = 256, progress = None, frequencies = None))]
pub(crate) fn distill<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    dims: usize,
    progress: Option<Py<PyAny>>,
    frequencies: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = DistillOptions { dims, frequencies };
    let report = py
        .detach(|| {
            let report = |done: usize, total: usize| {
                if let Some(callback) = &progress {
                    Python::attach(|py| {
                        // A failing callback must not abort hours of work: it is reported
                        // by Python's unraisable hook and the distillation goes on.
                        if let Err(err) = callback.call1(py, (done, total)) {
                            err.write_unraisable(py, None);
                        }
                    });
                }
            };
            coderecall_core::embed::distill(&src, &dst, &options, &report)
        })
        .map_err(to_py)?;
    let out = PyDict::new(py);
    out.set_item("tokens", report.tokens)?;
    out.set_item("dims", report.dims)?;
    out.set_item("explained_variance", report.explained_variance)?;
    out.set_item("path", report.output)?;
    Ok(out)
}
