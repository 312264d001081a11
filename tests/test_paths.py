"""Where the index lives (git common dir, worktrees, submodules) and which roots are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderecall import Config, Error, RootRefusedError
from coderecall._paths import check_root, find_git, find_index_dir, project_root
from helpers import MakeRepo, git


def test_repository_index_lives_in_the_git_dir(make_repo: MakeRepo) -> None:
    root = make_repo({"src/app.py": "x = 1\n"})
    assert find_index_dir(root, Config()) == root / ".git" / "coderecall"
    # A sub-folder of the work tree shares the repository's index location.
    assert find_index_dir(root / "src", Config()) == root / ".git" / "coderecall"


def test_worktree_shares_the_common_dir(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"app.py": "x = 1\n"})
    worktree = tmp_path / "feature"
    git(root, "worktree", "add", "-q", "-b", "feature", str(worktree))
    assert (worktree / ".git").is_file()

    layout = find_git(worktree)
    assert layout is not None
    assert layout.work_tree == worktree
    assert layout.git_dir == root / ".git" / "worktrees" / "feature"
    assert layout.common_dir == root / ".git"
    assert find_index_dir(worktree, Config()) == find_index_dir(root, Config())


def test_submodule_with_relative_gitdir(make_repo: MakeRepo) -> None:
    library = make_repo({"lib.py": "y = 2\n"}, name="library")
    root = make_repo({"app.py": "x = 1\n"})
    git(
        root,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(library),
        "vendor/lib",
    )
    submodule = root / "vendor" / "lib"
    assert (submodule / ".git").read_text().startswith("gitdir: ../../.git/modules/")

    assert (
        find_index_dir(submodule, Config())
        == root / ".git" / "modules" / "vendor" / "lib" / "coderecall"
    )


def test_separate_git_dir_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    git(root, "init", "-q", "--separate-git-dir", str(tmp_path / "store.git"))
    assert find_index_dir(root, Config()) == tmp_path / "store.git" / "coderecall"


def test_folder_outside_git_uses_a_local_index(tmp_path: Path) -> None:
    assert find_git(tmp_path) is None
    assert find_index_dir(tmp_path, Config()) == tmp_path / ".coderecall"


def test_a_broken_git_file_is_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /nonexistent/place\n")
    assert find_git(tmp_path) is None
    assert find_index_dir(tmp_path, Config()) == tmp_path / ".coderecall"


def test_configured_index_dir_wins(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"app.py": "x = 1\n"})
    chosen = tmp_path / "indexes" / "app"
    assert find_index_dir(root, Config(index_dir=chosen)) == chosen


def test_filesystem_root_is_refused() -> None:
    with pytest.raises(RootRefusedError, match="file-system root") as caught:
        check_root(Path("/"))
    assert isinstance(caught.value, Error)
    check_root(Path("/"), force=True)


def test_home_directory_is_refused_even_with_a_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "Makefile").write_text("all:\n")
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(RootRefusedError, match="home directory"):
        check_root(home)
    check_root(home, force=True)


def test_folder_without_marker_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(RootRefusedError, match="no project marker") as caught:
        check_root(tmp_path)
    # The CLI's flag first (the message is the CLI's too), the Python spelling beside it.
    assert "pass --force-root (force=True in Python)" in str(caught.value)
    assert caught.value.root == tmp_path.resolve()
    check_root(tmp_path, force=True)


@pytest.mark.parametrize(
    "marker",
    ["pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Makefile", "App.sln", "deno.json"],
)
def test_project_markers_are_accepted(tmp_path: Path, marker: str) -> None:
    (tmp_path / marker).write_text("\n")
    check_root(tmp_path)


def test_subfolder_of_a_repository_is_accepted(make_repo: MakeRepo) -> None:
    root = make_repo({"docs/guide.txt": "hello\n"})
    check_root(root / "docs")


def test_the_project_of_a_folder_is_the_nearest_one_upwards_with_a_marker(
    make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo({"src/shop/auth.py": "x = 1\n", "packages/web/package.json": "{}\n"})
    assert project_root(repo / "src" / "shop") == repo
    assert project_root(repo) == repo
    assert project_root(repo / "packages" / "web") == repo / "packages" / "web"

    # A folder indexed once with force keeps its local index: that marks it from then on.
    notes = tmp_path / "notes"
    (notes / "2026").mkdir(parents=True)
    assert project_root(notes / "2026") == notes / "2026"
    with pytest.raises(RootRefusedError):
        check_root(notes)
    (notes / ".coderecall").mkdir()
    assert project_root(notes / "2026") == notes
    check_root(notes)

    # A marker in the home folder (a dotfiles repository) never captures what lies below it.
    home = tmp_path / "home"
    (home / "projects" / "loose").mkdir(parents=True)
    (home / ".git").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert project_root(home / "projects" / "loose") == home / "projects" / "loose"
