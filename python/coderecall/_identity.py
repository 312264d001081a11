"""Which project a folder belongs to, so that memory follows the repository, not the folder.

:func:`project_identity` names a project by its git remote when it has one: two clones of one
repository, in any folders and by any URL form, get the same ``key`` and share memory. Without
a usable remote the key is the resolved path of the repository's main work tree, or of the
folder itself outside git.

* **Which remote:** ``origin``, else the first remote by name. A remote whose URL cannot be
  read is passed over. Of several URLs of one remote, the first (the one git fetches from).
* **How remotes are read:** ``git config --local -z --get-regexp '^remote\\..*\\.url$'``
  (5 s timeout) in the repository's git directory, so git's own config syntax, includes and
  worktree layout apply. If git is missing, times out or fails (a config it rejects, a
  repository it refuses as owned by another user), the common git directory's ``config`` file
  is parsed directly (without its ``include`` sections). Both read URLs as written:
  ``url.<base>.insteadOf`` rules are not applied, so the key does not depend on one user's
  global config.
* **Normalised URL:** ``host/path``. The scheme, user name and password (never stored), port,
  query, ``.git`` suffix and trailing slashes are dropped and the host is lower-cased, so
  ``git@github.com:Org/Repo.git``, ``ssh://git@github.com:22/Org/Repo``,
  ``https://user:token@GitHub.com/Org/Repo.git/`` and ``git://github.com/Org/Repo`` are all
  ``github.com/org/repo``. Every port is dropped, not just the default ones: a self-hosted
  server often serves SSH on 2222 and HTTPS on 443, and its clones should agree. GitHub's,
  GitLab's and Bitbucket's alternate SSH hosts (``ssh.github.com``, ``altssh.gitlab.com``,
  ``altssh.bitbucket.org``) count as the main host. A URL that would leave an ``@`` in the
  key (a password with an unescaped ``/``) is not used.
* **Path case:** lower-cased on github.com, gitlab.com and bitbucket.org, which ignore it;
  kept elsewhere, since other servers (plain SSH hosts, Gitea on a case-sensitive file system)
  may tell ``Repo`` from ``repo``. ``display`` always keeps the case as written.
* **Local remotes** (``/srv/git/repo.git``, ``../repo``, ``file:///srv/git/repo.git``) are
  their resolved absolute path; a path to a work tree's ``.git`` folder counts as the work
  tree. Relative paths are taken from the main work tree. A clone of a local repository that
  has no remote of its own therefore shares that repository's key.
* **Without a remote** (``kind="path"``): the resolved path of the main work tree. Linked
  worktrees share it with their main work tree, a sub-folder uses its repository's root, and a
  bare repository's worktrees use the bare repository's path. Outside git, or where ``.git``
  is broken (a ``.git`` file that leads nowhere), the resolved folder itself.

:func:`project_identity` never raises for git trouble; it falls back as above.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import SplitResult, unquote, urlsplit

from ._paths import GitLayout, find_git

__all__ = ["ProjectIdentity", "project_identity", "remote_identity"]

_GIT = "git"
_TIMEOUT = 5.0
_CASE_INSENSITIVE_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org"})
_HOST_ALIASES = {
    "www.github.com": "github.com",
    "ssh.github.com": "github.com",
    "www.gitlab.com": "gitlab.com",
    "altssh.gitlab.com": "gitlab.com",
    "www.bitbucket.org": "bitbucket.org",
    "altssh.bitbucket.org": "bitbucket.org",
}
_REPOSITORY_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
)
"""Variables that would point git at another repository than the one asked about."""

_log = logging.getLogger("coderecall")


@dataclass(frozen=True, slots=True)
class ProjectIdentity:
    """The name memory is kept under for a project."""

    key: str
    """``github.com/org/repo`` for a remote, else a resolved absolute path. Never holds
    credentials."""
    kind: Literal["remote", "path"]
    """``remote`` when the key comes from a git remote (a local one too), else ``path``."""
    display: str
    """The key for people: the remote with its path's case as written, or the path."""


def project_identity(root: Path) -> ProjectIdentity:
    """The identity of the project containing ``root``; see the module documentation."""
    layout = find_git(root)
    if layout is None:
        return _path_identity(Path(root))
    main = _main_work_tree(layout)
    remotes = _read_remotes(layout)
    names = sorted(remotes, key=lambda name: (name != "origin", name))
    for name in names:
        identity = remote_identity(remotes[name], base=main)
        if identity is not None:
            return identity
    return _path_identity(main)


def remote_identity(url: str, *, base: Path | None = None) -> ProjectIdentity | None:
    """The identity a git remote URL names, or ``None`` if it names no repository.

    ``base`` is the folder a relative local path starts from (default: the current one).
    """
    url = url.strip()
    if not url:
        return None
    transport = re.match(r"[A-Za-z][A-Za-z0-9+.-]*::(?=.)", url)
    if transport is not None:  # "<transport>::<address>", e.g. persistent::https://...
        return remote_identity(url[transport.end() :], base=base)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", url)
    if scheme is not None:
        try:
            split = urlsplit(url)
        except ValueError:  # e.g. an unclosed "[" in the host
            return None
        if scheme[1].lower() == "file":
            return _local_identity(unquote(split.path), base)
        return _network_identity(split)
    if re.match(r"[A-Za-z]:[\\/]", url) is None:  # not a Windows drive
        scp = _SCP_LIKE.fullmatch(url)
        if scp is not None:
            return _host_path_identity(scp["host"], scp["path"])
    return _local_identity(url, base)


_SCP_LIKE = re.compile(r"(?:[^/]*@)?(?P<host>\[[^\]/@]*\]|[^:/\[@]+):(?P<path>.*)", re.DOTALL)
"""``[user@]host:path``: git's short SSH form, a colon before any slash."""


def _network_identity(split: SplitResult) -> ProjectIdentity | None:
    host_port = split.netloc.rpartition("@")[2]  # drops "user:password@"
    if host_port.startswith("["):
        host, _, port = host_port.partition("]")
        host += "]"
        port = port.removeprefix(":")
    else:
        host, _, port = host_port.partition(":")
    path = unquote(split.path)
    if port and not port.isdigit():  # "ssh://git@host:org/repo": an scp path in URL form
        path = f"{port}/{path}"
    return _host_path_identity(host, path)


def _host_path_identity(host: str, path: str) -> ProjectIdentity | None:
    host = host.strip().lower().rstrip(".")
    host = _HOST_ALIASES.get(host, host)
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if parts and parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][: -len(".git")]
        if not parts[-1]:
            parts.pop()
    display = f"{host}/{'/'.join(parts)}"
    if not host or not parts or "@" in display:  # "@" left: a malformed password, keep out
        return None
    key = display.lower() if host in _CASE_INSENSITIVE_HOSTS else display
    return ProjectIdentity(key=key, kind="remote", display=display)


def _local_identity(path: str, base: Path | None) -> ProjectIdentity | None:
    if not path.strip() or "\0" in path:
        return None
    local = Path(os.path.expanduser(path))
    if not local.is_absolute():
        local = (base if base is not None else Path.cwd()) / local
    resolved = Path(os.path.realpath(local))
    if resolved.name == ".git":
        resolved = resolved.parent
    return ProjectIdentity(key=str(resolved), kind="remote", display=str(resolved))


def _path_identity(folder: Path) -> ProjectIdentity:
    resolved = str(Path(os.path.realpath(folder)))
    return ProjectIdentity(key=resolved, kind="path", display=resolved)


def _main_work_tree(layout: GitLayout) -> Path:
    """The main work tree of the repository, or the bare repository a worktree belongs to."""
    if layout.git_dir == layout.common_dir:  # the main work tree, or a submodule's
        return layout.work_tree
    if layout.common_dir.name == ".git":
        return layout.common_dir.parent
    return layout.common_dir


# Reading remotes.


def _read_remotes(layout: GitLayout) -> dict[str, str]:
    """Remote name -> its first URL, as git reads them, else as the config file says."""
    entries = _remotes_from_git(layout.git_dir)
    if entries is None:
        entries = _remotes_from_file(layout.common_dir / "config")
    remotes: dict[str, str] = {}
    for name, url in entries:
        remotes.setdefault(name, url)
    return remotes


def _remotes_from_git(git_dir: Path) -> list[tuple[str, str]] | None:
    """``(name, url)`` pairs from ``git config``, or ``None`` if git could not tell."""
    env = {key: value for key, value in os.environ.items() if key not in _REPOSITORY_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    command = [_GIT, f"--git-dir={git_dir}", "config", "--local", "-z", "--get-regexp"]
    try:
        result = subprocess.run(
            [*command, r"^remote\..*\.url$"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=env,
            timeout=_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        _log.debug("git config could not run for %s: %s", git_dir, type(error).__name__)
        return None
    if result.returncode == 1 and not result.stdout:  # no remote at all
        return []
    if result.returncode != 0:
        _log.debug("git config failed for %s (exit %d)", git_dir, result.returncode)
        return None
    pairs = []
    for entry in result.stdout.decode("utf-8", "replace").split("\0"):
        key, newline, value = entry.partition("\n")
        if newline and key.startswith("remote.") and key.endswith(".url"):
            pairs.append((key[len("remote.") : -len(".url")], value))
    return pairs


def _remotes_from_file(config: Path) -> list[tuple[str, str]]:
    """``(name, url)`` pairs from a git config file; nothing if it cannot be read."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [
        (subsection, value)
        for section, subsection, key, value in _parse_config(text)
        if section == "remote" and subsection is not None and key == "url"
    ]


def _parse_config(text: str) -> Iterable[tuple[str, str | None, str, str]]:
    """``(section, subsection, key, value)`` for each variable of a git config text.

    Follows git's syntax: ``[section "subsection"]`` (and the old ``[section.subsection]``,
    whose subsection git lower-cases), case-insensitive section and key names, ``#`` and
    ``;`` comments, double quotes, backslash escapes and line continuations. Lines it cannot
    read are skipped rather than refused.
    """
    section: str | None = None
    subsection: str | None = None
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in " \t\r\n":
            i += 1
        elif char in "#;":
            i = _line_end(text, i)
        elif char == "[":
            i, header = _parse_header(text, i + 1)
            section, subsection = header if header is not None else (None, None)
        else:
            name = _KEY_NAME.match(text, i)
            if name is None:
                i = _line_end(text, i)
                continue
            i = name.end()
            while i < n and text[i] in " \t":
                i += 1
            if i < n and text[i] == "=":
                i, value = _parse_value(text, i + 1)
            elif i >= n or text[i] in "\r\n#;":
                value = "true"  # a bare key is a boolean
            else:
                i = _line_end(text, i)
                continue
            if section is not None:
                yield section, subsection, name[0].lower(), value


_KEY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_SECTION_NAME = re.compile(r"[ \t]*([A-Za-z0-9.-]+)[ \t]*")


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end + 1


def _parse_header(text: str, i: int) -> tuple[int, tuple[str, str | None] | None]:
    """Parse a section header after its ``[``: the index after ``]`` and the names."""
    name = _SECTION_NAME.match(text, i)
    if name is None:
        return _line_end(text, i), None
    i = name.end()
    section = name[1]
    if text.startswith("]", i):
        head, dot, rest = section.partition(".")
        return i + 1, (head.lower(), rest.lower() if dot else None)
    if not text.startswith('"', i):
        return _line_end(text, i), None
    sub: list[str] = []
    i += 1
    while i < len(text) and text[i] not in '"\n':
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] != "\n":
            i += 1
        sub.append(text[i])
        i += 1
    if not text.startswith('"]', i):
        return _line_end(text, i), None
    return i + 2, (section.lower(), "".join(sub))


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _parse_value(text: str, i: int) -> tuple[int, str]:
    """Parse a value after its ``=``: the index after it and the value."""
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    out: list[str] = []
    kept = 0  # length of ``out`` without trailing unquoted whitespace
    quoted = False
    while i < n:
        char = text[i]
        if char == "\n" or (char in "#;" and not quoted):
            break
        if char == "\\":
            following = text[i + 1 : i + 2]
            if following == "\n" or text.startswith("\r\n", i + 1):  # continuation
                i += 2 if following == "\n" else 3
                continue
            out.append(_ESCAPES.get(following, following))
            kept = len(out)
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        else:
            out.append(char)
            if quoted or char not in " \t\r":
                kept = len(out)
        i += 1
    return i, "".join(out[:kept])
