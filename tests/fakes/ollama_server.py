"""A fake Ollama: a real HTTP server on 127.0.0.1 speaking the parts of Ollama's API we use.

Ollama cannot run on the test machines, so tests talk to this instead, over real HTTP:

    with FakeOllama(models=["nomic-embed-text"]) as fake:
        embedder = OllamaEmbedder(host=fake.url, model="nomic-embed-text")
        ...
        assert fake.embed_requests[0].body["input"] == ["search_document: ..."]

Endpoints:
- `POST /api/embed` `{"model": str, "input": str | list[str]}` -> `{"model": ..., "embeddings": [[...]]}`.
  Vectors are 768-d hashed bags of words (the `search_query: ` / `search_document: ` prefixes are
  dropped first), L2-normalised, so texts sharing words are similar and the result is deterministic.
  A model that is not configured gets HTTP 404 with Ollama's own error body.
- `GET /api/tags` -> `{"models": [{"name": "nomic-embed-text:latest", ...}]}`.

Every request is recorded (`requests`, `embed_requests`), and `fail_next(n)` makes the next `n`
embed requests answer HTTP 503, to exercise retries.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

DIMENSION = 768
_PREFIXES = ("search_query: ", "search_document: ")
_WORD = re.compile(r"[a-z0-9]+")


def _full_name(model: str) -> str:
    return model if ":" in model else f"{model}:latest"


def embed_text(text: str, dimension: int = DIMENSION) -> list[float]:
    """The fake model: a signed, hashed bag of lowercase words, L2-normalised."""
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    vector = [0.0] * dimension
    for token in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "big") % dimension
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:  # no words at all: a fixed unit vector, as a real model never returns zeros
        vector[0], norm = 1.0, 1.0
    return [v / norm for v in vector]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any  # parsed JSON, or None when the request had no (valid) JSON body


class FakeOllama:
    """Runs the fake server in a background thread; use as a context manager."""

    def __init__(self, models: list[str] | tuple[str, ...] = ("nomic-embed-text",)) -> None:
        self.models = [_full_name(m) for m in models]
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures_left = 0
        self._failure_status = 503
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-ollama", daemon=True
        )

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> FakeOllama:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- test controls -----------------------------------------------------------------------
    def fail_next(self, count: int, status: int = 503) -> None:
        """Answer the next `count` requests to /api/embed with HTTP `status`."""
        with self._lock:
            self._failures_left, self._failure_status = count, status

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def embed_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/api/embed"]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    # -- request handling --------------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> int | None:
        """Store the request; return an injected failure status if one is due."""
        with self._lock:
            self._requests.append(request)
            if request.path == "/api/embed" and self._failures_left > 0:
                self._failures_left -= 1
                return self._failure_status
        return None

    def _embed(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return 400, {"error": "model is required"}
        model, inputs = body["model"], body.get("input", [])
        if _full_name(model) not in self.models:
            return 404, {"error": f'model "{model}" not found, try pulling it first'}
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return 400, {"error": "invalid input type"}
        return 200, {"model": model, "embeddings": [embed_text(t) for t in inputs]}

    def _tags(self) -> dict[str, Any]:
        return {"models": [{"name": m, "model": m} for m in self.models]}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake._record(RecordedRequest("GET", self.path, None))
                if self.path == "/api/tags":
                    self._reply(200, fake._tags())
                else:
                    self._reply(404, {"error": "not found"})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                failure = fake._record(RecordedRequest("POST", self.path, body))
                if failure is not None:
                    self._reply(failure, {"error": "injected failure"})
                elif self.path == "/api/embed":
                    self._reply(*fake._embed(body))
                else:
                    self._reply(404, {"error": "not found"})

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        return Handler
