"""``pull_model`` against a fake hub: a real HTTP server on 127.0.0.1 speaking the hub's format.

The fake answers ``/api/models/{id}/revision/{rev}?blobs=true`` with the commit and the file
list (sizes, git blob ids, LFS sha256), serves ``/{id}/resolve/{commit}/{path}`` (redirecting
LFS files to a ``/cdn/`` path, as the hub redirects to its CDN), honours ``Range: bytes=N-``,
and can be told to corrupt a file, cut or stall a download, ignore ranges or refuse them. The
model it serves is a real static model, built from the test model's tokenizer.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import logging
import re
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pytest

from coderecall import CodeIndex, Embedder, ModelError
from coderecall._cli import main
from coderecall._hub import SOURCE_FILE, pull_model
from helpers import SAMPLE_PROJECT, MakeRepo, read_line

MODEL = "acme/tiny-static"
COMMIT = "3f0c8e1d2b4a59687766554433221100ffeeddcc"
DIMS = 8
NEEDED = ("config.json", "tokenizer.json", "model.safetensors")
OPTIONAL = ("tokenizer_config.json", "1_Pooling/config.json")
CUT = 300_000
"""Bytes of model.safetensors sent before a cut (the file is about 1 MB)."""


def git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


def safetensors(tensors: dict[str, np.ndarray[Any, np.dtype[np.float32]]]) -> bytes:
    """The safetensors format: 8-byte little-endian header length, JSON header, raw data."""
    header: dict[str, Any] = {}
    data = bytearray()
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


@pytest.fixture(scope="session")
def model_files(minilm: Path) -> dict[str, bytes]:
    """A static model (Model2Vec format) over the MiniLM vocabulary, with some extras a hub
    repository has that a pull must leave alone."""
    tokenizer = (minilm / "tokenizer.json").read_bytes()
    vocab = len(json.loads(tokenizer)["model"]["vocab"])
    table = np.random.default_rng(7).standard_normal((vocab, DIMS)).astype(np.float32)
    return {
        ".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": b"# tiny-static\n",
        "config.json": json.dumps({"model_type": "model2vec", "hidden_dim": DIMS}).encode(),
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": (minilm / "tokenizer_config.json").read_bytes(),
        "1_Pooling/config.json": b'{"word_embedding_dimension": 8}\n',
        "model.safetensors": safetensors({"embeddings": table}),
        "pytorch_model.bin": b"\x80\x02pickled weights that must not be fetched",
    }


@dataclass
class Repo:
    files: dict[str, bytes]
    lfs: set[str]
    commit: str = COMMIT

    def listing(self, model_id: str) -> dict[str, Any]:
        siblings = []
        for path, content in self.files.items():
            entry: dict[str, Any] = {"rfilename": path, "size": len(content)}
            if path in self.lfs:
                sha256 = hashlib.sha256(content).hexdigest()
                pointer = (
                    "version https://git-lfs.github.com/spec/v1\n"
                    f"oid sha256:{sha256}\nsize {len(content)}\n"
                ).encode()
                # In git the file is its pointer: the blob id is the pointer's.
                entry["blobId"] = git_blob_id(pointer)
                entry["lfs"] = {"sha256": sha256, "size": len(content), "pointerSize": len(pointer)}
            else:
                entry["blobId"] = git_blob_id(content)
            siblings.append(entry)
        return {"_id": "0" * 24, "id": model_id, "modelId": model_id, "sha": self.commit,
                "private": False, "siblings": siblings}  # fmt: skip


@dataclass
class FakeHub:
    endpoint: str = ""
    repos: dict[str, Repo] = field(default_factory=dict)
    token: str | None = None
    """When set, hub requests need ``Authorization: Bearer <token>`` (the CDN needs none)."""
    basic: str | None = None
    """When set (``user:password``), hub requests need it as HTTP basic auth, as a mirror may."""
    corrupt: set[str] = field(default_factory=set)
    cut_after: dict[str, int] = field(default_factory=dict)
    """Path -> bytes sent before the connection is dropped, on the next request only."""
    stall_after: dict[str, int] = field(default_factory=dict)
    """Path -> bytes sent before the answer stops (until ``release``), on the next request."""
    cdn: str = ""
    """Where LFS files are redirected: ``""`` for this server, else another origin."""
    other_origin: str = ""
    """A second server on another port, sharing this state (a CDN on another host)."""
    ignore_range: bool = False
    refuse_range: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    """(request path, its Range header), in order."""
    authorizations: list[str | None] = field(default_factory=list)

    def fetched(self, route: str) -> list[str | None]:
        """The Range headers of the requests made for ``route``."""
        return [ranged for path, ranged in self.requests if path == route]


class HubServer(ThreadingHTTPServer):
    daemon_threads = True
    hub: FakeHub


class HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        hub = cast(HubServer, self.server).hub
        url = urlsplit(self.path)
        path = unquote(url.path)
        hub.requests.append((path, self.headers.get("Range")))
        hub.authorizations.append(self.headers.get("Authorization"))
        if path.startswith("/cdn/"):
            model_id, _, file = path.removeprefix("/cdn/").partition("@")
            self.serve_file(hub, hub.repos[model_id], file)
            return
        if hub.token and self.headers.get("Authorization") != f"Bearer {hub.token}":
            self.answer(401, b'{"error": "Invalid credentials in Authorization header"}')
            return
        if hub.basic and self.headers.get("Authorization") != (
            f"Basic {base64.b64encode(hub.basic.encode()).decode()}"
        ):
            self.answer(401, b'{"error": "Unauthorized"}')
            return
        if match := re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/([^/]+)", path):
            model_id, revision = match.groups()
            assert parse_qs(url.query) == {"blobs": ["true"]}
            repo = hub.repos.get(model_id)
            if repo is None:
                self.answer(404, b'{"error": "Repository not found"}', "RepoNotFound")
            elif revision not in ("main", repo.commit):
                self.answer(404, b'{"error": "Invalid rev id"}', "RevisionNotFound")
            else:
                self.answer(200, json.dumps(repo.listing(model_id)).encode())
            return
        if match := re.fullmatch(r"/([^/]+/[^/]+)/resolve/([0-9a-f]{40})/(.+)", path):
            model_id, commit, file = match.groups()
            repo = hub.repos.get(model_id)
            if repo is None or commit != repo.commit or file not in repo.files:
                self.answer(404, b'{"error": "Entry not found"}', "EntryNotFound")
            elif file in repo.lfs:
                self.send_response(302)
                self.send_header("Location", f"{hub.cdn}/cdn/{model_id}@{file}")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.serve_file(hub, repo, file)
            return
        self.answer(404, b"{}")

    def answer(self, status: int, body: bytes, error_code: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if error_code:
            self.send_header("X-Error-Code", error_code)
        self.end_headers()
        self.wfile.write(body)

    def serve_file(self, hub: FakeHub, repo: Repo, file: str) -> None:
        content = repo.files[file]
        if file in hub.corrupt:
            content = bytes([content[0] ^ 0xFF]) + content[1:]
        start = 0
        ranged = self.headers.get("Range")
        if ranged and not hub.ignore_range:
            match = re.fullmatch(r"bytes=(\d+)-", ranged)
            assert match, ranged
            start = int(match.group(1))
            if start >= len(content) or hub.refuse_range:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(content)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        else:
            self.send_response(200)
        body = content[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if (cut := hub.cut_after.pop(file, None)) is not None:
            self.wfile.write(body[: cut - start])
            self.wfile.flush()
            self.close_connection = True
        elif (stall := hub.stall_after.pop(file, None)) is not None:
            self.wfile.write(body[: stall - start])
            self.wfile.flush()
            hub.release.wait(10)
            self.close_connection = True
        else:
            self.wfile.write(body)


@pytest.fixture
def hub(model_files: dict[str, bytes]) -> Iterator[FakeHub]:
    state = FakeHub()
    state.repos[MODEL] = Repo(
        files=dict(model_files), lfs={"model.safetensors", "pytorch_model.bin"}
    )
    servers = [HubServer(("127.0.0.1", 0), HubHandler) for _ in range(2)]
    threads = []
    for server in servers:
        server.hub = state
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        threads.append(thread)
    state.endpoint, state.other_origin = (
        f"http://127.0.0.1:{server.server_address[1]}" for server in servers
    )
    yield state
    state.release.set()
    for server, thread in zip(servers, threads, strict=True):
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "models"
    monkeypatch.setenv("CODERECALL_MODELS", str(folder))
    return folder


def staged(cache: Path, name: str = "tiny-static") -> Path:
    return cache / ".partial" / name


def test_pull_installs_a_verified_model_that_loads(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    reports: list[tuple[int, int]] = []
    info = pull_model(MODEL, endpoint=hub.endpoint, progress=lambda *pair: reports.append(pair))

    folder = cache / "tiny-static"
    assert (info.name, info.path, info.kind, info.dims) == ("tiny-static", folder, "static", DIMS)
    for path in (*NEEDED, *OPTIONAL):
        assert (folder / path).read_bytes() == model_files[path], path
    for path in ("README.md", "pytorch_model.bin", ".gitattributes"):
        assert not (folder / path).exists()
    assert not list(folder.rglob("*.part"))
    assert not (cache / ".partial").exists()

    source = json.loads((folder / SOURCE_FILE).read_text())
    assert (source["model_id"], source["revision"], source["commit"]) == (MODEL, "main", COMMIT)
    weights = model_files["model.safetensors"]
    assert source["files"]["model.safetensors"] == {
        "size": len(weights),
        "sha256": hashlib.sha256(weights).hexdigest(),
    }
    assert source["files"]["config.json"]["git-blob-sha1"] == git_blob_id(
        model_files["config.json"]
    )

    total = sum(len(model_files[path]) for path in (*NEEDED, *OPTIONAL))
    assert reports[-1] == (total, total)
    assert all(later[0] >= earlier[0] for earlier, later in itertools.pairwise(reports))

    # One listing, one request per file, and the weights through the CDN redirect.
    assert hub.fetched(f"/api/models/{MODEL}/revision/main") == [None]
    assert hub.fetched(f"/{MODEL}/resolve/{COMMIT}/model.safetensors") == [None]
    assert hub.fetched(f"/cdn/{MODEL}@model.safetensors") == [None]
    assert len(hub.requests) == 1 + len(NEEDED) + len(OPTIONAL) + 1
    assert hub.authorizations == [None] * len(hub.requests)

    engine = Embedder.static_model(folder)
    assert engine.dims == DIMS
    vectors = engine.embed(["parse the command line", "hello"])
    assert vectors.shape == (2, DIMS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_endpoint_and_token_come_from_the_hub_variables(
    hub: FakeHub, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.token = "hf_from_the_environment"
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint + "/")
    monkeypatch.setenv("HF_TOKEN", hub.token)
    info = pull_model(MODEL, revision=COMMIT, name="pinned")
    assert info.path == cache / "pinned"
    assert json.loads((info.path / SOURCE_FILE).read_text())["revision"] == COMMIT
    assert set(hub.authorizations) == {"Bearer hf_from_the_environment"}

    # A CDN on another origin never sees the token.
    hub.cdn = hub.other_origin
    hub.requests.clear()
    hub.authorizations.clear()
    pull_model(MODEL, name="elsewhere")
    sent = dict(zip((path for path, _ in hub.requests), hub.authorizations, strict=True))
    assert sent.pop(f"/cdn/{MODEL}@model.safetensors") is None
    assert set(sent.values()) == {"Bearer hf_from_the_environment"}


def test_a_refused_token_is_named_but_never_shown(hub: FakeHub, cache: Path) -> None:
    hub.token = "hf_the_right_one"
    with pytest.raises(ModelError, match="HF_TOKEN") as refused:
        pull_model(MODEL, endpoint=hub.endpoint, token="hf_secret_but_wrong")
    assert "hf_secret_but_wrong" not in str(refused.value)
    assert "401" in str(refused.value)
    with pytest.raises(ModelError, match=r"private or gated.*HF_TOKEN"):
        pull_model(MODEL, endpoint=hub.endpoint)
    assert not cache.exists() or not any(cache.iterdir())


def test_endpoint_credentials_are_used_but_never_shown_or_stored(
    hub: FakeHub, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An authenticated mirror (``http://user:password@host``): the password, as written
    (percent-encoded) or decoded, is in no message and no file; requests still carry it."""
    hub.basic = "bob:p@ss-mirror-secret"
    with_credentials = hub.endpoint.replace("http://", "http://bob:p%40ss-mirror-secret@")
    monkeypatch.setenv("HF_ENDPOINT", with_credentials)
    with pytest.raises(ModelError) as failed:
        pull_model("acme/nothing")
    message = str(failed.value)
    assert "mirror-secret" not in message
    assert f"on {hub.endpoint.replace('http://', 'http://bob:***@')} (HTTP 404)" in message

    info = pull_model(MODEL)
    assert hub.authorizations[-1] is not None
    assert hub.authorizations[-1].startswith("Basic ")
    source = json.loads((info.path / SOURCE_FILE).read_text())
    assert source["endpoint"] == hub.endpoint
    for path in cache.rglob("*"):
        assert not path.is_file() or b"mirror-secret" not in path.read_bytes(), path


def test_an_interrupted_download_continues_where_it_stopped(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    hub.cut_after["model.safetensors"] = CUT
    with pytest.raises(ModelError, match=r"interrupted at 300000 of \d+ bytes.*run the same pull"):
        pull_model(MODEL, endpoint=hub.endpoint)
    assert not (cache / "tiny-static").exists()
    part = staged(cache) / "model.safetensors.part"
    assert part.stat().st_size == CUT
    assert (staged(cache) / "config.json").is_file()

    hub.requests.clear()
    reports: list[tuple[int, int]] = []
    info = pull_model(MODEL, endpoint=hub.endpoint, progress=lambda *pair: reports.append(pair))
    assert (info.path / "model.safetensors").read_bytes() == model_files["model.safetensors"]
    assert Embedder.static_model(info.path).dims == DIMS
    # Finished files are not fetched again; the weights continue from the cut.
    assert [path for path, _ in hub.requests] == [
        f"/api/models/{MODEL}/revision/main",
        f"/{MODEL}/resolve/{COMMIT}/model.safetensors",
        f"/cdn/{MODEL}@model.safetensors",
    ]
    assert hub.requests[-1][1] == f"bytes={CUT}-"
    # Progress counts the kept bytes at once, and ends at the total.
    before = sum(len(model_files[path]) for path in (*NEEDED, *OPTIONAL)) - len(
        model_files["model.safetensors"]
    )
    assert (before + CUT, reports[-1][1]) in reports
    assert reports[-1][0] == reports[-1][1]


def test_a_server_that_ignores_the_range_gets_the_whole_file_rewritten(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    hub.cut_after["model.safetensors"] = CUT
    with pytest.raises(ModelError, match="interrupted"):
        pull_model(MODEL, endpoint=hub.endpoint)
    hub.ignore_range = True
    info = pull_model(MODEL, endpoint=hub.endpoint)
    assert hub.fetched(f"/cdn/{MODEL}@model.safetensors")[-1] == f"bytes={CUT}-"
    assert (info.path / "model.safetensors").read_bytes() == model_files["model.safetensors"]


def test_a_refused_range_drops_the_partial_file_and_starts_over(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    hub.cut_after["model.safetensors"] = CUT
    with pytest.raises(ModelError, match="interrupted"):
        pull_model(MODEL, endpoint=hub.endpoint)
    hub.refuse_range = True
    info = pull_model(MODEL, endpoint=hub.endpoint)
    # 416 for the range; the stale-or-complete part fails its check and is fetched whole.
    assert hub.fetched(f"/cdn/{MODEL}@model.safetensors")[-2:] == [f"bytes={CUT}-", None]
    assert (info.path / "model.safetensors").read_bytes() == model_files["model.safetensors"]


def test_a_stalled_download_times_out_and_keeps_its_bytes(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    hub.stall_after["model.safetensors"] = CUT
    with pytest.raises(ModelError, match=r"interrupted at 300000 .*(timed out|Timeout)"):
        pull_model(MODEL, endpoint=hub.endpoint, timeout=1.0)
    assert (staged(cache) / "model.safetensors.part").stat().st_size == CUT
    hub.release.set()
    info = pull_model(MODEL, endpoint=hub.endpoint)
    assert (info.path / "model.safetensors").read_bytes() == model_files["model.safetensors"]


@pytest.mark.parametrize(
    ("path", "algorithm"), [("config.json", "git-blob-sha1"), ("model.safetensors", "sha256")]
)
def test_a_checksum_mismatch_installs_nothing(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes], path: str, algorithm: str
) -> None:
    hub.corrupt.add(path)
    good = model_files[path]
    bad = bytes([good[0] ^ 0xFF]) + good[1:]
    if algorithm == "sha256":
        expected, actual = hashlib.sha256(good).hexdigest(), hashlib.sha256(bad).hexdigest()
    else:
        expected, actual = git_blob_id(good), git_blob_id(bad)
    with pytest.raises(ModelError) as failed:
        pull_model(MODEL, endpoint=hub.endpoint)
    message = str(failed.value)
    assert message.startswith(f"{path} failed its checksum")
    assert f"expected {algorithm} {expected}, got {actual}" in message
    assert not (cache / "tiny-static").exists()
    assert not (staged(cache) / path).exists()
    assert not (staged(cache) / f"{path}.part").exists()

    hub.corrupt.clear()
    assert pull_model(MODEL, endpoint=hub.endpoint).path == cache / "tiny-static"


def test_a_missing_model_or_revision_is_named(hub: FakeHub, cache: Path) -> None:
    with pytest.raises(ModelError, match=r"no model 'acme/nothing' at revision 'main'"):
        pull_model("acme/nothing", endpoint=hub.endpoint)
    with pytest.raises(ModelError, match=r"no revision 'v9' of model 'acme/tiny-static'"):
        pull_model(MODEL, endpoint=hub.endpoint, revision="v9")
    assert not cache.exists()


def test_offline_says_what_to_do(cache: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    with pytest.raises(ModelError) as failed:
        pull_model(MODEL, endpoint=endpoint)
    message = str(failed.value)
    assert message.startswith(f"cannot reach {endpoint} (")
    assert "you seem to be offline" in message
    assert str(cache / "tiny-static") in message
    assert "HF_ENDPOINT" in message


def test_an_installed_model_is_kept_when_the_hub_cannot_be_asked(
    hub: FakeHub,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Offline (or HF_HUB_OFFLINE) a copy pulled at the asked revision is kept, with a warning
    that it was not checked; its commit needs no hub at all; another revision is refused."""
    installed = pull_model(MODEL, endpoint=hub.endpoint)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with caplog.at_level(logging.WARNING, logger="coderecall"):
        assert pull_model(MODEL, endpoint=dead) == installed
    assert f"cannot reach {dead} (" in caplog.text
    assert f"at commit {COMMIT[:12]} (pulled at main); it could not be checked" in caplog.text

    hub.requests.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="coderecall"):
        assert pull_model(MODEL, endpoint=hub.endpoint, revision=COMMIT) == installed
        assert pull_model(MODEL, endpoint=dead, revision=COMMIT) == installed
    assert hub.requests == []
    assert f"is already installed in {installed.path} at commit {COMMIT[:12]}" in caplog.text

    with pytest.raises(ModelError, match=rf"so whether v2 is at commit {COMMIT[:12]}") as refused:
        pull_model(MODEL, endpoint=dead, revision="v2")
    assert str(refused.value).startswith(f"cannot reach {dead} (")
    assert f"pull at revision {COMMIT}" in str(refused.value)
    assert "copy the folder" not in str(refused.value)

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["model", "pull", MODEL, "--revision", COMMIT, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(installed.path)
    assert pull_model(MODEL, endpoint=hub.endpoint) == installed
    with pytest.raises(ModelError, match=r"^HF_HUB_OFFLINE is set, so whether v2 is at"):
        pull_model(MODEL, endpoint=hub.endpoint, revision="v2")
    assert hub.requests == []

    # An incomplete copy is not kept.
    (installed.path / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="HF_HUB_OFFLINE is set, and pulling"):
        pull_model(MODEL, endpoint=hub.endpoint)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_names_the_folder_and_what_is_needed(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    """A real ENOSPC: the weights' partial file is made a link to /dev/full, where every write
    fails so. The partial file is kept for the next run, as after a cut."""
    hub.cut_after["model.safetensors"] = CUT
    with pytest.raises(ModelError, match="interrupted"):
        pull_model(MODEL, endpoint=hub.endpoint)
    part = staged(cache) / "model.safetensors.part"
    part.unlink()
    part.symlink_to("/dev/full")
    with pytest.raises(ModelError) as full:
        pull_model(MODEL, endpoint=hub.endpoint)
    size = len(model_files["model.safetensors"])
    assert str(full.value).startswith(
        f"writing model.safetensors into {staged(cache)} failed: No space left on device, at 0 "
        f"of {size} bytes; {size} more bytes are needed to finish {MODEL}; the partial file is "
        f"kept in {staged(cache)}: free some space and run the same pull again"
    )
    assert part.is_symlink()

    part.unlink()
    info = pull_model(MODEL, endpoint=hub.endpoint)
    assert (info.path / "model.safetensors").read_bytes() == model_files["model.safetensors"]


def test_a_repository_without_safetensors_is_refused(
    hub: FakeHub, cache: Path, model_files: dict[str, bytes]
) -> None:
    files = {name: model_files[name] for name in ("config.json", "tokenizer.json")}
    files["pytorch_model.bin"] = model_files["pytorch_model.bin"]
    hub.repos["acme/old-bert"] = Repo(files=files, lfs={"pytorch_model.bin"})
    with pytest.raises(
        ModelError, match=r"no model\.safetensors \(it has pytorch_model\.bin\): only .*safetensors"
    ):
        pull_model("acme/old-bert", endpoint=hub.endpoint)
    assert len(hub.requests) == 1
    assert not cache.exists()


def test_an_existing_destination_is_kept(hub: FakeHub, cache: Path) -> None:
    occupied = cache / "tiny-static"
    occupied.mkdir(parents=True)
    (occupied / "notes.txt").write_text("mine")
    with pytest.raises(ModelError, match=r"already exists .* remove it \(rm -r .*tiny-static\)"):
        pull_model(MODEL, endpoint=hub.endpoint)
    assert hub.requests == []
    assert (occupied / "notes.txt").read_text() == "mine"

    first = pull_model(MODEL, endpoint=hub.endpoint, name="tiny")
    hub.requests.clear()
    again = pull_model(MODEL, endpoint=hub.endpoint, name="tiny")
    assert again == first
    assert [path for path, _ in hub.requests] == [f"/api/models/{MODEL}/revision/main"]

    hub.repos[MODEL].commit = "a" * 40
    with pytest.raises(ModelError, match=r"is now at aaaaaaaaaaaa; remove the folder"):
        pull_model(MODEL, endpoint=hub.endpoint, name="tiny")


@pytest.mark.parametrize(
    ("model_id", "name", "message"),
    [
        ("no spaces please", None, "not a hub model id"),
        ("acme/../etc", None, "not a hub model id"),
        (MODEL, "../elsewhere", "cannot name a model folder"),
        (MODEL, ".partial", "cannot name a model folder"),
    ],
)
def test_bad_names_are_refused_before_any_request(
    hub: FakeHub, model_id: str, name: str | None, message: str
) -> None:
    with pytest.raises(ModelError, match=message):
        pull_model(model_id, name=name, endpoint=hub.endpoint)
    assert hub.requests == []


def test_hf_hub_offline_is_honoured(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError, match="HF_HUB_OFFLINE is set"):
        pull_model(MODEL, endpoint=hub.endpoint)
    assert hub.requests == []


def test_cli_pull_then_list_and_index_with_the_pulled_model(
    hub: FakeHub,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    assert main(["model", "pull", MODEL, "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out)
    assert (pulled["name"], pulled["kind"]) == ("tiny-static", "static")
    # Pulled again: nothing downloads, and the line says the copy was already there.
    requests = len(hub.requests)
    assert main(["model", "pull", MODEL]) == 0
    assert capsys.readouterr().out.startswith(f"Already installed: {MODEL} in ")
    assert len(hub.requests) == requests + 1  # the revision looked up, no file
    assert main(["model", "list", "--json"]) == 0
    assert [m["name"] for m in json.loads(capsys.readouterr().out)] == ["tiny-static"]
    # `auto` now finds it: the index embeds without being told which model to use.
    with CodeIndex(make_repo(SAMPLE_PROJECT)) as index:
        report = index.index(progress=False)
    assert report.embedding_model is not None
    assert report.embedding_model.startswith("static:tiny-static:")
    assert report.chunks_embedded > 0
    assert main(["model", "pull", "not a model id"]) == 1
    assert capsys.readouterr().err.startswith("coderecall: error: ")


def test_a_second_pull_of_the_same_folder_waits_its_turn(hub: FakeHub, cache: Path) -> None:
    """Another process holding the pull lock: refused at once, nothing written; once it is
    released (the holder exited), the pull goes through."""
    lock = cache / ".partial" / "tiny-static.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"f = open({str(lock)!r}, 'a+b')\n"
            "fcntl.flock(f.fileno(), fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert read_line(holder).strip() == "locked"
        with pytest.raises(ModelError, match=r"another pull into .* is running"):
            pull_model(MODEL, endpoint=hub.endpoint)
        assert hub.requests == [], "refused before any request"
    finally:
        holder.communicate("")
    info = pull_model(MODEL, endpoint=hub.endpoint)
    assert info.path == cache / "tiny-static"
    assert not (cache / ".partial").exists()
