"""Document extraction on real files made by real libraries: PDF (reportlab, pypdf), DOCX (python-docx), HTML,
Markdown and text, and the refusals a user sees for files that are not what their extension says."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from zapomni_core.files.formats import (
    DOCUMENT_EXTENSIONS,
    Document,
    Section,
    UnreadableFile,
    document_format,
    extract_document,
)

PAGES = [
    "Alpha page talks about glaciers and their slow retreat.",
    "Bravo page describes volcanoes erupting near the coast.",
    "Charlie page explains tides and the pull of the moon.",
]


def make_pdf(pages: list[str]) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for text in pages:
        if text:
            pdf.drawString(72, 760, text)
            pdf.drawString(72, 740, "Second line of the same page.")
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def encrypt(data: bytes, user_password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def refusal(name: str, data: bytes) -> str:
    with pytest.raises(UnreadableFile) as caught:
        extract_document(Path(name), data)
    reason = str(caught.value)
    assert "\n" not in reason and len(reason) <= 200
    return reason


# --------------------------------------------------------------------------------------------- formats


def test_formats_by_extension() -> None:
    assert document_format(Path("a/B.PDF")) == "pdf"
    assert document_format(Path("x.docx")) == "docx"
    assert document_format(Path("x.htm")) == "html"
    assert document_format(Path("x.markdown")) == "markdown"
    assert document_format(Path("notes.txt")) == "text"
    assert document_format(Path("old.doc")) is None
    assert document_format(Path("main.py")) is None
    assert {".pdf", ".docx", ".html", ".md", ".txt"} <= DOCUMENT_EXTENSIONS
    assert ".doc" not in DOCUMENT_EXTENSIONS
    assert all(ext == ext.lower() and ext.startswith(".") for ext in DOCUMENT_EXTENSIONS)


def test_unsupported_extension_is_refused() -> None:
    assert "unsupported" in refusal("picture.png", b"\x89PNG")


# --------------------------------------------------------------------------------------------- PDF


def test_pdf_pages_keep_their_numbers_and_text() -> None:
    doc = extract_document(Path("report.pdf"), make_pdf([PAGES[0], "", PAGES[1], PAGES[2]]))
    assert doc.format == "pdf"
    assert doc.pages == 4
    assert [s.page for s in doc.sections] == [1, 3, 4]  # the empty page 2 is dropped
    for section, text in zip(doc.sections, [PAGES[0], PAGES[1], PAGES[2]], strict=True):
        assert text in section.text
        assert "Second line of the same page." in section.text
        assert section.text.index(text) < section.text.index("Second line")
        assert section.heading is None
    assert "glaciers" not in doc.sections[1].text


def test_pdf_without_text_is_refused_as_scanned() -> None:
    assert "no extractable text" in refusal("scan.pdf", make_pdf(["", ""]))


def test_encrypted_pdf_is_refused() -> None:
    reason = refusal("secret.pdf", encrypt(make_pdf(PAGES), "user-secret"))
    assert reason.startswith("encrypted PDF") and "decrypt it first" in reason


def test_pdf_with_only_an_owner_password_is_read() -> None:
    # Viewers open these without asking; only printing or copying is "restricted".
    doc = extract_document(Path("restricted.pdf"), encrypt(make_pdf(PAGES), ""))
    assert [s.page for s in doc.sections] == [1, 2, 3]
    assert PAGES[2] in doc.sections[2].text


def test_truncated_pdf_is_refused_as_corrupt() -> None:
    data = make_pdf(PAGES)
    assert refusal("cut.pdf", data[: len(data) // 2]).startswith("corrupt PDF: ")


def test_garbage_after_the_pdf_header_is_refused_as_corrupt() -> None:
    assert refusal("junk.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 4).startswith("corrupt PDF")


def test_pdf_library_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    data = make_pdf(PAGES)
    with pytest.raises(UnreadableFile):
        extract_document(Path("cut.pdf"), data[: len(data) // 2])
    extract_document(Path("ok.pdf"), data)
    assert capsys.readouterr().out == ""  # stdout is the MCP protocol


def test_text_file_named_pdf_is_refused() -> None:
    assert refusal("notes.pdf", b"just some notes\n") == "not a PDF file (wrong extension?)"


# --------------------------------------------------------------------------------------------- DOCX


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Preface before any heading.")
    document.add_heading("Guide", level=1)
    document.add_paragraph("Intro to the guide.")
    document.add_heading("Installation", level=2)
    document.add_paragraph("Run the installer.")
    document.add_heading("From source", level=3)
    document.add_paragraph("Clone and build.")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Name", "Value"), ("colour", "teal")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("After the table.")
    document.add_heading("Usage", level=2)
    document.add_paragraph("Call it.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_sections_follow_headings() -> None:
    doc = extract_document(Path("guide.docx"), make_docx())
    assert doc.format == "docx" and doc.pages is None
    assert [s.heading for s in doc.sections] == [
        None,
        "Guide",
        "Guide > Installation",
        "Guide > Installation > From source",
        "Guide > Usage",
    ]
    source = doc.sections[3].text
    assert source.startswith("From source\n\nClone and build.")
    assert "Name | Value" in source and "colour | teal" in source
    assert source.index("teal") < source.index("After the table.")
    assert doc.sections[0].text == "Preface before any heading."
    assert all(s.page is None for s in doc.sections)


def test_zip_that_is_not_a_docx_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "not a word document")
    assert refusal("fake.docx", out.getvalue()) == "not a DOCX file (wrong extension?)"


def test_text_named_docx_is_refused() -> None:
    assert "(wrong extension?)" in refusal("notes.docx", b"plain words")


def test_old_binary_word_file_named_docx_is_refused() -> None:
    reason = refusal("old.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    assert ".doc" in reason and "(wrong extension?)" in reason


# --------------------------------------------------------------------------------------------- HTML

PAGE = """<!DOCTYPE html>
<html><head><meta charset="windows-1252"><title>Site title</title>
<script>var trackingPixel = 1;</script><style>.menu { color: red }</style></head>
<body>
<header><a href="/">HomeLink</a><nav><ul><li><a href="/p">ProductsMenu</a></li><li>PricingMenu</li></ul></nav></header>
<div class="cookie-banner">We use CookieConsent <button>AcceptAll</button></div>
<main>
  <article>
    <h1>Caf\xe9 guide</h1>
    <p>Espresso is <b>strong</b> coffee.</p>
    <h2>Brewing <a class="headerlink" href="#brewing">\xb6</a></h2>
    <p>Grind the beans finely.</p>
    <h3>Water</h3>
    <p>Use water at ninety degrees.</p>
    <pre>  brew --hot
  serve</pre>
    <h2>Serving</h2>
    <ul><li>Serve in small cups.</li><li>Add sugar if wanted.</li></ul>
    <table><tr><td>Size</td><td>Volume</td></tr></table>
  </article>
  <form><label>NewsletterSignup</label><input name="email"></form>
</main>
<aside><h2>TrendingStories</h2></aside>
<footer>CopyrightFooter 2024</footer>
<script>analyticsEvent()</script>
</body></html>
"""


def test_html_keeps_the_main_text_with_heading_paths() -> None:
    doc = extract_document(Path("page.html"), PAGE.encode("cp1252"))
    assert doc.format == "html"
    text = "\n".join(s.text for s in doc.sections)
    for boilerplate in (
        "HomeLink",
        "ProductsMenu",
        "PricingMenu",
        "CookieConsent",
        "AcceptAll",
        "trackingPixel",
        "color",
        "NewsletterSignup",
        "TrendingStories",
        "CopyrightFooter",
        "analyticsEvent",
        "Site title",
    ):
        assert boilerplate not in text, boilerplate
    assert [s.heading for s in doc.sections] == [
        "Café guide",
        "Café guide > Brewing",
        "Café guide > Brewing > Water",
        "Café guide > Serving",
    ]
    assert doc.sections[0].text == "Café guide\n\nEspresso is strong coffee."
    water = doc.sections[2].text
    assert "Use water at ninety degrees." in water
    assert "  brew --hot\n  serve" in water  # <pre> keeps its whitespace
    serving = doc.sections[3].text
    assert "Serve in small cups.\n\nAdd sugar if wanted." in serving
    assert "Size | Volume" in serving


def test_html_without_semantic_tags_drops_menus_by_name() -> None:
    page = (
        "<html><body><div id='menu'><a href='/'>HomeMenu</a></div><div class='sidebar'>SideStuff</div>"
        "<div id='content'><h1>Title</h1><p>Body text here.</p></div>"
        "<div id='footer'>FooterStuff</div></body></html>"
    )
    doc = extract_document(Path("p.htm"), page.encode())
    text = "\n".join(s.text for s in doc.sections)
    assert "Body text here." in text
    assert "HomeMenu" not in text and "SideStuff" not in text and "FooterStuff" not in text
    assert doc.sections[0].heading == "Title"


def test_html_utf8_with_bom_and_xml_declaration() -> None:
    page = '\ufeff<?xml version="1.0" encoding="utf-8"?><html><body><p>Zürich – naïve</p></body></html>'
    doc = extract_document(Path("p.xhtml"), page.encode("utf-8"))
    assert doc.sections == (Section(text="Zürich – naïve"),)


def test_html_that_is_not_in_its_charset_is_refused() -> None:
    page = "<html><head><meta charset='utf-8'></head><body>caf\xe9</body></html>".encode("latin-1")
    assert "invalid byte 0xe9" in refusal("p.html", page)


def test_binary_named_html_is_refused() -> None:
    assert "(wrong extension?)" in refusal("p.html", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


# --------------------------------------------------------------------------------------------- Markdown

MARKDOWN = """Intro before headings.

# Project

Top text.

## Install

Install steps.

```bash
# not a heading
pip install thing
```

### From source

Build it.

Usage
-----

Use it.

# Other
Last words.
"""


def test_markdown_sections_follow_headings_not_code() -> None:
    doc = extract_document(Path("README.md"), MARKDOWN.encode())
    assert doc.format == "markdown"
    assert [s.heading for s in doc.sections] == [
        None,
        "Project",
        "Project > Install",
        "Project > Install > From source",
        "Project > Usage",
        "Other",
    ]
    install = doc.sections[2].text
    assert install.startswith("## Install\n\nInstall steps.")
    assert "```bash\n# not a heading\npip install thing\n```" in install  # kept as Markdown source
    assert doc.sections[4].text == "## Usage\n\nUse it."  # setext written in ATX form
    assert doc.sections[5].text == "# Other\n\nLast words."
    assert doc.sections[0].text == "Intro before headings."


def test_markdown_title_with_only_subsections_makes_no_empty_section() -> None:
    doc = extract_document(Path("a.md"), b"# Guide\n\n## Part\n\nBody.\n")
    assert [(s.heading, s.text) for s in doc.sections] == [("Guide > Part", "## Part\n\nBody.")]


def test_markdown_front_matter_is_not_a_heading() -> None:
    doc = extract_document(Path("post.md"), b"---\ntitle: Hello\n---\n\n# Real\n\nText.\n")
    assert [s.heading for s in doc.sections] == [None, "Real"]
    assert "title: Hello" in doc.sections[0].text


def test_binary_named_md_is_refused() -> None:
    assert refusal("x.md", b"\x7fELF\x02\x01\x01\x00\x00") == "binary content, not text (wrong extension?)"


# --------------------------------------------------------------------------------------------- text


def test_utf8_text_with_bom() -> None:
    doc = extract_document(Path("notes.txt"), b"\xef\xbb\xbfFirst line\r\n\r\nSecond paragraph \xe2\x9c\x93\r\n")
    assert doc == Document(format="text", sections=(Section(text="First line\n\nSecond paragraph ✓"),))


def test_utf16_text_with_bom() -> None:
    doc = extract_document(Path("notes.txt"), "Grüße aus Köln".encode("utf-16"))
    assert doc.sections[0].text == "Grüße aus Köln"


def test_latin1_text_is_refused_with_the_offset() -> None:
    reason = refusal("notes.txt", "abc déjà".encode("latin-1"))
    assert reason == "not UTF-8 text (invalid byte 0xe9 at offset 5); convert it to UTF-8"


def test_png_named_txt_is_refused() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    assert refusal("image.txt", png) == "binary content, not text (wrong extension?)"


def test_empty_text_has_no_sections() -> None:
    assert extract_document(Path("empty.txt"), b"  \n").sections == ()


@pytest.mark.parametrize("name", ["a.pdf", "a.docx", "a.html", "a.md", "a.txt", "a.csv"])
@pytest.mark.parametrize("data", [b"", b"\x00\xff\xfe garbage \x00", bytes(range(256))])
def test_bad_input_only_ever_raises_unreadable_file(name: str, data: bytes) -> None:
    try:
        result = extract_document(Path(name), data)
    except UnreadableFile as exc:
        assert str(exc) and "\n" not in str(exc) and len(str(exc)) <= 200
    else:
        assert isinstance(result, Document) and not any(s.text.strip() == "" for s in result.sections)
