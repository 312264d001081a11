"""The pinned benchmark corpora: lock file, safe extraction and checksums (no network)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zipfile
from pathlib import Path

import pytest
from benches import corpora
from benches.corpora import ALL, PINS, QUICK, ChecksumError, Pin, UnsafeArchiveError

LANGUAGES = {"python", "rust", "go", "java", "javascript", "typescript", "c", "cpp", "ruby", "php"}
REQUIRED = ("language", "version", "source", "package", "archive", "url", "sha256", "size")


def test_lock_entries_are_complete() -> None:
    data = json.loads(corpora.LOCK_PATH.read_text(encoding="utf-8"))
    assert tuple(data["corpora"]) == ALL
    for name, entry in data["corpora"].items():
        missing = [key for key in REQUIRED if key not in entry]
        assert not missing, f"{name} lacks {missing}"
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), name
        assert entry["language"] in LANGUAGES, name
        assert entry["source"] in {"pypi", "crate", "debian"}, name
        assert isinstance(entry["size"], int), name
        assert entry["size"] > 0, name
        assert entry["url"].endswith("/" + entry["archive"]), name
        assert ("substitute_for" in entry) == ("reason" in entry), name


def test_quick_set_is_small_and_diverse() -> None:
    assert set(QUICK) <= set(ALL)
    assert len(set(QUICK)) >= 6
    assert len({PINS[name].language for name in QUICK}) >= 5
    assert sum(PINS[name].size for name in QUICK) < 30_000_000


def test_every_language_is_covered() -> None:
    assert {pin.language for pin in PINS.values()} == LANGUAGES


def test_resolve_accepts_package_and_substituted_names() -> None:
    logged: list[str] = []
    assert corpora.resolve("golang-github-gorilla-mux").name == "gorilla-mux"
    substituted = [pin for pin in PINS.values() if pin.substitute_for]
    for pin in substituted:
        assert corpora.resolve(pin.substitute_for or "", logged.append) == pin
    assert len(logged) == len(substituted)
    with pytest.raises(corpora.CorpusError, match="unknown corpus"):
        corpora.resolve("no-such-corpus")


def _tar_with(path: Path, name: str) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo("pkg/ok.txt")
        info.size = 2
        tf.addfile(info, io.BytesIO(b"ok"))
        info = tarfile.TarInfo(name)
        info.size = 4
        tf.addfile(info, io.BytesIO(b"evil"))
    return path


@pytest.mark.parametrize("name", ["../evil", "pkg/../../evil", "/tmp/evil-absolute"])
def test_safe_extract_rejects_escaping_tar_members(tmp_path: Path, name: str) -> None:
    archive = _tar_with(tmp_path / "bad.tar.gz", name)
    dest = tmp_path / "out"
    with pytest.raises(UnsafeArchiveError, match=r"bad\.tar\.gz"):
        corpora.safe_extract(archive, dest)
    assert not (tmp_path / "evil").exists()
    assert not list(dest.rglob("*"))


def test_safe_extract_rejects_escaping_zip_members(tmp_path: Path) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/ok.txt", "ok")
        zf.writestr("../evil", "evil")
    with pytest.raises(UnsafeArchiveError, match=r"bad\.zip"):
        corpora.safe_extract(archive, tmp_path / "out")


def test_safe_extract_extracts_a_normal_tar(tmp_path: Path) -> None:
    archive = _tar_with(tmp_path / "good.tar.gz", "pkg/sub/file.txt")
    corpora.safe_extract(archive, tmp_path / "out")
    assert (tmp_path / "out" / "pkg" / "sub" / "file.txt").read_bytes() == b"evil"


def _fake_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sha256: str | None = None
) -> tuple[Pin, list[str]]:
    """Register a pin whose download copies a local tarball instead of using the network."""
    source = _tar_with(tmp_path / "fake-1.0.tar.gz", "pkg/src/main.py")
    pin = Pin(
        name="fake",
        language="python",
        version="1.0",
        source="pypi",
        package="fake",
        archive="fake-1.0.tar.gz",
        url="https://example.invalid/fake-1.0.tar.gz",
        sha256=sha256 or hashlib.sha256(source.read_bytes()).hexdigest(),
        size=source.stat().st_size,
        subdir="src",
    )
    calls: list[str] = []

    def fake_download(pin: Pin, dest: Path, cache: Path, log: object = None) -> None:
        calls.append(pin.name)
        dest.write_bytes(source.read_bytes())

    monkeypatch.setitem(corpora.PINS, "fake", pin)
    monkeypatch.setattr(corpora, "download", fake_download)
    return pin, calls


def test_checksum_mismatch_names_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_pin(tmp_path, monkeypatch, sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match=r"fake-1\.0\.tar\.gz"):
        corpora.fetch(["fake"], cache=cache, log=lambda _msg: None)
    assert not list((cache / "archives").iterdir()), "a bad download must not stay cached"


def test_cached_archive_is_verified_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pin(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    (corpus,) = corpora.fetch(["fake"], cache=cache, log=lambda _msg: None)
    (cache / "archives" / "fake-1.0.tar.gz").write_bytes(b"tampered")
    with pytest.raises(ChecksumError, match=r"fake-1\.0\.tar\.gz"):
        corpora.fetch(["fake"], cache=cache, log=lambda _msg: None)
    assert corpus.root.name == "src"


def test_fetch_extracts_once_and_is_idempotent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin, calls = _fake_pin(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    (first,) = corpora.fetch(["fake"], cache=cache, log=lambda _msg: None)
    (second,) = corpora.fetch(["fake"], cache=cache, log=lambda _msg: None)
    assert first == second
    assert first.archive_sha256 == pin.sha256
    assert (first.root / "main.py").read_bytes() == b"evil"
    assert calls == ["fake"]
    assert corpora.tree_stats(first.root) == (1, 0, 4)
