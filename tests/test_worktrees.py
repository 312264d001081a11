"""Views: every worktree of a repository shares one index in the git common directory, each
with its own view; switching branches parses only file versions never seen and embeds nothing
already embedded."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from coderecall import CodeIndex
from helpers import SAMPLE_PROJECT, MakeRepo, git

FEATURE_CODE = "\n\ndef apply_loyalty_discount(total: float) -> float:\n    return total * 0.9\n"


def paths(index: CodeIndex, query: str) -> list[str]:
    return [hit.path for hit in index.search(query, limit=5)]


def make_feature_branch(root: Path) -> None:
    """A branch `feature` with one changed file and one new file; main stays checked out."""
    git(root, "checkout", "-q", "-b", "feature")
    billing = root / "src/shop/billing.py"
    billing.write_text(billing.read_text() + FEATURE_CODE)
    (root / "src/shop/loyalty.py").write_text(
        "def loyalty_points(total: float) -> int:\n    return int(total // 10)\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "feature")
    git(root, "checkout", "-q", "main")


def test_two_worktrees_share_one_index_and_are_searched_side_by_side(
    make_repo: MakeRepo, tmp_path: Path, static_model: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    make_feature_branch(root)
    other = tmp_path / "feature-tree"
    git(root, "worktree", "add", "-q", str(other), "feature")
    config = {"embedding": {"provider": "static", "model": str(static_model)}}

    with CodeIndex(root, config) as main, CodeIndex(other, config) as feature:
        assert main.index_dir == feature.index_dir == root / ".git" / "coderecall"
        first = main.index(progress=False)
        assert first.chunks_embedded > 0
        second = feature.index(progress=False)
        # Only the two files that differ are new content; everything else is known.
        assert second.files_parsed == 2
        assert second.files_reused == second.files_seen - 2
        changed_chunks = second.chunks_added
        assert 0 < second.chunks_embedded <= changed_chunks

        assert "src/shop/loyalty.py" in paths(feature, "loyalty_points")
        assert "src/shop/loyalty.py" not in paths(main, "loyalty_points")
        assert paths(feature, "apply_loyalty_discount")[0] == "src/shop/billing.py"
        hits = main.search("apply_loyalty_discount")
        assert all("apply_loyalty_discount" not in (hit.content or "") for hit in hits)
        semantic = feature.search("points earned for loyalty on a purchase total")
        assert any("semantic" in hit.channels for hit in semantic)

        # Each view keeps its own counts and report; the store holds both versions once.
        assert main.status().files + 1 == feature.status().files
        assert main.status().file_versions == feature.status().file_versions
        status = main.status()
        assert status.last_report is not None
        assert status.last_report.root == root

        # Reindexing one worktree leaves the other's view as it was.
        (root / "src/shop/auth.py").unlink()
        main.index(progress=False)
        assert "src/shop/auth.py" not in paths(main, "TokenStore")
        assert "src/shop/auth.py" in paths(feature, "TokenStore")


def test_branch_switch_parses_only_unseen_versions_and_embeds_nothing_known(
    make_repo: MakeRepo, static_model: Path
) -> None:
    root = make_repo(SAMPLE_PROJECT)
    make_feature_branch(root)
    config = {"embedding": {"provider": "static", "model": str(static_model)}}
    with CodeIndex(root, config) as index:
        index.index(progress=False)
        git(root, "checkout", "-q", "feature")
        to_feature = index.index(progress=False)
        assert to_feature.files_parsed == 2, "the changed and the new file"
        assert to_feature.chunks_embedded > 0
        assert paths(index, "loyalty_points")[0] == "src/shop/loyalty.py"

        git(root, "checkout", "-q", "main")
        back = index.index(progress=False)
        assert back.files_removed == 1
        assert (back.files_parsed, back.chunks_embedded) == (0, 0), "every version is known"
        assert "src/shop/loyalty.py" not in paths(index, "loyalty_points")

        git(root, "checkout", "-q", "feature")
        again = index.index(progress=False)
        assert (again.files_parsed, again.chunks_embedded) == (0, 0)
        assert paths(index, "loyalty_points")[0] == "src/shop/loyalty.py"


def test_an_index_from_before_named_views_is_adopted_by_its_root(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    """The first view of an index is adopted by the first root opening it: an existing
    index keeps its work when views got names."""
    root = make_repo(SAMPLE_PROJECT)
    with CodeIndex(root) as index:
        index.index(progress=False)
    db = root / ".git" / "coderecall" / "index.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE views SET name = 'worktree' WHERE id = 1")
    with CodeIndex(root) as index:
        report = index.index(progress=False)
        assert (report.files_parsed, report.files_unchanged) == (0, report.files_seen)
        assert index.search("TokenStore")[0].path == "src/shop/auth.py"
