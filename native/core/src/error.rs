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

    /// Whether the index's own files are damaged: a derived file or stored value that fails
    /// its check, or SQLite finding its database file malformed or not a database at all.
    /// Waiting or retrying cannot help; rebuilding the index can.
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Corrupt { .. } => true,
            Error::Store(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
            ),
            _ => false,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn first_read(bytes: &[u8]) -> Error {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        std::fs::write(&path, bytes).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let err = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |row| {
                row.get::<_, i64>(0)
            })
            .unwrap_err();
        Error::from(err)
    }

    #[test]
    fn a_file_that_is_not_a_database_is_corruption_and_a_busy_one_is_not() {
        assert!(first_read(&b"not a database at all, ".repeat(200)).is_corruption());
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        assert!(!Error::from(busy).is_corruption());
        let damaged = Error::Corrupt {
            path: "lexical-1.bin".into(),
            reason: "bad checksum".into(),
        };
        assert!(damaged.is_corruption());
    }
}
