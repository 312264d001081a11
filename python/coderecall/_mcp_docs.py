"""Descriptions of the MCP tools, written for the agent that picks among them: when to use
each tool, what it returns, what the fields mean."""

from __future__ import annotations

SERVER_INSTRUCTIONS = """\
Code intelligence over one project (and its knowledge bases). To understand a symbol, a file
or a question, start with codebase_context: one call returns the evidence within a token
budget. For a list of places use codebase_search (codebase_peek for locations only); for the
definition of a known name implementation_lookup; for who calls what call_graph and
call_graph_path. The server re-indexes files moments after they are saved while it watches
the project (index_status says whether it does); index_codebase waits until your latest
edits are indexed. Every answer says when it was cut (truncated) or may be out of date
(stale)."""

MEMORY_INSTRUCTIONS = """\
Memory of earlier sessions on this project (decisions, fixed errors, preferences, progress):
ask answers a question from memory and code at once; to dig into memory, memory_search, then
memory_timeline around a hit, then memory_get for the full records you need. Record what a
later session should know with memory_add; replace an outdated record with memory_supersede,
and erase a wrong one with memory_forget (a reason is required)."""

SEARCH_DOC = """\
Search this codebase by meaning and by keywords at once (hybrid BM25 + embeddings) and get
the matching code chunks with their source text. Use it first when you need to find where
something is implemented, defined or handled: an identifier spelled as in the code
(`TokenStore`, `Client.send`), a declaration to prefer a kind (`class TokenStore`,
`fn refresh`), a constant, an enum member or a struct's field (`MAX_RETRIES`,
`ErrorKind::NotFound`, `Config.timeout`), a path fragment, a plain-language description
("where are access tokens refreshed"), or an error message pasted as the log prints it (the
code that writes it comes first). Cheaper and more complete than grepping file by file.

Returns JSON `{"hits": [...]}`, best first; each hit has path (relative to the project root),
start_line, end_line (1-based, inclusive), language, kind (function, method, class, ...),
symbol, symbol_path (the unit asked for, when a chunk holds several small ones), score
(comparable within one answer) and content (the chunk's source).
`language` (e.g. "python") and `directory` (e.g. "src/api") narrow the search; `source`
picks "code", "kb" or a knowledge base's name (default: all; each hit's source says which).
When the answer would be too long, the last hits are dropped and `truncated: true` with
`dropped: N` says so.
`stale: true` means the index is still catching up with recent edits."""

PEEK_DOC = """\
The same search as codebase_search but returns only locations, no source text: path,
start_line, end_line, symbol_path, kind and score for each hit. Use it to survey many
candidates cheaply (it costs a fraction of the tokens), then read the files or chunks you need.
Returns JSON `{"hits": [...]}`, best first."""

SIMILAR_DOC = """\
Find code that resembles a given snippet (`code`) or an existing chunk (`path` relative to
the project root plus a 1-based `line` inside it; the chunk holding that line is left out,
with the rest of a long definition split into windows). Use it to find duplicates, other
implementations of the same pattern, or callers written alike before changing one of them.
Give either code, or path and line, not both. Returns JSON `{"hits": [...]}` shaped as in
codebase_search."""

INDEX_DOC = """\
Bring the code index up to date with the files on disk (incremental: only changed files are
read). The server does this on start and, while it watches the project, moments after each
burst of saved edits; call it to be sure your latest edits are searchable now, or with
force=true to re-read everything. Returns JSON `{"report": {...}}` with files seen,
parsed, removed, chunks added, skipped-file counts by reason, seconds taken. With
estimate=true nothing is embedded: it returns `{"estimate": {...}}`, the number of chunks
and tokens embedding would cost."""

STATUS_DOC = """\
Describe the index: whether it exists, how many files, chunks and symbols it holds, files per
language, its size on disk, when it was last updated and what that run did, and whether the
server watches the project for edits (`watching`). Cheap; use it to check that the codebase
is indexed or to explain a surprising search result."""

HEALTH_DOC = """\
Check the index for damage: the database's integrity, that every stored file version reads
back, and the derived files (lexical index, vector graph) against it. Returns JSON
`{"health": {"ok": ..., "problems": [...], "repaired": [...]}}`. With repair=true the
derived files are rebuilt from the database and unreadable file versions are dropped (the
next index reads those files again). Use it when searches fail or look wrong."""


CONTEXT_DOC = """\
The best first call to understand something in this codebase. Give it an identifier
(`parse_args`, `Client.send`, `store::Store::open`), a file path (`src/api/routes.py`) or a
question in plain words; it routes the query and returns one evidence pack within a token
budget (counted with a real tokenizer): for an identifier, its definition, the code around
each call site of its callers, and the signatures of what it calls; for a path, the file's
outline (every definition with its lines and number of callers), its imports, and its
most-called definitions; for a question, the best hybrid search hits, spread over files.

Returns JSON with route (identifier | path | search), context (the evidence as text: each
item starts with a line `[kind] path:start-end symbol — why`), tokens, budget, truncated
(true when something was cut or left out: then dropped says how many items) and notes (what
is uncertain: ambiguous or unresolved calls, other definitions of the same name)."""

LOOKUP_DOC = """\
Where a symbol is defined: its authoritative definition first (implementation before tests,
a definition before an impl block, an exact name before a case-insensitive match), with its
source text. Give a name (`parse_args`), a qualified name (`Client.send`,
`pkg.client.Client.send`, `store::Store::open`) or `path:line`. Use it instead of a search
when you know the name. Returns JSON `{"definitions": [...]}`, each with path, start_line,
end_line, kind, symbol_path, callers and callees (edge counts) and content."""

CALL_GRAPH_DOC = """\
Who calls a symbol and what it calls, up to `depth` calls away (1-5), from the call graph
built from every file's calls, imports and inheritance. Use it before changing a function's
behaviour or signature, to find what depends on it, or to follow what it does.

Returns JSON with symbol, callers and callees (each edge: caller, callee, path and line of
the call site, depth, and confidence: `resolved` = traced through scope, imports or the
receiver's stated type, `inferred` = the only definition of that name in the repository,
`unresolved` with reason
`ambiguous` (candidates listed), `external` (a library module) or `unknown`), complete and
note. An empty callers list means "no callers" only when complete is true; otherwise some
calls could not be resolved and the note says how many."""

CALL_PATH_DOC = """\
The shortest chain of calls from one symbol to another (e.g. from an HTTP handler to the
database write), each step with its call site and confidence. Use it to check whether and
how code reaches other code. Returns JSON with found, edges (in order) and note; not found
means no chain of resolved, inferred or ambiguous calls within max_depth, which does not rule
out dynamic calls."""

METRICS_DOC = """\
Numbers about the index: files, chunks, symbols, size on disk, stored vectors, the call
graph (definitions, edges and how many are resolved, inferred, unresolved; build time) and
this server's recent tool latencies (p50/p95). Use it to judge how much to trust the call
graph of this codebase or to report performance."""

LOGS_DOC = """\
Recent records of the index log (indexing runs, watcher updates, warnings and errors, from
every coderecall process on this index), newest first. `level` keeps records at or above it
(info, warning, error); `contains` filters the message. Use it when an index update failed
or results look stale."""

KB_ADD_DOC = """\
Index an extra folder beside the code, such as documentation or a sibling repository, as a
knowledge base: it is searched together with the code by default (each hit's source names
it), or alone with source=<name> in codebase_search. `path` is absolute or relative to the
project root; `name` defaults to the folder's name. Indexing happens now and on every later
index run. Returns JSON `{"knowledge_base": {...}}`."""

KB_LIST_DOC = """\
The knowledge bases of this index: name, folder, files, chunks, when last indexed, and
whether the folder still exists. Returns JSON `{"knowledge_bases": [...]}`."""

KB_REMOVE_DOC = """\
Stop indexing and searching a knowledge base and drop its index. Returns JSON
`{"removed": true|false}`."""


ASK_DOC = """\
Answer a question from this project's memory and its code together, in one call: what earlier
sessions recorded (decisions, fixed errors, preferences) and the code that implements it. Use
it first for "why"/"how did we" questions ("why do we use WAL mode", "how did we fix the
token refresh bug") or when you are unsure whether the answer is in memory or in code.

Returns JSON `{"question", "results": [...], "found": {"memory": N, "code": M}}`. `results`
is one list, best first, fused by reciprocal rank (k=60) from the memory search and the
hybrid code search; each item has `source` ("memory" or "code"), `rank` (its place in its own
list) and `rrf` (the fused score). Memory items: id, type, scope, created_at, tags, score and
the full text. Code items: as in codebase_search (path, start_line, end_line, symbol_path,
kind, score, content; `kb` names a knowledge base a hit came from). `limit` (default 10)
caps the fused list. Private memories never appear here."""

MEMORY_SEARCH_DOC = """\
Search what earlier sessions on this project (and the user's cross-project memory) recorded:
decisions, architecture, error solutions, preferences, progress, session summaries. Use it
before re-deciding or re-debugging something, and when the user refers to earlier work. This
is the first step of three: memory_search (compact hits) -> memory_timeline (what was written
around a hit) -> memory_get (full records of the ids you need).

`query` is plain words; a time phrase in it ("yesterday", "last week", "in March") ranks the
records of that window first, the others still following (`since`/`until` filter strictly); a
query that is only a time phrase lists that window, newest first.
Filters: `type` (one or a list: project-brief, architecture, tech-context, product-context,
preference, decision, error-solution, progress, session-summary, learned-pattern,
observation), `scope` ("project" or "user"), `tags` (all must be present), `since`/`until`
(YYYY-MM-DD, a day counting whole, or an ISO 8601 time). Private records only with
include_private=true.

Returns JSON `{"hits": [...]}`, best first; each hit has id, type, scope, snippet (the
start of the text), tags, created_at and score. Only current records (not superseded or
forgotten)."""

MEMORY_TIMELINE_DOC = """\
The memory records written just before and after one record (`id`, from memory_search), in
time order: the context a decision or a fix was made in. `before` and `after` (0-50, default
5) say how many on each side. Returns JSON `{"center": id, "records": [...]}` with compact
items (id, type, scope, created_at, snippet, tags, state: current, superseded by N or
forgotten); memory_get gives the full text."""

MEMORY_GET_DOC = """\
Full memory records by id (`ids`: one id or a list, from memory_search, memory_timeline or
ask). Returns JSON `{"records": [...]}` in the order asked, each with id, type, scope,
project, text, tags, privacy, session, events, created_at, updated_at, superseded_by,
forgotten_at and forget_reason. Ids that do not exist in this project are listed under
`unknown`; private records are withheld (listed under `private`) unless
include_private=true. Ask only for the ids you need: whole records cost tokens."""

MEMORY_ADD_DOC = """\
Remember something for later sessions: a decision and why, the fix for an error, a user
preference, the project's architecture, progress. Write one self-contained fact in plain
words that a later session, with no other context, can use. `type` (default observation):
project-brief, architecture, tech-context, product-context, preference, decision,
error-solution, progress (only the newest stays current), session-summary, learned-pattern,
observation, or your own lower-case name. `scope`: "project" (default; this repository, in
every clone) or "user" (follows the user to every project). `tags` help later searches;
`session` links the record to a session id; private=true keeps it out of default reads.

The text passes a privacy filter first: `<private>...</private>` sections are cut and
secrets (API keys, tokens, passwords) redacted; a record tagged blocked/do-not-store is
refused. A near-duplicate of an existing record updates it instead of adding one. Returns
JSON with action (added, updated or refused), record (as stored), redactions (kinds of
secrets removed), private_sections, superseded (ids aging retired) and reason (why
refused)."""

MEMORY_SUPERSEDE_DOC = """\
Replace a memory record (`id`) that is out of date with a corrected one (`text`; same type
and scope, same tags unless `tags` is given). The old record stays in the history but no
longer appears in searches. Use it when a decision changed or a recorded fix turned out to
be wrong. Returns JSON `{"superseded": old_id, "record": {...the new record...}}`."""

MEMORY_FORGET_DOC = """\
Erase a memory record (`id`) for good: its text and tags are deleted, and a tombstone keeps
when and why (`reason`, required, e.g. "contained a password" or "wrong: the bug was
elsewhere"). Use it for records that are wrong or should never have been stored; for ones
that are merely out of date prefer memory_supersede. Returns JSON `{"forgotten": {...}}`,
the tombstone with forgotten_at and forget_reason."""

MEMORY_CONTEXT_DOC = """\
The project's memory as one `[MEMORY]` block to keep in mind for the rest of the task: the \
project brief, the user's preferences, architecture, tech and product context and recent \
progress, then the memories most relevant to `query` (or, without one, to the latest prompt \
of `session`), within `budget` tokens (default 1500). Each line ends with the memory's type, \
date and id, for memory_get, memory_supersede or memory_forget. The block is the same, byte \
for byte, until the memories it shows change: call it at the start of a task, not per turn. \
Returns {"text", "tokens", "records", "dropped", "truncated", "query"}; an empty text means \
nothing is remembered for this project yet.\
"""
