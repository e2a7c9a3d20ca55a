"""The `ollama` command of the ollama/ollama stand-in image (tests/containers/standins/ollama.Containerfile).

Only what the compose stack uses of the real CLI, against the same HTTP API:

    ollama serve          the fake server (tests/fakes/ollama_server.py) on $OLLAMA_HOST (0.0.0.0:11434);
                          the models it has are those recorded under $OLLAMA_MODELS by earlier pulls
    ollama list           the models, as `GET /api/tags`; exit 1 when no server answers
    ollama show MODEL     exit 0 when the server has MODEL, 1 when not
    ollama pull MODEL     `POST /api/pull` (nothing is downloaded: the stand-in has no weights)

A stand-in for the appliance test, never a model server.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.fakes.ollama_server import FakeOllama


def _address() -> tuple[str, int]:
    value = os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434"
    value = value.split("://", 1)[-1].rstrip("/")
    host, _, port = value.rpartition(":")
    return (host or "127.0.0.1"), int(port or 11434)


def _models_dir() -> Path:
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models") / "manifests"


class RecordingOllama(FakeOllama):
    """The fake server whose pulled models are written to $OLLAMA_MODELS, one empty file each."""

    def on_pull(self, model: str) -> None:
        _models_dir().mkdir(parents=True, exist_ok=True)
        (_models_dir() / model.replace("/", "_")).touch()


def serve() -> int:
    host, port = _address()
    directory = _models_dir()
    models = sorted(path.name for path in directory.iterdir()) if directory.is_dir() else []
    server = RecordingOllama(models, host=host, port=port)
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    with server:
        print(f"ollama stand-in listening on {host}:{port} with {models or 'no models'}", file=sys.stderr, flush=True)
        stopped.wait()
    return 0


def _call(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    host, port = _address()
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://{host}:{port}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        reply: dict[str, Any] = json.loads(response.read() or b"{}")
    return reply


def main(argv: list[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("serve", [])
    if command == "serve":
        return serve()
    try:
        if command == "list":
            print("NAME")
            for model in _call("GET", "/api/tags")["models"]:
                print(model["name"])
        elif command == "show" and args:
            _call("POST", "/api/show", {"model": args[0]})
        elif command == "pull" and args:
            print(_call("POST", "/api/pull", {"model": args[0], "stream": False})["status"])
        else:
            print(f"ollama stand-in: unsupported command {argv}", file=sys.stderr)
            return 2
    except (OSError, urllib.error.HTTPError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
