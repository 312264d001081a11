use std::path::PathBuf;

/// The one error type of the core crate; the binding crate maps each variant to a Python exception.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("index store error: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "index at {path} was written by a newer coderecall (schema {found}, this build reads up to {supported})"
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("corrupt index file {path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("embedding model {path}: {reason}")]
    Model { path: PathBuf, reason: String },
    /// An embedding engine implemented outside the core (a remote provider called back through
    /// the binding) failed; the original error travels unchanged so the caller can re-raise it.
    #[error("embedding failed: {0}")]
    Embedder(Box<dyn std::error::Error + Send + Sync>),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("operation cancelled")]
    Cancelled,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<crate::bm25::Bm25Error> for Error {
    fn from(err: crate::bm25::Bm25Error) -> Self {
        match err {
            crate::bm25::Bm25Error::Io { path, source } => {
                Error::io(format!("lexical index {}", path.display()), source)
            }
            crate::bm25::Bm25Error::Corrupt { path, reason } => Error::Corrupt { path, reason },
        }
    }
}
