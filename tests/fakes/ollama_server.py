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
- `POST /api/chat` `{"model", "messages", "stream": false, "format", "options"}` -> Ollama's
  non-streaming chat response (`{"model", "created_at", "message": {"role": "assistant",
  "content": ...}, "done": true, "done_reason": "stop", ...durations and token counts}`). By default
  the content is a deterministic extraction of the chunks in the last user message (marked up as
  zapomni's extractor sends them, `<chunk id="N">` ... `</chunk>`; without markers the whole message
  is chunk 1): capitalised word sequences are entities, and "X uses Y", "X moved to Y",
  "X lives in Y", "X works for Y", ... between two of them are relations (`default_extraction`), so
  the LLM path runs end to end. `script_chat([...])` queues answers to serve first, in order:
  `answer(...)` (any content, valid or not), `slow(delay_s)`, `http_error(500)`,
  `model_not_found()`, `recorded(name)` (a response body from tests/fakes/chat_answers/).
- `GET /api/tags` -> `{"models": [{"name": "nomic-embed-text:latest", ...}]}`.
- `POST /api/show` `{"model"}` -> 200 with the model's details, or 404 when it is not there;
  `POST /api/pull` `{"model", "stream": false}` -> `{"status": "success"}`, the model listed from then on
  (nothing is downloaded; `on_pull` hears of it: the container stand-in records it on disk).

Every request is recorded (`requests`, `embed_requests`, `chat_requests`), and `fail_next(n)`
makes the next `n` embed requests answer HTTP 503, to exercise retries.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
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


# -- the fake chat model --------------------------------------------------------------------------

CHAT_ANSWERS = Path(__file__).parent / "chat_answers"
_CHUNK = re.compile(r'<chunk id="(\d+)">\n(.*?)\n</chunk>', re.S)
_NAME = re.compile(r"\b[A-Z][\w+#-]*(?:\.[\w+#-]+)*(?:[ \t]+[A-Z][\w+#-]*(?:\.[\w+#-]+)*)*")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
# Capitalised only because they start a sentence: never (the start of) a name.
_NOT_NAMES = frozenset(
    "A After An And As At Before But By During For From He Her His I If In It Its My Next No Not Of On Or Our "
    "She Since So That The Their Then There These They This Those To Today We When While Yesterday You Your".split()
)
# The words between two names that make a relation, and its type.
_PREDICATES = {
    "uses": "USES",
    "moved to": "LIVES_IN",
    "lives in": "LIVES_IN",
    "works for": "WORKS_FOR",
    "works at": "WORKS_FOR",
    "depends on": "DEPENDS_ON",
    "is part of": "PART_OF",
    "created": "CREATED",
    "founded": "CREATED",
    "wrote": "CREATED",
    "built": "CREATED",
    "owns": "OWNS",
    "likes": "LIKES",
    "knows": "KNOWS",
    "joined": "MEMBER_OF",
    "is located in": "LOCATED_IN",
}
# What a relation says about the type of its subject and object.
_ROLES = {
    "LIVES_IN": ("PERSON", "PLACE"),
    "WORKS_FOR": ("PERSON", "ORG"),
    "MEMBER_OF": ("PERSON", "ORG"),
    "KNOWS": ("PERSON", "PERSON"),
    "USES": (None, "PRODUCT"),
    "DEPENDS_ON": (None, "PRODUCT"),
    "LOCATED_IN": (None, "PLACE"),
}


def chunks_in_prompt(prompt: str) -> dict[int, str]:
    """The numbered chunks of an extraction prompt; a prompt without chunk markers is chunk 1."""
    found = {int(number): text for number, text in _CHUNK.findall(prompt)}
    return found or {1: prompt}


def _names(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each capitalised word sequence, leading sentence words removed."""
    names = []
    for match in _NAME.finditer(sentence):
        words, start = match.group().split(), match.start()
        while words and words[0] in _NOT_NAMES:
            start = sentence.index(words[1], start + len(words[0])) if len(words) > 1 else match.end()
            words = words[1:]
        if words:
            names.append((start, match.end(), " ".join(words)))
    return names


def extract_chunk(number: int, text: str) -> dict[str, Any]:
    """The fake model's extraction of one chunk, in the shape the extraction schema asks for."""
    types: dict[str, str | None] = {}
    relations = []
    for sentence in (s.strip() for s in _SENTENCE_BREAK.split(text)):
        names = _names(sentence)
        for _start, _end, name in names:
            types.setdefault(name, None)
        for (_, end, subject), (start, _, object_) in itertools.pairwise(names):
            predicate = " ".join(sentence[end:start].split())
            relation_type = _PREDICATES.get(predicate.lower())
            if relation_type is None or subject == object_:
                continue
            subject_type, object_type = _ROLES.get(relation_type, (None, None))
            types[subject] = types[subject] or subject_type
            types[object_] = types[object_] or object_type
            relations.append(
                {
                    "evidence": sentence,
                    "subject": subject,
                    "predicate": predicate,
                    "object": object_,
                    "type": relation_type,
                    "confidence": 0.8,
                }
            )
    entities = [
        {"name": name, "type": type_ or "OTHER", "description": f"named in chunk {number}", "confidence": 0.9}
        for name, type_ in types.items()
    ]
    return {"chunk": number, "entities": entities, "relations": relations}


def default_extraction(prompt: str) -> dict[str, Any]:
    """The fake model's whole answer to an extraction prompt (the user message)."""
    return {"chunks": [extract_chunk(n, text) for n, text in sorted(chunks_in_prompt(prompt).items())]}


@dataclass(frozen=True)
class ChatReply:
    """One scripted answer to `POST /api/chat`."""

    content: str | None = None  # the assistant's message; None: the default extraction of the request
    status: int = 200
    error: str | None = None  # the error body of a non-200 answer; "{model}" becomes the requested model
    delay_s: float = 0.0  # wait this long before answering (a slow model)
    done_reason: str = "stop"
    body: dict[str, Any] | None = None  # a whole recorded response body, served as is


def answer(content: str | dict[str, Any] | list[Any], *, done_reason: str = "stop") -> ChatReply:
    """Answer with this content: a string as is (malformed on purpose or not), anything else as JSON."""
    return ChatReply(content=content if isinstance(content, str) else json.dumps(content), done_reason=done_reason)


def slow(delay_s: float, content: str | None = None) -> ChatReply:
    return ChatReply(content=content, delay_s=delay_s)


def http_error(status: int = 500, message: str = "llama runner process has terminated: signal: killed") -> ChatReply:
    return ChatReply(status=status, error=message)


def model_not_found() -> ChatReply:
    return ChatReply(status=404, error='model "{model}" not found, try pulling it first')


def load_recording(name: str) -> dict[str, Any]:
    """A recorded exchange from chat_answers/: `{"note", "chunks": [texts], "response": {...}}`."""
    answer: dict[str, Any] = json.loads((CHAT_ANSWERS / f"{name}.json").read_text(encoding="utf-8"))
    return answer


def recorded(name: str) -> ChatReply:
    return ChatReply(body=load_recording(name)["response"])


def chat_response(model: str, content: str, *, done_reason: str = "stop", prompt_chars: int = 0) -> dict[str, Any]:
    """Ollama's non-streaming /api/chat body; the durations and counts are plausible, not measured."""
    prompt_tokens, answer_tokens = max(1, prompt_chars // 4), max(1, len(content) // 4)
    return {
        "model": model,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "message": {"role": "assistant", "content": content},
        "done_reason": done_reason,
        "done": True,
        "total_duration": 1_000_000 + 40_000_000 * answer_tokens,
        "load_duration": 1_000_000,
        "prompt_eval_count": prompt_tokens,
        "prompt_eval_duration": 2_000_000 * prompt_tokens,
        "eval_count": answer_tokens,
        "eval_duration": 40_000_000 * answer_tokens,
    }


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any  # parsed JSON, or None when the request had no (valid) JSON body


class FakeOllama:
    """Runs the fake server in a background thread; use as a context manager."""

    def __init__(
        self, models: list[str] | tuple[str, ...] = ("nomic-embed-text",), *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.models = [_full_name(m) for m in models]
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures_left = 0
        self._failure_status = 503
        self._chat_script: deque[ChatReply] = deque()
        self._closing = threading.Event()  # releases slow answers when the server stops
        self._server = _QuietServer((host, port), self._handler_class())
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
        self._closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- test controls -----------------------------------------------------------------------
    def fail_next(self, count: int, status: int = 503) -> None:
        """Answer the next `count` requests to /api/embed with HTTP `status`."""
        with self._lock:
            self._failures_left, self._failure_status = count, status

    def script_chat(self, replies: Iterable[ChatReply | str | dict[str, Any]]) -> None:
        """Serve these to the next /api/chat requests, in order; then the default extraction again.
        A string or dict is shorthand for `answer(...)`."""
        queued = [r if isinstance(r, ChatReply) else answer(r) for r in replies]
        with self._lock:
            self._chat_script.extend(queued)

    @property
    def chat_script_left(self) -> int:
        with self._lock:
            return len(self._chat_script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def embed_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/api/embed"]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/api/chat"]

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

    def _chat(self, body: Any) -> tuple[int, dict[str, Any], float]:
        """(status, response body, delay before answering)."""
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return 400, {"error": "model is required"}, 0.0
        model, messages = body["model"], body.get("messages", [])
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return 400, {"error": "invalid message format"}, 0.0
        with self._lock:
            scripted = self._chat_script.popleft() if self._chat_script else None
        if scripted is None and _full_name(model) not in self.models:
            scripted = model_not_found()
        reply = scripted or ChatReply()
        if reply.status != 200:
            return reply.status, {"error": (reply.error or "error").replace("{model}", model)}, reply.delay_s
        if reply.body is not None:
            return 200, reply.body, reply.delay_s
        prompts = [m.get("content") for m in messages if m.get("role") == "user"]
        prompt = prompts[-1] if prompts and isinstance(prompts[-1], str) else ""
        content = reply.content if reply.content is not None else json.dumps(default_extraction(prompt))
        size = sum(len(str(m.get("content", ""))) for m in messages)
        return 200, chat_response(model, content, done_reason=reply.done_reason, prompt_chars=size), reply.delay_s

    def on_pull(self, model: str) -> None:
        """Called once a pull has added `model`; a subclass may keep it somewhere."""

    def _show(self, body: Any) -> tuple[int, dict[str, Any]]:
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str) or _full_name(model) not in self.models:
            return 404, {"error": f"model '{model}' not found"}
        return 200, {"modelfile": f"FROM {_full_name(model)}", "details": {"format": "stand-in"}}

    def _pull(self, body: Any) -> tuple[int, dict[str, Any]]:
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str) or not model:
            return 400, {"error": "model is required"}
        with self._lock:
            added = _full_name(model) not in self.models
            if added:
                self.models.append(_full_name(model))
        if added:
            self.on_pull(_full_name(model))
        return 200, {"status": "success"}

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
                elif self.path == "/api/show":
                    self._reply(*fake._show(body))
                elif self.path == "/api/pull":
                    self._reply(*fake._pull(body))
                elif self.path == "/api/chat":
                    status, payload, delay_s = fake._chat(body)
                    if delay_s > 0:
                        fake._closing.wait(delay_s)
                    self._reply(status, payload)
                else:
                    self._reply(404, {"error": "not found"})

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout), as real clients do

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        return Handler


class _QuietServer(ThreadingHTTPServer):
    """A client that timed out and hung up is normal here, not a traceback on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            return
        super().handle_error(request, client_address)
