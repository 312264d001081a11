"""Helpers shared by the test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path

# Git must behave the same on every machine: no user or system config, a fixed identity.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}

Files = Mapping[str, str | bytes]
MakeRepo = Callable[..., Path]


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` and return its output; fails the test on a non-zero exit."""
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"git {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def read_line(process: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The next line ``process`` prints, or a failed test (and a killed process) once
    ``timeout`` seconds pass without one: a child that never prints must not hang the suite."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not lines:
        process.kill()
        _, stderr = process.communicate()
        raise AssertionError(f"no line within {timeout} s; stderr:\n{stderr}")
    return lines[0]


def database_bytes(db: Path) -> bytes:
    """Every byte SQLite keeps for ``db``: the file, its WAL and shared memory."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def as_if_chunked_by_older_rules(db: Path, paths: Sequence[str]) -> list[int]:
    """Make the index at ``db`` look written by a release with other chunking rules: its
    record of the chunker differs, every version was stored a minute ago, and the versions
    of ``paths`` are keyed by other hashes (as another chunker's keys would be). Returns
    those keys."""
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'chunker'")
        conn.execute("UPDATE files SET indexed_at = indexed_at - 60")
        keys = []
        for path in paths:
            (old,) = conn.execute(
                "SELECT file_hash FROM view_files WHERE path = ?", (path,)
            ).fetchone()
            conn.execute("UPDATE view_files SET file_hash = ? WHERE file_hash = ?", (old ^ 1, old))
            conn.execute("UPDATE files SET hash = ? WHERE hash = ?", (old ^ 1, old))
            keys.append(old ^ 1)
    return keys


def write_files(root: Path, files: Files) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


# A small project in several languages, for end-to-end indexing and search.
SAMPLE_PROJECT: dict[str, str] = {
    "pyproject.toml": '[project]\nname = "shop"\nversion = "0.1.0"\n',
    ".gitignore": "*.log\nbuild/\n",
    "src/shop/__init__.py": '"""A small online shop."""\n',
    "src/shop/auth.py": '''\
"""Access tokens: issuing, validating and refreshing them."""

import hashlib
import hmac
import time


class TokenStore:
    """Keeps the tokens issued to each user, with their expiry times."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._tokens: dict[str, float] = {}

    def issue_token(self, user_id: str, lifetime: float = 3600.0) -> str:
        """Create a signed access token for a user."""
        token = hmac.new(self._secret, user_id.encode(), hashlib.sha256).hexdigest()
        self._tokens[token] = time.time() + lifetime
        return token

    def refresh_access_token(self, old_token: str) -> str:
        """Exchange an expiring access token for a fresh one before it runs out."""
        if old_token not in self._tokens:
            raise KeyError("unknown token")
        del self._tokens[old_token]
        return self.issue_token(old_token[:8])


def validate_signature(payload: bytes, signature: str, secret: bytes) -> bool:
    """Check that a webhook payload was signed with our secret."""
    expected = hmac.new(secret, payload, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)
''',
    "src/shop/billing.py": '''\
"""Invoices and taxes."""

from dataclasses import dataclass


@dataclass
class LineItem:
    name: str
    unit_price: float
    quantity: int


class Invoice:
    """An invoice sent to a customer at the end of the month."""

    def __init__(self, customer: str, items: list[LineItem]) -> None:
        self.customer = customer
        self.items = items


def compute_invoice_total(items: list[LineItem], tax_rate: float) -> float:
    """Sum the price of every line item and add sales tax."""
    subtotal = sum(item.unit_price * item.quantity for item in items)
    return round(subtotal * (1 + tax_rate), 2)
''',
    "tests/test_auth.py": """\
from shop.auth import TokenStore


def test_refresh_gives_a_new_token():
    store = TokenStore(b"secret")
    token = store.issue_token("alice")
    assert store.refresh_access_token(token) != token
""",
    "web/cart.js": """\
// The shopping cart shown in the browser.

export class ShoppingCart {
  constructor() {
    this.items = [];
  }

  get size() {
    return this.items.length;
  }
}

export function addItemToCart(cart, item) {
  const existing = cart.items.find((entry) => entry.id === item.id);
  if (existing) {
    existing.quantity += 1;
  } else {
    cart.items.push({ ...item, quantity: 1 });
  }
  return cart;
}
""",
    "native/src/config.rs": """\
//! Reading the server configuration from disk.

use std::fs;
use std::path::Path;

/// Settings read from `server.toml`.
pub struct ServerConfig {
    pub port: u16,
    pub workers: usize,
}

/// Parse the configuration file at `path`, falling back to defaults for missing keys.
pub fn parse_config_file(path: &Path) -> std::io::Result<ServerConfig> {
    let text = fs::read_to_string(path)?;
    let mut config = ServerConfig { port: 8080, workers: 4 };
    for line in text.lines() {
        if let Some(port) = line.strip_prefix("port = ") {
            config.port = port.trim().parse().unwrap_or(config.port);
        }
    }
    Ok(config)
}
""",
    "server/ratelimit.go": """\
package server

import (
\t"sync"
\t"time"
)

// RateLimiter allows a fixed number of requests per client in each time window.
type RateLimiter struct {
\tmu      sync.Mutex
\twindow  time.Duration
\tlimit   int
\tcounts  map[string]int
}

// AllowRequest reports whether a client may make one more request in the current window.
func (r *RateLimiter) AllowRequest(clientID string) bool {
\tr.mu.Lock()
\tdefer r.mu.Unlock()
\tif r.counts[clientID] >= r.limit {
\t\treturn false
\t}
\tr.counts[clientID]++
\treturn true
}
""",
    "docs/deployment.md": """\
# Deployment

How to run the shop in production.

## Database migrations

Run the migrations before starting the new release, then restart the workers one by one.

## Backups

Nightly backups of the database are copied to cold storage and kept for thirty days.
""",
}


def large_project(modules: int = 2000) -> dict[str, str]:
    """Enough distinct code (about 18 MB) that indexing it takes a noticeable while, so a
    test can interrupt it midway."""
    files = {
        f"pkg/module_{m}.py": "".join(
            f"def function_{m}_{n}(value):\n    return value * {n} + {m}\n\n" for n in range(150)
        )
        for m in range(modules)
    }
    files["setup.py"] = "from setuptools import setup\n\nsetup()\n"
    return files


# The sample project plus a chain of calls across modules, for the call graph and context:
# handle_checkout_request -> checkout -> TokenStore.refresh_access_token -> issue_token,
# and checkout -> compute_invoice_total (all resolved or inferred).
CALLS_PROJECT: dict[str, str] = {
    **SAMPLE_PROJECT,
    "src/shop/checkout.py": '''\
"""Checking out a cart: the customer's token is refreshed, then the invoice is totalled."""

from shop.auth import TokenStore
from shop.billing import LineItem, compute_invoice_total


def checkout(store: TokenStore, token: str, items: list[LineItem]) -> tuple[str, float]:
    """Charge the customer for the items and hand back a fresh token."""
    fresh = store.refresh_access_token(token)
    return fresh, compute_invoice_total(items, 0.2)
''',
    "src/shop/api.py": '''\
"""HTTP handlers of the shop."""

from shop.checkout import checkout


def handle_checkout_request(request: dict) -> dict:
    """POST /checkout: run the checkout for the request's cart."""
    fresh, total = checkout(request["store"], request["token"], request["items"])
    return {"token": fresh, "total": total}
''',
}

LEDGER, LEDGER_FUNCTION = "src/shop/ledger.py", "reconcile_ledger_entries"
LEDGER_CODE = '''\
def reconcile_ledger_entries(ledger, statement):
    """Match each bank statement line with the ledger entry it pays."""
    return [entry for entry in ledger if entry in statement]
'''
"""A file the sample project does not have, added by tests of freshness."""


# A folder of documents to add as a knowledge base (outside the project root).
HANDBOOK: dict[str, str] = {
    "runbook.md": """\
# Runbook

## Rotating the signing secret

Generate a new secret, deploy it to every worker, then invalidate the refresh tokens issued
with the old one. Customers sign in again once.
""",
    "onboarding/first-week.md": """\
# First week

Read the runbook, pair on a deployment, and ship one small fix to the checkout flow.
""",
}


REPORT_IMPORTS = """
import runpy, sys
wanted = sys.argv.pop().split(",")
try:
    runpy.run_module("coderecall", run_name="__main__")
finally:
    print("loaded:", *(m for m in wanted if m in sys.modules), file=sys.stderr)
"""
"""Runs ``python -m coderecall`` with the arguments before the last, then reports on stderr
which of the comma-separated modules of the last argument were imported (a command is a fresh
process: what it imports is part of its latency)."""
