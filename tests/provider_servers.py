"""Real HTTP servers on 127.0.0.1 that speak the embedding providers' wire formats.

A :class:`FakeServer` records every request it gets (path, headers, decoded body, arrival and
answer times) and answers in its provider's format with vectors derived from a hash of each
text, scaled so that they are *not* unit length (the client must normalise them). Tests steer
it with a queue of scripted replies (:meth:`FakeServer.queue`) or a hook that sees each request
first. A request with the wrong key gets a 401 that echoes the key it was sent, as some real
services do, so tests can check that the client scrubs it.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Dialect = Literal["openai", "voyage", "gemini", "ollama"]
DimsParam = Literal["honour", "ignore", "refuse"]

__all__ = [
    "Dialect",
    "DimsParam",
    "FakeServer",
    "Reply",
    "Seen",
    "SilentServer",
    "unit_vector",
    "vector_for",
]


@dataclass
class Seen:
    """One request as the server saw it; ``headers`` has lower-case names."""

    path: str
    headers: dict[str, str]
    body: Any
    arrived: float
    answered: float = 0.0

    @property
    def texts(self) -> list[str]:
        """The texts to embed, whatever the dialect."""
        if isinstance(self.body, dict) and "requests" in self.body:
            return [one["content"]["parts"][0]["text"] for one in self.body["requests"]]
        if isinstance(self.body, dict) and isinstance(self.body.get("input"), list):
            return list(self.body["input"])
        return []


@dataclass(frozen=True)
class Reply:
    """What to answer. ``body=None`` with status 200 means the dialect's normal answer; bytes
    are sent as they are, anything else as JSON."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Hook = Callable[[Seen], "Reply | None"]


def vector_for(text: str, dims: int) -> list[float]:
    """The server's vector for ``text``: deterministic, and of length about 3*sqrt(dims)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return [float(value) for value in np.random.default_rng(seed).normal(size=dims) * 3.0]


def unit_vector(text: str, dims: int) -> npt.NDArray[np.float64]:
    vector = np.asarray(vector_for(text, dims))
    unit: npt.NDArray[np.float64] = vector / np.linalg.norm(vector)
    return unit


TOKENS_PER_TEXT = 7
"""What the dialects that report usage claim per text: distinct from any estimate."""


class _Server(ThreadingHTTPServer):
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """The client gave up on a slow answer: expected in these tests, not worth a trace."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        seen = Seen(self.path, headers, body, time.monotonic())
        fake.record(seen)
        reply = fake.reply_to(seen)
        if reply.delay:
            fake.stopping.wait(reply.delay)
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        seen.answered = time.monotonic()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read :attr:`FakeServer.requests` instead."""


class FakeServer:
    """One provider's API on ``127.0.0.1``; ``key=None`` accepts any key or none.

    ``dims_param`` is what it does with a requested width (``dimensions`` and its kin): honour
    it like a Matryoshka model, ignore it like Ollama with most models, or refuse the request
    with a 400 like vLLM serving a model that cannot shorten its vectors.
    """

    def __init__(self, dialect: Dialect, *, key: str | None, dims: int = 8) -> None:
        self.dialect = dialect
        self.key = key
        self.dims = dims
        self.dims_param: DimsParam = "honour"
        self.requests: list[Seen] = []
        self.hook: Hook | None = None
        self.stopping = threading.Event()
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order, before anything else."""
        with self._lock:
            self._script.extend(replies)

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    def reply_to(self, seen: Seen) -> Reply:
        with self._lock:
            scripted = self._script.popleft() if self._script else None
        reply = scripted or (self.hook(seen) if self.hook else None) or Reply()
        if reply.status == 200 and reply.body is None:
            normal = self.answer(seen)
            return Reply(normal.status, normal.body, reply.headers or normal.headers, reply.delay)
        return reply

    def answer(self, seen: Seen) -> Reply:
        """The dialect's answer: a 401 for a wrong key, a 404 for a wrong path, else vectors."""
        presented = seen.headers.get(
            "x-goog-api-key" if self.dialect == "gemini" else "authorization", ""
        )
        expected = "" if self.key is None else self.key
        if self.dialect != "gemini" and self.key is not None:
            expected = f"Bearer {self.key}"
        if self.key is not None and presented != expected:
            return Reply(401, {"error": {"message": f"Incorrect API key provided: {presented}"}})
        if not re.fullmatch(_PATHS[self.dialect], seen.path) or not isinstance(seen.body, dict):
            return Reply(404, {"error": {"message": f"no route {seen.path}"}})
        texts = seen.texts
        requested = self._requested_dims(seen.body)
        if requested is not None and self.dims_param == "refuse":
            return Reply(400, {"error": {"message": "this model does not support dimensions"}})
        dims = (requested if self.dims_param == "honour" else None) or self.dims
        vectors = [vector_for(text, dims) for text in texts]
        tokens = TOKENS_PER_TEXT * len(texts)
        if self.dialect == "gemini":
            return Reply(body={"embeddings": [{"values": vector} for vector in vectors]})
        if self.dialect == "ollama":
            return Reply(body={"embeddings": vectors, "prompt_eval_count": tokens})
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        data.reverse()  # the index, not the position, says which input a vector belongs to
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        if self.dialect == "voyage":
            usage = {"total_tokens": tokens}
        return Reply(body={"object": "list", "data": data, "usage": usage})

    def _requested_dims(self, body: dict[str, Any]) -> int | None:
        if self.dialect == "gemini":
            requests = body.get("requests") or [{}]
            value = requests[0].get("outputDimensionality")
        else:
            name = {"openai": "dimensions", "voyage": "output_dimension", "ollama": "dimensions"}
            value = body.get(name[self.dialect])
        return value if isinstance(value, int) else None

    def close(self) -> None:
        self.stopping.set()  # wakes handlers sleeping on a delay
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


_PATHS: dict[Dialect, str] = {
    "openai": r"/v1/embeddings",
    "voyage": r"/v1/embeddings",
    "gemini": r"/v1beta/models/[^/:]+:batchEmbedContents",
    "ollama": r"/api/embed",
}


class SilentServer:
    """A port that accepts connections (the kernel completes the handshake) but never
    answers: the hung server every client must give up on."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=16)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
