"""Pulling a published model from the Hugging Face hub into the model cache.

What is spoken on the wire (the hub's own client, ``huggingface_hub``, speaks the same):

* ``GET {endpoint}/api/models/{id}/revision/{revision}?blobs=true`` answers JSON with the
  commit the revision points at (``sha``) and one entry per file (``siblings``): ``rfilename``,
  ``size``, ``blobId`` (the git object id) and, for a file kept in Git LFS,
  ``lfs: {"sha256", "size", "pointerSize"}``.
* ``GET {endpoint}/{id}/resolve/{commit}/{path}`` answers the file; LFS files are redirected to
  a CDN host (which gets no ``Authorization`` header: httpx drops it across origins).
* Errors carry ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``,
  ``GatedRepo``). An anonymous request for a private, gated *or missing* model gets 401.

Only the files a model needs are fetched, into ``<cache>/.partial/<name>/``: each first as
``<file>.part`` (continued with ``Range: bytes=N-`` after an interruption), then checked
against its SHA-256 (LFS) or git blob id (``sha1(b"blob <size>\\0" + content)``), synced to
disk and renamed. When every file is there, the folder is renamed to ``<cache>/<name>`` in one
step, with ``coderecall-source.json`` telling where it came from.

A model already installed at the asked revision needs no network when the hub cannot be asked
(``HF_HUB_OFFLINE``, or unreachable) or the revision is its commit. Credentials in the endpoint
(``https://user:password@mirror``) are sent as HTTP basic auth (httpx takes them from the URL),
but never shown or stored.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ._errors import ModelError
from ._lease import try_lock
from ._models import ModelInfo, describe, models_dir
from ._native import __version__

if TYPE_CHECKING:
    # Imported where a pull needs it: httpx (and certifi, click, rich) would add about 80 ms
    # to every process that imports coderecall, hooks and command lines included.
    import httpx

__all__ = ["DEFAULT_ENDPOINT", "SOURCE_FILE", "pull_model"]

_log = logging.getLogger("coderecall")

DEFAULT_ENDPOINT = "https://huggingface.co"

SOURCE_FILE = "coderecall-source.json"
"""Written into every pulled model folder: the model id, revision, commit and file digests."""

_REQUIRED = ("config.json", "tokenizer.json", "model.safetensors")
_OPTIONAL = (
    "modules.json",
    "config_sentence_transformers.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "1_Pooling/config.json",
)
_WEIGHTS_LAST = "model.safetensors"
"""Fetched last: the small files fail fast, and an interruption hits the big one."""

_STATE_FILE = ".coderecall-pull.json"
"""In the staging folder: which model and commit its files belong to."""

_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHA1 = re.compile(r"[0-9a-f]{40}")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-\d+/(?:\d+|\*)")
_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})

Algorithm = Literal["sha256", "git-blob-sha1"]


class _Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...
    def hexdigest(self) -> str: ...


@dataclass(frozen=True, slots=True)
class _RemoteFile:
    """A file of the model at one commit, and what its content must hash to."""

    path: str
    size: int
    algorithm: Algorithm
    digest: str

    def hasher(self) -> _Hasher:
        if self.algorithm == "sha256":
            return hashlib.sha256()
        sha1 = hashlib.sha1(usedforsecurity=False)
        sha1.update(b"blob %d\0" % self.size)
        return sha1


def pull_model(
    model_id: str,
    *,
    revision: str = "main",
    name: str | None = None,
    endpoint: str | None = None,
    token: str | None = None,
    progress: Callable[[int, int], object] | None = None,
    timeout: float = 30.0,
) -> ModelInfo:
    """Downloads ``model_id`` (``owner/name``) at ``revision`` into the model cache.

    The folder is named ``name``, by default the last part of ``model_id``. ``endpoint``
    defaults to ``$HF_ENDPOINT``, else ``https://huggingface.co``; ``token`` to ``$HF_TOKEN``.
    ``progress(done_bytes, total_bytes)`` is called as the files arrive. An interrupted pull
    keeps what it has; running it again continues. If the folder already holds this model at
    the same commit, nothing is downloaded; when the hub cannot be asked (``$HF_HUB_OFFLINE``,
    or unreachable), a copy pulled at ``revision`` is kept as it is, with a warning logged.
    Raises :class:`ModelError` with the reason and what to do about it.
    """
    if not _MODEL_ID.fullmatch(model_id) or ".." in model_id:
        raise ModelError(
            f"{model_id!r} is not a hub model id (like sentence-transformers/all-MiniLM-L6-v2)"
        )
    if not revision:
        raise ModelError("the revision must not be empty")
    folder_name = model_id.rsplit("/", 1)[-1] if name is None else name
    if not folder_name or folder_name.startswith(".") or "/" in folder_name or "\\" in folder_name:
        raise ModelError(f"{folder_name!r} cannot name a model folder")
    destination = models_dir() / folder_name
    installed = _read_source(destination)
    if destination.exists() and (installed is None or installed.get("model_id") != model_id):
        raise ModelError(
            f"{destination} already exists and does not hold {model_id}; remove it "
            f"(rm -r {_shell(destination)}) or pull under another name"
        )
    # A commit never changes: the copy installed at it needs no look at the hub.
    if (
        installed is not None
        and installed.get("commit") == revision
        and (kept := _keep_installed(model_id, destination, revision, installed, None)) is not None
    ):
        return kept
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        if (
            kept := _keep_installed(
                model_id, destination, revision, installed, "HF_HUB_OFFLINE is set"
            )
        ) is not None:
            return kept
        raise ModelError(
            f"HF_HUB_OFFLINE is set, and pulling {model_id} needs the network: unset it, or "
            f"download the files elsewhere and copy the folder to {destination}"
        )
    with (
        _exclusive(destination, model_id),
        _Pull(
            model_id=model_id,
            revision=revision,
            endpoint=(endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            token=token or os.environ.get("HF_TOKEN") or None,
            destination=destination,
            progress=progress,
            timeout=timeout,
        ) as pull,
    ):
        try:
            commit, files = pull.resolve()
        except _UnreachableError as exc:
            installed = _read_source(destination)
            if (
                kept := _keep_installed(model_id, destination, revision, installed, exc.reason)
            ) is not None:
                return kept
            raise
        installed = _read_source(destination)  # another pull may have finished meanwhile
        if installed is not None:
            if installed.get("commit") == commit:
                _log.warning(_ALREADY, model_id, destination, commit[:12])
                return describe(destination)
            raise ModelError(
                f"{destination} holds {model_id} at commit {str(installed.get('commit'))[:12]}, "
                f"but {revision} is now at {commit[:12]}; remove the folder (rm -r "
                f"{_shell(destination)}) and pull again to update it"
            )
        staging = pull.stage(commit, files)
        return _install(staging, destination, pull.source(commit, files))


_ALREADY = "%s is already installed in %s at commit %s: nothing to download"


def _keep_installed(
    model_id: str,
    destination: Path,
    revision: str,
    installed: dict[str, Any] | None,
    unchecked: str | None,
) -> ModelInfo | None:
    """The complete copy of ``model_id`` in ``destination`` if it was pulled at ``revision``
    (its branch, tag or commit), else None. ``unchecked`` says why the hub is not asked whether
    ``revision`` has moved since (None: ``revision`` is the copy's commit, which cannot move).
    """
    if (
        installed is None
        or installed.get("model_id") != model_id
        or not _complete(destination, installed)
    ):
        return None
    pulled_at, commit = installed.get("revision"), str(installed.get("commit"))
    if unchecked is None:
        _log.warning(_ALREADY, model_id, destination, commit[:12])
    elif revision in (pulled_at, commit):
        _log.warning(
            "%s: kept %s as installed in %s at commit %s (pulled at %s); it could not be "
            "checked for updates",
            unchecked,
            model_id,
            destination,
            commit[:12],
            pulled_at,
        )
    else:
        raise ModelError(
            f"{unchecked}, so whether {revision} is at commit {commit[:12]}, which {destination} "
            f"holds (pulled at {pulled_at}), cannot be checked; pull at revision {commit} to use "
            "that copy without the hub"
        )
    return describe(destination)


def _complete(folder: Path, source: dict[str, Any]) -> bool:
    """Every file the provenance record lists is in ``folder`` at its listed size (a cheap
    check: the folder was verified when it was renamed into place)."""
    files = source.get("files")
    if not isinstance(files, dict) or not files:
        return False
    for path, entry in files.items():
        try:
            if (folder / path).stat().st_size != entry.get("size"):
                return False
        except (OSError, AttributeError):
            return False
    return True


@contextlib.contextmanager
def _exclusive(destination: Path, model_id: str) -> Iterator[None]:
    """Holds ``<cache>/.partial/<name>.lock`` for one pull: a second pull of the same folder,
    from any process, fails at once instead of writing into the same partial files. The OS
    drops the lock when its holder dies, so a killed pull never blocks the next one.

    The lock file is removed by its holder when no partial download is left to resume, so a
    pull that failed early leaves the cache as it found it."""
    partial = destination.parent / ".partial"
    lock = partial / f"{destination.name}.lock"
    new_cache = not destination.parent.exists()
    partial.mkdir(parents=True, exist_ok=True)
    while True:
        handle = open(lock, "a+b")  # noqa: SIM115 (held across the yield)
        try:
            try_lock(handle.fileno())
        except OSError:
            handle.close()
            raise ModelError(
                f"another pull into {destination} is running; wait for it to finish, then "
                f"`coderecall model pull {model_id}` again returns at once"
            ) from None
        try:
            if os.stat(lock).st_ino == os.fstat(handle.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()  # its holder removed the file after we opened it: lock the new one
    try:
        yield
    finally:
        if not (partial / destination.name).exists():
            lock.unlink(missing_ok=True)  # while held: see the inode check above
        handle.close()
        for folder in (partial, destination.parent) if new_cache else (partial,):
            with contextlib.suppress(OSError):  # not empty: kept for a resume, or in use
                folder.rmdir()


class _UnreachableError(ModelError):
    """The hub could not be asked (offline, or it did not answer): ``reason`` says so in
    brief, for a warning when the installed copy is kept instead."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class _Pull:
    """One pull: the HTTP client, the hub's answers, and the messages its failures get."""

    def __init__(
        self,
        *,
        model_id: str,
        revision: str,
        endpoint: str,
        token: str | None,
        destination: Path,
        progress: Callable[[int, int], object] | None,
        timeout: float,
    ) -> None:
        import httpx

        self.model_id = model_id
        self.revision = revision
        self.endpoint = endpoint
        self.token = token
        # The endpoint's password (percent-encoded as written, and decoded) is scrubbed from
        # every message, as the token is, and the endpoint is stored without its user info.
        split = urlsplit(endpoint)
        self.secrets = sorted(
            {s for s in (token, split.password, unquote(split.password or "")) if s},
            key=len,
            reverse=True,
        )
        host = split.netloc.rpartition("@")[2]
        self.public_endpoint = urlunsplit(split._replace(netloc=host))
        self.destination = destination
        self.progress = progress
        self.done = 0
        self.total = 0
        headers = {"User-Agent": f"coderecall/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout), follow_redirects=True
        )

    def __enter__(self) -> _Pull:
        return self

    def __exit__(self, *_: object) -> None:
        self.client.close()

    # -- the file list ----------------------------------------------------------------------

    def resolve(self) -> tuple[str, list[_RemoteFile]]:
        """The commit ``revision`` points at, and the files to fetch from it."""
        import httpx

        url = (
            f"{self.endpoint}/api/models/{quote(self.model_id, safe='/')}"
            f"/revision/{quote(self.revision, safe='')}"
        )
        try:
            response = self.client.get(url, params={"blobs": "true"})
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        except httpx.HTTPError as exc:
            raise self._error(
                f"asking {self.endpoint} about {self.model_id} failed: {exc}"
            ) from None
        if response.status_code != 200:
            raise self._refused(response, "the model's file list")
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise self._error(f"{self.endpoint} answered something other than a hub model record")
        commit = answer.get("sha")
        siblings = answer.get("siblings")
        if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
            raise self._error(f"{self.endpoint} did not say which commit {self.revision} is at")
        if not isinstance(siblings, list):
            raise self._error(f"{self.endpoint} did not list the files of {self.model_id}")
        listed = {
            entry["rfilename"]: entry
            for entry in siblings
            if isinstance(entry, dict) and isinstance(entry.get("rfilename"), str)
        }
        return commit, self._plan(listed)

    def _plan(self, listed: dict[str, dict[str, Any]]) -> list[_RemoteFile]:
        missing = [path for path in _REQUIRED if path not in listed]
        if missing:
            where = f"{self.model_id} at {self.revision}"
            if "model.safetensors" in missing:
                others = sorted(
                    path
                    for path in listed
                    if path.endswith((".bin", ".safetensors", ".onnx", ".pt", ".h5", ".msgpack"))
                    or path == "model.safetensors.index.json"
                )
                found = f" (it has {', '.join(others)})" if others else ""
                raise self._error(
                    f"{where} has no model.safetensors{found}: only single-file safetensors "
                    "weights are supported"
                )
            raise self._error(
                f"{where} is not a model coderecall can use: {', '.join(missing)} missing"
            )
        paths = [*(p for p in _REQUIRED if p != _WEIGHTS_LAST), *_OPTIONAL, _WEIGHTS_LAST]
        return [self._remote_file(path, listed[path]) for path in paths if path in listed]

    def _remote_file(self, path: str, entry: dict[str, Any]) -> _RemoteFile:
        lfs = entry.get("lfs")
        if isinstance(lfs, dict):
            size, digest, pattern = lfs.get("size"), lfs.get("sha256"), _SHA256
            algorithm: Algorithm = "sha256"
        else:
            size, digest, pattern = entry.get("size"), entry.get("blobId"), _SHA1
            algorithm = "git-blob-sha1"
        if not isinstance(size, int) or size < 0 or not isinstance(digest, str):
            raise self._error(
                f"{self.endpoint} listed {path} without its size and checksum, so it cannot "
                "be verified"
            )
        if not pattern.fullmatch(digest):
            raise self._error(f"{self.endpoint} listed {path} with a malformed checksum {digest!r}")
        return _RemoteFile(path, size, algorithm, digest)

    # -- the files --------------------------------------------------------------------------

    def stage(self, commit: str, files: list[_RemoteFile]) -> Path:
        """Fetches every file into the staging folder (keeping what an earlier run got)."""
        staging = self.destination.parent / ".partial" / self.destination.name
        state = {"model_id": self.model_id, "commit": commit}
        marker = staging / _STATE_FILE
        if staging.exists():
            try:
                previous = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                previous = None
            if previous != state:
                shutil.rmtree(staging)
        staging.mkdir(parents=True, exist_ok=True)
        if not marker.exists():
            marker.write_text(json.dumps(state), encoding="utf-8")
        self.total = sum(file.size for file in files)
        self._report(0)
        for number, file in enumerate(files):
            try:
                self._fetch(commit, file, staging)
            except OSError as exc:
                if exc.errno not in _NO_SPACE:
                    raise
                raise self._no_space(exc, file, staging, files[number + 1 :]) from None
        return staging

    def _fetch(self, commit: str, file: _RemoteFile, staging: Path) -> None:
        final = staging / file.path
        part = final.with_name(final.name + ".part")
        if final.is_file():
            if _digest(final, file) == file.digest:
                self._report(file.size)
                return
            final.unlink()
        part.parent.mkdir(parents=True, exist_ok=True)
        kept = part.stat().st_size if part.is_file() else 0
        if kept > file.size:
            part.unlink()
            kept = 0
        while True:
            self._report(kept)
            if kept < file.size or not part.exists():
                self._download(commit, file, part, kept)
            actual = _digest(part, file)
            if actual == file.digest:
                break
            size = part.stat().st_size
            part.unlink()
            self._report(-size)
            if kept:
                # The bytes kept from an earlier run may be stale: fetch the whole file once.
                kept = 0
                continue
            sizes = f" ({size} bytes, {file.size} listed)" if size != file.size else ""
            raise self._error(
                f"{file.path} failed its checksum{sizes}: expected {file.algorithm} "
                f"{file.digest}, got {actual}; the download was deleted and nothing was "
                "installed, run the pull again"
            )
        with part.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(part, final)

    def _download(self, commit: str, file: _RemoteFile, part: Path, kept: int) -> None:
        """Appends the bytes from ``kept`` on to ``part`` (or rewrites it if the server sends
        the whole file)."""
        import httpx

        url = (
            f"{self.endpoint}/{quote(self.model_id, safe='/')}/resolve/{commit}/"
            f"{quote(file.path, safe='/')}"
        )
        headers = {"Accept-Encoding": "identity"}
        if kept:
            headers["Range"] = f"bytes={kept}-"
        written = kept
        try:
            with self.client.stream("GET", url, headers=headers) as response:
                status = response.status_code
                if status == 416 and kept:
                    # Nothing past our bytes: the part is complete, or stale; the checksum says.
                    return
                if status == 206 and kept:
                    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", ""))
                    if not match or int(match.group(1)) != kept:
                        part.unlink()
                        self._report(-kept)
                        raise self._error(
                            f"{file.path}: the server sent another range than asked for; the "
                            "partial file was deleted, run the pull again"
                        )
                    mode = "ab"
                elif status in (200, 206):
                    # The range was ignored: the whole file comes again.
                    mode = "wb"
                    self._report(-kept)
                    written = 0
                else:
                    raise self._refused(response, file.path)
                with part.open(mode) as out:
                    # Unchunked: a fixed chunk size would hold back bytes that arrived before
                    # a cut, and the partial file would miss them.
                    for chunk in response.iter_bytes():
                        written += len(chunk)
                        if written > file.size:
                            break
                        out.write(chunk)
                        self._report(len(chunk))
        except httpx.TransportError as exc:
            raise self._interrupted(exc, file, part) from None
        except httpx.HTTPError as exc:
            raise self._error(f"downloading {file.path} failed: {exc}") from None
        if written > file.size:
            self._report(-part.stat().st_size)
            part.unlink()
            raise self._error(
                f"{file.path}: the server sent more than the {file.size} bytes listed; the "
                "download was deleted and nothing was installed"
            )

    def source(self, commit: str, files: list[_RemoteFile]) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "revision": self.revision,
            "commit": commit,
            "endpoint": self.public_endpoint,
            "files": {
                file.path: {"size": file.size, file.algorithm: file.digest} for file in files
            },
        }

    # -- progress and messages --------------------------------------------------------------

    def _report(self, delta: int) -> None:
        self.done += delta
        if self.progress is not None:
            self.progress(self.done, self.total)

    def _scrub(self, message: str) -> str:
        for secret in self.secrets:
            message = message.replace(secret, "***")
        return message

    def _error(self, message: str) -> ModelError:
        """The one way errors are made here: no token or password appears in a message."""
        return ModelError(self._scrub(message))

    def _refused(self, response: httpx.Response, what: str) -> ModelError:
        status = response.status_code
        code = response.headers.get("X-Error-Code", "")
        model = f"model {self.model_id!r} on {self.endpoint}"
        if code == "RevisionNotFound":
            return self._error(f"no revision {self.revision!r} of {model}")
        if code == "EntryNotFound":
            return self._error(f"{model} lists {what}, but the file is not there (HTTP {status})")
        if code == "GatedRepo":
            return self._error(
                f"{model} is gated: accept its conditions on its page, then set HF_TOKEN to a "
                "token of that account"
            )
        if status in (401, 403) and self.token:
            return self._error(
                f"{self.endpoint} refused the token for {self.model_id} (HTTP {status}): check "
                "that HF_TOKEN (or the token given) is valid and can read this model"
            )
        if status in (401, 403):
            return self._error(
                f"{self.endpoint} refused access to {self.model_id} (HTTP {status}): it does "
                "not exist at that name, or it is private or gated and needs a token; set "
                "HF_TOKEN to read it"
            )
        if status == 404:
            return self._error(
                f"no model {self.model_id!r} at revision {self.revision!r} on "
                f"{self.endpoint} (HTTP 404)"
            )
        if status == 429:
            return self._error(f"{self.endpoint} is rate-limiting requests (HTTP 429): try later")
        detail = response.headers.get("X-Error-Message", "")
        return self._error(
            f"fetching {what} of {self.model_id}: {self.endpoint} answered HTTP {status}"
            + (f" ({detail})" if detail else "")
        )

    def _unreachable(self, exc: httpx.TransportError) -> ModelError:
        import httpx

        where = _origin(exc) or self.endpoint
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.UnsupportedProtocol):
            return self._error(
                f"{self.endpoint} is not an http(s) address ({reason}): check the endpoint "
                "(HF_ENDPOINT)"
            )
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError)):
            brief = self._scrub(f"cannot reach {where} ({reason})")
            return _UnreachableError(
                f"{brief}: you seem to be offline; download the files elsewhere and copy the "
                f"folder to {self.destination}, or set HF_ENDPOINT to a mirror",
                brief,
            )
        brief = self._scrub(f"{where} did not answer ({reason})")
        return _UnreachableError(f"{brief}; try again later, or set HF_ENDPOINT to a mirror", brief)

    def _no_space(
        self, exc: OSError, file: _RemoteFile, staging: Path, later: list[_RemoteFile]
    ) -> ModelError:
        """The partial file is kept, as after a cut: once there is room, the pull continues."""
        part = staging / f"{file.path}.part"
        have = part.stat().st_size if part.is_file() else 0
        needed = file.size - have + sum(other.size for other in later)
        return self._error(
            f"writing {file.path} into {staging} failed: {exc.strerror}, at "
            f"{have} of {file.size} bytes; {needed} more bytes are needed to finish "
            f"{self.model_id}; the partial file is kept in {part.parent}: free some space and "
            f"run the same pull again to continue (or rm -r {_shell(staging)} to give up)"
        )

    def _interrupted(self, exc: httpx.TransportError, file: _RemoteFile, part: Path) -> ModelError:
        import httpx

        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            error = self._unreachable(exc)
            return self._error(f"{error}; the files already downloaded are kept for the next run")
        have = part.stat().st_size if part.is_file() else 0
        reason = str(exc) or type(exc).__name__
        return self._error(
            f"the download of {file.path} was interrupted at {have} of {file.size} bytes "
            f"({reason}); the partial file is kept in {part.parent}: run the same pull again "
            "to continue"
        )


def _install(staging: Path, destination: Path, source: dict[str, Any]) -> ModelInfo:
    """Writes the provenance, checks the folder is a model and renames it into place."""
    record = staging / SOURCE_FILE
    with record.open("w", encoding="utf-8") as out:
        json.dump(source, out, indent=2)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    (staging / _STATE_FILE).unlink(missing_ok=True)
    describe(staging)
    if destination.exists():
        raise ModelError(
            f"{destination} appeared while pulling; remove it (rm -r {_shell(destination)}) "
            "and pull again (the downloaded files are kept)"
        )
    os.rename(staging, destination)
    _fsync_folder(destination.parent)
    return describe(destination)


def _read_source(folder: Path) -> dict[str, Any] | None:
    """The provenance record of a pulled model folder, if it has a readable one."""
    try:
        record = json.loads((folder / SOURCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _shell(path: Path) -> str:
    """``path`` as it can be pasted into a shell command."""
    return shlex.quote(str(path))


def _digest(path: Path, file: _RemoteFile) -> str:
    hasher = file.hasher()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def _origin(exc: httpx.TransportError) -> str | None:
    try:
        url = exc.request.url
    except RuntimeError:
        return None
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


def _fsync_folder(folder: Path) -> None:
    """Makes a rename inside ``folder`` durable (a no-op where folders cannot be opened)."""
    if os.name != "posix":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
