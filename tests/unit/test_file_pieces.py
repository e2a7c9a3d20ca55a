"""How files become chunks: a document section by section (page and heading kept), code symbol by symbol."""

from __future__ import annotations

from collections.abc import Sequence

from zapomni_core.content.chunking import Chunker
from zapomni_core.files.formats import Document, Section
from zapomni_core.files.pieces import document_pieces, document_text, line_span, located


def words(texts: Sequence[str]) -> list[int]:
    return [len(text.split()) for text in texts]


def test_a_chunk_never_straddles_two_sections_and_keeps_its_page_and_heading() -> None:
    chunker = Chunker(words, max_tokens=40, overlap_tokens=4)
    document = Document(
        format="markdown",
        sections=(
            Section("# Guide", heading="Guide"),
            Section("## Install\n\nRun the installer.", heading="Guide > Install"),
            Section("## Use\n\n" + "Type a command and press enter. " * 12, heading="Guide > Use"),
        ),
    )
    pieces = document_pieces(chunker, document)
    # The lone top heading joins the next section instead of being a chunk of its own.
    assert pieces[0].text.startswith("# Guide\n\n## Install") and pieces[0].place.section == "Guide > Install"
    use = [p for p in pieces if p.place.section == "Guide > Use"]
    assert len(use) >= 2 and all("installer" not in p.text for p in use)
    assert document_text(document).count("\n\n") >= 3


def test_pdf_pages_stay_apart() -> None:
    chunker = Chunker(words, max_tokens=40, overlap_tokens=4)
    document = Document(
        format="pdf", sections=(Section("Page one text.", page=1), Section("Page two text.", page=2)), pages=2
    )
    assert [(p.text, p.place.page) for p in document_pieces(chunker, document)] == [
        ("Page one text.", 1),
        ("Page two text.", 2),
    ]


def test_line_spans_of_overlapping_chunks_are_found_in_order() -> None:
    text = "".join(f"line {i} has some words\n" for i in range(1, 21))
    chunker = Chunker(words, max_tokens=20, overlap_tokens=5)
    pieces = located(chunker.split(text), text, first_line=101, section="mod.f")
    assert pieces[0].place.line_start == 101 and pieces[-1].place.line_end == 120
    for piece in pieces:
        first = int(piece.text.split()[1])
        assert piece.place.line_start == 100 + first
        assert piece.place.section == "mod.f"
    assert line_span("a\nb\nc", 2, 5, first_line=10) == (11, 12)
