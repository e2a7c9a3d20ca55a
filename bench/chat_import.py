"""A 10,000-message chat export imported (`--from chatgpt`) against the bare embedder on the same texts.

The messages are real conversation: LoCoMo's development half (../shared/data/locomo-dev), each message two
consecutive turns joined (its ~2,800 turns alone would repeat, and a repeated text is stored once), written as a
ChatGPT export (bench/chat_export.py: 50 conversations of 200 messages, user and assistant in turn).
Measured, in one process, on a fresh store with the product defaults (appendfsync always):
(a) the import: `ZapomniCore.transfer.import_source`, reading the export to the last memory written, with the
    time inside the embedder recorded (every text the import embeds is kept);
(b) the bare embedder: `OnnxMiniLMEmbedder.embed_sync` on exactly the texts the import embedded (the speaker
    and date it indexes with each message), before and after (a); the ceiling.
Reported: messages per second of each, the import's share of the bare rate (issue 42 asks for at least 85 %),
and where the import's time went: reading the export (parsing and chunking), embedding (the database writes a
batch while the next is embedded), and the rest (validation, the last batch's writes).

Run: `.venv/bin/python -m bench.chat_import` (about 3 minutes on 2 cores); `--messages 400` for a smoke run.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.chat_export import write_chatgpt_export
from bench.common import commit, in_scratch_dir, write_results
from bench.locomo import LOCOMO, load_locomo
from zapomni_core import ImportSourceRequest, Settings, open_core
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.kernel.writing import WritePipeline
from zapomni_core.logs import configure_logging
from zapomni_core.runtime import chunker_for
from zapomni_core.transfer.format import EmbedderInfo
from zapomni_core.transfer.sources import IMPORT_FORMATS, LineWriter, ReadOptions

RESULTS = Path(__file__).resolve().parent / "results"
MESSAGES = 10_000
TARGET_SHARE = 0.85


def messages(path: Path, count: int) -> list[str]:
    """`count` distinct messages of real conversation: consecutive LoCoMo turns, two by two, cycled with a shift."""
    if not path.exists():
        raise SystemExit(f"bench.chat_import needs LoCoMo's development half at {path} (../shared/data/README.md)")
    turns = [turn.text for conversation in load_locomo(path) for turn in conversation.turns]
    out: list[str] = []
    seen: set[str] = set()
    shift = 1
    while len(out) < count:
        for i in range(0, len(turns) - shift):
            text = f"{turns[i]} {turns[i + shift]}"
            if text not in seen:
                seen.add(text)
                out.append(text)
                if len(out) == count:
                    break
        shift += 1
    return out


class EmbedSpy:
    """Records the texts the import embeds and the time spent embedding them (wrapping WritePipeline.embed)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.seconds = 0.0
        self._embed = WritePipeline.embed

    def __enter__(self) -> EmbedSpy:
        spy, original = self, self._embed

        async def embed(pipeline: WritePipeline, pieces: Sequence[str], *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(pipeline, pieces, *args, **kwargs)
            finally:
                spy.seconds += time.perf_counter() - started
                spy.texts.extend(pieces)

        WritePipeline.embed = embed  # type: ignore[method-assign,assignment]  # a measuring wrapper, for this run
        return self

    def __exit__(self, *_: object) -> None:
        WritePipeline.embed = self._embed  # type: ignore[method-assign]  # put back


def bare_rate(embedder: OnnxMiniLMEmbedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed_sync(texts)
    return len(texts) / (time.perf_counter() - started)


def read_seconds(export: Path, settings: Settings, embedder: OnnxMiniLMEmbedder) -> float:
    """Reading the export into an import's lines alone: parsing and chunking, no database, no embedding."""
    chunker = chunker_for(embedder, settings)
    started = time.perf_counter()
    writer = LineWriter(
        io.BytesIO(), format="chatgpt", workspace="default", embedder=EmbedderInfo("x", 384), pieces=chunker.split
    )
    IMPORT_FORMATS["chatgpt"].read(export, writer, ReadOptions())
    writer.finish()
    return time.perf_counter() - started


async def run(count: int, workdir: Path) -> dict[str, Any]:
    export = write_chatgpt_export(workdir / "export", messages(LOCOMO, count))
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=workdir / "store", LOG_LEVEL="WARNING")
    embedder = OnnxMiniLMEmbedder()
    embedder.embed_sync(["warm up the model"])
    reading_s = read_seconds(export, settings, embedder)
    async with open_core(settings, background_jobs=False) as (core, _info):
        await core.transfer.import_source(ImportSourceRequest(format="chatgpt", path=str(export), dry_run=True))
        with EmbedSpy() as spy:
            started = time.perf_counter()
            done = await core.transfer.import_source(ImportSourceRequest(format="chatgpt", path=str(export)))
            import_s = time.perf_counter() - started
    assert done.report is not None and done.report.imported == count, done
    before = bare_rate(embedder, spy.texts)
    after = bare_rate(embedder, spy.texts)
    bare = (before + after) / 2
    imported = count / import_s
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "messages": count,
        "export_mb": round(export.stat().st_size / 1e6, 2),
        "embedded_texts": len(spy.texts),
        "import_s": round(import_s, 2),
        "import_per_s": round(imported, 1),
        "bare_per_s": round(bare, 1),
        "bare_before_per_s": round(before, 1),
        "bare_after_per_s": round(after, 1),
        "share_of_bare": round(imported / bare, 3),
        "reading_s": round(reading_s, 2),
        "embedding_s": round(spy.seconds, 2),
        "rest_s": round(import_s - reading_s - spy.seconds, 2),
    }


def render(r: dict[str, Any]) -> str:
    met = "met" if r["share_of_bare"] >= TARGET_SHARE else "NOT met"
    return f"""# A chat export imported against the bare embedder

`python -m bench.chat_import` at {r["commit"]}, {r["when"]}: {r["messages"]:,} messages of LoCoMo's development
half as a ChatGPT export ({r["export_mb"]} MB), imported with `--from chatgpt` into a fresh store (embedded
defaults, appendfsync always), in one process on this 2-core machine.

| | messages/s |
|---|---:|
| bare embedder on the same {r["embedded_texts"]:,} texts, mean of before and after the import | {r["bare_per_s"]:,} |
| (before / after) | {r["bare_before_per_s"]:,} / {r["bare_after_per_s"]:,} |
| the import, end to end | {r["import_per_s"]:,} |
| share of the bare rate | **{r["share_of_bare"]:.1%}** (target {TARGET_SHARE:.0%}: {met}) |

Where the import's {r["import_s"]} s went:

| part | s | share |
|---|---:|---:|
| reading the export (parsing, chunking) | {r["reading_s"]} | {r["reading_s"] / r["import_s"]:.1%} |
| embedding (a batch is written meanwhile) | {r["embedding_s"]} | {r["embedding_s"] / r["import_s"]:.1%} |
| the rest (validation, the last batch's writes) | {r["rest_s"]} | {r["rest_s"] / r["import_s"]:.1%} |
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--output", type=Path, default=RESULTS / "chat_import.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "chat_import.json")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    results = in_scratch_dir("zb-import-", lambda workdir: run(args.messages, workdir))
    write_results(render(results), results, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
