//! The SQLite source of truth.
//!
//! Content-addressed: a file version is keyed by the xxh3 hash of its bytes; its chunks and
//! symbols hang off that hash. A view maps paths to file hashes (the worktree). Every change
//! to the view is one immediate transaction that also bumps the `generation`, so readers
//! always see either the previous or the new state. Derived files (the lexical index) record
//! the generation they were built from and are reconciled against the view when they lag.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::chunk::{Chunk, ChunkKind, FileChunks, Symbol};
use crate::error::{Error, Result};
use crate::lang::Language;

/// Schema version written to `PRAGMA user_version`; `MIGRATIONS[i]` upgrades from `i` to `i + 1`.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One schema upgrade: SQL, then (for a change of encoding) code over the data it left.
enum Migration {
    Sql(&'static str),
    SqlThen(&'static str, fn(&rusqlite::Transaction<'_>) -> Result<()>),
}

impl Migration {
    fn apply(&self, tx: &rusqlite::Transaction<'_>) -> Result<()> {
        match self {
            Migration::Sql(sql) => tx.execute_batch(sql)?,
            Migration::SqlThen(sql, then) => {
                tx.execute_batch(sql)?;
                then(tx)?;
            }
        }
        Ok(())
    }
}

const MIGRATIONS: &[Migration] = &[
    // 1: content-addressed file versions, chunks, symbols, views.
    Migration::Sql(
        "
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE files (
        hash        INTEGER PRIMARY KEY,
        language    TEXT    NOT NULL,
        size        INTEGER NOT NULL,
        lines       INTEGER NOT NULL,
        indexed_at  INTEGER NOT NULL,
        orphaned_at INTEGER
    );
    CREATE TABLE chunks (
        file_hash    INTEGER NOT NULL REFERENCES files(hash) ON DELETE CASCADE,
        ordinal      INTEGER NOT NULL,
        start_line   INTEGER NOT NULL,
        end_line     INTEGER NOT NULL,
        kind         TEXT    NOT NULL,
        symbol       TEXT    NOT NULL,
        local_path   TEXT    NOT NULL,
        names        TEXT    NOT NULL,
        context      TEXT    NOT NULL,
        content      TEXT    NOT NULL,
        content_hash INTEGER NOT NULL,
        PRIMARY KEY (file_hash, ordinal)
    );
    CREATE INDEX chunks_by_content ON chunks(content_hash);
    CREATE TABLE symbols (
        file_hash  INTEGER NOT NULL REFERENCES files(hash) ON DELETE CASCADE,
        name       TEXT    NOT NULL,
        kind       TEXT    NOT NULL,
        local_path TEXT    NOT NULL,
        start_line INTEGER NOT NULL,
        end_line   INTEGER NOT NULL
    );
    CREATE INDEX symbols_by_file ON symbols(file_hash);
    CREATE INDEX symbols_by_name ON symbols(name COLLATE NOCASE);
    CREATE TABLE views (
        id   INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
    );
    CREATE TABLE view_files (
        id        INTEGER PRIMARY KEY,
        view_id   INTEGER NOT NULL REFERENCES views(id) ON DELETE CASCADE,
        path      TEXT    NOT NULL,
        file_hash INTEGER NOT NULL REFERENCES files(hash),
        mtime_ns  INTEGER NOT NULL,
        size      INTEGER NOT NULL,
        UNIQUE (view_id, path)
    );
    CREATE INDEX view_files_by_hash ON view_files(file_hash);
    -- Files of the view that cannot be indexed, remembered by stat so that unchanged ones
    -- are neither re-read nor forgotten in reports.
    CREATE TABLE skipped_files (
        view_id  INTEGER NOT NULL REFERENCES views(id) ON DELETE CASCADE,
        path     TEXT    NOT NULL,
        mtime_ns INTEGER NOT NULL,
        size     INTEGER NOT NULL,
        reason   TEXT    NOT NULL,
        PRIMARY KEY (view_id, path)
    ) WITHOUT ROWID;
    INSERT INTO views (id, name) VALUES (1, 'worktree');
    INSERT INTO meta (key, value) VALUES ('generation', '0');
    ",
    ),
    // 2: a file version keeps its text once, compressed (`textblob`); a chunk whose content
    // is its line range of that text stores NULL. Versions stored before keep their chunk text.
    Migration::Sql(
        "
    ALTER TABLE files ADD COLUMN text BLOB;
    CREATE TABLE chunks_v2 (
        file_hash    INTEGER NOT NULL REFERENCES files(hash) ON DELETE CASCADE,
        ordinal      INTEGER NOT NULL,
        start_line   INTEGER NOT NULL,
        end_line     INTEGER NOT NULL,
        kind         TEXT    NOT NULL,
        symbol       TEXT    NOT NULL,
        local_path   TEXT    NOT NULL,
        names        TEXT    NOT NULL,
        context      TEXT    NOT NULL,
        content      TEXT,
        content_hash INTEGER NOT NULL,
        PRIMARY KEY (file_hash, ordinal)
    );
    INSERT INTO chunks_v2 SELECT * FROM chunks;
    DROP TABLE chunks;
    ALTER TABLE chunks_v2 RENAME TO chunks;
    CREATE INDEX chunks_by_content ON chunks(content_hash);
    ",
    ),
    // 3: chunk vectors per embedding model, keyed by chunk-content hash (little-endian f16).
    Migration::Sql(
        "
    CREATE TABLE vectors (
        model        TEXT    NOT NULL,
        content_hash INTEGER NOT NULL,
        vector       BLOB    NOT NULL,
        PRIMARY KEY (model, content_hash)
    ) WITHOUT ROWID;
    ",
    ),
    // 4: one view per root (worktree), each with its own generation, so that publishing in
    // one worktree never makes the readers of another reconcile; `used_at` lets the views of
    // deleted worktrees be collected. Orphaned versions are found without a table scan.
    Migration::Sql(
        "
    ALTER TABLE views ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE views ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0;
    UPDATE views SET generation =
        coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0);
    DELETE FROM meta WHERE key = 'generation';
    CREATE INDEX files_orphaned ON files(orphaned_at) WHERE orphaned_at IS NOT NULL;
    ",
    ),
    // 5: the references of a file version (calls, imports, inheritance; `refs::encode`).
    // Versions stored before have none: every path is re-read once (its stat no longer
    // matches) and its known content parsed again to fill them; chunks and vectors stay.
    Migration::Sql(
        "
    ALTER TABLE files ADD COLUMN refs BLOB;
    UPDATE view_files SET mtime_ns = -1;
    ",
    ),
    // 6: vectors move to a rowid table with a unique index. Clustered by their random content
    // hash, every batch of new vectors dirtied pages all over the table (six times the WAL
    // traffic, three times the insert time at 180k vectors); appended in rowid order, only
    // the small index entries land at random.
    Migration::Sql(
        "
    CREATE TABLE vectors_by_rowid (
        model        TEXT    NOT NULL,
        content_hash INTEGER NOT NULL,
        vector       BLOB    NOT NULL,
        UNIQUE (model, content_hash)
    );
    INSERT INTO vectors_by_rowid (model, content_hash, vector)
        SELECT model, content_hash, vector FROM vectors;
    DROP TABLE vectors;
    ALTER TABLE vectors_by_rowid RENAME TO vectors;
    ",
    ),
    // 7: the chunks and symbols of a file version move into one compressed blob of its row
    // (`outline`), with their counts beside it: a third of the index's size went to their
    // rows and indexes, and they were only ever read per file version.
    Migration::SqlThen(
        "
        ALTER TABLE files ADD COLUMN outline BLOB;
        ALTER TABLE files ADD COLUMN chunk_count INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE files ADD COLUMN symbol_count INTEGER NOT NULL DEFAULT 0;
        ",
        outlines_from_rows,
    ),
    // 8: a vector names its model by a small integer (`models`) instead of repeating the
    // model's id (40-odd bytes, in the row and again in the unique index) on every row:
    // 7% of the table at 256 dimensions. Rows keep their order.
    Migration::Sql(
        "
    CREATE TABLE models (
        id   INTEGER PRIMARY KEY,
        name TEXT    NOT NULL UNIQUE
    );
    INSERT INTO models (name) SELECT DISTINCT model FROM vectors ORDER BY model;
    CREATE TABLE vectors_by_model_id (
        model        INTEGER NOT NULL REFERENCES models(id),
        content_hash INTEGER NOT NULL,
        vector       BLOB    NOT NULL,
        UNIQUE (model, content_hash)
    );
    INSERT INTO vectors_by_model_id (model, content_hash, vector)
        SELECT m.id, v.content_hash, v.vector FROM vectors v JOIN models m ON m.name = v.model
        ORDER BY v.rowid;
    DROP TABLE vectors;
    ALTER TABLE vectors_by_model_id RENAME TO vectors;
    ",
    ),
    // 9: a stored text may be compressed with a zstd dictionary kept in `meta`
    // (`dictionary:<id>`; `text_dictionary` names the one new texts use). Nothing to change,
    // but a release that cannot read such texts must not open the index.
    Migration::Sql("SELECT 1"),
];

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema version that numbered the models of vectors (the last to rewrite a table).
const MODEL_NUMBERS: i64 = 8;

/// Migration 7: every file version's chunk and symbol rows become its outline, then the
/// tables go.
fn outlines_from_rows(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let hashes: Vec<i64> = tx
        .prepare("SELECT hash FROM files")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut chunk_rows = tx.prepare(
        "SELECT start_line, end_line, kind, symbol, local_path, names, context, content,
                content_hash
         FROM chunks WHERE file_hash = ?1 ORDER BY ordinal",
    )?;
    let mut symbol_rows = tx.prepare(
        "SELECT name, kind, local_path, start_line, end_line FROM symbols
         WHERE file_hash = ?1 ORDER BY rowid",
    )?;
    let mut update = tx.prepare(
        "UPDATE files SET outline = ?2, chunk_count = ?3, symbol_count = ?4 WHERE hash = ?1",
    )?;
    let kind = |name: String| ChunkKind::from_name(&name).unwrap_or(ChunkKind::Code);
    for hash in hashes {
        let mut chunks = Vec::new();
        let mut derived = Vec::new();
        let mut rows = chunk_rows.query([hash])?;
        while let Some(r) = rows.next()? {
            let content: Option<String> = r.get(7)?;
            derived.push(content.is_none());
            chunks.push(Chunk {
                start_line: r.get(0)?,
                end_line: r.get(1)?,
                kind: kind(r.get(2)?),
                symbol: r.get(3)?,
                local_path: r.get(4)?,
                names: r.get(5)?,
                context: r.get(6)?,
                content: content.unwrap_or_default(),
                content_hash: r.get(8)?,
            });
        }
        let symbols = symbol_rows
            .query_map([hash], |r| {
                Ok(Symbol {
                    name: r.get(0)?,
                    kind: kind(r.get(1)?),
                    local_path: r.get(2)?,
                    start_line: r.get(3)?,
                    end_line: r.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let outline = crate::outline::encode(&chunks, &derived, &symbols)
            .map_err(|e| Error::io("compressing a file outline", e))?;
        update.execute(params![hash, outline, count(&chunks), count(&symbols)])?;
    }
    drop((chunk_rows, symbol_rows, update));
    tx.execute_batch("DROP TABLE chunks; DROP TABLE symbols;")?;
    Ok(())
}

/// A chunk whose content has no vector for a model yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingChunk {
    pub content_hash: i64,
    pub file_hash: i64,
    pub ordinal: usize,
}

/// A vector as stored: little-endian f16 values.
fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector
        .iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect()
}

/// The vector of a blob written by [`encode_vector`].
fn decode_vector(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(2)
        .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect()
}

/// What a chunk's vector is computed from: its symbol path, the headers of its enclosing
/// definitions and its content (never its file path, so identical code shares one vector).
#[must_use]
pub fn embedding_text(c: &Chunk) -> String {
    let mut text =
        String::with_capacity(c.local_path.len() + c.context.len() + c.content.len() + 2);
    for part in [&c.local_path, &c.context] {
        if !part.is_empty() {
            text.push_str(part);
            text.push('\n');
        }
    }
    text.push_str(&c.content);
    text
}

/// The view every index is created with; adopted by the first root that opens the index.
pub const DEFAULT_VIEW: i64 = 1;
const UNNAMED_VIEW: &str = "worktree";

/// One row of [`Store::file_stats`]: path, mtime in ns, size, and the reason a file is
/// remembered as skipped (none for indexed files).
pub type FileStat = (String, i64, i64, Option<String>);

/// What [`Store::collect_garbage`] deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    pub views: u64,
    pub file_versions: u64,
    pub chunks: u64,
    /// `(model, content hash)` of every vector deleted, for the graphs to drop too.
    pub vectors: Vec<(String, i64)>,
}

/// A path of the view, with the identity of its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewEntry {
    /// Stable while the path stays in the view; part of every lexical document key.
    pub path_id: u32,
    pub path: String,
    pub file_hash: i64,
    pub language: Language,
    pub mtime_ns: i64,
    pub size: i64,
}

/// A parsed file version ready to be stored.
/// A file version's chunks and its definitions, as stored.
pub type ChunksAndSymbols = (Vec<Chunk>, Vec<Symbol>);

#[derive(Debug)]
pub struct FileVersion {
    pub hash: i64,
    pub language: Language,
    pub size: u64,
    pub lines: u32,
    pub chunks: Vec<Chunk>,
    pub symbols: Vec<Symbol>,
    /// Calls, imports and inheritance, encoded by [`crate::refs::encode`].
    refs: Vec<u8>,
    /// The text the chunks were cut from, as a [`textblob`](crate::textblob).
    text: Vec<u8>,
    /// Per chunk: its content is exactly its line range of the text (then not stored twice).
    derived: Vec<bool>,
    /// Chunks and symbols as stored ([`crate::outline`]).
    outline: Vec<u8>,
}

impl FileVersion {
    /// A version of `text` (the decoded file, byte-order mark removed) with its chunks and
    /// symbols. Compresses the text: call it on the worker threads, not while publishing.
    #[must_use]
    pub fn new(
        hash: i64,
        language: Language,
        size: u64,
        text: &str,
        parsed: FileChunks,
        dictionary: Option<&'static crate::textblob::Dictionary>,
    ) -> Self {
        let FileChunks {
            chunks,
            symbols,
            refs,
            ..
        } = parsed;
        let starts = crate::chunk::line_starts(text);
        let derived = chunks
            .iter()
            .map(|c| crate::chunk::lines_text(text, &starts, c.start_line, c.end_line) == c.content)
            .collect();
        FileVersion {
            hash,
            language,
            size,
            lines: u32::try_from(starts.len()).unwrap_or(u32::MAX),
            chunks,
            symbols,
            refs: crate::refs::encode(&refs),
            // Compressing only fails on allocation failure; storing the chunk text instead
            // (no file text) keeps the version readable even then.
            text: crate::textblob::compress(text, dictionary).unwrap_or_default(),
            derived,
            outline: Vec::new(),
        }
        .finished()
    }

    /// Without a stored text, every chunk keeps its own content; then the outline.
    fn finished(mut self) -> Self {
        if self.text.is_empty() {
            self.derived.fill(false);
        }
        // As for the text, compressing fails only when allocating does.
        self.outline =
            crate::outline::encode(&self.chunks, &self.derived, &self.symbols).unwrap_or_default();
        self
    }
}

/// One path to put in the view.
#[derive(Clone, Debug)]
pub struct ViewUpdate {
    pub path: String,
    pub file_hash: i64,
    pub mtime_ns: i64,
    pub size: i64,
}

/// A file of the view that cannot be indexed, with the stat it had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: String,
    pub mtime_ns: i64,
    pub size: i64,
    pub reason: String,
}

/// What one publication changes in a view.
#[derive(Debug, Default)]
pub struct Changes<'a> {
    pub versions: &'a [FileVersion],
    pub upserts: &'a [ViewUpdate],
    pub removed: &'a [String],
    /// Paths to remember as skipped (they leave the indexed view if they were in it).
    pub skipped: &'a [SkippedFile],
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    pub files: u64,
    pub chunks: u64,
    pub symbols: u64,
    pub file_versions: u64,
    pub languages: Vec<(String, u64)>,
}

/// What a view holds: paths, their chunks, and paths per language (most first, then by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewCounts {
    pub files: u64,
    pub chunks: u64,
    pub languages: Vec<(String, u64)>,
}

/// Switches the database to WAL, which the file keeps. The switch fails at once, without the
/// busy handler, while another connection holds the write lock of a database still in
/// rollback mode: first openers of a new database met that when one was half-way through its
/// own switch. They retry until the busy timeout instead.
fn use_wal(conn: &Connection) -> Result<String> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() + pause < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return Ok(other?),
        }
    }
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mode = use_wal(&conn)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::InvalidArgument(format!(
                "{} cannot use write-ahead logging (journal mode {mode}); is it on a network file system?",
                path.display()
            )));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A whole index build is one transaction: a 64 MiB page cache keeps SQLite from
        // spilling pages to the WAL mid-transaction (the default is 2 MiB).
        conn.pragma_update(None, "cache_size", -65_536)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        let mut store = Store {
            conn,
            path: path.to_owned(),
        };
        store.migrate()?;
        Ok(store)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self) -> Result<()> {
        // Checked first without the write lock: opening an index that is up to date must not
        // wait for a writer (a search while `index` publishes, or a writer stopped with ^Z).
        if self.schema_version()? == SCHEMA_VERSION && self.chunker_is_current()? {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                path: self.path.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        for (from, migration) in MIGRATIONS
            .iter()
            .enumerate()
            .skip(usize::try_from(version).unwrap_or(0))
        {
            migration.apply(&tx)?;
            tx.pragma_update(
                None,
                "user_version",
                i64::try_from(from + 1).unwrap_or(i64::MAX),
            )?;
        }
        // Versions chunked by other rules are keyed by other hashes (`hash::file_hash`), but
        // an unchanged file is not read again: make every path's stat stale, once.
        let chunker: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'chunker'", [], |r| {
                r.get(0)
            })
            .optional()?;
        let current = crate::chunk::VERSION.to_string();
        if chunker.as_deref() != Some(current.as_str()) {
            // Remembered skips too: a new release may parse what an older one could not.
            tx.execute_batch(
                "UPDATE view_files SET mtime_ns = -1; UPDATE skipped_files SET mtime_ns = -1;",
            )?;
            // Versions stored before now can never be known again: garbage once orphaned.
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value)
                 VALUES ('chunker', ?1), ('chunker_since', ?2)",
                params![current, unix_now().to_string()],
            )?;
        }
        tx.commit()?;
        if (1..MODEL_NUMBERS).contains(&version) {
            // The tables just dropped leave free pages: 40% of a large index for the chunk
            // and symbol rows (schema 7), the old vectors table (8). Best effort: with another
            // process reading, VACUUM gives up after a short wait (opening must not stall on
            // it), and later writes reuse the pages.
            self.conn.busy_timeout(Duration::from_secs(2))?;
            let _ = self.conn.execute_batch("VACUUM");
            self.conn.busy_timeout(BUSY_TIMEOUT)?;
        }
        Ok(())
    }

    fn chunker_is_current(&self) -> Result<bool> {
        let chunker: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'chunker'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(chunker == Some(crate::chunk::VERSION.to_string()))
    }

    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// The published generation of a view: bumped by every committed change to it.
    pub fn generation(&self, view_id: i64) -> Result<u64> {
        let generation: Option<i64> = self
            .conn
            .query_row(
                "SELECT generation FROM views WHERE id = ?1",
                [view_id],
                |r| r.get(0),
            )
            .optional()?;
        let generation = generation.ok_or_else(|| Error::Corrupt {
            path: self.path.clone(),
            reason: format!("view {view_id} does not exist"),
        })?;
        Ok(generation.max(0).unsigned_abs())
    }

    /// The id of the view called `name` (by convention the absolute root it indexes), created
    /// if needed. The first view (`worktree`, from before views were named) is adopted by the
    /// first name asked for, so an existing index keeps its work.
    pub fn open_view(&mut self, name: &str) -> Result<i64> {
        if name.is_empty() {
            return Err(Error::InvalidArgument("the view name is empty".into()));
        }
        let find = |conn: &Connection| -> Result<Option<i64>> {
            Ok(conn
                .query_row("SELECT id FROM views WHERE name = ?1", [name], |r| r.get(0))
                .optional()?)
        };
        if let Some(id) = find(&self.conn)? {
            return Ok(id);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = if let Some(id) = find(&tx)? {
            id // created by another process meanwhile
        } else if tx.execute(
            "UPDATE views SET name = ?1 WHERE id = ?2 AND name = ?3",
            params![name, DEFAULT_VIEW, UNNAMED_VIEW],
        )? == 1
        {
            DEFAULT_VIEW
        } else {
            tx.execute(
                "INSERT INTO views (name, used_at) VALUES (?1, ?2)",
                params![name, unix_now()],
            )?;
            tx.last_insert_rowid()
        };
        tx.commit()?;
        Ok(id)
    }

    pub fn get_meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )?;
        Ok(())
    }

    /// The dictionary new file texts are compressed with, if the index has one.
    pub fn text_dictionary(&self) -> Result<Option<&'static crate::textblob::Dictionary>> {
        let Some(id) = self.get_meta("text_dictionary")? else {
            return Ok(None);
        };
        let id = u64::from_str_radix(&id, 16).map_err(|_| Error::Corrupt {
            path: self.path.clone(),
            reason: format!("meta text_dictionary is not an id: {id:?}"),
        })?;
        self.dictionary(id).map(Some)
    }

    /// Stores `bytes` as the dictionary for new file texts, unless another writer stored one
    /// first: then that one is returned, and used.
    pub fn set_text_dictionary(
        &mut self,
        bytes: &[u8],
    ) -> Result<&'static crate::textblob::Dictionary> {
        let id = crate::textblob::dictionary_id(bytes);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
            params![format!("dictionary:{id:016x}"), bytes],
        )?;
        tx.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('text_dictionary', ?1)",
            [format!("{id:016x}")],
        )?;
        tx.commit()?;
        self.text_dictionary()?
            .ok_or_else(|| Error::InvalidArgument("the text dictionary was not stored".into()))
    }

    /// The dictionary `id` of this index, registered for every reader in the process.
    fn dictionary(&self, id: u64) -> Result<&'static crate::textblob::Dictionary> {
        if let Some(known) = crate::textblob::registered(id) {
            return Ok(known);
        }
        let bytes: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                [format!("dictionary:{id:016x}")],
                |r| r.get(0),
            )
            .optional()?;
        let bytes = bytes.ok_or_else(|| Error::Corrupt {
            path: self.path.clone(),
            reason: format!("the text dictionary {id:016x} is missing"),
        })?;
        let dictionary = crate::textblob::register(&bytes);
        if dictionary.id != id {
            return Err(Error::Corrupt {
                path: self.path.clone(),
                reason: format!("the text dictionary {id:016x} is damaged"),
            });
        }
        Ok(dictionary)
    }

    /// Registers the dictionary `blob` needs, if any (a version another process wrote with
    /// one this process has not met yet).
    fn load_dictionary_of(&self, blob: &[u8]) -> Result<()> {
        if let Some(id) = crate::textblob::dictionary_of(blob) {
            self.dictionary(id)?;
        }
        Ok(())
    }

    /// Increments the counter stored under `key` (starting from 1).
    pub fn bump_meta(&mut self, key: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, '1')
             ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            [key],
        )?;
        Ok(())
    }

    /// The generation and the view read in one transaction, so they belong together.
    pub fn snapshot(&self, view_id: i64) -> Result<(u64, Vec<ViewEntry>)> {
        let tx = self.conn.unchecked_transaction()?;
        let generation = self.generation(view_id)?;
        let view = self.view(view_id)?;
        tx.finish()?;
        Ok((generation, view))
    }

    /// The generation and the entries of `paths` (those in the view) in one transaction.
    pub fn snapshot_of(&self, view_id: i64, paths: &[&str]) -> Result<(u64, Vec<ViewEntry>)> {
        let tx = self.conn.unchecked_transaction()?;
        let generation = self.generation(view_id)?;
        let entries = self.view_entries(view_id, paths)?;
        tx.finish()?;
        Ok((generation, entries))
    }

    /// The entries of `paths` that are in the view (a lookup each: for a few paths of a large
    /// view, far cheaper than reading it all).
    pub fn view_entries(&self, view_id: i64, paths: &[&str]) -> Result<Vec<ViewEntry>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT v.id, v.path, v.file_hash, f.language, v.mtime_ns, v.size
             FROM view_files v JOIN files f ON f.hash = v.file_hash
             WHERE v.view_id = ?1 AND v.path = ?2",
        )?;
        let mut out = Vec::new();
        for path in paths {
            let row = stmt
                .query_row(params![view_id, path], entry_row)
                .optional()?;
            if let Some(row) = row {
                out.push(self.entry(row)?);
            }
        }
        Ok(out)
    }

    /// Whether the view holds any of `paths`: at once when it is empty (a first index),
    /// else a lookup per path up to the first held.
    pub fn holds_any(&self, view_id: i64, paths: &[&str]) -> Result<bool> {
        let empty: bool = self.conn.query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM view_files WHERE view_id = ?1)",
            [view_id],
            |r| r.get(0),
        )?;
        if empty {
            return Ok(false);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM view_files WHERE view_id = ?1 AND path = ?2")?;
        for path in paths {
            if stmt.exists(params![view_id, path])? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn entry(&self, row: EntryRow) -> Result<ViewEntry> {
        let (id, path, file_hash, language, mtime_ns, size) = row;
        Ok(ViewEntry {
            path_id: self.path_id(id)?,
            path,
            file_hash,
            language: self.language(&language)?,
            mtime_ns,
            size,
        })
    }

    /// `(path, mtime_ns, size, skip reason)` of the view's files and remembered skips, all
    /// of them or those at or below the paths `under`: the stat-based delta of a re-index
    /// needs no more (no join: this is read on every run).
    pub fn file_stats(&self, view_id: i64, under: Option<&[&str]>) -> Result<Vec<FileStat>> {
        let mut out = Vec::new();
        for (table, reason) in [("view_files", "NULL"), ("skipped_files", "reason")] {
            let select =
                format!("SELECT path, mtime_ns, size, {reason} FROM {table} WHERE view_id = ?1");
            let mut read = |stmt: &mut rusqlite::CachedStatement<'_>,
                            params: &[&dyn rusqlite::ToSql]|
             -> Result<()> {
                let rows =
                    stmt.query_map(params, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
                for row in rows {
                    out.push(row?);
                }
                Ok(())
            };
            match under {
                None => read(&mut self.conn.prepare_cached(&select)?, &[&view_id])?,
                Some(paths) => {
                    // The path itself, or anything in [path + "/", path + "0"): '0' follows '/'.
                    let mut stmt = self.conn.prepare_cached(&format!(
                        "{select} AND (path = ?2 OR (path >= ?2 || '/' AND path < ?2 || '0'))"
                    ))?;
                    for path in paths {
                        read(&mut stmt, &[&view_id, path])?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Every path of the view.
    pub fn view(&self, view_id: i64) -> Result<Vec<ViewEntry>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT v.id, v.path, v.file_hash, f.language, v.mtime_ns, v.size
             FROM view_files v JOIN files f ON f.hash = v.file_hash
             WHERE v.view_id = ?1",
        )?;
        let rows = stmt.query_map([view_id], entry_row)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(self.entry(row?)?);
        }
        Ok(out)
    }

    fn path_id(&self, id: i64) -> Result<u32> {
        u32::try_from(id).map_err(|_| Error::Corrupt {
            path: self.path.clone(),
            reason: format!("path id {id} out of range"),
        })
    }

    fn language(&self, name: &str) -> Result<Language> {
        Language::from_name(name).ok_or_else(|| Error::Corrupt {
            path: self.path.clone(),
            reason: format!("unknown language {name:?}"),
        })
    }

    /// Files of the view remembered as skipped.
    pub fn skipped(&self, view_id: i64) -> Result<Vec<SkippedFile>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT path, mtime_ns, size, reason FROM skipped_files WHERE view_id = ?1",
        )?;
        let rows = stmt.query_map([view_id], |r| {
            Ok(SkippedFile {
                path: r.get(0)?,
                mtime_ns: r.get(1)?,
                size: r.get(2)?,
                reason: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Which of `hashes` are stored file versions with their references (versions stored
    /// before references were kept are parsed again).
    pub fn known_hashes(&self, hashes: &[i64]) -> Result<HashSet<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM files WHERE hash = ?1 AND refs IS NOT NULL")?;
        let mut known = HashSet::new();
        for &h in hashes {
            if stmt.exists([h])? {
                known.insert(h);
            }
        }
        Ok(known)
    }

    /// The outline (chunks and symbols) of a file version; `None` when no such version is
    /// stored. A caller reading several chunks of one file reads it once.
    pub fn outline(&self, file_hash: i64) -> Result<Option<crate::outline::Outline>> {
        self.outline_read(file_hash, crate::outline::decode)
    }

    /// `decode` applied to the outline of a file version; `None` when no such version is
    /// stored.
    fn outline_read<T>(
        &self,
        file_hash: i64,
        decode: impl Fn(&[u8]) -> Result<T, String>,
    ) -> Result<Option<T>> {
        let blob: Option<Option<Vec<u8>>> = self
            .conn
            .prepare_cached("SELECT outline FROM files WHERE hash = ?1")?
            .query_row([file_hash], |r| r.get(0))
            .optional()?;
        blob.map(|blob| decoded(&self.path, file_hash, blob.as_deref(), decode))
            .transpose()
    }

    /// The chunks of a file version, in order (a chunk's ordinal is its index); none for a
    /// version that is not stored.
    pub fn chunks(&self, file_hash: i64) -> Result<Vec<Chunk>> {
        Ok(self.chunks_and_symbols(file_hash)?.0)
    }

    /// The chunks of a file version, as [`Store::chunks`], and its definitions.
    pub fn chunks_and_symbols(&self, file_hash: i64) -> Result<ChunksAndSymbols> {
        let Some(outline) = self.outline(file_hash)? else {
            return Ok((Vec::new(), Vec::new()));
        };
        let mut chunks = outline.chunks;
        if outline.derived.iter().any(|&d| d) {
            let whole = crate::textblob::text(&self.file_blob(file_hash)?)
                .map_err(|reason| self.corrupt(file_hash, &reason))?;
            let starts = crate::chunk::line_starts(&whole);
            for (c, _) in chunks.iter_mut().zip(&outline.derived).filter(|(_, d)| **d) {
                c.content =
                    crate::chunk::lines_text(&whole, &starts, c.start_line, c.end_line).to_owned();
            }
        }
        Ok((chunks, outline.symbols))
    }

    /// The content of one chunk (the search reads chunks through [`Self::chunk_text`]).
    #[cfg(test)]
    pub fn chunk_content(&self, file_hash: i64, ordinal: u32) -> Result<Option<String>> {
        Ok(self
            .chunk_and_symbols(file_hash, ordinal, true)?
            .and_then(|(content, _)| content))
    }

    /// From one read of a file version's outline: the content of its chunk `ordinal` when
    /// `with_content`, and its symbols. `None` when no such version is stored.
    pub fn chunk_and_symbols(
        &self,
        file_hash: i64,
        ordinal: u32,
        with_content: bool,
    ) -> Result<Option<(Option<String>, Vec<Symbol>)>> {
        let Some(outline) = self.outline(file_hash)? else {
            return Ok(None);
        };
        let content = if with_content {
            self.chunk_text(file_hash, &outline, ordinal, &mut None)?
        } else {
            None
        };
        Ok(Some((content, outline.symbols)))
    }

    /// The content of chunk `ordinal` of `outline`, the outline of version `file_hash`: kept
    /// in it, or cut from the version's stored text (`blob`, read into it on first need, so
    /// a caller reading several chunks of one file reads it once).
    pub fn chunk_text(
        &self,
        file_hash: i64,
        outline: &crate::outline::Outline,
        ordinal: u32,
        blob: &mut Option<Vec<u8>>,
    ) -> Result<Option<String>> {
        let i = ordinal as usize;
        Ok(match outline.chunks.get(i) {
            Some(c) if !outline.derived[i] => Some(c.content.clone()),
            Some(c) => Some(self.stored_lines(file_hash, c.start_line, c.end_line, blob)?),
            None => None,
        })
    }

    /// Lines `start..=end` of the stored text of `file_hash`; `blob` caches that text
    /// between calls for one file.
    pub fn stored_lines(
        &self,
        file_hash: i64,
        start: u32,
        end: u32,
        blob: &mut Option<Vec<u8>>,
    ) -> Result<String> {
        let blob = match blob {
            Some(blob) => blob,
            None => blob.insert(self.file_blob(file_hash)?),
        };
        crate::textblob::lines(blob, start, end).map_err(|reason| self.corrupt(file_hash, &reason))
    }

    /// Lines `start..=end` of `path` as the view has it, `None` when the path is not in
    /// the view. The text is the indexed one, so it matches the index's line numbers.
    pub fn view_lines(
        &self,
        view_id: i64,
        path: &str,
        start: u32,
        end: u32,
    ) -> Result<Option<String>> {
        let hash: Option<i64> = self
            .conn
            .prepare_cached("SELECT file_hash FROM view_files WHERE view_id = ?1 AND path = ?2")?
            .query_row(params![view_id, path], |r| r.get(0))
            .optional()?;
        let Some(hash) = hash else {
            return Ok(None);
        };
        Ok(self.version_lines(hash, &[(start, end)])?.pop())
    }

    /// Lines `start..=end` of a stored file version for each range, from one read of its
    /// text that decompresses only the blocks from the first range's start to the last end.
    pub fn version_lines(&self, file_hash: i64, ranges: &[(u32, u32)]) -> Result<Vec<String>> {
        let (Some(lo), Some(hi)) = (
            ranges.iter().map(|r| r.0).min(),
            ranges.iter().map(|r| r.1).max(),
        ) else {
            return Ok(Vec::new());
        };
        let blob = self.file_blob(file_hash)?;
        let span = crate::textblob::lines(&blob, lo, hi)
            .map_err(|reason| self.corrupt(file_hash, &reason))?;
        let starts = crate::chunk::line_starts(&span);
        let rel = |line: u32| line.saturating_sub(lo) + 1;
        Ok(ranges
            .iter()
            .map(|&(start, end)| {
                crate::chunk::lines_text(&span, &starts, rel(start), rel(end)).to_owned()
            })
            .collect())
    }

    /// How many lines a stored file version has.
    pub fn file_lines(&self, file_hash: i64) -> Result<u32> {
        let lines: i64 = self
            .conn
            .prepare_cached("SELECT lines FROM files WHERE hash = ?1")?
            .query_row([file_hash], |r| r.get(0))
            .optional()?
            .ok_or_else(|| self.corrupt(file_hash, "the file version is not stored"))?;
        Ok(u32::try_from(lines).unwrap_or(0))
    }

    /// The stored text of a file version (schema 2 and later).
    fn file_blob(&self, file_hash: i64) -> Result<Vec<u8>> {
        let blob: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT text FROM files WHERE hash = ?1")?
            .query_row([file_hash], |r| r.get(0))?;
        let blob =
            blob.ok_or_else(|| self.corrupt(file_hash, "the file version has no stored text"))?;
        self.load_dictionary_of(&blob)?;
        Ok(blob)
    }

    fn corrupt(&self, file_hash: i64, reason: &str) -> Error {
        corrupt_version(&self.path, file_hash, reason)
    }

    /// The content hashes of the chunks of every file version in the view, in order, by
    /// file hash (ascending); outlines are decoded in parallel.
    fn view_content_hashes(&self, view_id: i64) -> Result<Vec<(i64, Vec<i64>)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT hash, outline FROM files
             WHERE hash IN (SELECT file_hash FROM view_files WHERE view_id = ?1) ORDER BY hash",
        )?;
        let blobs: Vec<(i64, Option<Vec<u8>>)> = stmt
            .query_map([view_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let path = self.path.as_path();
        crate::helpers::in_own_pool(|| {
            blobs
                .into_par_iter()
                .map(|(hash, blob)| {
                    let hashes =
                        decoded(path, hash, blob.as_deref(), crate::outline::content_hashes)?;
                    Ok((hash, hashes))
                })
                .collect()
        })
    }

    /// Chunks of the view whose content has no vector for `model` yet, one per content hash
    /// (its first chunk by file hash and ordinal). Callers embed them in batches with
    /// [`Self::embedding_texts`].
    pub fn pending_vectors(&self, view_id: i64, model: &str) -> Result<Vec<PendingChunk>> {
        let mut seen: HashSet<i64> = self
            .conn
            .prepare_cached("SELECT content_hash FROM vectors WHERE model = (SELECT id FROM models WHERE name = ?1)")?
            .query_map([model], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut out = Vec::new();
        for (file_hash, hashes) in self.view_content_hashes(view_id)? {
            for (ordinal, content_hash) in hashes.into_iter().enumerate() {
                if seen.insert(content_hash) {
                    out.push(PendingChunk {
                        content_hash,
                        file_hash,
                        ordinal,
                    });
                }
            }
        }
        Ok(out)
    }

    /// The text each chunk's vector is computed from ([`embedding_text`]), in order; chunks
    /// of one file come from one read of its text.
    pub fn embedding_texts(&self, chunks: &[PendingChunk]) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(chunks.len());
        let mut file: Option<(i64, Vec<Chunk>)> = None;
        for pending in chunks {
            if file
                .as_ref()
                .is_none_or(|(hash, _)| *hash != pending.file_hash)
            {
                file = Some((pending.file_hash, self.chunks(pending.file_hash)?));
            }
            let text = file
                .as_ref()
                .and_then(|(_, chunks)| chunks.get(pending.ordinal))
                .map_or_else(String::new, embedding_text);
            out.push(text);
        }
        Ok(out)
    }

    /// Stores vectors of `model` (as f16), replacing any with the same content hash.
    pub fn put_vectors(&mut self, model: &str, vectors: &[(i64, Vec<f32>)]) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            tx.prepare_cached("INSERT OR IGNORE INTO models (name) VALUES (?1)")?
                .execute([model])?;
            let model_id: i64 = tx
                .prepare_cached("SELECT id FROM models WHERE name = ?1")?
                .query_row([model], |r| r.get(0))?;
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO vectors (model, content_hash, vector) VALUES (?1, ?2, ?3)",
            )?;
            for (hash, v) in vectors {
                insert.execute(params![model_id, hash, encode_vector(v)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Every vector of `model`.
    pub fn vectors(&self, model: &str) -> Result<Vec<(i64, Vec<f32>)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT content_hash, vector FROM vectors WHERE model = (SELECT id FROM models WHERE name = ?1)",
            )?;
        let rows = stmt.query_map([model], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (hash, blob) = row?;
            out.push((hash, decode_vector(&blob)));
        }
        Ok(out)
    }

    /// The vector of `model` for one content hash, if it was computed.
    pub fn vector(&self, model: &str, content_hash: i64) -> Result<Option<Vec<f32>>> {
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT vector FROM vectors WHERE model = (SELECT id FROM models WHERE name = ?1) AND content_hash = ?2",
                params![model, content_hash],
                |r| r.get(0),
            )
            .optional()?;
        Ok(blob.as_deref().map(decode_vector))
    }

    /// Number of vectors stored for `model`.
    pub fn count_vectors(&self, model: &str) -> Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM vectors WHERE model = (SELECT id FROM models WHERE name = ?1)",
            [model],
            |r| r.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// `(ordinal, content hash)` of each chunk of a file version; none for a version that
    /// is not stored.
    pub fn chunk_hashes(&self, file_hash: i64) -> Result<Vec<(u32, i64)>> {
        let hashes = self.outline_read(file_hash, crate::outline::content_hashes)?;
        Ok((0_u32..).zip(hashes.unwrap_or_default()).collect())
    }

    /// `(path id, ordinal, content hash)` of every chunk in the view.
    pub fn view_chunk_hashes(&self, view_id: i64) -> Result<Vec<(u32, u32, i64)>> {
        let by_version: HashMap<i64, Vec<i64>> =
            self.view_content_hashes(view_id)?.into_iter().collect();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, file_hash FROM view_files WHERE view_id = ?1")?;
        let rows = stmt.query_map([view_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, file_hash) = row?;
            let path_id = self.path_id(id)?;
            let hashes = by_version.get(&file_hash).map_or(&[][..], Vec::as_slice);
            out.extend(
                (0_u32..)
                    .zip(hashes)
                    .map(|(ordinal, &h)| (path_id, ordinal, h)),
            );
        }
        Ok(out)
    }

    /// Publishes a new state of `view_id` in one transaction: stores new file versions,
    /// points paths at their hashes, drops removed and skipped paths, collects old orphans
    /// and bumps the generation. Returns the new generation. `check` runs before the commit;
    /// an error from it (cancellation) rolls everything back.
    pub fn publish(
        &mut self,
        view_id: i64,
        changes: &Changes<'_>,
        check: impl Fn() -> Result<()>,
    ) -> Result<u64> {
        let Changes {
            versions,
            upserts,
            removed,
            skipped,
        } = *changes;
        let now = unix_now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut insert_file = tx.prepare_cached(
                "INSERT OR IGNORE INTO files (hash, language, size, lines, indexed_at, text, refs,
                    outline, chunk_count, symbol_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            let mut fill_refs =
                tx.prepare_cached("UPDATE files SET refs = ?2 WHERE hash = ?1 AND refs IS NULL")?;
            // In key order: a B-tree appended to in order packs each page full, where keys in
            // random order (content hashes) split pages and leave a quarter of them empty.
            let mut in_order: Vec<&FileVersion> = versions.iter().collect();
            in_order.sort_unstable_by_key(|v| v.hash);
            for v in in_order {
                let size = i64::try_from(v.size).unwrap_or(i64::MAX);
                let text = (!v.text.is_empty()).then_some(v.text.as_slice());
                if insert_file.execute(params![
                    v.hash,
                    v.language.name(),
                    size,
                    v.lines,
                    now,
                    text,
                    v.refs,
                    v.outline,
                    count(&v.chunks),
                    count(&v.symbols),
                ])? == 0
                {
                    // Stored before (by another writer, or kept as an orphan) with its
                    // outline. A version stored before references were kept gets them now.
                    fill_refs.execute(params![v.hash, v.refs])?;
                }
            }
            let mut old_hash = tx.prepare_cached(
                "SELECT file_hash FROM view_files WHERE view_id = ?1 AND path = ?2",
            )?;
            let mut upsert = tx.prepare_cached(
                "INSERT INTO view_files (view_id, path, file_hash, mtime_ns, size)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (view_id, path) DO UPDATE SET
                    file_hash = excluded.file_hash, mtime_ns = excluded.mtime_ns, size = excluded.size",
            )?;
            let mut delete =
                tx.prepare_cached("DELETE FROM view_files WHERE view_id = ?1 AND path = ?2")?;
            let mut forget_skip =
                tx.prepare_cached("DELETE FROM skipped_files WHERE view_id = ?1 AND path = ?2")?;
            let mut remember_skip = tx.prepare_cached(
                "INSERT OR REPLACE INTO skipped_files (view_id, path, mtime_ns, size, reason)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            let mut maybe_orphaned: Vec<i64> = Vec::new();
            let mut in_order: Vec<&ViewUpdate> = upserts.iter().collect();
            in_order.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            for u in in_order {
                if let Some(old) = old_hash
                    .query_row(params![view_id, u.path], |r| r.get::<_, i64>(0))
                    .optional()?
                    && old != u.file_hash
                {
                    maybe_orphaned.push(old);
                }
                upsert.execute(params![view_id, u.path, u.file_hash, u.mtime_ns, u.size])?;
                forget_skip.execute(params![view_id, u.path])?;
            }
            let skipped_paths = skipped.iter().map(|s| &s.path);
            for path in removed.iter().chain(skipped_paths) {
                if let Some(old) = old_hash
                    .query_row(params![view_id, path], |r| r.get::<_, i64>(0))
                    .optional()?
                {
                    maybe_orphaned.push(old);
                }
                delete.execute(params![view_id, path])?;
                forget_skip.execute(params![view_id, path])?;
            }
            for s in skipped {
                remember_skip.execute(params![view_id, s.path, s.mtime_ns, s.size, s.reason])?;
            }
            let mut orphan = tx.prepare_cached(
                "UPDATE files SET orphaned_at = ?2 WHERE hash = ?1 AND orphaned_at IS NULL
                 AND NOT EXISTS (SELECT 1 FROM view_files WHERE file_hash = ?1)",
            )?;
            for h in maybe_orphaned {
                orphan.execute(params![h, now])?;
            }
            let mut adopt = tx.prepare_cached(
                "UPDATE files SET orphaned_at = NULL WHERE hash = ?1 AND orphaned_at IS NOT NULL",
            )?;
            for u in upserts {
                adopt.execute([u.file_hash])?;
            }
        }
        let generation: i64 = tx.query_row(
            "UPDATE views SET generation = generation + 1, used_at = ?2 WHERE id = ?1
             RETURNING generation",
            params![view_id, now],
            |r| r.get(0),
        )?;
        check()?;
        tx.commit()?;
        Ok(generation.max(0).unsigned_abs())
    }

    /// Deletes what no view has needed for `grace`: views of roots that no longer exist,
    /// file versions orphaned before then (their chunks and symbols go with them), and the
    /// vectors of contents no remaining chunk has. One transaction: a crash deletes nothing.
    pub fn collect_garbage(&mut self, grace: Duration) -> Result<GcStats> {
        let now = unix_now();
        let cutoff = now.saturating_sub(i64::try_from(grace.as_secs()).unwrap_or(i64::MAX));
        let mut stats = GcStats::default();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stale: Vec<(i64, String)> = tx
            .prepare("SELECT id, name FROM views WHERE used_at <= ?1")?
            .query_map([cutoff], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (id, name) in stale {
            let root = Path::new(&name);
            if name == UNNAMED_VIEW || !root.is_absolute() || root.is_dir() {
                continue; // a root that still exists keeps its view, however old
            }
            // Its files count as orphaned since the view was last used.
            forget_view(&tx, id, None)?;
            stats.views += 1;
        }
        // Versions chunked by other rules (stored before `chunker_since`) go without grace:
        // their keys can never come back (`hash::file_hash`).
        let chunker_since: i64 = tx
            .query_row(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'chunker_since'",
                [],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0);
        let expired = "FROM files WHERE orphaned_at IS NOT NULL
                       AND (orphaned_at <= ?1 OR indexed_at < ?2)
                       AND NOT EXISTS (SELECT 1 FROM view_files WHERE file_hash = files.hash)";
        let chunks: i64 = tx.query_row(
            &format!("SELECT coalesce(sum(chunk_count), 0) {expired}"),
            [cutoff, chunker_since],
            |r| r.get(0),
        )?;
        let files = tx.execute(&format!("DELETE {expired}"), [cutoff, chunker_since])?;
        stats.file_versions = files as u64;
        stats.chunks = chunks.max(0).unsigned_abs();
        if files > 0 {
            // A vector lives while any stored version has a chunk of its content.
            let mut live: HashSet<i64> = HashSet::new();
            let mut stmt = tx.prepare("SELECT hash, outline FROM files")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let hash: i64 = r.get(0)?;
                let blob: Option<Vec<u8>> = r.get(1)?;
                live.extend(decoded(
                    &self.path,
                    hash,
                    blob.as_deref(),
                    crate::outline::content_hashes,
                )?);
            }
            let dead: Vec<(i64, String, i64)> = tx
                .prepare(
                    "SELECT v.rowid, m.name, v.content_hash FROM vectors v
                     JOIN models m ON m.id = v.model",
                )?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .filter(|row| row.as_ref().map_or(true, |(_, _, h)| !live.contains(h)))
                .collect::<rusqlite::Result<_>>()?;
            let mut delete = tx.prepare("DELETE FROM vectors WHERE rowid = ?1")?;
            for (rowid, model, hash) in dead {
                delete.execute([rowid])?;
                stats.vectors.push((model, hash));
            }
        }
        tx.commit()?;
        Ok(stats)
    }

    /// Number of chunks of each file version of the view.
    pub fn chunk_counts(&self, view_id: i64) -> Result<HashMap<i64, u32>> {
        let mut stmt = self.conn.prepare(
            "SELECT hash, chunk_count FROM files
             WHERE hash IN (SELECT file_hash FROM view_files WHERE view_id = ?1)",
        )?;
        let rows = stmt.query_map([view_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Deletes the vectors of `model` whose length is not `dims` values; returns how many.
    pub fn delete_vectors_not_of_width(&mut self, model: &str, dims: usize) -> Result<usize> {
        Ok(self.conn.execute(
            "DELETE FROM vectors WHERE model = (SELECT id FROM models WHERE name = ?1) AND length(vector) != ?2",
            params![model, i64::try_from(dims * 2).unwrap_or(i64::MAX)],
        )?)
    }

    /// Every file of a view with its definitions and stored references, for the call graph,
    /// read but not decoded ([`GraphRows::decode`]): a caller that holds a lock on this store
    /// decodes them after letting go of it, since decoding runs on the process's pool, whose
    /// workers may be waiting for that very lock (an update running there).
    pub fn graph_rows(&self, view_id: i64) -> Result<GraphRows> {
        let mut stmt = self.conn.prepare(
            "SELECT v.path, v.file_hash, f.language, f.refs, f.outline, f.lines FROM view_files v
             JOIN files f ON f.hash = v.file_hash WHERE v.view_id = ?1",
        )?;
        let rows = stmt.query_map([view_id], |r| GraphRow::try_from(r))?;
        Ok(GraphRows {
            store: self.path.clone(),
            rows: rows.collect::<rusqlite::Result<_>>()?,
        })
    }
    /// Deletes the view `name` (a removed knowledge base): its files become orphans now,
    /// collected after the grace period. Returns its id, or `None` if there is no such view.
    pub fn drop_view(&mut self, name: &str) -> Result<Option<i64>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id: Option<i64> = tx
            .query_row("SELECT id FROM views WHERE name = ?1", [name], |r| r.get(0))
            .optional()?;
        if let Some(id) = id {
            forget_view(&tx, id, Some(unix_now()))?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Ids and names of every view.
    pub fn views(&self) -> Result<Vec<(i64, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, name FROM views ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// SQLite's own consistency checks: `quick_check` and foreign keys. Empty when sound.
    pub fn check(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let mut stmt = self.conn.prepare("PRAGMA quick_check")?;
        for row in stmt.query_map([], |r| r.get::<_, String>(0))? {
            let row = row?;
            if row != "ok" {
                problems.push(format!("database: {row}"));
            }
        }
        let mut stmt = self.conn.prepare("PRAGMA foreign_key_check")?;
        let dangling = stmt.query_map([], |r| r.get::<_, String>(0))?.count();
        if dangling > 0 {
            problems.push(format!("database: {dangling} rows refer to missing rows"));
        }
        Ok(problems)
    }

    /// [`Self::unreadable_versions`] as one problem line, if there are any.
    #[must_use]
    pub fn unreadable_problem(damaged: &[(i64, String)]) -> Option<String> {
        let (_, first) = damaged.first()?;
        Some(format!(
            "database: {} file versions cannot be read back (the first: {first})",
            damaged.len()
        ))
    }

    /// Drops file versions (those [`Self::unreadable_versions`] found) and every path of
    /// any view that holds them, in one transaction that bumps those views' generations:
    /// the next index reads the paths again and stores their content anew. Returns how many
    /// paths left their views.
    pub fn drop_versions(&mut self, hashes: &[i64]) -> Result<usize> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut paths = 0;
        {
            let mut views = tx.prepare(
                "UPDATE views SET generation = generation + 1
                 WHERE id IN (SELECT view_id FROM view_files WHERE file_hash = ?1)",
            )?;
            let mut leave = tx.prepare("DELETE FROM view_files WHERE file_hash = ?1")?;
            let mut drop = tx.prepare("DELETE FROM files WHERE hash = ?1")?;
            for &hash in hashes {
                views.execute([hash])?;
                paths += leave.execute([hash])?;
                drop.execute([hash])?;
            }
        }
        tx.commit()?;
        Ok(paths)
    }

    /// Each stored file version that cannot be read back (its text or outline damaged, or
    /// its counts not those of its outline), with the reason, by hash: SQLite checks pages,
    /// not the blobs inside them. Decoded in parallel, a few hundred versions at a time.
    pub fn unreadable_versions(&self) -> Result<Vec<(i64, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT hash, text, outline, chunk_count, symbol_count FROM files")?;
        let mut rows = stmt.query([])?;
        let mut batch: Vec<StoredVersion> = Vec::new();
        let mut damaged: Vec<(i64, String)> = Vec::new();
        let path = self.path.as_path();
        let mut flush = |batch: &mut Vec<StoredVersion>| {
            damaged.par_extend(batch.par_drain(..).filter_map(|v| {
                let reason = v.problem(path).err()?;
                Some((v.hash, reason))
            }));
        };
        while let Some(r) = rows.next()? {
            let text: Option<Vec<u8>> = r.get(1)?;
            if let Some(blob) = &text {
                // A missing dictionary is reported below, as the text it leaves unreadable.
                let _ = self.load_dictionary_of(blob);
            }
            batch.push(StoredVersion {
                hash: r.get(0)?,
                text,
                outline: r.get(2)?,
                counts: (r.get(3)?, r.get(4)?),
            });
            if batch.len() >= 256 {
                flush(&mut batch);
            }
        }
        flush(&mut batch);
        damaged.sort_unstable();
        Ok(damaged)
    }

    /// The counts of the view and of everything stored; `view`, when the caller already knows
    /// them (the lexical index mirrors the view), spares counting every chunk of the view.
    pub fn counts(&self, view_id: i64, view: Option<ViewCounts>) -> Result<StoreCounts> {
        let view = match view {
            Some(view) => view,
            None => self.view_counts(view_id)?,
        };
        let symbols = self.count_in_view(
            "SELECT coalesce(sum(f.symbol_count), 0) FROM view_files v
             JOIN files f ON f.hash = v.file_hash WHERE v.view_id = ?1",
            view_id,
        )?;
        // Every stored version, whichever views reference it (orphans awaiting collection too).
        let file_versions = self
            .conn
            .query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0))?
            .unsigned_abs();
        Ok(StoreCounts {
            files: view.files,
            chunks: view.chunks,
            symbols,
            file_versions,
            languages: view.languages,
        })
    }

    /// The one count `sql` gives for `view_id` (`?1`).
    fn count_in_view(&self, sql: &str, view_id: i64) -> Result<u64> {
        Ok(self
            .conn
            .query_row(sql, [view_id], |r| r.get::<_, i64>(0))?
            .max(0)
            .unsigned_abs())
    }

    /// [`ViewCounts`] from SQLite.
    pub fn view_counts(&self, view_id: i64) -> Result<ViewCounts> {
        let files = self.count_in_view(
            "SELECT count(*) FROM view_files WHERE view_id = ?1",
            view_id,
        )?;
        let chunks = self.count_in_view(
            "SELECT coalesce(sum(f.chunk_count), 0) FROM view_files v
             JOIN files f ON f.hash = v.file_hash WHERE v.view_id = ?1",
            view_id,
        )?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT f.language, count(*) FROM view_files v JOIN files f ON f.hash = v.file_hash
             WHERE v.view_id = ?1 GROUP BY f.language ORDER BY count(*) DESC, f.language",
        )?;
        let languages = stmt
            .query_map([view_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?.max(0).unsigned_abs(),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(ViewCounts {
            files,
            chunks,
            languages,
        })
    }
}

/// A file version's row as [`Store::unreadable_versions`] reads it.
struct StoredVersion {
    hash: i64,
    text: Option<Vec<u8>>,
    outline: Option<Vec<u8>>,
    counts: (i64, i64),
}

impl StoredVersion {
    /// Reads the version back as every reader would; the reason it cannot be, if any.
    fn problem(&self, path: &Path) -> std::result::Result<(), String> {
        let corrupt = |e: Error| e.to_string();
        let outline = decoded(
            path,
            self.hash,
            self.outline.as_deref(),
            crate::outline::decode,
        )
        .map_err(corrupt)?;
        let found = (count(&outline.chunks), count(&outline.symbols));
        if found != self.counts {
            return Err(format!(
                "file version {:x}: its outline holds {} chunks and {} symbols, its row says {} and {}",
                self.hash, found.0, found.1, self.counts.0, self.counts.1
            ));
        }
        match &self.text {
            Some(blob) => crate::textblob::text(blob)
                .map(drop)
                .map_err(|reason| corrupt(corrupt_version(path, self.hash, &reason))),
            None if outline.derived.iter().any(|&d| d) => Err(corrupt(corrupt_version(
                path,
                self.hash,
                "chunks are cut from a text that is not stored",
            ))),
            None => Ok(()),
        }
    }
}

/// A length as SQLite stores it.
fn count<T>(items: &[T]) -> i64 {
    i64::try_from(items.len()).unwrap_or(i64::MAX)
}

/// A file version that cannot be read back, with the way out: re-indexing would not parse
/// content it already knows, so the version must be dropped first.
fn corrupt_version(path: &Path, file_hash: i64, reason: &str) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        reason: format!(
            "file version {file_hash:x}: {reason} (`coderecall health --repair` drops it; the \
             next index reads its files again)"
        ),
    }
}

type GraphRow = (String, i64, String, Option<Vec<u8>>, Option<Vec<u8>>, u32);

/// A view's files as [`Store::graph_rows`] read them.
pub struct GraphRows {
    store: PathBuf,
    rows: Vec<GraphRow>,
}

impl GraphRows {
    /// The files of the call graph, outlines decoded in parallel on the process's pool.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] for a file version whose outline cannot be read.
    pub fn decode(self) -> Result<Vec<crate::graph::GraphFile>> {
        let GraphRows { store, rows: files } = self;
        let store = store.as_path();
        crate::helpers::in_own_pool(|| {
            files
                .into_par_iter()
                .filter_map(|(path, hash, language, refs, outline, lines)| {
                    let language = Language::from_name(&language)?;
                    let symbols = decoded(store, hash, outline.as_deref(), crate::outline::decode);
                    Some(symbols.map(|o| crate::graph::GraphFile {
                        language,
                        symbols: o.symbols,
                        refs: refs.unwrap_or_default(),
                        path,
                        lines,
                    }))
                })
                .collect()
        })
    }
}

/// `decode` applied to a version's outline blob, damage reported as a corrupt index.
fn decoded<T>(
    path: &Path,
    file_hash: i64,
    blob: Option<&[u8]>,
    decode: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<T> {
    let blob =
        blob.ok_or_else(|| corrupt_version(path, file_hash, "the file version has no outline"))?;
    decode(blob).map_err(|reason| corrupt_version(path, file_hash, &reason))
}

/// A view entry as SQLite returns it: id, path, file hash, language, mtime, size.
type EntryRow = (i64, String, i64, String, i64, i64);

fn entry_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EntryRow> {
    EntryRow::try_from(r)
}

/// Removes a view and its paths; its file versions no other view holds become orphans,
/// since `at` (default: when the view was last used).
fn forget_view(tx: &rusqlite::Transaction<'_>, id: i64, at: Option<i64>) -> Result<()> {
    tx.execute(
        "UPDATE files SET orphaned_at = coalesce(?2, (SELECT used_at FROM views WHERE id = ?1))
         WHERE hash IN (SELECT file_hash FROM view_files WHERE view_id = ?1)
         AND NOT EXISTS (SELECT 1 FROM view_files o
                         WHERE o.file_hash = files.hash AND o.view_id != ?1)",
        params![id, at],
    )?;
    tx.execute("DELETE FROM view_files WHERE view_id = ?1", [id])?;
    tx.execute("DELETE FROM skipped_files WHERE view_id = ?1", [id])?;
    tx.execute("DELETE FROM views WHERE id = ?1", [id])?;
    Ok(())
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::chunk::chunk_file;

    fn version(text: &str) -> FileVersion {
        let chunks = chunk_file(text, Language::Text);
        FileVersion::new(
            crate::hash::content_hash(text.as_bytes()),
            Language::Text,
            text.len() as u64,
            text,
            chunks,
            None,
        )
    }

    fn upsert(path: &str, v: &FileVersion) -> [ViewUpdate; 1] {
        [ViewUpdate {
            path: path.into(),
            file_hash: v.hash,
            mtime_ns: 1,
            size: 1,
        }]
    }

    fn changes<'a>(
        v: &'a FileVersion,
        upserts: &'a [ViewUpdate],
        removed: &'a [String],
    ) -> Changes<'a> {
        Changes {
            versions: std::slice::from_ref(v),
            upserts,
            removed,
            skipped: &[],
        }
    }

    #[test]
    fn a_new_database_opens_while_another_connection_writes_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap(); // in rollback-journal mode
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            holder.execute_batch("COMMIT").unwrap();
        });
        let store = Store::open(&path).unwrap();
        release.join().unwrap();
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn the_text_dictionary_is_stored_once_and_read_by_other_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let mut store = Store::open(&path).unwrap();
        assert!(store.text_dictionary().unwrap().is_none());
        let texts: Vec<String> = (0..300)
            .map(|i| format!("def f{i}(x):\n    return x * {i} + len(str(x))\n"))
            .collect();
        let samples: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let first = crate::textblob::train(&samples, 1 << 30).unwrap();
        let second = crate::textblob::train(&samples[..200], 1 << 30).unwrap();
        assert_ne!(first, second);
        let stored = store.set_text_dictionary(&first).unwrap();
        // A writer that trained its own meanwhile gets the one stored first.
        let mut other = Store::open(&path).unwrap();
        assert_eq!(other.set_text_dictionary(&second).unwrap().id, stored.id);
        assert_eq!(other.text_dictionary().unwrap().unwrap().id, stored.id);
        // A dictionary this process has never met is read from the index when a blob names it.
        let unmet = crate::textblob::train(&samples[100..], 1 << 30).unwrap();
        let id = crate::textblob::dictionary_id(&unmet);
        assert!(crate::textblob::registered(id).is_none());
        store
            .conn
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                params![format!("dictionary:{id:016x}"), unmet],
            )
            .unwrap();
        assert_eq!(store.dictionary(id).unwrap().bytes, unmet);
        assert!(crate::textblob::registered(id).is_some());
        // One that is not in the index is damage, named.
        let err = store.dictionary(id ^ 1).unwrap_err().to_string();
        assert!(err.contains("is missing"), "{err}");
    }

    #[test]
    fn migrates_a_new_database_and_reopens_idempotently() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.generation(DEFAULT_VIEW).unwrap(), 0);
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert!(store.view(DEFAULT_VIEW).unwrap().is_empty());
    }

    /// A database left at schema `version` by the migrations of that time.
    fn database_at(path: &Path, version: i64) -> Connection {
        let conn = Connection::open(path).unwrap();
        let mut conn = conn;
        for (i, migration) in MIGRATIONS
            .iter()
            .enumerate()
            .take(usize::try_from(version).unwrap())
        {
            let tx = conn.transaction().unwrap();
            migration.apply(&tx).unwrap();
            tx.pragma_update(None, "user_version", i64::try_from(i + 1).unwrap())
                .unwrap();
            tx.commit().unwrap();
        }
        conn
    }

    #[test]
    fn upgrades_from_every_older_version() {
        // A database left at each intermediate version must migrate to the latest.
        for start in 0..SCHEMA_VERSION {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index.db");
            drop(database_at(&path, start));
            let store = Store::open(&path).unwrap();
            assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        }
    }

    /// Vectors stored in the clustered table of schema 5 are all readable after the move to a
    /// rowid table, and a replaced vector stays one row.
    #[test]
    fn vectors_survive_the_move_to_a_rowid_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        {
            let conn = database_at(&path, 5);
            for hash in [7i64, -3] {
                conn.execute(
                    "INSERT INTO vectors (model, content_hash, vector) VALUES ('m', ?1, ?2)",
                    params![hash, encode_vector(&[0.5, -1.0])],
                )
                .unwrap();
            }
        }
        let mut store = Store::open(&path).unwrap();
        let mut stored = store.vectors("m").unwrap();
        stored.sort_by_key(|(hash, _)| *hash);
        assert_eq!(stored, vec![(-3, vec![0.5, -1.0]), (7, vec![0.5, -1.0])]);
        store.put_vectors("m", &[(7, vec![1.0, 0.0])]).unwrap();
        assert_eq!(store.count_vectors("m").unwrap(), 2);
        assert_eq!(store.vector("m", 7).unwrap(), Some(vec![1.0, 0.0]));
    }

    /// Vectors of several models stored with the model's id on every row (schema 7) keep
    /// their model and values after the move to model numbers, and the id is stored once.
    #[test]
    fn vectors_keep_their_model_through_the_move_to_model_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        {
            let conn = database_at(&path, 7);
            for (model, hash, value) in [("a", 1i64, 0.5f32), ("b", 1, -0.5), ("a", 2, 0.25)] {
                conn.execute(
                    "INSERT INTO vectors (model, content_hash, vector) VALUES (?1, ?2, ?3)",
                    params![model, hash, encode_vector(&[value, 1.0])],
                )
                .unwrap();
            }
        }
        let mut store = Store::open(&path).unwrap();
        let mut a = store.vectors("a").unwrap();
        a.sort_by_key(|(hash, _)| *hash);
        assert_eq!(a, vec![(1, vec![0.5, 1.0]), (2, vec![0.25, 1.0])]);
        assert_eq!(store.vector("b", 1).unwrap(), Some(vec![-0.5, 1.0]));
        assert_eq!(store.count_vectors("c").unwrap(), 0);
        store.put_vectors("c", &[(1, vec![1.0, 0.0])]).unwrap();
        store.put_vectors("b", &[(1, vec![0.0, 1.0])]).unwrap();
        assert_eq!(store.vector("b", 1).unwrap(), Some(vec![0.0, 1.0]));
        let models: Vec<String> = column(&store, "SELECT name FROM models ORDER BY id");
        assert_eq!(models, ["a", "b", "c"]);
        let rows: i64 = store
            .conn
            .query_row("SELECT count(*) FROM vectors", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 4);
    }

    /// Versions stored before references were kept (schema 4) are parsed again when next
    /// seen, and publishing fills in their references without touching their chunks.
    #[test]
    fn versions_without_references_get_them_on_the_next_publish() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, v) = published(
            dir.path(),
            "a.py",
            "import os\n\ndef f():\n    return os.getcwd()\n",
        );
        let refs_of = |store: &Store| -> Vec<crate::refs::Ref> {
            let files = store
                .graph_rows(DEFAULT_VIEW)
                .and_then(GraphRows::decode)
                .unwrap();
            crate::refs::decode(&files[0].refs)
        };
        assert!(!refs_of(&store).is_empty());
        store
            .conn
            .execute("UPDATE files SET refs = NULL", [])
            .unwrap();
        assert!(refs_of(&store).is_empty());
        assert!(
            store.known_hashes(&[v.hash]).unwrap().is_empty(),
            "parsed again"
        );
        let chunks = store.chunks(v.hash).unwrap();
        store
            .publish(DEFAULT_VIEW, &changes(&v, &upsert("a.py", &v), &[]), || {
                Ok(())
            })
            .unwrap();
        assert!(refs_of(&store).iter().any(|r| r.name == "getcwd"));
        assert_eq!(store.chunks(v.hash).unwrap(), chunks);
        assert_eq!(store.known_hashes(&[v.hash]).unwrap().len(), 1);
    }

    /// A database last opened with another chunker version has every path's stat made
    /// stale once, so unchanged files are read again and their versions, now keyed by other
    /// hashes, chunked by the current rules.
    #[test]
    fn a_new_chunker_version_has_every_path_read_again_once() {
        let dir = tempfile::tempdir().unwrap();
        let mtimes =
            |store: &Store| -> Vec<i64> { column(store, "SELECT mtime_ns FROM view_files") };
        let (store, _) = published(dir.path(), "a.py", "def f():\n    return 1\n");
        assert_eq!(mtimes(&store), vec![1]);
        drop(store);
        let store = Store::open(&dir.path().join("index.db")).unwrap();
        assert_eq!(
            mtimes(&store),
            vec![1],
            "same chunker: nothing to read again"
        );
        // A file skipped for its content is read again too (a new release may parse it).
        store
            .conn
            .execute_batch(
                "UPDATE meta SET value = '0' WHERE key = 'chunker';
                 INSERT INTO skipped_files (view_id, path, mtime_ns, size, reason)
                 SELECT id, 'b.xyz', 1, 1, 'no parser' FROM views;",
            )
            .unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("index.db")).unwrap();
        assert_eq!(mtimes(&store), vec![-1]);
        let skipped: Vec<i64> = column(&store, "SELECT mtime_ns FROM skipped_files");
        assert_eq!(skipped, vec![-1]);
        let chunker: String = store
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'chunker'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(chunker, crate::chunk::VERSION.to_string());
    }

    /// Versions stored before the chunker changed can never be known again: once no view
    /// holds them they are collected at once, while others keep their grace.
    #[test]
    fn versions_of_an_older_chunker_are_collected_without_grace() {
        let dir = tempfile::tempdir().unwrap();
        let week = Duration::from_secs(7 * 86_400);
        let replace = |store: &mut Store, text: &str| {
            let v = python_version(text);
            store
                .publish(DEFAULT_VIEW, &changes(&v, &upsert("a.py", &v), &[]), || {
                    Ok(())
                })
                .unwrap();
        };
        let versions = |store: &Store| -> i64 {
            store
                .conn
                .query_row("SELECT count(*) FROM files", [], |r| r.get(0))
                .unwrap()
        };
        let (mut store, _) = published(dir.path(), "a.py", "def f():\n    return 1\n");
        replace(&mut store, "def f():\n    return 2\n");
        assert_eq!(store.collect_garbage(week).unwrap().file_versions, 0);
        assert_eq!(
            versions(&store),
            2,
            "an orphan of this chunker keeps its grace"
        );
        // Both versions were stored a minute ago, and the chunker changes now.
        store
            .conn
            .execute_batch(
                "UPDATE files SET indexed_at = indexed_at - 60;
                 UPDATE meta SET value = '0' WHERE key = 'chunker';",
            )
            .unwrap();
        drop(store);
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        assert_eq!(store.collect_garbage(week).unwrap().file_versions, 1);
        replace(&mut store, "def f():\n    return 3\n");
        assert_eq!(store.collect_garbage(week).unwrap().file_versions, 1);
        assert_eq!(versions(&store), 1, "only the version stored since remains");
    }

    #[test]
    fn a_dropped_view_orphans_its_files_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        assert_eq!(store.open_view("/repo").unwrap(), DEFAULT_VIEW); // adopts the first view
        let kb = store.open_view("/docs").unwrap();
        let (a, b) = (version("shared\n"), version("only in the kb\n"));
        store
            .publish(
                DEFAULT_VIEW,
                &changes(&a, &upsert("a.txt", &a), &[]),
                || Ok(()),
            )
            .unwrap();
        let both = [
            ViewUpdate {
                path: "a.txt".into(),
                file_hash: a.hash,
                mtime_ns: 1,
                size: 1,
            },
            ViewUpdate {
                path: "b.txt".into(),
                file_hash: b.hash,
                mtime_ns: 1,
                size: 1,
            },
        ];
        let versions = [version("shared\n"), version("only in the kb\n")];
        let kb_changes = Changes {
            versions: &versions,
            upserts: &both,
            removed: &[],
            skipped: &[],
        };
        store.publish(kb, &kb_changes, || Ok(())).unwrap();
        assert_eq!(store.drop_view("/docs").unwrap(), Some(kb));
        assert_eq!(store.drop_view("/docs").unwrap(), None);
        assert!(store.views().unwrap().iter().all(|(id, _)| *id != kb));
        let orphaned = column::<i64>(
            &store,
            "SELECT hash FROM files WHERE orphaned_at IS NOT NULL",
        );
        assert_eq!(orphaned, vec![b.hash], "the shared version stays live");
        assert_eq!(store.view(DEFAULT_VIEW).unwrap().len(), 1);
    }

    /// `v`'s chunks as rows of the `chunks` table (schemas 1 to 6), the content inline where
    /// `inline(ordinal)` says so.
    fn chunk_rows(conn: &Connection, v: &FileVersion, inline: impl Fn(i64) -> bool) {
        for (ordinal, c) in (0_i64..).zip(&v.chunks) {
            conn.execute(
                "INSERT INTO chunks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    v.hash,
                    ordinal,
                    c.start_line,
                    c.end_line,
                    c.kind.name(),
                    c.symbol,
                    c.local_path,
                    c.names,
                    c.context,
                    inline(ordinal).then_some(c.content.as_str()),
                    c.content_hash
                ],
            )
            .unwrap();
        }
    }

    /// The first column of every row `sql` returns.
    fn column<T: rusqlite::types::FromSql>(store: &Store, sql: &str) -> Vec<T> {
        store
            .conn
            .prepare(sql)
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// A new store in `dir` whose view holds `path` with the Python `text`.
    fn published(dir: &Path, path: &str, text: &str) -> (Store, FileVersion) {
        let mut store = Store::open(&dir.join("index.db")).unwrap();
        let v = python_version(text);
        store
            .publish(
                DEFAULT_VIEW,
                &changes(&v, &upsert(path, &v), &[]),
                || Ok(()),
            )
            .unwrap();
        (store, v)
    }

    fn python_version(text: &str) -> FileVersion {
        let chunks = chunk_file(text, Language::Python);
        FileVersion::new(
            crate::hash::content_hash(text.as_bytes()),
            Language::Python,
            text.len() as u64,
            text,
            chunks,
            None,
        )
    }

    /// Chunk contents come back byte for byte whether they were stored or cut from the
    /// compressed file text: CRLF, a missing final newline, blank tails, non-ASCII.
    #[test]
    fn chunk_contents_round_trip_through_the_stored_text() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        let texts = [
            "def a():\r\n    return 1\r\n\r\nclass B:\r\n    def m(self):\r\n        pass\r\n",
            "def héllo():\n    return 'ünïcode'\n\n\n\ndef tail():\n    pass",
            "import os\n\nx = 1\n\n\n",
        ];
        for (i, text) in texts.iter().enumerate() {
            let v = python_version(text);
            assert!(!v.chunks.is_empty());
            store
                .publish(
                    DEFAULT_VIEW,
                    &changes(&v, &upsert(&format!("f{i}.py"), &v), &[]),
                    || Ok(()),
                )
                .unwrap();
            let back = store.chunks(v.hash).unwrap();
            assert_eq!(back, v.chunks, "text {i}");
            for (ordinal, c) in (0_u32..).zip(&v.chunks) {
                let content = store.chunk_content(v.hash, ordinal).unwrap();
                assert_eq!(content.as_deref(), Some(c.content.as_str()));
            }
        }
        let texts: i64 = store
            .conn
            .query_row("SELECT count(text) FROM files", [], |r| r.get(0))
            .unwrap();
        let inline = column::<i64>(&store, "SELECT hash FROM files")
            .iter()
            .map(|&h| store.outline(h).unwrap().unwrap())
            .flat_map(|o| o.derived)
            .filter(|&derived| !derived)
            .count();
        assert_eq!(texts, 3, "every version keeps its text");
        assert_eq!(
            inline, 0,
            "chunks that are line ranges are not stored twice"
        );
        assert_eq!(store.chunk_content(12345, 0).unwrap(), None);
    }

    /// Versions stored by schema 1 keep their chunk text through the migration and read as
    /// before; new versions are stored the new way beside them.
    #[test]
    fn versions_stored_before_the_text_column_stay_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let old = python_version("def old():\n    return 1\n");
        {
            let conn = database_at(&path, 1);
            conn.execute(
                "INSERT INTO files (hash, language, size, lines, indexed_at) VALUES (?1, 'python', 1, 2, 0)",
                [old.hash],
            )
            .unwrap();
            chunk_rows(&conn, &old, |_| true);
        }
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.chunks(old.hash).unwrap(), old.chunks);
        assert_eq!(
            store.chunk_content(old.hash, 0).unwrap().as_deref(),
            Some(old.chunks[0].content.as_str())
        );
        let new = python_version("def new():\n    return 2\n");
        store
            .publish(
                DEFAULT_VIEW,
                &changes(&new, &upsert("new.py", &new), &[]),
                || Ok(()),
            )
            .unwrap();
        assert_eq!(store.chunks(new.hash).unwrap(), new.chunks);
    }

    /// A database written with chunk and symbol rows (schema 6) reads the same after they
    /// move into outlines: chunks (stored and derived contents), symbols, counts, pending
    /// vectors; the old tables are gone.
    #[test]
    fn chunk_and_symbol_rows_move_into_outlines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let text = "class A:\n    def m(self):\n        return 1\n\n\ndef f():\n    pass\n";
        let v = python_version(text);
        assert!(v.chunks.len() >= 2 && v.symbols.len() >= 2);
        {
            let conn = database_at(&path, 6);
            conn.execute(
                "INSERT INTO files (hash, language, size, lines, indexed_at, text)
                 VALUES (?1, 'python', 1, 7, 0, ?2)",
                params![v.hash, crate::textblob::compress(text, None).unwrap()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO view_files (view_id, path, file_hash, mtime_ns, size)
                 VALUES (1, 'a.py', ?1, 1, 1)",
                [v.hash],
            )
            .unwrap();
            // The first chunk keeps its content inline (as versions from schema 1 do).
            chunk_rows(&conn, &v, |ordinal| ordinal == 0);
            for s in &v.symbols {
                conn.execute(
                    "INSERT INTO symbols (file_hash, name, kind, local_path, start_line, end_line)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        v.hash,
                        s.name,
                        s.kind.name(),
                        s.local_path,
                        s.start_line,
                        s.end_line
                    ],
                )
                .unwrap();
            }
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.chunks(v.hash).unwrap(), v.chunks);
        let derived = store.outline(v.hash).unwrap().unwrap().derived;
        assert!(!derived[0] && derived[1..].iter().all(|&d| d));
        let graph = store
            .graph_rows(DEFAULT_VIEW)
            .and_then(GraphRows::decode)
            .unwrap();
        assert_eq!(graph.len(), 1);
        assert_eq!(graph[0].symbols, v.symbols);
        let counts = store.counts(DEFAULT_VIEW, None).unwrap();
        assert_eq!(
            (counts.files, counts.chunks, counts.symbols),
            (1, v.chunks.len() as u64, v.symbols.len() as u64)
        );
        let hashes: Vec<i64> = v.chunks.iter().map(|c| c.content_hash).collect();
        let pending = store.pending_vectors(DEFAULT_VIEW, "m").unwrap();
        let mut unique = hashes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(pending.len(), unique.len());
        assert_eq!(
            store.chunk_hashes(v.hash).unwrap(),
            (0_u32..).zip(hashes).collect::<Vec<_>>()
        );
        let tables: i64 = store
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name IN ('chunks', 'symbols')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0);
        let free: i64 = store
            .conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap();
        assert_eq!(free, 0, "the pages of the dropped tables are given back");
    }

    /// A damaged outline is reported as a corrupt index by every reader, never a panic.
    #[test]
    fn a_damaged_outline_is_a_corrupt_index() {
        let dir = tempfile::tempdir().unwrap();
        let (store, v) = published(dir.path(), "f.py", "def f():\n    return 1\n");
        for damage in [&b"garbage"[..], &[], &v.outline[..v.outline.len() / 2]] {
            store
                .conn
                .execute(
                    "UPDATE files SET outline = ?2 WHERE hash = ?1",
                    params![v.hash, damage],
                )
                .unwrap();
            let corrupt = |r: Result<()>| assert!(matches!(r, Err(Error::Corrupt { .. })), "{r:?}");
            corrupt(store.chunks(v.hash).map(drop));
            corrupt(store.chunk_content(v.hash, 0).map(drop));
            corrupt(store.chunk_hashes(v.hash).map(drop));
            corrupt(store.pending_vectors(DEFAULT_VIEW, "m").map(drop));
            corrupt(store.view_chunk_hashes(DEFAULT_VIEW).map(drop));
            corrupt(
                store
                    .graph_rows(DEFAULT_VIEW)
                    .and_then(GraphRows::decode)
                    .map(drop),
            );
            let damaged = store.unreadable_versions().unwrap();
            assert_eq!(damaged.len(), 1);
            assert_eq!(damaged[0].0, v.hash);
            let problem = Store::unreadable_problem(&damaged).unwrap();
            assert!(
                problem.contains("1 file versions cannot be read back"),
                "{problem}"
            );
            assert!(
                store.check().unwrap().is_empty(),
                "SQLite's own checks pass"
            );
        }
        store
            .conn
            .execute(
                "UPDATE files SET outline = ?2 WHERE hash = ?1",
                params![v.hash, v.outline],
            )
            .unwrap();
        assert!(store.unreadable_versions().unwrap().is_empty());
        // The counts beside the outline, and the text the chunks are cut from, are checked too.
        let damage = [
            "UPDATE files SET chunk_count = chunk_count + 1",
            "UPDATE files SET text = x'00112233'",
            "UPDATE files SET text = NULL",
        ];
        for sql in damage {
            let tx = store.conn.unchecked_transaction().unwrap();
            tx.execute(sql, []).unwrap();
            let damaged = store.unreadable_versions().unwrap();
            assert!(damaged.len() == 1, "{sql}: {damaged:?}");
            tx.rollback().unwrap();
        }
        assert!(store.unreadable_versions().unwrap().is_empty());
        // Dropped, the version and its path are gone, the view's generation moves on, and
        // SQLite's checks (foreign keys included) still pass.
        let mut store = store;
        store
            .conn
            .execute("UPDATE files SET outline = x'00' WHERE hash = ?1", [v.hash])
            .unwrap();
        let generation = store.generation(DEFAULT_VIEW).unwrap();
        let hashes: Vec<i64> = store
            .unreadable_versions()
            .unwrap()
            .into_iter()
            .map(|d| d.0)
            .collect();
        assert_eq!(store.drop_versions(&hashes).unwrap(), 1);
        assert!(store.view(DEFAULT_VIEW).unwrap().is_empty());
        assert!(store.known_hashes(&[v.hash]).unwrap().is_empty());
        assert_eq!(store.generation(DEFAULT_VIEW).unwrap(), generation + 1);
        assert!(store.check().unwrap().is_empty());
        assert!(store.unreadable_versions().unwrap().is_empty());
    }

    /// Vectors are stored per model and content hash, as f16; pending work is one chunk per
    /// content hash of the view that has no vector for that model.
    #[test]
    fn vectors_are_keyed_by_model_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        let v = python_version(
            "class A:\n    def m(self):\n        return 1\n\n\ndef f():\n    pass\n",
        );
        let copy = python_version("def f():\n    pass\n");
        for (name, version) in [("a.py", &v), ("b.py", &copy)] {
            store
                .publish(
                    DEFAULT_VIEW,
                    &changes(version, &upsert(name, version), &[]),
                    || Ok(()),
                )
                .unwrap();
        }
        let distinct: HashSet<i64> = v
            .chunks
            .iter()
            .chain(&copy.chunks)
            .map(|c| c.content_hash)
            .collect();
        let pending = store.pending_vectors(DEFAULT_VIEW, "m1").unwrap();
        assert_eq!(pending.len(), distinct.len(), "one per content hash");
        let texts = store.embedding_texts(&pending).unwrap();
        for (p, text) in pending.iter().zip(&texts) {
            let chunk = v
                .chunks
                .iter()
                .chain(&copy.chunks)
                .find(|c| c.content_hash == p.content_hash)
                .unwrap();
            assert_eq!(*text, embedding_text(chunk));
            assert!(text.ends_with(&chunk.content));
        }
        let header = embedding_text(&Chunk {
            local_path: "A.m".into(),
            context: "class A:".into(),
            content: "def m(self): ...".into(),
            ..v.chunks[0].clone()
        });
        assert_eq!(header, "A.m\nclass A:\ndef m(self): ...");
        let first = pending[0].content_hash;
        store
            .put_vectors("m1", &[(first, vec![0.5, -0.25, 1.0 / 3.0])])
            .unwrap();
        assert_eq!(store.count_vectors("m1").unwrap(), 1);
        assert_eq!(store.count_vectors("m2").unwrap(), 0);
        let back = store.vectors("m1").unwrap();
        assert_eq!(back[0].0, first);
        assert_eq!(&back[0].1[..2], &[0.5, -0.25]);
        assert!((back[0].1[2] - 1.0 / 3.0).abs() < 1e-3, "f16 precision");
        let pending = store.pending_vectors(DEFAULT_VIEW, "m1").unwrap();
        assert_eq!(pending.len(), distinct.len() - 1);
        assert!(pending.iter().all(|p| p.content_hash != first));
        assert_eq!(
            store.pending_vectors(DEFAULT_VIEW, "m2").unwrap().len(),
            distinct.len()
        );
        let hashes = store.view_chunk_hashes(DEFAULT_VIEW).unwrap();
        assert_eq!(hashes.len(), v.chunks.len() + copy.chunks.len());
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        match Store::open(&path) {
            Err(Error::SchemaTooNew { found, .. }) => assert_eq!(found, SCHEMA_VERSION + 1),
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("a newer schema was accepted"),
        }
    }

    #[test]
    fn publish_is_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        let a = version("alpha beta gamma\n");
        let generation = store
            .publish(
                DEFAULT_VIEW,
                &changes(&a, &upsert("a.txt", &a), &[]),
                || Ok(()),
            )
            .unwrap();
        assert_eq!(generation, 1);
        let b = version("delta\n");
        let removed = ["a.txt".to_owned()];
        let failed = store.publish(
            DEFAULT_VIEW,
            &changes(&b, &upsert("b.txt", &b), &removed),
            || Err(Error::Cancelled),
        );
        assert!(matches!(failed, Err(Error::Cancelled)));
        let view = store.view(DEFAULT_VIEW).unwrap();
        assert_eq!(view.len(), 1);
        assert_eq!(view[0].path, "a.txt");
        assert_eq!(store.generation(DEFAULT_VIEW).unwrap(), 1);
        assert!(store.known_hashes(&[b.hash]).unwrap().is_empty());
    }

    #[test]
    fn path_ids_are_stable_across_content_changes_and_orphans_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        let a = version("first version\n");
        store
            .publish(
                DEFAULT_VIEW,
                &changes(&a, &upsert("f.txt", &a), &[]),
                || Ok(()),
            )
            .unwrap();
        let id = store.view(DEFAULT_VIEW).unwrap()[0].path_id;
        let b = version("second version\n");
        store
            .publish(
                DEFAULT_VIEW,
                &changes(&b, &upsert("f.txt", &b), &[]),
                || Ok(()),
            )
            .unwrap();
        let view = store.view(DEFAULT_VIEW).unwrap();
        assert_eq!(view[0].path_id, id);
        assert_eq!(view[0].file_hash, b.hash);
        let orphaned: Option<i64> = store
            .conn
            .query_row(
                "SELECT orphaned_at FROM files WHERE hash = ?1",
                [a.hash],
                |r| r.get(0),
            )
            .unwrap();
        assert!(orphaned.is_some(), "the old version is marked orphaned");
        assert_eq!(store.chunks(b.hash).unwrap()[0].content, "second version");
    }

    #[test]
    fn views_are_named_with_their_own_generation_and_the_first_is_adopted() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        assert_eq!(store.open_view("/work/main").unwrap(), DEFAULT_VIEW);
        assert_eq!(store.open_view("/work/main").unwrap(), DEFAULT_VIEW);
        let other = store.open_view("/work/feature").unwrap();
        assert_ne!(other, DEFAULT_VIEW);
        assert!(store.open_view("").is_err());
        let a = version("shared text\n");
        store
            .publish(other, &changes(&a, &upsert("a.txt", &a), &[]), || Ok(()))
            .unwrap();
        assert_eq!(store.generation(other).unwrap(), 1);
        assert_eq!(store.generation(DEFAULT_VIEW).unwrap(), 0);
        assert!(store.view(DEFAULT_VIEW).unwrap().is_empty());
        // The same content in the other view is stored once.
        store
            .publish(
                DEFAULT_VIEW,
                &changes(&a, &upsert("b.txt", &a), &[]),
                || Ok(()),
            )
            .unwrap();
        assert_eq!(store.counts(DEFAULT_VIEW, None).unwrap().file_versions, 1);
        assert_eq!(store.views().unwrap().len(), 2);
    }

    #[test]
    fn garbage_collection_waits_for_the_grace_period_then_deletes_everything_derived() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("index.db")).unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let view = store.open_view(root.to_str().unwrap()).unwrap();
        let a = version("old text\n");
        store
            .publish(view, &changes(&a, &upsert("f.txt", &a), &[]), || Ok(()))
            .unwrap();
        let old_chunk = store.chunks(a.hash).unwrap()[0].content_hash;
        store
            .put_vectors("m", &[(old_chunk, vec![1.0, 0.0])])
            .unwrap();
        let b = version("new text\n");
        store
            .publish(view, &changes(&b, &upsert("f.txt", &b), &[]), || Ok(()))
            .unwrap();
        let long = Duration::from_secs(3600);
        assert_eq!(store.collect_garbage(long).unwrap(), GcStats::default());
        assert!(!store.known_hashes(&[a.hash]).unwrap().is_empty());
        let stats = store.collect_garbage(Duration::ZERO).unwrap();
        assert_eq!(stats.file_versions, 1);
        assert_eq!(stats.chunks, 1);
        assert_eq!(stats.vectors, vec![("m".to_owned(), old_chunk)]);
        assert!(store.known_hashes(&[a.hash]).unwrap().is_empty());
        assert_eq!(
            store.view(view).unwrap()[0].file_hash,
            b.hash,
            "the view is kept"
        );
        assert!(store.check().unwrap().is_empty());
        // A view whose root is gone goes, and its files with it; a root that exists stays.
        let gone = store
            .open_view(dir.path().join("deleted").to_str().unwrap())
            .unwrap();
        let c = version("only in a deleted worktree\n");
        store
            .publish(gone, &changes(&c, &upsert("g.txt", &c), &[]), || Ok(()))
            .unwrap();
        let stats = store.collect_garbage(Duration::ZERO).unwrap();
        assert_eq!((stats.views, stats.file_versions), (1, 1));
        assert_eq!(store.views().unwrap().len(), 1);
        assert!(store.known_hashes(&[c.hash]).unwrap().is_empty());
    }
}
