"""What the bench smoke tests share: a bench run as `python -m` would run it, and tiny corpora in the layouts the
benches read."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.cli_in_process import logging_put_back

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class BenchRun:
    returncode: int
    stdout: str
    stderr: str


def run_bench(module: str, *args: str) -> BenchRun:
    """`python -m MODULE ARGS`, in this process: its `main` with `args` (or in `sys.argv`), its output captured.

    In process because a subprocess paid 3-6 s of imports (numpy, onnxruntime, spaCy, the MCP SDK) that the test
    worker has already paid; what a bench starts itself (servers, browsers) stays a process of its own. A bench that
    hangs is stopped by pytest's timeout (pyproject.toml) with its stacks shown."""
    main = importlib.import_module(module).main

    def run() -> int:
        try:
            code = main(list(args)) if inspect.signature(main).parameters else main()
        except SystemExit as exc:  # argparse's refusals (2), `sys.exit(main())`
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        return code or 0

    out, err = io.StringIO(), io.StringIO()
    # On a thread of its own: a bench calls asyncio.run, which an async test's running loop would refuse.
    with (
        logging_put_back(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _argv(module, args),
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench") as pool,
    ):
        code = pool.submit(run).result()
    return BenchRun(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _argv(module: str, args: tuple[str, ...]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = [module, *args]
    try:
        yield
    finally:
        sys.argv = saved


def write_beir(folder: Path) -> None:
    """A tiny corpus in BEIR layout: each query has one relevant document sharing its key words."""
    topics = ["volcano lava eruption", "insulin glucose diabetes", "tidal ocean moon", "neuron synapse brain"]
    docs = [
        {"_id": f"d{i}", "title": f"Study {i}", "text": f"A report on {topics[i % 4]} number {i}. More detail follows."}
        for i in range(40)
    ]
    queries = [{"_id": f"q{i}", "text": f"what about {topics[i % 4]} number {i}"} for i in range(12)]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    for split, ids in (("test", range(0, 8)), ("train", range(8, 12))):
        rows = ["query-id\tcorpus-id\tscore", *(f"q{i}\td{i}\t1" for i in ids)]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(rows) + "\n")


def write_locomo(path: Path) -> None:
    """Two tiny conversations in LoCoMo's format; the last question is of a category left out."""
    lines = [
        "I adopted a cat named Milo.",
        "My sister marries in June.",
        "We hiked in the Alps.",
        "I'm allergic to peanuts.",
    ]
    turns = [{"speaker": "A", "dia_id": f"D1:{i + 1}", "text": t} for i, t in enumerate(lines)]
    qa = [
        {"question": "What is the cat called?", "answer": "Milo", "evidence": ["D1:1"], "category": 1},
        {"question": "Where did they go hiking?", "answer": "Alps", "evidence": ["D1:3"], "category": 4},
        {"question": "Any allergies?", "answer": "peanuts", "evidence": ["D1:4"], "category": 5},
    ]
    conversation = {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1 May 2023", "session_1": turns}
    path.write_text(json.dumps([{"sample_id": f"c{i}", "conversation": conversation, "qa": qa} for i in range(2)]))


def write_small_locomo(path: Path) -> None:
    """One small conversation in LoCoMo's format whose turns name shared people and places; questions of
    categories 1-4 and one of category 5 (left out)."""
    sessions = {
        "1:56 pm on 8 May, 2023": [
            ("John", "I visited Rome with my sister Anna last summer."),
            ("Maria", "Rome is lovely! Did you see the Colosseum?"),
            ("John", "Yes, and Anna loved the Vatican Museums."),
        ],
        "10:00 am on 20 June, 2023": [
            ("Maria", "I started a new job at Siemens in Munich."),
            ("John", "Congratulations! Munich has great beer gardens."),
            ("Maria", "My colleague Oliver takes me to one every Friday."),
            ("John", "I adopted a cat named Milo."),
        ],
    }
    conversation: dict[str, object] = {"speaker_a": "John", "speaker_b": "Maria"}
    for number, (date, turns) in enumerate(sessions.items(), start=1):
        conversation[f"session_{number}_date_time"] = date
        conversation[f"session_{number}"] = [
            {"speaker": speaker, "dia_id": f"D{number}:{i + 1}", "text": text}
            for i, (speaker, text) in enumerate(turns)
        ]
    qa = [
        {"question": "Which city did John visit with Anna?", "evidence": ["D1:1"], "category": 4},
        {"question": "Where does Maria work, and who takes her out?", "evidence": ["D2:1", "D2:3"], "category": 1},
        {"question": "When did Maria start her new job?", "evidence": ["D2:1"], "category": 2},
        {"question": "Would Anna enjoy a museum trip?", "evidence": ["D1:3"], "category": 3},
        {"question": "What is the dog called?", "evidence": [], "category": 5},
    ]
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": qa}]))
