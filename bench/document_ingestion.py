"""ingest_path: document ingestion throughput on real prose, and how much of it is parsing.

The corpus is written into a temporary directory from this repository's own prose (README.md and
docs/decisions/*.md, about 150 KB):
- PDFs: one multi-page A4 PDF per source text (reportlab, Helvetica 10 pt, 56 lines a page; characters
  outside Latin-1 transliterated), `--pdfs N` of them (cycling through the sources past 15);
- Markdown: the docs/decisions files as they are;
- DOCX: three decision records (RICH) through python-docx (headings as Word headings, paragraphs as
  paragraphs);
- HTML: the same three as pages with navigation, a script and a footer around an <article>.
Sources are taken smallest first, so `--pdfs`/`--markdown`/`--rich` below the defaults make a smaller corpus.

Each format is one `ingest_path` job on its directory (in-process through `open_core`, embedded
defaults), timed queued-to-finished from the job's own timestamps: files/s, pages/s for the PDFs
(total pages / the job's wall time), MB/s of extracted text, chunks/s. Then one more job on the whole
unchanged tree (every file should be `unchanged`: read and hashed only). Beside each job, the
extraction alone: `zapomni_core.files.formats.extract_document` on the same bytes in this process,
so the share of the job that is parsing (the rest is chunking, embedding and writing) shows.

Two settings differ from the defaults, both so that the job measures documents and nothing else:
ZAPOMNI_GRAPH_AUTO=false (otherwise each job queues entity extraction, another job that would run
beside the next one; bench/graph_extraction.py measures it) and ZAPOMNI_CACHE_MAX_ENTRIES=0 (the
PDFs and the Markdown files share their text, and the embedding cache would answer the second copy).

Run: `.venv/bin/python -m bench.document_ingestion` (about 2-3 minutes on 2 cores);
`--pdfs 2 --markdown 2 --rich 1` for a smoke run.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import sys
import textwrap
import time
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docx
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from bench.code_index import cpu_of, finished, job_seconds
from bench.common import in_scratch_dir, write_results
from bench.scale import peak_rss_mb
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.files.formats import extract_document
from zapomni_core.files.pieces import document_text
from zapomni_core.files.requests import IngestPathRequest
from zapomni_core.jobs import JobInfo
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# Smallest first, so that asking for fewer files (a smoke run) makes a smaller corpus.
SOURCES = sorted([ROOT / "README.md", *(ROOT / "docs" / "decisions").glob("*.md")], key=lambda p: p.stat().st_size)
FORMATS = ("pdf", "markdown", "docx", "html")
# Also written as DOCX and as HTML: a short record and two of the usual length.
RICH = ("0004-stdio-transport", "0013-document-extraction", "0010-ingestion-throughput")
LINES_PER_PAGE = 56
CHARS_PER_LINE = 95
WARM_UP = "Warm-up memory: loads the embedding model before the clock starts."
_LATIN1 = {"—": "-", "–": "-", "→": "->", "←": "<-", "’": "'", "‘": "'", "“": '"', "”": '"', "…": "...", "≈": "~"}
_LATIN1.update({"≤": "<=", "≥": ">=", "×": "x", "•": "*", "✓": "v"})


# ---- the corpus ----------------------------------------------------------------------------------


def latin1(text: str) -> str:
    """What Helvetica can draw: common typography transliterated, anything else dropped to '?'."""
    for char, plain in _LATIN1.items():
        text = text.replace(char, plain)
    text = unicodedata.normalize("NFKC", text)
    return text.encode("latin-1", "replace").decode("latin-1")


def blocks(markdown: str) -> list[tuple[int | None, str]]:
    """(heading level or None, text) per heading and paragraph of a Markdown text."""
    found: list[tuple[int | None, str]] = []
    for part in re.split(r"\n\s*\n", markdown):
        part = part.strip()
        if not part:
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)$", part)
        if heading and "\n" not in part:
            found.append((len(heading.group(1)), heading.group(2)))
        else:
            found.append((None, part))
    return found


def write_pdf(path: Path, text: str) -> int:
    """A4 pages of wrapped lines; returns the page count."""
    lines: list[str] = []
    for level, part in blocks(text):
        for paragraph_line in part.splitlines() if level is None else [part]:
            lines += textwrap.wrap(latin1(paragraph_line), CHARS_PER_LINE) or [""]
        lines.append("")
    pdf = canvas.Canvas(str(path), pagesize=A4)
    pages = 0
    for start in range(0, len(lines), LINES_PER_PAGE):
        pdf.setFont("Helvetica", 10)
        y = 800.0
        for line in lines[start : start + LINES_PER_PAGE]:
            pdf.drawString(56, y, line)
            y -= 13.5
        pdf.showPage()
        pages += 1
    pdf.save()
    return pages


def write_docx(path: Path, text: str) -> None:
    document = docx.Document()
    for level, part in blocks(text):
        if level is None:
            document.add_paragraph(part)
        else:
            document.add_heading(part, level=min(level, 9))
    document.save(str(path))


def write_html(path: Path, text: str, title: str) -> None:
    body = []
    for level, part in blocks(text):
        tag = f"h{level}" if level is not None else "p"
        body.append(f"<{tag}>{html.escape(part)}</{tag}>")
    path.write_text(
        f"<!doctype html><html><head><title>{html.escape(title)}</title>"
        "<script>window.analytics = {page: 'docs'};</script></head><body>"
        "<nav><a href='/'>Home</a> <a href='/docs'>Docs</a> <a href='/blog'>Blog</a></nav>"
        f"<main><article>{''.join(body)}</article></main>"
        "<footer>Copyright Zapomni contributors. Cookie settings.</footer></body></html>",
        encoding="utf-8",
    )


def make_corpus(root: Path, pdfs: int, markdown: int | None, rich: int) -> dict[str, Any]:
    """Write the corpus under root/<format>/; returns the pages of each PDF written."""
    texts = {source.stem: source.read_text(encoding="utf-8") for source in SOURCES}
    stems = list(texts)
    for fmt in FORMATS:
        (root / fmt).mkdir(parents=True)
    pages = []
    for i in range(pdfs):
        stem = stems[i % len(stems)]
        pages.append(write_pdf(root / "pdf" / f"{i:02d}-{stem}.pdf", texts[stem]))
    decisions = [s for s in SOURCES if s.parent.name == "decisions"]
    for source in decisions[:markdown]:
        shutil.copyfile(source, root / "markdown" / source.name)
    for stem in RICH[:rich]:
        write_docx(root / "docx" / f"{stem}.docx", texts[stem])
        write_html(root / "html" / f"{stem}.html", texts[stem], stem)
    return {"pdf_pages": pages}


# ---- extraction alone ----------------------------------------------------------------------------


def extract_alone(folder: Path) -> dict[str, Any]:
    seconds, pages, text_bytes, files = 0.0, 0, 0, 0
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        started = time.perf_counter()
        document = extract_document(path, data)
        seconds += time.perf_counter() - started
        text_bytes += len(document_text(document).encode())
        pages += document.pages or 0
        files += 1
    # To the microsecond: a small HTML file is extracted in under half a millisecond, which 3 decimals showed as 0.
    return {"files": files, "seconds": round(seconds, 6), "pages": pages, "text_mb": round(text_bytes / 1e6, 4)}


# ---- the jobs ------------------------------------------------------------------------------------


async def ingest(core: ZapomniCore, path: Path) -> JobInfo:
    queued = await core.files.ingest(IngestPathRequest(path=str(path)))
    info = await finished(core, queued.job_id)
    if info.state != "completed":
        raise RuntimeError(f"ingest_path of {path} ended {info.state}: {info.failures or info.error}")
    return info


async def run(pdfs: int, markdown: int | None, rich: int, workdir: Path) -> dict[str, Any]:
    corpus = workdir / "corpus"
    written = make_corpus(corpus, pdfs, markdown, rich)
    alone = {fmt: extract_alone(corpus / fmt) for fmt in FORMATS}
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=workdir / "data",
        ZAPOMNI_ALLOWED_ROOTS=str(corpus),
        ZAPOMNI_GRAPH_AUTO=False,
        ZAPOMNI_CACHE_MAX_ENTRIES=0,
        LOG_LEVEL="WARNING",
    )
    load_before = load_average()
    rows: dict[str, dict[str, Any]] = {}
    async with open_core(settings) as (core, _info):
        await core.memories.add(AddMemoryRequest(text=WARM_UP))
        for fmt in FORMATS:
            before = (await core.workspaces.stats()).total_chunks
            print(f"ingesting {fmt}", file=sys.stderr)
            cpu_before = await cpu_of(settings.data_dir)
            info = await ingest(core, corpus / fmt)
            cpu_after = await cpu_of(settings.data_dir)
            chunks = (await core.workspaces.stats()).total_chunks - before
            seconds = job_seconds(info)
            extracted = alone[fmt]
            rows[fmt] = {
                "files": info.counts["files"],
                "added": info.counts["added"],
                "pages": extracted["pages"],
                "text_mb": extracted["text_mb"],
                "chunks": chunks,
                "seconds": round(seconds, 2),
                "files_per_s": round(info.counts["files"] / seconds, 2),
                "pages_per_s": round(extracted["pages"] / seconds, 2) if extracted["pages"] else None,
                "text_mb_per_s": round(extracted["text_mb"] / seconds, 4),
                "chunks_per_s": round(chunks / seconds, 2),
                "extraction_alone_s": extracted["seconds"],
                "extraction_share": round(extracted["seconds"] / seconds, 4),
                "cpu_s": round(sum(cpu_after) - sum(cpu_before), 1),
            }
        print("re-ingesting the unchanged tree", file=sys.stderr)
        again = await ingest(core, corpus)
        rss_mb = peak_rss_mb()
    total = {key: sum(r[key] for r in rows.values()) for key in ("files", "pages", "chunks", "seconds", "cpu_s")}
    total["text_mb"] = round(sum(r["text_mb"] for r in rows.values()), 4)
    total["extraction_alone_s"] = round(sum(r["extraction_alone_s"] for r in rows.values()), 6)
    again_s = job_seconds(again)
    return {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": load_average(),
        "sources": [str(s.relative_to(ROOT)) for s in SOURCES],
        "written": written,
        "formats": rows,
        "total": {
            **total,
            "seconds": round(total["seconds"], 2),
            "cpu_s": round(total["cpu_s"], 1),
            "files_per_s": round(total["files"] / total["seconds"], 2),
            "text_mb_per_s": round(total["text_mb"] / total["seconds"], 4),
            "chunks_per_s": round(total["chunks"] / total["seconds"], 2),
            "extraction_share": round(total["extraction_alone_s"] / total["seconds"], 4),
        },
        "reingest": {
            "seconds": round(again_s, 2),
            "counts": again.counts,
            "files_per_s": round(again.counts["files"] / again_s, 1),
            "all_unchanged": again.counts["unchanged"] == again.counts["files"],
        },
        "process_peak_rss_mb": rss_mb,
    }


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def render(results: dict[str, Any]) -> str:
    pdf, total, again = results["formats"]["pdf"], results["total"], results["reingest"]
    lines = [
        "# ingest_path: document ingestion throughput",
        "",
        f"- date: {results['date']}; CPUs: {results['cpus']} (shared with other work: load average "
        f"{results['load_before']} before, {results['load_after']} after); embedded defaults (ONNX "
        "all-MiniLM-L6-v2, embedded database) in-process through `open_core`, except ZAPOMNI_GRAPH_AUTO=false "
        "and ZAPOMNI_CACHE_MAX_ENTRIES=0 (see the module docstring); peak RSS of the process "
        f"{results['process_peak_rss_mb']:.0f} MB.",
        f"- Corpus from this repository's prose ({len(results['sources'])} texts: README.md and docs/decisions): "
        "PDFs written with reportlab, the decision records as Markdown, three texts as DOCX and as HTML pages.",
        "- One `ingest_path` job per format, timed queued-to-finished from the job's timestamps; extraction alone "
        "is `extract_document` on the same files in this process; CPU is user + system seconds of this process (all "
        "its threads: the job, the embedder) and of the database server during the job, the steadier figure on a "
        "shared machine. Produced by `python -m bench.document_ingestion`.",
        "",
        f"**PDF: {pdf['pages_per_s']} pages/s** ({pdf['pages']} pages in {pdf['files']} files of "
        f"{min(results['written']['pdf_pages'])}-{max(results['written']['pdf_pages'])} pages, {pdf['seconds']} s); "
        f"all formats: {total['files_per_s']} files/s, {total['chunks_per_s']} chunks/s, "
        f"{total['text_mb_per_s'] * 1000:.1f} KB/s of extracted text; extraction is "
        f"{total['extraction_share'] * 100:.1f} % of the jobs' time.",
        "",
        "| format | files | pages | extracted text | chunks | job | files/s | pages/s | text MB/s | chunks/s "
        "| extraction alone | extraction share | CPU s (process + DB) | chunks per CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, r in [*results["formats"].items(), ("all", total)]:
        pages_per_s = r.get("pages_per_s") if fmt != "all" else None
        lines.append(
            f"| {fmt} | {r['files']} | {r['pages'] or ''} | {r['text_mb'] * 1000:.1f} KB | {r['chunks']} "
            f"| {r['seconds']} s | {r['files_per_s']} | {pages_per_s or ''} | {r['text_mb_per_s']} "
            f"| {r['chunks_per_s']} | {r['extraction_alone_s']} s | {r['extraction_share'] * 100:.1f} % "
            f"| {r['cpu_s']} | {r['chunks'] / r['cpu_s'] if r['cpu_s'] else 0:.1f} |"
        )
    lines += [
        "",
        f"Re-ingest of the unchanged tree (one job on the corpus root): {again['seconds']} s for "
        f"{again['counts']['files']} files, {again['files_per_s']} files/s, "
        f"{again['counts']['unchanged']} unchanged.",
        "",
        "The part of each job that is not extraction (100 % minus the extraction share) is chunking, embedding and "
        "writing; bench/results/ingestion.md measures the bare embedder on the same kind of machine.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", type=int, default=len(SOURCES), help="PDF files (one per source text)")
    parser.add_argument("--markdown", type=int, default=None, help="Markdown files (default: every decision record)")
    parser.add_argument("--rich", type=int, default=len(RICH), help="texts also written as DOCX and HTML")
    parser.add_argument("--output", type=Path, default=RESULTS / "document_ingestion.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "document_ingestion.json")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    results = in_scratch_dir("zdi-", lambda workdir: run(max(1, args.pdfs), args.markdown, max(1, args.rich), workdir))
    write_results(render(results), results, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
