"""A large add queued behind a folder ingest: how long does its job wait, one job at a time and two at once?

Drives `zapomni serve` (embedded defaults) with the official MCP client: `ingest_path` on a folder of Markdown
files made from SciFact abstracts (150 files of ~8 KB by default), then, once the ingest runs, a ~1 MB
`add_memory` (answered `indexing`, embedded by a job). Measured for ZAPOMNI_JOB_SLOTS=1 (how every server ran
jobs before issue 38) and 2 (the default now): how long the add's job waited before it started, how long
after the add it was searchable, and how long the ingest took.

Also measured: when every job the two queued (their entity extraction) is done.

Run: `.venv/bin/python -m bench.job_fairness` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import DATA_DIR, call, load_scifact
from bench.large_adds import document, server, wait_job
from zapomni_core.logs import configure_logging

RESULTS = Path(__file__).resolve().parent / "results"


def write_folder(folder: Path, abstracts: Sequence[str], files: int, file_kb: int) -> None:
    folder.mkdir(parents=True)
    per_file = len(abstracts) // files
    for i in range(files):
        text = document(abstracts[i * per_file : (i + 1) * per_file], file_kb * 1024)
        (folder / f"note-{i:03}.md").write_text(f"# Note {i}\n\n{text}\n")


def seconds_between(start: str, end: str) -> float:
    return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 1)


async def run_once(slots: int, folder: Path, large: str, store: Path) -> dict[str, Any]:
    variables = {"ZAPOMNI_JOB_SLOTS": str(slots), "ZAPOMNI_ALLOWED_ROOTS": str(folder.parent)}
    async with server(store, **variables) as session:
        queued, _ = await call(session, "ingest_path", {"path": str(folder)})
        began = time.perf_counter()
        while (await call(session, "job_status", {"job_id": queued["job_id"]}))[0]["state"] == "pending":
            await asyncio.sleep(0.2)
        added, _ = await call(session, "add_memory", {"text": large})
        assert added["status"] == "indexing", added
        asked = time.perf_counter()
        job = await wait_job(session, added["job_id"])
        searchable_s = time.perf_counter() - asked
        ingest = await wait_job(session, queued["job_id"])
        # The jobs these two queued (entity extraction of what they stored) run in the other slot meanwhile.
        while any(job["state"] in ("pending", "running") for job in (await call(session, "list_jobs", {}))[0]["jobs"]):
            await asyncio.sleep(1)
        all_done_s = time.perf_counter() - began
    return {
        "slots": slots,
        "add_waited_s": seconds_between(job["created_at"], job["started_at"]),
        "add_searchable_s": round(searchable_s, 1),
        "ingest_s": seconds_between(ingest["started_at"], ingest["finished_at"]),
        "ingest_files": ingest["counts"]["added"],
        "all_jobs_done_s": round(all_done_s, 1),
    }


async def run(data_dir: Path, files: int, file_kb: int, size_kb: int, workdir: Path) -> dict[str, Any]:
    data = load_scifact(data_dir, None)
    abstracts = [t for t in data.doc_texts if len(t) > 200]
    half = len(abstracts) // 2
    write_folder(workdir / "files" / "notes", abstracts[:half], files, file_kb)
    large = document(abstracts[half:], size_kb * 1024)
    runs = [await run_once(slots, workdir / "files" / "notes", large, workdir / f"store-{slots}") for slots in (1, 2)]
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": files,
        "folder_bytes": sum(p.stat().st_size for p in (workdir / "files" / "notes").iterdir()),
        "large_add_bytes": len(large.encode()),
        "runs": runs,
    }


def render(report: dict[str, Any]) -> str:
    rows = [
        f"| {r['slots']} | {r['add_waited_s']} | {r['add_searchable_s']} | {r['ingest_s']} | {r['all_jobs_done_s']} |"
        for r in report["runs"]
    ]
    return "\n".join(
        [
            "# A large add queued behind a folder ingest",
            "",
            f"Measured {report['measured_at']} on this machine (2 cores), `zapomni serve` on the embedded defaults, "
            "driven by the official MCP client. Source: `bench/job_fairness.py`.",
            "",
            f"`ingest_path` on {report['files']} Markdown files ({report['folder_bytes'] / 1e6:.1f} MB), then, once it "
            f"runs, a {report['large_add_bytes'] / 1e6:.2f} MB `add_memory`.",
            "",
            "| jobs at once (ZAPOMNI_JOB_SLOTS) | the add's job waited, s | the add searchable after, s "
            "| the ingest took, s | every job done after, s |",
            "|---|---|---|---|---|",
            *rows,
            "",
            "Every job: the two, and the entity extraction each queued for what it stored (ZAPOMNI_GRAPH_AUTO). "
            "One job at a time, the add waits for the whole ingest; two at once, it starts at once and the ingest "
            "shares the machine with it and then with the extraction of the large add.",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="BEIR SciFact folder")
    parser.add_argument("--files", type=int, default=150, help="files in the ingested folder")
    parser.add_argument("--file-kb", type=int, default=8, help="each file's size")
    parser.add_argument("--size-kb", type=int, default=1024, help="the large add's size")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where job_fairness.md/.json go")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    if not (args.data_dir / "corpus.jsonl").exists():
        print(f"SciFact not found in {args.data_dir} (see ../shared/data/README.md)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="zb-fair-", dir="/tmp"))
    try:
        report = asyncio.run(run(args.data_dir, args.files, args.file_kb, args.size_kb, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "job_fairness.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "job_fairness.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
