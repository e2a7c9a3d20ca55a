"""ingest_path on the real store and embedder: real PDF/DOCX/HTML/Markdown files, incremental re-ingestion,
and the per-file safety refusals (the job goes on with the rest)."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import docx
import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from tests.helpers import graph_client, open_core
from zapomni_core import Settings, ZapomniCore
from zapomni_core.errors import InvalidRequest
from zapomni_core.files.requests import IngestPathRequest
from zapomni_core.jobs import JobInfo, JobStatusRequest
from zapomni_core.memories.requests import AddMemoryRequest, SearchFilters, SearchRequest

pytestmark = pytest.mark.anyio


def write_pdf(path: Path, pages: list[str]) -> None:
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.add_heading("Expense policy", level=1)
    document.add_heading("Travel", level=2)
    document.add_paragraph("Train tickets are reimbursed in second class; flights need the approval of a director.")
    document.add_heading("Meals", level=2)
    document.add_paragraph("Dinner on a business trip is covered up to forty euros a night.")
    document.save(str(path))


def make_tree(root: Path) -> Path:
    docs = root / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "install.md").write_text(
        "# Installing Quokka\n\nQuokka runs on any Linux machine.\n\n## From source\n\n"
        "Clone the repository and run the bootstrap script to compile the quokka daemon.\n\n"
        "## With Homebrew\n\nbrew install quokka puts the daemon on macOS in one step.\n"
    )
    (docs / "notes.txt").write_text("The staging server reboots every Sunday at 3am for kernel patches.\n")
    (docs / "page.html").write_text(
        "<html><head><title>Kiwi</title><script>var tracking = 'pixel';</script></head><body>"
        "<nav><a href='/'>Home</a> <a href='/shop'>Shop</a></nav>"
        "<main><h1>Kiwi harvest</h1><p>Kiwi fruit are harvested in New Zealand from March to May each year.</p>"
        "</main><footer>Copyright cookie banner</footer></body></html>"
    )
    write_docx(docs / "policy.docx")
    write_pdf(
        docs / "report.pdf",
        [
            "Quarterly report\nRevenue grew by twelve percent in the northern region.",
            "Outlook\nThe walrus project ships its first prototype in October.",
        ],
    )
    return docs


@pytest.fixture
async def files_core(tmp_path: Path, data_dir: Path) -> AsyncIterator[ZapomniCore]:
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_ALLOWED_ROOTS=str(tmp_path), ZAPOMNI_MAX_FILE_MB=0.05
    )
    async with open_core(settings) as (core, _info):
        yield core


async def ingest(core: ZapomniCore, path: Path | str, **extra: object) -> JobInfo:
    # the extra fields are the request's own, checked at run time:
    queued = await core.files.ingest(IngestPathRequest(path=str(path), **extra))  # type: ignore[arg-type]
    info = await core.jobs.status(JobStatusRequest(job_id=queued.job_id, wait_s=50))
    assert info.state in ("completed", "completed_with_errors"), info
    return info


# hits of any reply shape:
async def search(core: ZapomniCore, query: str, kind: str | None = "document") -> list:  # type: ignore[type-arg]
    filters = SearchFilters(kind=kind) if kind else None  # type: ignore[arg-type]  # kind is one of ListedKind's values
    return (await core.memories.search(SearchRequest(query=query, filters=filters, limit=5))).results


async def test_each_format_is_read_with_its_structure_and_found_with_page_and_section(
    files_core: ZapomniCore, tmp_path: Path
) -> None:
    docs = make_tree(tmp_path)
    await files_core.memories.add(AddMemoryRequest(text="Quokka is also the name of our office cat."))  # a note
    info = await ingest(files_core, docs)
    assert info.state == "completed" and info.counts["added"] == 5 and info.counts["files"] == 5

    pdf = (await search(files_core, "walrus prototype October"))[0]
    assert (pdf.kind, pdf.source, pdf.page) == ("document", str(docs / "report.pdf"), 2)
    md = (await search(files_core, "compile the daemon from the repository with the bootstrap script"))[0]
    assert md.source == str(docs / "guides" / "install.md")
    assert md.section == "Installing Quokka > From source" and "Homebrew" not in md.text
    word = (await search(files_core, "dinner allowance on business trips"))[0]
    assert word.section == "Expense policy > Meals"
    html = (await search(files_core, "when are kiwi fruit harvested"))[0]
    assert "New Zealand" in html.text and "cookie" not in html.text and "Shop" not in html.text
    # The kind filter separates the agent's notes from files.
    assert all(hit.kind == "note" for hit in await search(files_core, "quokka", kind="note"))
    assert {hit.kind for hit in await search(files_core, "quokka", kind=None)} == {"note", "document"}


async def test_re_ingestion_reads_only_what_changed_and_forgets_deleted_files(
    files_core: ZapomniCore, tmp_path: Path, data_dir: Path
) -> None:
    docs = make_tree(tmp_path)
    await ingest(files_core, docs)
    again = await ingest(files_core, docs)
    assert (again.counts["unchanged"], again.counts["added"], again.counts["updated"]) == (5, 0, 0)

    (docs / "notes.txt").write_text("The staging server now reboots on Saturdays at midnight.\n")
    (docs / "page.html").unlink()
    changed = await ingest(files_core, docs)
    assert (changed.counts["updated"], changed.counts["removed"], changed.counts["unchanged"]) == (1, 1, 3)
    assert "Saturdays" in (await search(files_core, "when does staging reboot"))[0].text
    assert not [h for h in await search(files_core, "kiwi harvest New Zealand") if h.source.endswith("page.html")]
    async with graph_client(data_dir) as client:
        rows = await client.ro_query("MATCH (m:Memory) WHERE m.source ENDS WITH 'page.html' RETURN count(m)")
        assert rows[0][0] == 0
        rows = await client.ro_query("MATCH (m:Memory) WHERE m.kind = 'document' RETURN count(m)")
        assert rows[0][0] == 4  # one memory per file: the changed file replaced its memory


async def test_unsafe_and_unreadable_files_are_refused_one_by_one_and_the_rest_is_read(
    files_core: ZapomniCore, tmp_path: Path
) -> None:
    docs = tmp_path / "mixed"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nThe lighthouse keeper logs the weather every hour.\n")
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("a secret outside the allowed root")
    try:
        (docs / "escape.txt").symlink_to(outside)
        os.mkfifo(docs / "pipe.txt")
        (docs / "big.txt").write_text("word " * 20_000)  # 100 KB, above the 0.05 MB limit
        (docs / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n")  # truncated
        (docs / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
        (docs / "fake.pdf").write_text("this is not a PDF at all")
        info = await ingest(files_core, docs)
    finally:
        outside.unlink()
    assert info.state == "completed_with_errors"
    assert info.counts["added"] == 1 and info.failed_items == 6
    reasons = {line.split(": ", 1)[0].rsplit("/", 1)[-1]: line for line in info.failures}
    assert "outside the allowed roots" in reasons["escape.txt"]
    assert "FIFO" in reasons["pipe.txt"]
    assert "size limit" in reasons["big.txt"]
    assert "PDF" in reasons["broken.pdf"]
    assert "UTF-8" in reasons["latin1.txt"]
    assert "wrong extension" in reasons["fake.pdf"]
    assert "lighthouse" in (await search(files_core, "who logs the weather"))[0].text


async def test_paths_outside_the_allowed_roots_are_refused_before_anything_is_queued(
    files_core: ZapomniCore, tmp_path: Path
) -> None:
    for path, reason in (
        ("/etc", "outside the allowed roots"),
        (str(tmp_path / "docs" / ".." / ".." / "etc"), "'..'"),
        (str(tmp_path / "missing"), "does not exist"),
    ):
        with pytest.raises(InvalidRequest, match=reason):
            await files_core.files.ingest(IngestPathRequest(path=path))
    assert (await files_core.jobs.counts("default")) == {}


async def test_an_export_carries_files_with_their_places_and_the_next_ingest_finds_them_unchanged(
    files_core: ZapomniCore, tmp_path: Path
) -> None:
    docs = make_tree(tmp_path)
    await ingest(files_core, docs)
    out = io.StringIO()
    await files_core.transfer.export_to(out)
    other = Settings.from_variables(
        ZAPOMNI_DATA_DIR=Path(tempfile.mkdtemp(prefix="zt-imp-", dir="/tmp")),
        LOG_LEVEL="WARNING",
        ZAPOMNI_ALLOWED_ROOTS=str(tmp_path),
    )
    try:
        async with open_core(other) as (imported, _info):
            report = await imported.transfer.import_from(io.BytesIO(out.getvalue().encode()))
            assert report.imported == 5
            pdf = (await search(imported, "walrus prototype October"))[0]
            assert (pdf.kind, pdf.page) == ("document", 2)
            again = await ingest(imported, docs)
            assert (again.counts["unchanged"], again.counts["added"]) == (5, 0)
    finally:
        shutil.rmtree(other.data_dir, ignore_errors=True)
