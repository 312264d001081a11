"""Knowledge bases: folders outside the root indexed beside the code, searched with it or
alone, refreshed by ``index()``, shared by every ``CodeIndex`` (and process) of the index."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from coderecall import CodeIndex, QueryError, SearchHit
from coderecall._kb import fuse, save_entries
from coderecall._mcp import McpService
from helpers import MakeRepo, git, write_files

CODE: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "vault"\n',
    "src/credentials.py": '''\
"""Credentials of the service accounts."""


def rotate_credentials(account):
    """Rotate the credentials of a service account and revoke the old ones."""
    return account
''',
    "src/billing.py": "def compute_invoice_total(items):\n    return sum(items)\n",
}

DOCS: dict[str, str] = {
    "runbook.md": """\
# Runbook

## Rotating credentials

Rotate the service account credentials every ninety days, then revoke the old ones.

## Restoring backups

Restore the nightly database backup from cold storage.
""",
    "guides/onboarding.md": """\
# Onboarding

New engineers get read access to the dashboards on their first day.
""",
}


def _run(*args: str) -> Any:
    """``python -m coderecall ARGS --json`` in a separate process; its JSON answer."""
    done = subprocess.run(
        [sys.executable, "-m", "coderecall", *args, "--json"],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "outside" / "docs"
    write_files(folder, DOCS)
    return folder


@pytest.fixture
def index(make_repo: MakeRepo) -> Iterator[CodeIndex]:
    with CodeIndex(make_repo(CODE)) as code_index:
        code_index.index()
        yield code_index


@pytest.fixture
def with_kb(index: CodeIndex, docs: Path) -> CodeIndex:
    index.add_knowledge_base(docs)
    return index


def test_add_indexes_the_folder_at_once(index: CodeIndex, docs: Path) -> None:
    started = datetime.now(timezone.utc)
    kb = index.add_knowledge_base(docs)
    assert kb.name == "docs"  # the folder's name
    assert kb.path == docs.resolve()
    assert kb.exists
    assert kb.files == 2
    assert kb.chunks >= 2
    assert kb.last_indexed is not None
    assert started - timedelta(seconds=5) <= kb.added <= datetime.now(timezone.utc)
    data = json.loads(json.dumps(kb.to_dict()))
    assert data["path"] == str(docs.resolve())
    assert data["files"] == 2
    assert index.list_knowledge_bases() == [kb]
    # Its files live in the shared store, not in the code's view.
    assert index.status().files == len(CODE)
    assert not (docs / ".coderecall").exists()


def test_add_without_indexing_records_it_for_the_next_run(index: CodeIndex, docs: Path) -> None:
    kb = index.add_knowledge_base(docs, "handbook", index=False)
    assert (kb.name, kb.files, kb.chunks, kb.last_indexed) == ("handbook", 0, 0, None)
    index.index()
    (listed,) = index.list_knowledge_bases()
    assert listed.files == 2
    assert listed.last_indexed is not None


def test_search_covers_code_and_knowledge_bases_with_labels(with_kb: CodeIndex) -> None:
    hits = with_kb.search("rotate service account credentials")
    sources = {hit.source for hit in hits}
    assert sources == {"code", "docs"}
    code = [h for h in hits if h.source == "code"]
    assert code[0].path == "src/credentials.py"
    docs = [h for h in hits if h.source == "docs"]
    assert docs[0].path == "runbook.md"  # relative to the knowledge base's folder
    assert docs[0].content is not None
    assert "ninety days" in docs[0].content
    assert json.loads(json.dumps(docs[0].to_dict()))["source"] == "docs"
    # Ranked lists of both sources are merged, each best hit near the top.
    assert {hits[0].source, hits[1].source} == {"code", "docs"}


def test_a_hit_scored_zero_is_no_evidence_in_the_merge() -> None:
    def hit(path: str, score: float) -> SearchHit:
        return SearchHit(path, 1, 2, "python", "function", "f", "f", score, None)

    merged = fuse(
        [
            ("code", [hit("a.py", 3.0), hit("b.py", 2.0)]),
            ("docs", [hit("guide.md", 0.0), hit("other.md", 0.0)]),
        ],
        limit=10,
    )
    assert [(h.source, h.path) for h in merged] == [("code", "a.py"), ("code", "b.py")]


def test_source_restricts_the_search(with_kb: CodeIndex) -> None:
    query = "rotate service account credentials"
    code = with_kb.search(query, source="code")
    assert code
    assert {h.source for h in code} == {"code"}
    assert all(h.path.startswith("src/") for h in code)
    for source in ("docs", "kb", ["docs"]):
        only = with_kb.search(query, source=source)
        assert only
        assert {h.source for h in only} == {"docs"}, source
    both = with_kb.search(query, source=["code", "docs"])
    assert {h.source for h in both} == {"code", "docs"}
    assert with_kb.search(query, source=["code", "code"]) == code
    # `directory` filters the code only.
    filtered = with_kb.search(query, directory="src")
    assert {h.source for h in filtered} == {"code", "docs"}
    onboarding = with_kb.search("read access to dashboards", source="docs", limit=1)
    assert [h.path for h in onboarding] == ["guides/onboarding.md"]


def test_an_unknown_source_names_the_known_ones(with_kb: CodeIndex) -> None:
    with pytest.raises(QueryError, match=r"unknown source 'wiki'; known: code, kb, docs"):
        with_kb.search("credentials", source="wiki")
    with pytest.raises(QueryError, match="unknown source 'wiki'"):
        with_kb.search("credentials", source=["code", "wiki"])


def test_refusals(index: CodeIndex, docs: Path, tmp_path: Path) -> None:
    root = index.root
    with pytest.raises(QueryError, match="inside the project root") as inside:
        index.add_knowledge_base(root / "src")
    assert "search it with --dir (directory= in Python) instead" in str(inside.value)
    with pytest.raises(QueryError, match="inside the project root"):
        index.add_knowledge_base(root)
    with pytest.raises(QueryError, match="is not a folder"):
        index.add_knowledge_base(tmp_path / "missing")
    with pytest.raises(QueryError, match="is not a folder"):
        index.add_knowledge_base(root / "src" / "billing.py")
    for name in ("", "-docs", "two words", "a/b", "x" * 65, "code", "KB", "all", "é"):
        with pytest.raises(QueryError, match="bad knowledge base name"):
            index.add_knowledge_base(docs, name)
    assert index.list_knowledge_bases() == []

    index.add_knowledge_base(docs, "handbook", index=False)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(QueryError, match="'handbook' already indexes"):
        index.add_knowledge_base(other, "handbook")
    # The same folder under the same name again is no change.
    again = index.add_knowledge_base(docs, "handbook")
    assert [kb.name for kb in index.list_knowledge_bases()] == ["handbook"]
    assert again.files == 2
    ok = index.add_knowledge_base(other, "x" * 64, index=False)
    assert ok.name == "x" * 64


def test_a_folder_holding_the_root_is_refused(index: CodeIndex) -> None:
    with pytest.raises(QueryError):
        index.add_knowledge_base(index.root.parent, "parent", index=False)


def test_index_refreshes_a_changed_knowledge_base(with_kb: CodeIndex, docs: Path) -> None:
    before = with_kb.search("quarterly penetration test", source="docs")
    assert all(h.path != "security.md" for h in before)
    (docs / "security.md").write_text(
        "# Security\n\nA quarterly penetration test covers every public endpoint.\n",
        encoding="utf-8",
    )
    runbook = docs / "runbook.md"
    runbook.write_text(DOCS["runbook.md"].replace("ninety days", "thirty days"), encoding="utf-8")
    report = with_kb.index()
    assert report.files_parsed == 0  # the code did not change
    (kb,) = with_kb.list_knowledge_bases()
    assert kb.files == 3
    (hit, *_) = with_kb.search("quarterly penetration test", source="docs")
    assert hit.path == "security.md"
    (rotating, *_) = with_kb.search("rotate credentials days", source="docs")
    assert rotating.content is not None
    assert "thirty days" in rotating.content
    assert "ninety" not in rotating.content

    (docs / "security.md").unlink()
    with_kb.index()
    assert with_kb.list_knowledge_bases()[0].files == 2
    leftovers = with_kb.search("quarterly penetration test", source="docs")
    assert all(h.path != "security.md" for h in leftovers)


def test_a_removed_knowledge_base_is_no_longer_searched(with_kb: CodeIndex) -> None:
    assert with_kb.remove_knowledge_base("docs") is True
    assert with_kb.list_knowledge_bases() == []
    hits = with_kb.search("rotate service account credentials")
    assert hits
    assert {h.source for h in hits} == {"code"}
    with pytest.raises(QueryError, match="unknown source 'docs'; known: code, kb"):
        with_kb.search("credentials", source="docs")
    assert with_kb.search("credentials", source="kb") == []
    assert with_kb.remove_knowledge_base("docs") is False
    assert with_kb.remove_knowledge_base("never-added") is False


def test_remove_before_any_index_is_false(make_repo: MakeRepo) -> None:
    with CodeIndex(make_repo(CODE)) as index:
        assert index.remove_knowledge_base("docs") is False
        assert index.list_knowledge_bases() == []
        assert not index.index_dir.exists()


def test_a_deleted_folder_is_listed_as_missing_searched_as_kept_and_index_warns(
    with_kb: CodeIndex, docs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shutil.rmtree(docs)
    for index in (with_kb, CodeIndex(with_kb.root)):  # this object, and one opened afresh
        with index:
            (kb,) = index.list_knowledge_bases()
            assert (kb.name, kb.exists, kb.files) == ("docs", False, 2)
            assert kb.chunks >= 2
            assert kb.to_dict()["exists"] is False
            (hit, *_) = index.search("rotate credentials ninety days", source="docs")
            assert (hit.source, hit.path) == ("docs", "runbook.md")
            assert {h.source for h in index.search("rotate service account credentials")} == {
                "code",
                "docs",
            }
    with caplog.at_level(logging.WARNING, logger="coderecall"):
        report = with_kb.index()
    assert report.files_seen == len(CODE)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("knowledge base docs" in m and "is gone" in m for m in warnings), warnings
    assert with_kb.list_knowledge_bases()[0].files == 2  # not indexed empty
    # It comes back with its folder.
    write_files(docs, DOCS)
    with_kb.index()
    (back,) = with_kb.list_knowledge_bases()
    assert back.exists
    assert back.files == 2
    assert with_kb.remove_knowledge_base("docs") is True


def test_every_index_object_and_process_sees_the_same_list(
    with_kb: CodeIndex, tmp_path: Path
) -> None:
    root = str(with_kb.root)
    with CodeIndex(root) as second:
        assert [kb.name for kb in second.list_knowledge_bases()] == ["docs"]
        assert {h.source for h in second.search("rotate credentials")} == {"code", "docs"}

    # Another process sees it, and adds one this process then sees.
    listed = _run("kb", "list", "--path", root)
    assert [(kb["name"], kb["files"], kb["exists"]) for kb in listed] == [("docs", 2, True)]
    wiki = tmp_path / "wiki"
    write_files(wiki, {"faq.md": "# FAQ\n\nHow do refunds of cancelled orders work?\n"})
    added = _run("kb", "add", str(wiki), "--name", "wiki", "--path", root)
    assert (added["name"], added["files"]) == ("wiki", 1)

    assert [kb.name for kb in with_kb.list_knowledge_bases()] == ["docs", "wiki"]
    (hit, *_) = with_kb.search("refunds of cancelled orders", source="wiki")
    assert (hit.source, hit.path) == ("wiki", "faq.md")
    assert with_kb.remove_knowledge_base("wiki")
    assert [kb["name"] for kb in _run("kb", "list", "--path", root)] == ["docs"]


def test_peek_rows_say_where_a_hit_comes_from(with_kb: CodeIndex) -> None:
    service = McpService(with_kb)
    service.start()
    assert service.wait_ready(60)
    full = json.loads(service.search("rotate credentials", 10, None, None, with_content=True))
    assert {row["source"] for row in full["hits"]} == {"code", "docs"}
    peek = json.loads(service.search("rotate credentials", 10, None, None, with_content=False))
    assert {row.get("source") for row in peek["hits"]} == {"code", "docs"}


def _views(index: CodeIndex) -> list[str]:
    """The names of the store's views, read with SQLite itself in another process: closing a
    connection of a second SQLite library in this one would drop the core's file locks."""
    script = (
        "import json, sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
        "print(json.dumps(sorted(n for (n,) in db.execute('SELECT name FROM views'))))"
    )
    db = str(index.index_dir / "index.db")
    done = subprocess.run(
        [sys.executable, "-c", script, db], capture_output=True, text=True, check=True
    )
    names: list[str] = json.loads(done.stdout)
    return names


def test_a_worktree_of_the_repository_is_refused_and_never_dropped(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    main = make_repo(CODE)
    other = tmp_path / "feature"
    git(main, "worktree", "add", "-q", "-b", "feature", str(other))
    with CodeIndex(main) as server, CodeIndex(other) as index:  # a server of each worktree
        server.index()
        index.index()
        with pytest.raises(QueryError, match="is a worktree of this repository") as refused:
            index.add_knowledge_base(main, "mainwt")
        assert f"coderecall search --path {main}" in str(refused.value)
        with pytest.raises(QueryError, match="is a worktree of this repository"):
            server.add_knowledge_base(other)
        assert index.list_knowledge_bases() == []

        # A list that names the worktree anyway (written before it was refused): removing
        # it leaves the worktree's own view alone.
        save_entries(index._open(), [{"name": "mainwt", "path": str(main), "added": ""}])
        assert index.remove_knowledge_base("mainwt") is True
        assert _views(server) == sorted([str(main), str(other)])
        assert server.search("rotate_credentials")[0].path == "src/credentials.py"
        assert server.status().files == len(CODE)
        assert server.index().files_seen == len(CODE)


def test_a_gitignored_folder_inside_the_root_can_be_a_knowledge_base(
    make_repo: MakeRepo,
) -> None:
    root = make_repo(
        {
            **CODE,
            ".gitignore": "vendor/\n",
            "vendor/docs/api.md": "# API\n\nThe quokka endpoint answers with a pouch.\n",
        }
    )
    with CodeIndex(root) as index:
        index.index()
        assert index.search("quokka endpoint", source="code") == []
        kb = index.add_knowledge_base(root / "vendor" / "docs", "vendordocs")
        assert (kb.files, kb.exists) == (1, True)
        (hit, *_) = index.search("quokka endpoint")
        assert (hit.source, hit.path) == ("vendordocs", "api.md")
        assert index.index().files_seen == len(CODE) + 1  # the .gitignore, not vendor/
        # What the walk indexes, git's folder and the index itself stay refused.
        for folder in (root / "src", root / ".git", root / ".git" / "coderecall"):
            with pytest.raises(QueryError, match=r"inside the project root|own files"):
                index.add_knowledge_base(folder, "x")


def test_a_knowledge_base_re_added_by_another_process_is_searched_again(
    with_kb: CodeIndex, docs: Path, tmp_path: Path
) -> None:
    """A server keeps each knowledge base's index open; another process removes the
    knowledge base and adds it again, which makes it another view."""
    wiki = tmp_path / "wiki"
    write_files(wiki, {"faq.md": "# FAQ\n\nHow do refunds of cancelled orders work?\n"})
    with_kb.add_knowledge_base(wiki)  # so that the re-added view's id is a new one
    query = "rotate service account credentials"
    assert {h.source for h in with_kb.search(query)} == {"code", "docs"}
    root = str(with_kb.root)
    assert _run("kb", "remove", "docs", "--path", root)["removed"] is True
    assert _run("kb", "add", str(docs), "--path", root)["files"] == 2
    assert {h.source for h in with_kb.search(query)} == {"code", "docs"}
    (hit, *_) = with_kb.search(query, source="docs")
    assert hit.path == "runbook.md"
    assert [(kb.name, kb.files) for kb in with_kb.list_knowledge_bases()] == [
        ("wiki", 1),
        ("docs", 2),
    ]
    assert with_kb.index().files_seen == len(CODE)


def test_a_failing_knowledge_base_is_left_out_and_the_code_still_searched(
    with_kb: CodeIndex, docs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A search that picked its sources just before another process removed the knowledge
    base and added it again: its view is gone under the index the search holds."""
    wiki = tmp_path / "wiki"
    write_files(wiki, {"faq.md": "# FAQ\n\nHow do refunds of cancelled orders work?\n"})
    with_kb.add_knowledge_base(wiki)  # so that the re-added view's id is a new one
    query = "rotate service account credentials"
    picked = with_kb._knowledge_bases.sources(None)
    root = str(with_kb.root)
    assert _run("kb", "remove", "docs", "--path", root)["removed"] is True
    assert _run("kb", "add", str(docs), "--path", root)["files"] == 2
    filters = with_kb._filters(None, None, None, None, True)
    with caplog.at_level(logging.WARNING, logger="coderecall"):
        found = {label: index._search_here(query, filters) for label, index in picked}
    assert found["code"][0].path == "src/credentials.py"
    assert found["docs"] == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("knowledge base docs left out of a search" in m for m in warnings), warnings
    # The next search opens the knowledge base's new view.
    assert {h.source for h in with_kb.search(query)} == {"code", "docs"}


def test_a_search_under_way_neither_fails_nor_brings_back_a_removed_knowledge_base(
    with_kb: CodeIndex, docs: Path
) -> None:
    """Deterministic form of the race: the search picked its sources, then the knowledge
    base was removed; whether its index was open yet or not, it must not reopen."""
    query = "rotate service account credentials"
    filters = with_kb._filters(None, None, None, None, True)
    for opened in (True, False):
        with_kb.add_knowledge_base(docs)
        picked = dict(with_kb._knowledge_bases.sources(None))
        if not opened:
            with_kb.close()  # the next search gets indexes not opened yet
            picked = dict(with_kb._knowledge_bases.sources(None))
        assert with_kb.remove_knowledge_base("docs") is True
        assert picked["docs"]._search_here(query, filters) == []
        assert picked["code"]._search_here(query, filters)
        assert _views(with_kb) == [str(with_kb.root)]
        assert with_kb.list_knowledge_bases() == []


def test_removing_while_other_threads_search_fails_no_search(
    with_kb: CodeIndex, docs: Path
) -> None:
    """An MCP server answers tools from a thread pool: knowledge bases added and removed
    while searches run. Every search answers (with the code at least), and no view of a
    removed knowledge base is left behind."""
    errors: list[BaseException] = []
    answered: list[set[str]] = []
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            try:
                answered.append({h.source for h in with_kb.search("rotate credentials")})
            except BaseException as exc:  # the test reports it
                errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(12):
            assert with_kb.remove_knowledge_base("docs") is True
            with_kb.add_knowledge_base(docs)
        assert with_kb.remove_knowledge_base("docs") is True
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert errors == []
    assert answered
    assert all("code" in sources for sources in answered)
    assert _views(with_kb) == [str(with_kb.root)]
