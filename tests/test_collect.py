"""The walk that decides which files reach the core, checked against git where git has a say."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from coderecall import CodeIndex, Config
from coderecall._collect import Collection, PathSorter, collect, collect_paths, scope_of
from helpers import MakeRepo, git, write_files


def git_would_add(root: Path) -> set[str]:
    """What ``git add -A`` would stage: the files git considers not ignored."""
    listed = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return {path for path in listed.split("\0") if path}


NESTED = {
    ".gitignore": "*.log\n!important.log\n/anchored.txt\nbuild/\n",
    "a.log": "x\n",
    "important.log": "x\n",
    "anchored.txt": "x\n",
    "main.py": "x\n",
    "build/out.js": "x\n",
    "sub/.gitignore": "!debug.log\n/local.txt\n*.tmp\n",
    "sub/anchored.txt": "x\n",
    "sub/debug.log": "x\n",
    "sub/other.log": "x\n",
    "sub/local.txt": "x\n",
    "sub/x.tmp": "x\n",
    "sub/build/gen.js": "x\n",
    "sub/deep/.gitignore": "*.py\n!keep.py\n",
    "sub/deep/local.txt": "x\n",
    "sub/deep/debug.log": "x\n",
    "sub/deep/x.py": "x\n",
    "sub/deep/keep.py": "x\n",
    "sub/deep/y.tmp": "x\n",
    "other/x.tmp": "x\n",
    "other/x.py": "x\n",
}


def test_gitignore_at_every_level(make_repo: MakeRepo) -> None:
    root = make_repo(NESTED, commit=False)
    result = collect(root, Config())
    assert set(result.files) == {
        ".gitignore",
        "important.log",  # re-included by `!`
        "main.py",
        "other/x.py",
        "other/x.tmp",  # sub/.gitignore does not reach a sibling
        "sub/.gitignore",
        "sub/anchored.txt",  # `/anchored.txt` anchors to the top folder only
        "sub/debug.log",  # re-included by the nested file
        "sub/deep/.gitignore",
        "sub/deep/debug.log",
        "sub/deep/keep.py",
        "sub/deep/local.txt",  # `/local.txt` anchors to sub/
    }
    assert result.skipped == {
        "ignored": [
            "a.log",
            "anchored.txt",
            "build/",  # a directory is counted once and never entered
            "sub/build/",
            "sub/deep/x.py",
            "sub/deep/y.tmp",  # rules of sub/ apply below it
            "sub/local.txt",
            "sub/other.log",
            "sub/x.tmp",
        ]
    }
    assert set(result.files) == git_would_add(root)


def test_invalid_gitignore_line_is_ignored_like_git_does(make_repo: MakeRepo) -> None:
    root = make_repo({".gitignore": "!\n*.tmp\n", "a.tmp": "x\n", "b.py": "x\n"}, commit=False)
    result = collect(root, Config())
    assert set(result.files) == {".gitignore", "b.py"} == git_would_add(root)


def test_info_exclude(make_repo: MakeRepo) -> None:
    root = make_repo(
        {"secret.txt": "x\n", "sub/secret.txt": "x\n", "top.md": "x\n", "sub/top.md": "x\n"},
        commit=False,
    )
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret.txt\n/top.md\n")
    result = collect(root, Config())
    assert set(result.files) == {"sub/top.md"} == git_would_add(root)
    assert result.skipped["ignored"] == ["secret.txt", "sub/secret.txt", "top.md"]


def test_worktree_reads_info_exclude_of_the_common_dir(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"app.py": "x\n"})
    worktree = tmp_path / "feature"
    git(root, "worktree", "add", "-q", "-b", "feature", str(worktree))
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret.txt\n")
    write_files(worktree, {"secret.txt": "x\n", "new.py": "x\n"})
    result = collect(worktree, Config())
    assert set(result.files) == {"app.py", "new.py"} == git_would_add(worktree)
    assert result.skipped == {"ignored": ["secret.txt"]}


def test_rules_from_above_a_subfolder_root(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            ".gitignore": "*.gen.py\npkg/only-here.txt\n",
            "pkg/a.gen.py": "x\n",
            "pkg/only-here.txt": "x\n",
            "pkg/inner/only-here.txt": "x\n",
            "pkg/excluded.txt": "x\n",
            "pkg/b.py": "x\n",
        },
        commit=False,
    )
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("/pkg/excluded.txt\n")
    result = collect(root / "pkg", Config())
    assert set(result.files) == {"b.py", "inner/only-here.txt"}
    assert result.skipped == {"ignored": ["a.gen.py", "excluded.txt", "only-here.txt"]}


def test_root_inside_an_ignored_folder_is_indexed_as_asked(make_repo: MakeRepo) -> None:
    root = make_repo(
        {".gitignore": "vendor/\n*.tmp\n", "vendor/lib/mod.py": "x\n", "vendor/lib/a.tmp": "x\n"}
    )
    result = collect(root / "vendor" / "lib", Config())
    assert set(result.files) == {"mod.py", "a.tmp"}
    assert result.skipped == {}


def test_gitignore_can_be_turned_off(make_repo: MakeRepo) -> None:
    root = make_repo(NESTED, commit=False)
    (root / ".git" / "info" / "exclude").write_text("main.py\n")
    result = collect(root, Config(respect_gitignore=False))
    assert set(result.files) == set(NESTED)
    assert result.skipped == {}


def test_include_means_only_these(make_repo: MakeRepo) -> None:
    root = make_repo(
        {"src/a.py": "x\n", "src/b.js": "x\n", "docs/guide.md": "x\n", "setup.py": "x\n"}
    )
    result = collect(root, Config(include=("src/", "*.md")))
    assert set(result.files) == {"src/a.py", "src/b.js", "docs/guide.md"}
    assert result.skipped == {"ignored": ["setup.py"]}


def test_exclude_with_negation_and_over_gitignore(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            ".gitignore": "*.txt\n!notes.txt\n",
            "notes.txt": "x\n",
            "a.py": "x\n",
            "main.py": "x\n",
            "gen/out.py": "x\n",
        }
    )
    config = Config(exclude=("*.py", "!main.py", "gen/", "notes.txt"))
    result = collect(root, config)
    assert set(result.files) == {".gitignore", "main.py"}
    assert result.skipped == {"ignored": ["a.py", "gen/", "notes.txt"]}


def test_size_cap_uses_the_stat_size(make_repo: MakeRepo) -> None:
    root = make_repo({"fits.txt": "x" * 100, "over.txt": "x" * 101})
    with (root / "huge.bin").open("wb") as file:
        file.truncate(50 * 1024 * 1024)  # sparse: 50 MB that takes no disk space
    result = collect(root, Config(max_file_size=100))
    stat = (root / "fits.txt").stat()
    assert result.files == {"fits.txt": (stat.st_mtime_ns, 100)}
    assert result.skipped == {"too large": ["huge.bin", "over.txt"]}
    assert collect(root, Config()).skipped == {"too large": ["huge.bin"]}


def test_symlinks_are_reported_and_never_followed(make_repo: MakeRepo, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    root = make_repo({"src/main.py": "x\n", "src/sub/util.py": "x\n"})
    (root / "src" / "sub" / "loop").symlink_to("..", target_is_directory=True)
    (root / "alias").symlink_to("src", target_is_directory=True)
    (root / "outside.txt").symlink_to(outside)
    (root / "same.py").symlink_to("src/main.py")
    (root / "dangling").symlink_to("nowhere")

    result = collect(root, Config())
    assert set(result.files) == {"src/main.py", "src/sub/util.py"}
    assert result.skipped == {
        "symlink": ["alias", "dangling", "outside.txt", "same.py", "src/sub/loop"]
    }


def test_ignored_symlink_counts_as_ignored(make_repo: MakeRepo) -> None:
    root = make_repo({".gitignore": "link\n", "a.py": "x\n"})
    (root / "link").symlink_to("a.py")
    assert collect(root, Config()).skipped == {"ignored": ["link"]}


def test_special_files_are_unreadable(make_repo: MakeRepo) -> None:
    root = make_repo({"a.py": "x\n"})
    os.mkfifo(root / "pipe")  # reading it would block forever
    result = collect(root, Config())
    assert set(result.files) == {"a.py"}
    assert result.skipped == {"unreadable": ["pipe"]}


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder any user can traverse (pytest's own temporary folders are private)."""
    path = Path(tempfile.mkdtemp(prefix="coderecall-test-"))
    path.chmod(0o755)
    yield path
    for folder, _, _ in os.walk(path):
        os.chmod(folder, 0o755)
    shutil.rmtree(path)


def collect_without_privileges(root: Path, config: Config) -> Collection:
    """``collect`` as an ordinary user: root reads anything, even a folder in mode 000.

    As root, a forked child drops to ``nobody`` first, so the permission check is the real one.
    """
    if os.geteuid() != 0:
        return collect(root, config)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            result = collect(root, config)
            with os.fdopen(write_end, "w") as pipe:
                json.dump([result.files, result.skipped], pipe)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        output = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "collect failed in the unprivileged child"
    files, skipped = json.loads(output)
    return Collection({path: tuple(stat) for path, stat in files.items()}, skipped)


def test_unlistable_directory_is_reported(shared_dir: Path) -> None:
    write_files(shared_dir, {"Makefile": "all:\n", "ok.py": "x\n", "locked/secret.py": "x\n"})
    (shared_dir / "locked").chmod(0)
    result = collect_without_privileges(shared_dir, Config())
    assert set(result.files) == {"Makefile", "ok.py"}
    assert result.skipped == {"unreadable": ["locked/"]}


def test_path_too_long_to_open_is_reported(make_repo: MakeRepo) -> None:
    root = make_repo({"ok.py": "x\n"})
    # Deep trees (node_modules) can exceed PATH_MAX; build one with relative operations.
    name = "d" * 200
    depth = 4400 // (len(name) + 1)  # well past PATH_MAX (4096 on Linux)
    folder = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=folder)
            inner = os.open(name, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
        os.close(os.open("deep.py", os.O_WRONLY | os.O_CREAT, dir_fd=folder))
    finally:
        os.close(folder)
    with pytest.raises(OSError, match=os.strerror(errno.ENAMETOOLONG)):
        os.scandir(os.path.join(root, *[name] * depth)).close()

    result = collect(root, Config())
    assert set(result.files) == {"ok.py"}
    [unreadable] = result.skipped["unreadable"]
    assert unreadable.startswith(f"{name}/{name}/")
    assert set(result.skipped) == {"unreadable"}


def test_git_and_index_folders_are_never_collected(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo(
        {"a.py": "x\n", ".coderecall/index.db": "x\n", "idx/index.db": "x\n", "idx2/x.py": "x\n"}
    )
    (root / ".git" / "coderecall").mkdir()
    (root / ".git" / "coderecall" / "index.db").write_text("x\n")
    result = collect(root, Config(index_dir=root / "idx"))
    assert set(result.files) == {"a.py", "idx2/x.py"}
    assert result.skipped == {}

    worktree = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "-b", "wt", str(worktree))
    assert set(collect(worktree, Config()).files) == {"a.py", "idx/index.db", "idx2/x.py"}


def test_settings_files_that_may_hold_a_key_are_never_collected(make_repo: MakeRepo) -> None:
    key = "sk-proj-Zq8vN3xTk2Lm9Pw4Rt7Yb1Hc6Jd0Fs5G"
    settings = f'[embedding]\nprovider = "none"\napi-key = "{key}"\n'
    root = make_repo({"a.py": "def f():\n    return 1\n", ".coderecall.toml": settings})
    (root / "vendored").mkdir()
    (root / "vendored" / ".coderecall.toml").write_text(settings)
    result = collect(root, Config())
    assert set(result.files) == {"a.py"}
    assert result.skipped == {"ignored": [".coderecall.toml", "vendored/.coderecall.toml"]}
    with CodeIndex(root) as index:
        index.index(progress=False)
        assert {hit.path for hit in index.search(key)} <= {"a.py"}
        assert {hit.path for hit in index.search("api-key embedding")} <= {"a.py"}
        database = index.index_dir / "index.db"
    assert key.encode() not in database.read_bytes()


def test_a_worktree_inside_the_checkout_is_left_to_its_own_view(make_repo: MakeRepo) -> None:
    root = make_repo({"s.py": "def shared():\n    return 1\n"})
    git(root, "worktree", "add", "-q", "-b", "feat", ".worktrees/feat")
    # A submodule's .git file names the superproject's modules/: its files are this checkout's.
    write_files(root, {"sub/.git": "gitdir: ../.git/modules/sub\n", "sub/m.py": "x = 1\n"})
    result = collect(root, Config())
    assert set(result.files) == {"s.py", "sub/m.py"}
    assert result.skipped == {"ignored": [".worktrees/feat/"]}
    paths = [".worktrees/feat/s.py", "sub/m.py", ".worktrees/feat/"]
    assert set(collect_paths(root, Config(), paths).files) == {"sub/m.py"}
    # The worktree itself indexes its own files.
    assert set(collect(root / ".worktrees" / "feat", Config()).files) == {"s.py"}


def test_a_file_gone_between_listing_and_look_is_deleted_not_unreadable(
    make_repo: MakeRepo,
) -> None:
    root = make_repo({"a.py": "x\n", "b.py": "x\n"})
    with os.scandir(root) as listing:
        entries = {entry.name: entry for entry in listing}
    (root / "b.py").unlink()  # as a build tool does while the walk runs
    sorter = PathSorter(root, Config())
    rules = sorter._rules_in("")
    assert rules is not None
    for name in ("a.py", "b.py"):
        sorter._sort(entries[name], name, rules)
    result = sorter.collection()
    assert set(result.files) == {"a.py"}
    assert result.skipped == {"deleted": ["b.py"]}


# collect_paths: a targeted check must agree with the full walk on every path.

TREE: dict[str, str | bytes] = {
    **NESTED,
    "src/app.py": "x\n",
    "src/main.py": "x\n",
    "src/notes.txt": "x\n",
    "src/gen/out.py": "x\n",
    "src/big.py": "x" * 300,
    "docs/guide.md": "x\n",
    "docs/.gitignore": "!*.log\n*.md\n!guide.md\n",
    "docs/trace.log": "x\n",
    "docs/old.md": "x\n",
    ".coderecall/index.db": "x\n",
    "idx/index.db": "x\n",
    ".coderecall.toml": "x\n",
    "src/.coderecall.toml": "x\n",
}
TREE_CONFIGS: dict[str, Callable[[Path], Config]] = {
    "default": lambda root: Config(max_file_size=200, index_dir=root / "idx"),
    "exclude": lambda root: Config(
        exclude=("*.py", "!main.py", "gen/", "notes.txt"), max_file_size=200
    ),
    "include": lambda root: Config(include=("src/", "*.md", "sub/deep/"), max_file_size=200),
    "no-gitignore": lambda root: Config(respect_gitignore=False),
}


def every_path(root: Path) -> list[str]:
    """Every file, folder and link below ``root`` (links not followed), ``.git`` included."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            found.append(Path(folder, name).relative_to(root).as_posix())
    return sorted(found)


def restricted(collection: Collection, path: str) -> Collection:
    """What a full walk says about ``path``: the path, what lies below it, and the folder
    above it that the walk did not enter."""

    def related(entry: str) -> bool:
        entry = entry.rstrip("/")
        return entry == path or entry.startswith(f"{path}/") or path.startswith(f"{entry}/")

    files = {name: stat for name, stat in collection.files.items() if related(name)}
    skipped = {
        reason: kept
        for reason, names in collection.skipped.items()
        if (kept := [name for name in names if related(name)])
    }
    return Collection(files, skipped)


@pytest.fixture
def tree(make_repo: MakeRepo, tmp_path: Path) -> Path:
    root = make_repo(TREE, commit=False)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (root / "src" / "linked").symlink_to("gen", target_is_directory=True)
    (root / "src" / "same.py").symlink_to("app.py")
    (root / "outside.txt").symlink_to(outside)
    (root / "dangling").symlink_to("nowhere")
    os.mkfifo(root / "pipe")
    (root / ".git" / "coderecall").mkdir()
    (root / ".git" / "coderecall" / "index.db").write_text("x\n")
    return root


@pytest.mark.parametrize("name", sorted(TREE_CONFIGS))
def test_collect_paths_agrees_with_the_walk_on_every_path(tree: Path, name: str) -> None:
    config = TREE_CONFIGS[name](tree)
    full = collect(tree, config)
    paths = every_path(tree)
    assert "sub/deep/x.py" in paths
    assert "src/linked" in paths
    for path in paths:
        assert collect_paths(tree, config, [path]) == restricted(full, path), path
    top_level = [path for path in paths if "/" not in path]
    assert collect_paths(tree, config, top_level) == full
    assert collect_paths(tree, config, ["."]) == full
    assert collect_paths(tree, config, paths) == collect_paths(tree, config, reversed(paths))


def test_collect_paths_agrees_below_a_subfolder_root(tree: Path) -> None:
    (tree / ".git" / "info").mkdir(exist_ok=True)
    (tree / ".git" / "info" / "exclude").write_text("/sub/anchored.txt\n")
    root = tree / "sub"
    full = collect(root, Config())
    assert full.skipped["ignored"][:2] == ["anchored.txt", "build/"]
    for path in every_path(root):
        assert collect_paths(root, Config(), [path]) == restricted(full, path), path


def test_collect_paths_of_deleted_paths(tree: Path) -> None:
    shutil.rmtree(tree / "sub" / "deep")
    (tree / "main.py").unlink()
    gone = ["main.py", "sub/deep/keep.py", "sub/deep", "never/was/here.py"]
    assert collect_paths(tree, Config(), gone) == Collection({}, {})
    # Below an ignored folder, the folder is what the walk reports.
    assert collect_paths(tree, Config(), ["build/out.js", "build/new.js"]) == Collection(
        {}, {"ignored": ["build/"]}
    )
    with pytest.raises(ValueError, match="inside the root"):
        collect_paths(tree, Config(), ["../elsewhere.py"])


def test_path_sorter_judges_paths_by_name(tree: Path) -> None:
    shutil.rmtree(tree / "build")
    sorter = PathSorter(tree, Config(exclude=("gen/",)))
    assert sorter.ignores("a.log")  # by a pattern, deleted or not
    assert not sorter.ignores("important.log")
    assert sorter.ignores("build/out.js")  # below an ignored folder that is gone
    assert sorter.ignores("build/")
    assert sorter.ignores("src/gen/")
    assert sorter.ignores("sub/deep/x.py")
    assert not sorter.ignores("sub/deep/keep.py")
    assert not sorter.ignores("new/folder/module.py")
    assert sorter.ignores(".git/HEAD")
    assert sorter.ignores(".coderecall/index.db")
    assert sorter.ignores("src/linked/out.py")  # never below a symlink
    assert not sorter.ignores("")


def test_scope_of_reads_the_paths_and_what_lies_below_them(make_repo: MakeRepo) -> None:
    files = ["src/a/b.py", "src/c.py", "srcs/a.py", "src0.py", "docs/guide.md", "docs/other.md"]
    root = make_repo({name: f"# {name}\n" for name in files})
    with CodeIndex(root) as index:
        index.index(progress=False)
        native = index._open()
        scope = scope_of(["src", "./docs/guide.md", "src/"])
        assert scope == ["docs/guide.md", "src"]
        assert set(native.file_stats(scope)) == {"src/a/b.py", "src/c.py", "docs/guide.md"}
        assert set(native.file_stats()) == set(files)
    assert scope_of(["."]) is None
