"""Project identity for memory: clones share it through their remote, worktrees through git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderecall import _identity
from coderecall._identity import ProjectIdentity, project_identity, remote_identity
from coderecall._paths import GitLayout, find_git
from helpers import MakeRepo, git


def real(path: Path) -> str:
    return os.path.realpath(path)


@pytest.mark.parametrize(
    ("url", "key", "display"),
    [
        ("git@github.com:Org/Repo.git", "github.com/org/repo", "github.com/Org/Repo"),
        ("ssh://git@github.com:22/Org/Repo", "github.com/org/repo", "github.com/Org/Repo"),
        (
            "https://user:token@GitHub.com/Org/Repo.git/",
            "github.com/org/repo",
            "github.com/Org/Repo",
        ),
        ("git://github.com/Org/Repo", "github.com/org/repo", "github.com/Org/Repo"),
        ("ssh://git@ssh.github.com:443/Org/Repo.git", "github.com/org/repo", "github.com/Org/Repo"),
        ("ssh://git@github.com:Org/Repo", "github.com/org/repo", "github.com/Org/Repo"),
        ("https://github.com/Org/Repo//", "github.com/org/repo", "github.com/Org/Repo"),
        ("persistent::https://github.com/Org/Repo", "github.com/org/repo", "github.com/Org/Repo"),
        ("git@gitlab.com:Group/Sub/Project.git", "gitlab.com/group/sub/project", None),
        ("https://x-token-auth:SECRET@bitbucket.org/Team/Repo", "bitbucket.org/team/repo", None),
        # Other hosts keep the path's case; every port and any query are dropped.
        ("https://git.example.com:8443/Team/App.git", "git.example.com/Team/App", None),
        ("ssh://git@git.example.com:2222/Team/App.git", "git.example.com/Team/App", None),
        ("https://oauth2:SECRET@git.example.com/Team/App?private_token=SECRET#top", None, None),
        ("git@[::1]:team/app.git", "[::1]/team/app", None),
        ("https://host.example/My%20Repo.git", "host.example/My Repo", None),
    ],
)
def test_remote_urls_are_normalised(url: str, key: str | None, display: str | None) -> None:
    identity = remote_identity(url)
    assert identity is not None
    assert identity.kind == "remote"
    if key is not None:
        assert identity.key == key
    if display is not None:
        assert identity.display == display
    assert "SECRET" not in identity.key
    assert "SECRET" not in identity.display
    assert "token" not in identity.key.lower()


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "https://github.com/",
        "git@github.com:",
        # A password with an unescaped "/" would leave part of it in the key: not used.
        "https://user:pa/ss@host.example/repo",
        "user:pa/ss@host.example:repo",
        "/srv/a\0b",
        "https://[::1/repo",
        "file://[::1/repo",
    ],
)
def test_unusable_remote_urls(url: str) -> None:
    assert remote_identity(url) is None


def test_local_remote_urls_are_resolved_paths(tmp_path: Path) -> None:
    bare = tmp_path / "srv" / "repo.git"
    bare.mkdir(parents=True)
    expected = ProjectIdentity(key=real(bare), kind="remote", display=real(bare))
    assert remote_identity(str(bare)) == expected
    assert remote_identity(f"file://{bare}/") == expected
    assert remote_identity("../srv/repo.git", base=tmp_path / "work") == expected
    # The .git folder of a work tree names the work tree.
    assert remote_identity(str(tmp_path / "app" / ".git")) == remote_identity(str(tmp_path / "app"))


def test_two_clones_of_one_repository_share_the_key(tmp_path: Path) -> None:
    bare = tmp_path / "srv" / "app.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare", "-b", "main")
    git(tmp_path, "clone", "-q", str(bare), "one")
    git(tmp_path, "clone", "-q", str(bare), "two")

    one = project_identity(tmp_path / "one")
    assert one == project_identity(tmp_path / "two")
    assert one == ProjectIdentity(key=real(bare), kind="remote", display=real(bare))


def test_ssh_and_https_clones_agree_and_hide_credentials(make_repo: MakeRepo) -> None:
    urls = {
        "ssh": "git@github.com:Org/Repo.git",
        "ssh-url": "ssh://git@github.com:22/Org/Repo",
        "https": "https://someone:ghp_SECRET@GitHub.com/Org/Repo.git/",
    }
    identities = []
    for name, url in urls.items():
        root = make_repo({"a.py": "x = 1\n"}, name=name)
        git(root, "remote", "add", "origin", url)
        identities.append(project_identity(root))
    assert (
        identities
        == [
            ProjectIdentity(key="github.com/org/repo", kind="remote", display="github.com/Org/Repo")
        ]
        * 3
    )
    for identity in identities:
        assert "SECRET" not in identity.key + identity.display
        assert "someone" not in identity.key + identity.display


def test_different_repositories_differ(make_repo: MakeRepo) -> None:
    first = make_repo({}, name="first")
    second = make_repo({}, name="second")
    git(first, "remote", "add", "origin", "git@github.com:org/first.git")
    git(second, "remote", "add", "origin", "git@github.com:org/second.git")
    assert project_identity(first).key != project_identity(second).key
    # Without remotes they differ too, by path.
    third = make_repo({}, name="third")
    fourth = make_repo({}, name="fourth")
    assert project_identity(third).key != project_identity(fourth).key


def test_origin_first_then_remotes_by_name(make_repo: MakeRepo) -> None:
    root = make_repo({})
    git(root, "remote", "add", "upstream", "https://github.com/org/upstream")
    git(root, "remote", "add", "fork", "https://github.com/me/fork")
    assert project_identity(root).key == "github.com/me/fork"
    git(root, "remote", "add", "origin", "https://github.com/org/origin")
    assert project_identity(root).key == "github.com/org/origin"
    # A remote whose URL names no repository is passed over.
    git(root, "remote", "set-url", "origin", "https://github.com/")
    assert project_identity(root).key == "github.com/me/fork"


def test_worktree_and_subfolder_share_the_repository_identity(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    root = make_repo({"src/pkg/app.py": "x = 1\n"})
    worktree = tmp_path / "feature"
    git(root, "worktree", "add", "-q", "-b", "feature", str(worktree))
    assert (worktree / ".git").is_file()

    # Without a remote: the main work tree's path, from anywhere in the repository.
    expected = ProjectIdentity(key=real(root), kind="path", display=real(root))
    assert project_identity(root) == expected
    assert project_identity(root / "src" / "pkg") == expected
    assert project_identity(worktree) == expected
    assert project_identity(worktree / "src") == expected

    git(root, "remote", "add", "origin", "git@github.com:Org/App.git")
    remote = ProjectIdentity(key="github.com/org/app", kind="remote", display="github.com/Org/App")
    assert project_identity(worktree / "src" / "pkg") == remote
    assert project_identity(root / "src") == remote


def test_repository_without_remote_is_its_resolved_path(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    root = make_repo({"a.py": "x = 1\n"})
    link = tmp_path / "link"
    link.symlink_to(root)
    expected = ProjectIdentity(key=real(root), kind="path", display=real(root))
    assert project_identity(root) == expected
    assert project_identity(link) == expected


def test_clone_of_a_local_repository_shares_its_key(make_repo: MakeRepo, tmp_path: Path) -> None:
    original = make_repo({"a.py": "x = 1\n"}, name="original")
    git(tmp_path, "clone", "-q", str(original), "copy")
    copy = project_identity(tmp_path / "copy")
    assert copy.kind == "remote"
    assert copy.key == project_identity(original).key == real(original)


def test_folder_outside_git_is_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "plain" / "project"
    folder.mkdir(parents=True)
    assert project_identity(folder) == ProjectIdentity(
        key=real(folder), kind="path", display=real(folder)
    )


@pytest.mark.parametrize("content", ["garbage\n", "gitdir: does/not/exist\n", "", "\xff\xfe"])
def test_broken_git_file_falls_back_to_the_path(tmp_path: Path, content: str) -> None:
    root = tmp_path / "broken"
    root.mkdir()
    (root / ".git").write_text(content, encoding="latin-1")
    assert project_identity(root) == ProjectIdentity(
        key=real(root), kind="path", display=real(root)
    )


def test_config_git_rejects_is_read_directly(make_repo: MakeRepo) -> None:
    root = make_repo({})
    git(root, "remote", "add", "origin", "https://github.com/Org/Repo.git")
    with (root / ".git" / "config").open("a", encoding="utf-8") as config:
        config.write("[this is not git config\n")
    assert _identity._remotes_from_git(root / ".git") is None  # git refuses the file
    assert project_identity(root).key == "github.com/org/repo"


def test_unreadable_config_falls_back_to_the_path(make_repo: MakeRepo) -> None:
    root = make_repo({})
    (root / ".git" / "config").write_bytes(b'\x00\xff[remote "origin"\n\turl\n')
    assert project_identity(root) == ProjectIdentity(
        key=real(root), kind="path", display=real(root)
    )


def test_without_git_the_config_file_is_parsed(
    make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = make_repo({})
    worktree = tmp_path / "feature"
    git(root, "worktree", "add", "-q", "-b", "feature", str(worktree))
    git(root, "remote", "add", "fork", "https://github.com/me/fork")
    git(root, "remote", "add", "my.mirror", 'https://git.example.com/Team/App "quoted".git')
    git(root, "config", "--add", "remote.fork.url", "https://github.com/me/second-url")
    # Hand-written config: old-style section, a key on the header line, comments, escapes.
    with (root / ".git" / "config").open("a", encoding="utf-8") as config:
        config.write('[Remote.Old] URL = "https://github.com/org/old" ; comment\n')
        config.write('[remote "cont"] url = https://git.example.com/a\\\n/b # trailing\n')
    with_git = _identity._read_remotes(_layout(worktree))
    assert with_git == {
        "fork": "https://github.com/me/fork",
        "my.mirror": 'https://git.example.com/Team/App "quoted".git',
        "old": "https://github.com/org/old",
        "cont": "https://git.example.com/a/b",
    }
    expected = project_identity(worktree)
    assert expected.key == "git.example.com/a/b"  # "cont" comes first by name

    monkeypatch.setattr(_identity, "_GIT", str(tmp_path / "no-such-git"))
    assert _identity._remotes_from_git(root / ".git") is None
    assert _identity._read_remotes(_layout(worktree)) == with_git
    assert project_identity(worktree) == expected


def _layout(path: Path) -> GitLayout:
    layout = find_git(path)
    assert layout is not None
    return layout
