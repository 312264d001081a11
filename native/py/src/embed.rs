//! Local embedding engines for Python: vectors come back as numpy arrays, and the GIL is
//! released while a model loads or computes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use coderecall_core::Error as CoreError;
use coderecall_core::Result as CoreResult;
use coderecall_core::embed::{
    DEFAULT_MAX_TOKENS, DistillOptions, LearnOptions, StaticEmbedder, TransformerEmbedder,
};
use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyException;
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
    /// The model folder of a local engine; `None` for a delegate.
    path: Option<PathBuf>,
    /// What a delegate wraps, for its repr.
    label: Option<String>,
    /// How a transformer pools and prompts, where it departs from the default.
    recipe: String,
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
    /// `tokenizer.json` and `model.safetensors`; inputs are cut to `max_tokens` tokens. The
    /// prompts, when given, replace those the folder names.
    #[staticmethod]
    #[pyo3(signature = (path, max_tokens = 256, *, query_prompt = None, document_prompt = None))]
    fn transformer(
        py: Python<'_>,
        path: PathBuf,
        max_tokens: usize,
        query_prompt: Option<String>,
        document_prompt: Option<String>,
    ) -> PyResult<Self> {
        let mut engine = py
            .detach(|| TransformerEmbedder::load(&path, max_tokens))
            .map_err(to_py)?;
        engine.set_prompts(query_prompt, document_prompt);
        let mut recipe = engine.recipe().describe();
        if max_tokens != DEFAULT_MAX_TOKENS {
            // Texts cut elsewhere give other vectors: another model identity (only a cut other
            // than the default enters it, so ids of models indexed before stay as they were).
            let sep = if recipe.is_empty() { "" } else { "; " };
            recipe = format!("{recipe}{sep}max_tokens={max_tokens}");
        }
        Ok(Embedder {
            engine: Arc::new(engine),
            kind: "transformer",
            path: Some(path),
            label: None,
            recipe,
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
            path: Some(path),
            label: None,
            recipe: String::new(),
        })
    }

    /// An engine implemented in Python: `target.embed_documents(texts)` returns an array
    /// (any array-like of numbers, cast to `float32`) of shape `(len(texts), dims)` and
    /// `target.embed_query(text)` one of shape `(dims,)`, both L2-normalised and finite (else
    /// `ValueError`). The index calls back with the GIL held; whatever the target raises
    /// reaches the caller of the index unchanged.
    #[staticmethod]
    fn delegate(py: Python<'_>, target: Py<PyAny>, dims: usize) -> PyResult<Self> {
        if dims == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "dims must be at least 1",
            ));
        }
        let label = target.bind(py).repr()?.to_string();
        Ok(Embedder {
            engine: Arc::new(Delegate { target, dims }),
            kind: "delegate",
            path: None,
            label: Some(label),
            recipe: String::new(),
        })
    }

    /// Length of every vector.
    #[getter]
    fn dims(&self) -> usize {
        self.engine.dims()
    }

    /// `"transformer"`, `"static"` or `"delegate"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// The model folder (`None` for a delegate).
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.path.clone()
    }

    /// How a transformer pools, prompts and cuts where it departs from mean pooling without
    /// prompts at 256 tokens (`"pooling=cls; query prompt=\"query: \""`, `"max_tokens=512"`);
    /// empty otherwise.
    #[getter]
    fn recipe(&self) -> &str {
        &self.recipe
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

    /// The vector of a search query: a `float32` array of shape `(dims,)`. A transformer
    /// remembers its latest queries, so one question searched in several places (code and
    /// memory) goes through the model once.
    fn embed_query<'py>(
        &self,
        py: Python<'py>,
        text: String,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let engine = Arc::clone(&self.engine);
        let values = py
            .detach(move || engine.embed_query(&text))
            .map_err(to_py)?;
        Ok(PyArray1::from_vec(py, values))
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
        let dims = self.engine.dims();
        match (&self.path, &self.label) {
            (Some(path), _) => format!(
                "Embedder.{}({:?}, dims={dims})",
                if self.kind == "static" {
                    "static_model"
                } else {
                    "transformer"
                },
                path.display().to_string()
            ),
            (None, label) => format!(
                "Embedder.delegate({}, dims={dims})",
                label.as_deref().unwrap_or("?")
            ),
        }
    }
}

/// The core's view of an engine written in Python.
struct Delegate {
    target: Py<PyAny>,
    dims: usize,
}

impl Delegate {
    /// Runs `call` with the GIL; a Python exception travels inside the core error untouched.
    fn call(
        &self,
        call: impl FnOnce(Python<'_>) -> PyResult<Vec<f32>>,
    ) -> coderecall_core::Result<Vec<f32>> {
        Python::attach(call).map_err(|err| coderecall_core::Error::Embedder(Box::new(err)))
    }

    /// The vectors `target.what(arg)` returned, checked: any array-like of numbers (numpy's
    /// default float64 too, cast as `numpy.asarray` casts), of the shape `want`, finite.
    fn vectors<'py, D: numpy::ndarray::Dimension + 'py>(
        &self,
        py: Python<'py>,
        what: &str,
        arg: impl IntoPyObject<'py>,
        want: &[usize],
    ) -> PyResult<Vec<f32>> {
        let out = self.target.bind(py).call_method1(what, (arg,))?;
        let array: numpy::PyArrayLike<'py, f32, D, numpy::AllowTypeChange> = out.extract()?;
        let view = array.as_array();
        let problem = if view.shape() != want {
            Some(format!(
                "an array of shape {:?}, expected {want:?}",
                view.shape()
            ))
        } else if !view.iter().all(|v| v.is_finite()) {
            Some("a vector holding NaN or infinity".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            let target = self
                .target
                .bind(py)
                .repr()
                .map_or_else(|_| "the embedding delegate".to_owned(), |r| r.to_string());
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{target}.{what} returned {problem}"
            )));
        }
        Ok(view.iter().copied().collect())
    }
}

impl coderecall_core::embed::Embedder for Delegate {
    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str]) -> coderecall_core::Result<Vec<f32>> {
        self.call(|py| {
            let want = [texts.len(), self.dims];
            self.vectors::<numpy::Ix2>(py, "embed_documents", texts.to_vec(), &want)
        })
    }

    fn embed_query(&self, text: &str) -> coderecall_core::Result<Vec<f32>> {
        self.call(|py| self.vectors::<numpy::Ix1>(py, "embed_query", text, &[self.dims]))
    }

    fn tokenize(&self, _texts: &[&str]) -> coderecall_core::Result<Vec<Vec<u32>>> {
        Err(coderecall_core::Error::InvalidArgument(
            "a delegate engine exposes no token ids".into(),
        ))
    }
}

/// Runs `work` without the GIL, handing it a reporter that calls Python's `progress(done,
/// total)`, if given. Ctrl-C stops the work at its next report (the `KeyboardInterrupt` is
/// raised here, as the callback saw it); any other failure of the callback must not abort
/// minutes of work: it goes to Python's unraisable hook and the work goes on.
fn with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<&Py<PyAny>>,
    work: impl FnOnce(&(dyn Fn(usize, usize) -> CoreResult<()> + Sync)) -> CoreResult<T> + Send,
) -> PyResult<T> {
    let interrupt: Mutex<Option<PyErr>> = Mutex::new(None);
    let report = |done: usize, total: usize| {
        Python::attach(|py| {
            let called = py.check_signals().and_then(|()| match progress {
                Some(callback) => callback.call1(py, (done, total)).map(drop),
                None => Ok(()),
            });
            match called {
                Ok(()) => Ok(()),
                Err(err) if !err.is_instance_of::<PyException>(py) => {
                    *interrupt.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
                    Err(CoreError::Cancelled)
                }
                Err(err) => {
                    err.write_unraisable(py, None);
                    Ok(())
                }
            }
        })
    };
    match py.detach(|| work(&report)) {
        Ok(value) => Ok(value),
        Err(CoreError::Cancelled) => Err(interrupt
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or_else(|| to_py(CoreError::Cancelled))),
        Err(err) => Err(to_py(err)),
    }
}

/// How the transformer in `path` pools and prompts, as `Embedder.recipe` would say once it is
/// loaded (its sentence-transformers files only: the weights are not read).
#[pyfunction]
pub(crate) fn model_recipe(path: PathBuf) -> PyResult<String> {
    coderecall_core::embed::Recipe::read(&path)
        .map(|recipe| recipe.describe())
        .map_err(to_py)
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
    let report = with_progress(py, progress.as_ref(), |report| {
        coderecall_core::embed::distill(&src, &dst, &options, report)
    })?;
    let out = PyDict::new(py);
    out.set_item("tokens", report.tokens)?;
    out.set_item("dims", report.dims)?;
    out.set_item("explained_variance", report.explained_variance)?;
    out.set_item("path", report.output)?;
    Ok(out)
}

/// Builds in `dst` the static model in `base` fitted to the transformer in `teacher` on `texts`
/// (see `coderecall_core::embed::learn`); `progress(done, total)` is called as the teacher
/// embeds the texts. Returns how well the fit went.
#[pyfunction]
#[pyo3(signature = (base, teacher, dst, texts, dims = 256, progress = None))]
pub(crate) fn learn<'py>(
    py: Python<'py>,
    base: PathBuf,
    teacher: PathBuf,
    dst: PathBuf,
    texts: Vec<String>,
    dims: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = LearnOptions {
        dims,
        ..LearnOptions::default()
    };
    let report = with_progress(py, progress.as_ref(), |report| {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        coderecall_core::embed::learn(&base, &teacher, &dst, &texts, &options, report)
    })?;
    let out = PyDict::new(py);
    out.set_item("texts", report.texts)?;
    out.set_item("held_out", report.held_out)?;
    out.set_item("tokens", report.tokens)?;
    out.set_item("cosine_before", report.cosine_before)?;
    out.set_item("cosine_after", report.cosine_after)?;
    out.set_item("ridge", report.ridge)?;
    out.set_item("iterations", report.iterations)?;
    out.set_item("path", dst)?;
    Ok(out)
}

/// Each row's dot product with `query` (`coderecall_core::dot`), with the GIL released: the
/// exact vector search of memory. The arrays are read in place when C-contiguous.
#[pyfunction]
pub(crate) fn dot_rows<'py>(
    py: Python<'py>,
    rows: PyReadonlyArray2<'py, f32>,
    query: PyReadonlyArray1<'py, f32>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let rows = rows.as_array();
    let query = query.as_array();
    let (count, dims) = rows.dim();
    if query.len() != dims {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a query of {} values for rows of {dims}",
            query.len()
        )));
    }
    let rows = rows.as_standard_layout();
    let query = query.as_standard_layout();
    let (Some(rows), Some(query)) = (rows.as_slice(), query.as_slice()) else {
        unreachable!("standard layout is contiguous");
    };
    let mut out = vec![0.0f32; count];
    py.detach(|| coderecall_core::dot::dot_rows(rows, dims, query, &mut out));
    Ok(PyArray1::from_vec(py, out))
}

/// A C-contiguous array's values, or a `ValueError` naming it.
fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &str,
) -> PyResult<&'a [T]> {
    // `as_slice` also takes Fortran order, which would read a matrix transposed.
    let refused =
        || pyo3::exceptions::PyValueError::new_err(format!("{name} must be C-contiguous"));
    if !array.is_c_contiguous() {
        return Err(refused());
    }
    array.as_slice().map_err(|_| refused())
}

/// The `limit` records nearest a centred query, as `(id, score)` best first
/// (`coderecall_core::centred`; the rows and their meaning are `coderecall._memory_vectors`'s
/// `Vectors`), among the rows `keep` allows (all without it). The GIL is released.
#[pyfunction]
#[pyo3(signature = (
    ids, matrix, scale, parts, part_scale, owners, starts, windows, counts, window_scale,
    alone, query, offset, part_weight, keep, limit
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn centred_nearest(
    py: Python<'_>,
    ids: PyReadonlyArray1<'_, i64>,
    matrix: PyReadonlyArray2<'_, f32>,
    scale: PyReadonlyArray1<'_, f32>,
    parts: PyReadonlyArray2<'_, f32>,
    part_scale: PyReadonlyArray1<'_, f32>,
    owners: PyReadonlyArray1<'_, i64>,
    starts: PyReadonlyArray1<'_, i64>,
    windows: PyReadonlyArray2<'_, f32>,
    counts: PyReadonlyArray1<'_, f32>,
    window_scale: PyReadonlyArray1<'_, f32>,
    alone: PyReadonlyArray1<'_, bool>,
    query: PyReadonlyArray1<'_, f32>,
    offset: f32,
    part_weight: f32,
    keep: Option<PyReadonlyArray1<'_, bool>>,
    limit: usize,
) -> PyResult<Vec<(i64, f32)>> {
    use coderecall_core::centred::{CentredQuery, CentredRows, best};

    let ids = contiguous(&ids, "ids")?;
    let keep = keep.as_ref().map(|k| contiguous(k, "keep")).transpose()?;
    if ids.len() != scale.as_array().len() || keep.is_some_and(|k| k.len() != ids.len()) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "ids, keep and the rows differ in length",
        ));
    }
    let rows = CentredRows {
        dims: matrix.as_array().ncols(),
        matrix: contiguous(&matrix, "matrix")?,
        scale: contiguous(&scale, "scale")?,
        parts: contiguous(&parts, "parts")?,
        part_scale: contiguous(&part_scale, "part_scale")?,
        owners: contiguous(&owners, "owners")?,
        starts: contiguous(&starts, "starts")?,
        windows: contiguous(&windows, "windows")?,
        counts: contiguous(&counts, "counts")?,
        window_scale: contiguous(&window_scale, "window_scale")?,
        alone: contiguous(&alone, "alone")?,
    };
    let query = CentredQuery {
        vector: contiguous(&query, "query")?,
        offset,
        part_weight,
    };
    let found = py
        .detach(|| rows.scores(&query).map(|scores| best(&scores, keep, limit)))
        .map_err(to_py)?;
    Ok(found
        .into_iter()
        .map(|(row, score)| (ids[row], score))
        .collect())
}
