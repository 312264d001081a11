"""Pinned corpora of real code for the benchmarks: download, verify, extract, describe.

Every corpus is one archive pinned by name, version and sha256 in ``corpora.lock.json``: a
PyPI sdist, a crates.io ``.crate`` or the upstream orig tarball of a Debian bookworm source
package. ``fetch`` downloads what the cache lacks, checks every archive against its sha256
(also when cached), extracts it safely once, and returns ``Corpus`` records; once cached it
works offline.

    python -m benches.corpora [--quick] [--cache DIR] [NAMES...]

prints name, language, version, source, sha256, files, lines and MB of each corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

LOCK_PATH = Path(__file__).with_name("corpora.lock.json")
_CHUNK = 1 << 20


class CorpusError(RuntimeError):
    """A corpus could not be fetched, verified or extracted."""


class ChecksumError(CorpusError):
    """An archive's sha256 does not match the lock file."""


class UnsafeArchiveError(CorpusError):
    """An archive has a member that would land outside the extraction folder."""


@dataclass(frozen=True, slots=True)
class Corpus:
    """An extracted, verified corpus."""

    name: str
    language: str
    version: str
    root: Path
    source: str
    archive_sha256: str


@dataclass(frozen=True, slots=True)
class Pin:
    """One entry of the lock file."""

    name: str
    language: str
    version: str
    source: str
    package: str
    archive: str
    url: str
    sha256: str
    size: int
    subdir: str | None = None
    substitute_for: str | None = None
    reason: str | None = None


def load_lock(path: Path = LOCK_PATH) -> tuple[dict[str, Pin], tuple[str, ...]]:
    """Parse the lock file into pins by name and the names of the quick set."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    pins: dict[str, Pin] = {}
    for name, entry in data["corpora"].items():
        pins[name] = Pin(
            name=name,
            language=entry["language"],
            version=entry["version"],
            source=entry["source"],
            package=entry["package"],
            archive=entry["archive"],
            url=entry["url"],
            sha256=entry["sha256"],
            size=int(entry["size"]),
            subdir=entry.get("subdir"),
            substitute_for=entry.get("substitute_for"),
            reason=entry.get("reason"),
        )
    return pins, tuple(data["quick"])


PINS, QUICK = load_lock()
ALL: tuple[str, ...] = tuple(PINS)


def default_cache() -> Path:
    """``$CODERECALL_BENCH_CACHE``, else ``~/.cache/coderecall/bench``."""
    env = os.environ.get("CODERECALL_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "coderecall" / "bench"


def resolve(name: str, log: Callable[[str], None] = print) -> Pin:
    """The pin for a corpus name, a package name, or a name that was substituted."""
    if name in PINS:
        return PINS[name]
    for pin in PINS.values():
        if name == pin.package:
            return pin
    for pin in PINS.values():
        if name == pin.substitute_for:
            log(f"{name}: substituted by {pin.name} ({pin.reason})")
            return pin
    raise CorpusError(f"unknown corpus {name!r}; known: {', '.join(ALL)}")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, pin: Pin) -> None:
    """Raise ``ChecksumError`` naming the archive unless its sha256 matches the pin."""
    actual = sha256_file(path)
    if actual != pin.sha256:
        raise ChecksumError(
            f"checksum mismatch for {pin.archive} ({pin.name}): expected {pin.sha256}, "
            f"got {actual} ({path})"
        )


# --- download --------------------------------------------------------------------------------


def _download_url(pin: Pin, dest: Path) -> None:
    with urllib.request.urlopen(pin.url, timeout=120) as response, dest.open("wb") as out:
        shutil.copyfileobj(response, out, _CHUNK)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise CorpusError(f"{cmd[0]} failed ({proc.returncode}): {' / '.join(tail)}")


def _download_tool(pin: Pin, dest: Path, cache: Path) -> None:
    """Fallback: fetch the archive with the ecosystem's own client (pip, cargo, apt-get)."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp_name:
        tmp = Path(tmp_name)
        if pin.source == "pypi":
            spec = f"{pin.package}=={pin.version}"
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
            _run([*cmd, spec, "-d", str(tmp)], tmp)
            found = tmp / pin.archive
        elif pin.source == "crate":
            home = cache / "cargo-home"
            (tmp / "src").mkdir()
            (tmp / "src" / "lib.rs").write_text("")
            (tmp / "Cargo.toml").write_text(
                '[package]\nname = "corpus-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
                f'[dependencies]\n{pin.package} = "={pin.version}"\n'
            )
            _run(["cargo", "fetch"], tmp, {**os.environ, "CARGO_HOME": str(home)})
            hits = sorted((home / "registry" / "cache").glob(f"*/{pin.archive}"))
            found = hits[0] if hits else tmp / pin.archive
        elif pin.source == "debian":
            _run([*_apt("apt-get", cache), "update"], tmp)
            _run([*_apt("apt-get", cache), "source", "--download-only", pin.package], tmp)
            found = tmp / pin.archive
        else:
            raise CorpusError(f"{pin.name}: unknown source {pin.source!r}")
        if not found.is_file():
            raise CorpusError(f"{pin.name}: {pin.archive} not found after download")
        shutil.copyfile(found, dest)


def _apt(tool: str, cache: Path) -> list[str]:
    """An apt command that uses a private bookworm deb-src list, never the system's state."""
    base = cache / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "sources.list.d"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    sources = base / "sources.list"
    sources.write_text(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://deb.debian.org/debian bookworm main\n"
    )
    (base / "status").touch()
    opts = {
        "Dir::Etc::SourceList": sources,
        "Dir::Etc::SourceParts": base / "sources.list.d",
        "Dir::State::Lists": base / "lists",
        "Dir::State::status": base / "status",
        "Dir::Cache": base / "cache",
    }
    return [tool, *(arg for k, v in opts.items() for arg in ("-o", f"{k}={v}"))]


def download(pin: Pin, dest: Path, cache: Path, log: Callable[[str], None] = print) -> None:
    """Download the pinned archive to ``dest``: its URL first, then the ecosystem client."""
    try:
        _download_url(pin, dest)
    except OSError as exc:  # URLError and HTTPError are OSErrors
        log(f"{pin.name}: {pin.url} failed ({exc}); trying {pin.source} tooling")
        _download_tool(pin, dest, cache)


# --- extraction ------------------------------------------------------------------------------


def _check_member(name: str, archive: Path) -> None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or (path.parts and ":" in path.parts[0]):
        raise UnsafeArchiveError(f"{archive.name}: absolute member path {name!r}")
    if ".." in path.parts:
        raise UnsafeArchiveError(f"{archive.name}: member path escapes with '..': {name!r}")


def safe_extract(archive: Path, dest: Path) -> None:
    """Extract a tar (any compression) or zip archive into ``dest``.

    Rejects absolute member paths and ``..`` components before writing anything; tar links,
    devices and modes go through the ``data`` filter where Python has it, otherwise only
    regular files and folders are extracted.
    """
    dest.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                _check_member(name, archive)
            zf.extractall(dest)
        return
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        for member in members:
            _check_member(member.name, archive)
            if member.islnk():
                _check_member(member.linkname, archive)
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
        else:  # pragma: no cover - Python without PEP 706 backports
            tf.extractall(dest, members=[m for m in members if m.isfile() or m.isdir()])


def _tree_root(folder: Path) -> Path:
    """The single top-level folder of an extracted archive, or the folder itself."""
    entries = list(folder.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return folder


def _prepare(pin: Pin, cache: Path, log: Callable[[str], None]) -> Corpus:
    archives = cache / "archives"
    trees = cache / "src"
    archives.mkdir(parents=True, exist_ok=True)
    trees.mkdir(parents=True, exist_ok=True)
    archive = archives / pin.archive
    if not archive.is_file():
        log(f"{pin.name}: downloading {pin.archive} ({pin.size / 1e6:.1f} MB, {pin.source})")
        fd, part_name = tempfile.mkstemp(prefix=f".{pin.archive}.", suffix=".part", dir=archives)
        os.close(fd)
        part = Path(part_name)
        try:
            download(pin, part, cache, log)
            verify(part, pin)
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        part.replace(archive)
    else:
        verify(archive, pin)

    folder = trees / f"{pin.name}-{pin.version}"
    marker = trees / f"{pin.name}-{pin.version}.json"
    root: Path | None = None
    if marker.is_file() and folder.is_dir():
        info = json.loads(marker.read_text(encoding="utf-8"))
        if info.get("sha256") == pin.sha256:
            root = folder / info["root"]
    if root is None or not root.is_dir():
        shutil.rmtree(folder, ignore_errors=True)
        marker.unlink(missing_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{pin.name}-", dir=trees))
        try:
            safe_extract(archive, tmp)
            tmp.replace(folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            if not folder.is_dir():  # else a concurrent fetch extracted it first
                raise
        root = _tree_root(folder)
        if pin.subdir:
            root = root / pin.subdir
        if not root.is_dir():
            raise CorpusError(f"{pin.name}: {pin.archive} has no folder {pin.subdir!r}")
        rel = root.relative_to(folder).as_posix()
        marker.write_text(json.dumps({"sha256": pin.sha256, "root": rel}) + "\n")
    if pin.substitute_for:
        log(f"{pin.name}: substitute for {pin.substitute_for} ({pin.reason})")
    return Corpus(pin.name, pin.language, pin.version, root, pin.source, pin.sha256)


def fetch(
    names: Sequence[str] | None = None,
    *,
    quick: bool = False,
    cache: Path | None = None,
    log: Callable[[str], None] = print,
) -> list[Corpus]:
    """Download (if not cached), verify sha256, extract, and return the corpora.

    ``names=None`` means ``QUICK`` if ``quick`` else ``ALL``. Cache default:
    ``$CODERECALL_BENCH_CACHE`` or ``~/.cache/coderecall/bench``. Idempotent and offline once
    cached. A checksum mismatch raises ``ChecksumError`` naming the archive. Substitutes are
    logged.
    """
    if names is None:
        names = QUICK if quick else ALL
    cache = (cache or default_cache()).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    pins: list[Pin] = []
    for name in names:
        pin = resolve(name, log)
        if pin not in pins:
            pins.append(pin)
    return [_prepare(pin, cache, log) for pin in pins]


# --- command line ----------------------------------------------------------------------------


def tree_stats(root: Path) -> tuple[int, int, int]:
    """Files, lines and bytes of every regular file under ``root``."""
    files = lines = size = 0
    for dirpath, _dirs, filenames in os.walk(root):
        for filename in filenames:
            path = Path(dirpath, filename)
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            files += 1
            size += len(data)
            lines += data.count(b"\n")
    return files, lines, size


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch the corpora and print a markdown table describing them."""
    parser = argparse.ArgumentParser(prog="python -m benches.corpora", description=__doc__)
    parser.add_argument("names", nargs="*", help="corpora to fetch (default: all, or --quick)")
    parser.add_argument("--quick", action="store_true", help="only the quick set")
    parser.add_argument("--cache", type=Path, default=None, help="cache folder")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    try:
        corpora = fetch(args.names or None, quick=args.quick, cache=args.cache, log=log)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    header = ("name", "language", "version", "source", "sha256", "files", "lines", "MB")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] * 5 + ["--:"] * 3) + "|")
    totals = [0, 0, 0]
    for c in corpora:
        files, lines, size = tree_stats(c.root)
        totals = [totals[0] + files, totals[1] + lines, totals[2] + size]
        row = (c.name, c.language, c.version, c.source, c.archive_sha256[:12])
        print(f"| {' | '.join(row)} | {files} | {lines} | {size / 1e6:.1f} |")
    langs = len({c.language for c in corpora})
    print(
        f"| total: {len(corpora)} corpora | {langs} languages | | | "
        f"| {totals[0]} | {totals[1]} | {totals[2] / 1e6:.1f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
