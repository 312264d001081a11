"""The user's folders for coderecall's caches and data (XDG base directories)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_cache_dir", "user_data_dir"]


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/coderecall``, else ``~/.cache/coderecall`` (it may not exist yet)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "coderecall"


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/coderecall``, else ``~/.local/share/coderecall`` (it may not exist
    yet)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "coderecall"
