"""The keyword leg on a real search engine (issue 40): tantivy beside the hand-written BM25 index, side by side.

Both engines index the same terms. Zapomni's analyzer (lowercase words, Lucene's English stopwords plus the
question words, Snowball English stems) runs once per text, and tantivy (the Rust engine's official Python
bindings) indexes those terms joined by spaces with its whitespace tokenizer: what is compared is the engines,
not two tokenisers. The hand-written index is the app's former one (`bench.handwritten_bm25`, decision 0044), saved
as one file as the server kept it beside the embedded database; tantivy keeps its own directory of
segments, committed atomically.

Measured, each (engine, size) in a process of its own so that memory and open times are its own:
- quality: SciFact (5,183 abstracts as title + text, 300 test claims) nDCG@10 and recall@100 of the engine alone;
- at each size (10K, 100K, 300K, 1M chunks: two SciFact sentences each, the texts `bench.scale` stores): the
  build, query p50/p95 over 300 claims at k = 40 (the leg's depth for a limit of 20), 200 single adds each made
  visible before the next (the interactive case: an add, then a search that must find it), a batch of 1,000
  adds made visible at once (a catch-up), 200 single deletes each made visible, the process's RSS growth, the
  saved index on disk, and the open time of a fresh process (open + first query);
- `tantivy_stored` (not run unless named): tantivy also keeping what a search hit shows, the chunk's text and its
  memory's fields, so that it could answer without the database (decision 0045, "Not done", step 2); its queries
  read those fields back for each hit, as such an answer would;
- a crash mid-write: a child process adds chunks in a loop (tantivy: commit every 500; hand-written: save every
  500) and is killed with SIGKILL; the parent opens what is on disk and searches it.

Run: `.venv/bin/python -m bench.keyword_engines [--sizes 10000 100000 300000 1000000]`; results in
bench/results/keyword_engines.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from bench.common import DATA_DIR, commit, load_scifact, memory_texts, queries, sentences, summary_ms, write_results
from bench.handwritten_bm25 import Bm25Index, load_state, save_state
from bench.metrics import mean_ndcg, recall_at_100
from zapomni_core.search.analyzer import Analyzer

RESULTS = Path(__file__).resolve().parent / "results"
ENGINES = ("handwritten", "tantivy")
STORED = "tantivy_stored"
DEPTH = 40  # the keyword leg's depth for a search of limit 20 (SearchPipeline: 2 x limit)
SINGLE = 200
BATCH = 1_000
_ANALYZER = Analyzer()


Item = tuple[str, list[str], str]  # a chunk's id, its terms and its text


class Engine(Protocol):
    def add(self, items: Sequence[Item]) -> None: ...
    def visible(self) -> None: ...  # what was added or removed is searched from now on
    def remove(self, chunk_id: str) -> None: ...
    def search(self, terms: list[str], k: int) -> list[str]: ...
    def save(self) -> None: ...


class Handwritten:
    """The app's index: in memory, saved as one file (format of `keyword_file`)."""

    def __init__(self, directory: Path, index: Bm25Index | None = None) -> None:
        self._path = directory / "keyword.npz"
        self._index = index or Bm25Index(window=0)

    @classmethod
    def open(cls, directory: Path) -> Handwritten:
        return cls(directory, Bm25Index.from_state(load_state(directory / "keyword.npz")))

    def add(self, items: Sequence[Item]) -> None:
        for chunk_id, terms, _text in items:
            counts: dict[str, int] = {}
            for term in terms:
                counts[term] = counts.get(term, 0) + 1
            self._index.add(chunk_id, list(counts), list(counts.values()), len(terms))

    def visible(self) -> None:
        pass  # in memory: searched at once

    def remove(self, chunk_id: str) -> None:
        self._index.remove(chunk_id)

    def search(self, terms: list[str], k: int) -> list[str]:
        return [chunk_id for chunk_id, _score in self._index.search(terms, k)]

    def save(self) -> None:
        save_state(self._path, self._index.state())


class Tantivy:
    """tantivy: segments on disk, a commit makes what was added or deleted visible, atomically."""

    stored = False  # what a hit shows kept too (`tantivy_stored`)

    def __init__(self, directory: Path, *, create: bool = True) -> None:
        import tantivy

        self._t = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        if self.stored:  # kept, not searched
            builder.add_bytes_field("text", stored=True, indexed=False)
            builder.add_bytes_field("memory", stored=True, indexed=False)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema, path=str(directory), reuse=not create)
        self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)
        self._index.reload()

    @classmethod
    def open(cls, directory: Path) -> Tantivy:
        return cls(directory, create=False)

    def add(self, items: Sequence[Item]) -> None:
        for chunk_id, terms, text in items:
            shown = {"text": text.encode(), "memory": _memory_fields(chunk_id)} if self.stored else {}
            self._writer.add_document(self._t.Document(id=chunk_id, body=" ".join(terms), **shown))

    def visible(self) -> None:
        self._writer.commit()
        self._index.reload()

    def remove(self, chunk_id: str) -> None:
        self._writer.delete_documents_by_term("id", chunk_id)

    def search(self, terms: list[str], k: int) -> list[str]:
        unique = list(dict.fromkeys(terms))
        if not unique:
            return []
        query = self._t.Query.boolean_query(
            [(self._t.Occur.Should, self._t.Query.term_query(self._schema, "body", term)) for term in unique]
        )
        searcher = self._index.searcher()
        hits = searcher.search(query, limit=k).hits
        docs = [searcher.doc(address) for _score, address in hits]
        if self.stored:  # what an answer without the database would read of each hit
            _shown = [(json.loads(doc["memory"][0]), bytes(doc["text"][0]).decode()) for doc in docs]
        return [str(doc["id"][0]) for doc in docs]

    def save(self) -> None:
        self.visible()  # a commit is tantivy's save: segments and their metadata, fsynced


class TantivyStored(Tantivy):
    stored = True


def _memory_fields(chunk_id: str) -> bytes:
    """What a hit shows of its memory, at the size such a record has (one-chunk notes: no tags, source, speaker)."""
    return json.dumps({
        "memory_id": f"00000000-0000-4000-8000-{chunk_id[-12:]:0>12}", "tags": [], "source": None,
        "date": "2024-05-01T00:00:00+00:00", "created_at": 1714521600.0, "updated_at": 1714521600.0,
        "chunk_count": 1, "kind": "note", "speaker": None, "thread": None,
    }).encode()  # fmt: skip


def engine(name: str, directory: Path, *, open_existing: bool = False) -> Engine:
    if name in ("tantivy", STORED):
        kind = TantivyStored if name == STORED else Tantivy
        return kind.open(directory) if open_existing else kind(directory)
    return Handwritten.open(directory) if open_existing else Handwritten(directory)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk_mb(directory: Path) -> float:
    return round(sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 1e6, 1)


def analysed(texts: Sequence[str], prefix: str) -> list[Item]:
    return [(f"{prefix}{i}", _ANALYZER.terms(text), text) for i, text in enumerate(texts)]


# -- one engine in one process --------------------------------------------------------------------------------


def quality(name: str, limit_docs: int | None) -> dict[str, float]:
    scifact = load_scifact(DATA_DIR, limit_docs)
    with tempfile.TemporaryDirectory(prefix="kw-quality-") as tmp:
        index = engine(name, Path(tmp))
        documents = zip(scifact.doc_ids, scifact.doc_texts, strict=True)
        index.add([(doc_id, _ANALYZER.terms(text), text) for doc_id, text in documents])
        index.visible()
        rankings = [index.search(_ANALYZER.query_terms(q), 100) for q in scifact.query_texts]
    return {
        "ndcg@10": round(mean_ndcg(rankings, scifact.query_ids, scifact.qrels), 4),
        "recall@100": round(recall_at_100(rankings, scifact.query_ids, scifact.qrels), 4),
    }


def at_size(name: str, size: int, directory: Path) -> dict[str, Any]:
    pool = sentences(DATA_DIR)
    texts = memory_texts(pool, size + BATCH + SINGLE, seed=size)
    asked = [_ANALYZER.query_terms(q) for q in queries(DATA_DIR, pool, 300)]
    items = analysed(texts[:size], "c")
    index = engine(name, directory)
    started = time.perf_counter()
    for start in range(0, size, 50_000):
        index.add(items[start : start + 50_000])
    index.visible()
    build_s = time.perf_counter() - started
    del items
    out: dict[str, Any] = {"build_s": round(build_s, 1)}
    for terms in asked[:20]:  # warm
        index.search(terms, DEPTH)
    out["query_ms"] = summary_ms([timed(lambda t=terms: index.search(t, DEPTH)) for terms in asked])
    singles = analysed(texts[size : size + SINGLE], "s")
    out["add_visible_ms"] = summary_ms([timed(lambda item=item: _add(index, [item])) for item in singles])
    batch = analysed(texts[size + SINGLE : size + SINGLE + BATCH], "b")
    out["add_1000_visible_ms"] = round(timed(lambda: _add(index, batch)), 1)
    out["delete_visible_ms"] = summary_ms(
        [timed(lambda chunk_id=chunk_id: _remove(index, chunk_id)) for chunk_id, _, _ in singles]
    )
    found = index.search(singles[0][1], DEPTH)
    out["deleted_never_found"] = singles[0][0] not in found
    out["query_after_writes_ms"] = summary_ms([timed(lambda t=terms: index.search(t, DEPTH)) for terms in asked])
    out["save_s"] = round(timed(index.save) / 1000, 2)
    out["disk_mb"] = disk_mb(directory)
    return out


def _add(index: Engine, items: Sequence[Item]) -> None:
    index.add(items)
    index.visible()


def _remove(index: Engine, chunk_id: str) -> None:
    index.remove(chunk_id)
    index.visible()


def opened(name: str, directory: Path) -> dict[str, Any]:
    """A fresh process: open what the last one saved, answer a first query."""
    terms = _ANALYZER.query_terms(queries(DATA_DIR, ["cell biology"], 1)[0])  # the first claim, no corpus read
    before = rss_mb()
    started = time.perf_counter()
    index = engine(name, directory, open_existing=True)
    open_ms = (time.perf_counter() - started) * 1000
    first_ms = timed(lambda: index.search(terms, DEPTH))
    return {
        "open_ms": round(open_ms, 1),
        "first_query_ms": round(first_ms, 1),
        "rss_open_mb": round(rss_mb() - before, 1),
    }


def writer_until_killed(name: str, directory: Path) -> None:
    """Add chunks for ever, making them visible (tantivy: a commit; hand-written: a save) every 500."""
    pool = sentences(DATA_DIR)
    texts = memory_texts(pool, 20_000, seed=3)
    index = engine(name, directory)
    for start in range(0, len(texts), 500):
        index.add(analysed(texts[start : start + 500], f"k{start}-"))
        index.save()
        print(start + 500, flush=True)


def crash(name: str, runs: int) -> dict[str, Any]:
    """Kill a writer mid-write (SIGKILL, at points after a few saves), open what is on disk, search it."""
    outcomes: list[dict[str, Any]] = []
    for attempt in range(runs):
        with tempfile.TemporaryDirectory(prefix="kw-crash-") as tmp:
            child = subprocess.Popen(
                [sys.executable, "-m", "bench.keyword_engines", "--writer", name, tmp],
                stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert child.stdout is not None
            saved = 0
            for line in child.stdout:
                saved = int(line)
                if saved >= 1500 + 500 * attempt:
                    time.sleep(0.05 * attempt)  # somewhere inside the next batch's save or commit
                    break
            child.send_signal(signal.SIGKILL)
            child.wait()
            try:
                index = engine(name, Path(tmp), open_existing=True)
                found = len(index.search(["cell"], 10_000))
                outcomes.append({"killed_after": saved, "opened": True, "hits_for_cell": found})
            except Exception as exc:  # what a reader of a broken index sees is the finding
                outcomes.append({"killed_after": saved, "opened": False, "error": f"{type(exc).__name__}: {exc}"[:200]})
    return {"runs": outcomes, "all_opened": all(o["opened"] for o in outcomes)}


def timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


# -- driver ----------------------------------------------------------------------------------------------------


def child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.keyword_engines", "--child", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"keyword_engines {args} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(results: dict[str, Any]) -> str:
    lines = [
        "# The keyword leg: tantivy beside the hand-written BM25 index",
        "",
        f"- date: {results['date']}; commit {results['commit']}; produced by `python -m bench.keyword_engines`; "
        f"tantivy {results['tantivy_version']}; {os.cpu_count()} cores.",
        "- both index the analyzer's terms (stopwords out, Snowball English stems); k = 40; times in ms unless said.",
        "",
        "## SciFact (5,183 abstracts, 300 test claims), each engine alone",
        "",
        "| engine | nDCG@10 | recall@100 |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {q['ndcg@10']} | {q['recall@100']} |" for name, q in results["quality"].items()]
    lines += [
        "",
        "## At each size",
        "",
        "| chunks | engine | build s | query p50/p95 | add+visible p50/p95 | 1,000 adds+visible | delete+visible "
        "p50/p95 | query after writes p95 | save s | disk MB | open ms | first query ms | RSS to open MB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["sizes"]:
        lines.append(
            f"| {row['size']:,} | {row['engine']} | {row['build_s']} "
            f"| {row['query_ms']['p50']}/{row['query_ms']['p95']} "
            f"| {row['add_visible_ms']['p50']}/{row['add_visible_ms']['p95']} | {row['add_1000_visible_ms']} "
            f"| {row['delete_visible_ms']['p50']}/{row['delete_visible_ms']['p95']} "
            f"| {row['query_after_writes_ms']['p95']} | {row['save_s']} | {row['disk_mb']} "
            f"| {row['open_ms']} | {row['first_query_ms']} | {row['rss_open_mb']} |"
        )
    lines += ["", "## Killed mid-write (SIGKILL), then opened", ""]
    for name, outcome in results["crash"].items():
        lines.append(f"- {name}: all opened: {outcome['all_opened']}; {json.dumps(outcome['runs'])}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000])
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=[*ENGINES, STORED])
    parser.add_argument("--crash-runs", type=int, default=5, help="writers killed per engine")
    parser.add_argument("--limit-docs", type=int, default=None, help="SciFact documents indexed (all by default)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--writer", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=RESULTS / "keyword_engines.json")
    parser.add_argument("--output", type=Path, default=RESULTS / "keyword_engines.md")
    args = parser.parse_args(argv)
    if args.writer:
        writer_until_killed(args.writer[0], Path(args.writer[1]))
        return 0
    if args.child:
        kind, name, *rest = args.child
        if kind == "quality":
            result: Any = quality(name, int(rest[0]) if rest else None)
        elif kind == "size":
            result = at_size(name, int(rest[0]), Path(rest[1]))
        else:
            result = opened(name, Path(rest[0]))
        print(json.dumps(result))
        return 0
    import tantivy

    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "tantivy_version": getattr(tantivy, "__version__", "?"),
        "quality": {
            name: child(["quality", name, *([str(args.limit_docs)] if args.limit_docs else [])])
            for name in args.engines
        },
        "sizes": [],
        "crash": {name: crash(name, args.crash_runs) for name in args.engines},
    }
    for size in args.sizes:
        for name in args.engines:
            directory = Path(tempfile.mkdtemp(prefix=f"kw-{name}-{size}-"))
            try:
                row = {"size": size, "engine": name, **child(["size", name, str(size), str(directory)])}
                row |= child(["open", name, str(directory)])
            finally:
                shutil.rmtree(directory, ignore_errors=True)
            results["sizes"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    write_results(report(results), results, args.output, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
