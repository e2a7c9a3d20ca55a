"""Which libraries should extract text from documents for `ingest_path`: speed, text quality, install size.

PDF: pypdf vs pdfminer.six vs pypdfium2 on
  (a) PDFs generated with reportlab from known prose (this repository's README and decision records,
      folded to Latin-1 for the standard fonts), one column and two columns: word recall and precision
      against the source text, and reading order as the share of the source's word bigrams that come
      out adjacent (two columns read line by line across would break most of them);
  (b) real PDFs found on the machine (/usr/share/doc, made by texinfo and DocBook tools): pages/s, and
      agreement, the share of the words the other two libraries both found.
HTML: trafilatura vs one main-content rule (drop nav/header/footer/aside/script/style/form/noscript and
  menu-like roles, classes and ids; prefer <main>/role=main, then a single <article>) on three parsers
  (selectolax's Lexbor, BeautifulSoup on lxml, lxml.html alone) on
  (a) generated pages: known prose inside menus, a cookie banner, a sidebar, a comment form, scripts and
      a footer, once with semantic tags and once with plain divs named by class/id;
  (b) real pages: the Node.js API docs in /usr/share/doc/nodejs/api, whose .md sources are the known
      main text; boilerplate is the sidebar, header and table of contents (their words not in the .md).
  Main-text recall (multiset of words) and boilerplate leak (share of boilerplate-only words kept).
DOCX: python-docx vs the standard library (zipfile + ElementTree on word/document.xml) on documents
  generated with python-docx (headings, paragraphs, a table): files/s, word recall, headings found.
Markdown: markdown-it-py (CommonMark block parser) vs a line parser (ATX/setext, skipping fences):
  files/s and agreement on the headings of real Markdown (Node.js docs, this repository's docs).
The production extractors (`zapomni_core.files.formats.extract_document`) are measured beside them; their
recall can sit a hair under their library's because a heading followed directly by a subheading makes no
section of its own (its words live on in the subsections' heading paths, which this bench does not count).

Install size: the files each distribution's RECORD lists, as installed in this venv (no .pyc), summed
over its dependency closure less what Zapomni's runtime already installs (`zapomni`'s own closure).

Speed is the median of 3 runs over the whole set. Run from the repository root:
`.venv/bin/python -m bench.document_formats` (about a minute and a half on 2 cores). trafilatura imports only
with lxml_html_clean (justext asks for lxml[html_clean]); without it its row is left out and the report says
so. To measure it without touching the venv: `pip install --no-deps --target /tmp/lxmlclean lxml_html_clean`,
then run with `PYTHONPATH=/tmp/lxmlclean`.
Results go to `bench/results/document_formats.md`.
"""

from __future__ import annotations

import io
import itertools
import logging
import platform
import re
import statistics
import sys
import time
import unicodedata
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PROSE = [ROOT / "README.md", *sorted((ROOT / "docs" / "decisions").glob("00*.md"))]
REAL_PDFS = [
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
]
NODE_DOCS = Path("/usr/share/doc/nodejs/api")
NODE_PAGES = ["dns", "url", "readline", "path", "events", "os", "timers", "tty"]
RUNS = 3
WORD = re.compile(r"[a-z0-9]+")

# ------------------------------------------------------------------------------------------------ text


@dataclass(frozen=True)
class Block:
    level: int  # 0 = paragraph, 1..6 = heading
    text: str


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def fold_latin1(text: str) -> str:
    """Keep what reportlab's standard fonts can draw, so the source text is exactly what the PDF shows."""
    text = text.replace("→", "->").replace("—", "-").replace("–", "-").replace("≥", ">=").replace("≤", "<=")
    text = unicodedata.normalize("NFKC", text)
    return text.encode("latin-1", "ignore").decode("latin-1")


def prose_blocks(path: Path) -> list[Block]:
    """Headings and paragraphs of a Markdown file as plain text (code blocks and tables left out)."""
    blocks: list[Block] = []
    in_fence = False
    para: list[str] = []

    def flush() -> None:
        if para:
            text = " ".join(para)
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            text = re.sub(r"[*`_]|<[^>]+>", "", text)
            text = fold_latin1(re.sub(r"\s+", " ", text)).strip()
            if text:
                blocks.append(Block(0, text))
            para.clear()

    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            flush()
            in_fence = not in_fence
            continue
        if in_fence or line.lstrip().startswith("|"):
            continue
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        if heading:
            flush()
            blocks.append(Block(len(heading.group(1)), fold_latin1(re.sub(r"[*`_]", "", heading.group(2))).strip()))
        elif not line.strip():
            flush()
        else:
            para.append(line.strip().lstrip("-*>0123456789. "))
    flush()
    return blocks


def recall_precision(truth: Sequence[str], got: Sequence[str]) -> tuple[float, float]:
    common = sum((Counter(truth) & Counter(got)).values())
    return common / max(len(truth), 1), common / max(len(got), 1)


def bigram_order(truth: Sequence[str], got: Sequence[str]) -> float:
    """Share of the source's adjacent word pairs that are adjacent in the output: reading order, locally."""
    pairs = Counter(itertools.pairwise(truth))
    found = Counter(itertools.pairwise(got))
    return sum((pairs & found).values()) / max(sum(pairs.values()), 1)


def median_seconds(run: Callable[[], Any], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def has_production() -> bool:
    try:
        import zapomni_core.files.formats  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------------------------------------ sizes

_RUNTIME: set[str] | None = None


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(name: str, seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    if _key(name) in seen:
        return seen
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return seen
    seen.add(_key(name))
    for line in dist.requires or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            closure(req.name, seen)
    return seen


def installed_mb(name: str) -> float:
    total = 0
    for file in distribution(name).files or []:
        if file.suffix != ".pyc":
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


def added_mb(names: Iterable[str]) -> tuple[float, list[str]]:
    """MB the distributions add to Zapomni's runtime install, with the names of what they add."""
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = closure("zapomni")
    extra: set[str] = set()
    for name in names:
        extra |= closure(name) - _RUNTIME
    return sum(installed_mb(n) for n in extra), sorted(extra)


def _attribute(element: Any, name: str) -> str:
    """An XML element's attribute, "" when the element or the attribute is missing."""
    return "" if element is None else element.get(name) or ""


def list_of(extract: Callable[[Any], Any], inputs: Sequence[Any]) -> list[Any]:
    """`extract` applied to each input: what one timed run does."""
    return [extract(item) for item in inputs]


def version_licence(name: str) -> tuple[str, str]:
    meta = distribution(name).metadata
    licence = meta["License-Expression"] or meta["License"] or ""
    if not licence or len(licence) > 60:
        classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
        licence = ", ".join(classifiers) or licence[:60]
    return distribution(name).version, licence


# ------------------------------------------------------------------------------------------------ PDF


def make_pdf(blocks: Sequence[Block], columns: int) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate, Paragraph

    out = io.BytesIO()
    doc = BaseDocTemplate(out, pagesize=A4)
    gap = 12
    width = (doc.width - gap * (columns - 1)) / columns
    frames = [
        Frame(doc.leftMargin + i * (width + gap), doc.bottomMargin, width, doc.height, id=f"c{i}")
        for i in range(columns)
    ]
    doc.addPageTemplates([PageTemplate(id="p", frames=frames)])
    styles = getSampleStyleSheet()
    story = []
    for block in blocks:
        style = styles[f"Heading{min(block.level, 4)}"] if block.level else styles["BodyText"]
        text = block.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        story.append(Paragraph(text, style))
    doc.build(story)
    return out.getvalue()


def make_pdf_reversed(blocks: Sequence[Block]) -> bytes:
    """Each page's lines drawn bottom-up: the content stream's order is not the reading order (some producers)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import simpleSplit
    from reportlab.pdfgen import canvas

    lines = [line for b in blocks for line in simpleSplit(b.text, "Helvetica", 10, 450)]
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    per_page = 60
    for start in range(0, len(lines), per_page):
        page = lines[start : start + per_page]
        for i in reversed(range(len(page))):
            pdf.setFont("Helvetica", 10)
            pdf.drawString(72, 780 - 12 * i, page[i])
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def damage(data: bytes, how: str) -> bytes:
    if how == "shifted":  # every xref offset now points 37 bytes early, as after a bad edit or transfer
        header_end = data.index(b"\n") + 1
        return data[:header_end] + b"%" + b"x" * 35 + b"\n" + data[header_end:]
    return data[: int(len(data) * 0.75)]  # truncated download: no xref, no trailer, objects missing


def safe(extract: Callable[[bytes], list[str]], data: bytes) -> list[str]:
    try:
        return extract(data)
    except Exception:
        return []


def pdf_pypdf(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]


def pdf_pdfminer(data: bytes) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return [
        "\n".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
        for page in extract_pages(io.BytesIO(data))
    ]


def pdf_pdfium(data: bytes) -> list[str]:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        pages = []
        for page in pdf:
            textpage = page.get_textpage()
            pages.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return pages
    finally:
        pdf.close()


def pdf_production(data: bytes) -> list[str]:
    from zapomni_core.files.formats import extract_document

    return [s.text for s in extract_document(Path("x.pdf"), data).sections]


PDF_LIBS: dict[str, tuple[Callable[[bytes], list[str]], list[str]]] = {
    "pypdf": (pdf_pypdf, ["pypdf"]),
    "pdfminer.six": (pdf_pdfminer, ["pdfminer.six"]),
    "pypdfium2": (pdf_pdfium, ["pypdfium2"]),
}


def bench_pdf() -> tuple[list[list[str]], list[str]]:
    generated: dict[str, list[tuple[bytes, list[str]]]] = {"1 col": [], "2 col": [], "reversed": []}
    for path in PROSE[:8]:
        blocks = prose_blocks(path)
        truth = [w for b in blocks for w in words(b.text)]
        generated["1 col"].append((make_pdf(blocks, 1), truth))
        generated["2 col"].append((make_pdf(blocks, 2), truth))
        generated["reversed"].append((make_pdf_reversed(blocks), truth))
    for how in ("shifted", "truncated"):
        generated[how] = [(damage(data, how), truth) for data, truth in generated["1 col"]]
    real = [p.read_bytes() for p in REAL_PDFS if p.is_file()]
    notes = [
        f"Generated: {len(generated['1 col'])} PDFs of each kind from this repository's README and decision "
        f"records: one column ({sum(len(pdf_pdfium(d)) for d, _ in generated['1 col'])} pages, platypus), two "
        "columns, and reversed (each page's lines drawn bottom-up, so the content stream is not in reading order); "
        "shifted (37 bytes inserted after the header: every xref offset is wrong) and truncated (the last quarter "
        "cut off) are the one-column PDFs damaged.",
        "Real: " + (", ".join(f"`{p}`" for p in REAL_PDFS if p.is_file()) or "none found on this machine") + ".",
    ]
    outputs: dict[str, dict[str, list[list[str]]]] = {}
    rows = []
    libs = {**PDF_LIBS, **({"production (`extract_document`)": (pdf_production, [])} if has_production() else {})}
    for name, (extract, _dists) in libs.items():
        outputs[name] = {}
        row = [name]
        for kind, docs in generated.items():
            got = [safe(extract, data) for data, _ in docs]
            outputs[name][kind] = got
            rec, prec, order = zip(
                *[
                    (*recall_precision(truth, words(" ".join(pages))), bigram_order(truth, words(" ".join(pages))))
                    for pages, (_, truth) in zip(got, docs, strict=True)
                ],
                strict=True,
            )
            row.append(" / ".join(f"{statistics.mean(v):.3f}" for v in (rec, prec, order)))
        pages = sum(len(pdf_pdfium(d)) for d, _ in generated["1 col"])
        seconds = median_seconds(partial(list_of, extract, [d for d, _ in generated["1 col"]]))
        row.append(f"{pages / seconds:.0f}")
        if real:
            outputs[name]["real"] = [extract(d) for d in real]
            real_pages = sum(len(p) for p in outputs[name]["real"])
            seconds = median_seconds(partial(list_of, extract, real))
            row.append(f"{real_pages / seconds:.0f}")
        rows.append(row)
    if real:
        names = list(PDF_LIBS)
        for row, name in zip(rows, names, strict=False):
            others = [o for o in names if o != name]
            agreed = []
            for i in range(len(real)):
                mine = words(" ".join(outputs[name]["real"][i]))
                consensus = Counter(words(" ".join(outputs[others[0]]["real"][i]))) & Counter(
                    words(" ".join(outputs[others[1]]["real"][i]))
                )
                agreed.append(sum((Counter(mine) & consensus).values()) / max(sum(consensus.values()), 1))
            row.append(" / ".join(f"{a:.3f}" for a in agreed))
        if len(rows) > len(names):
            rows[-1].append("")
    for row, (_name, (_fn, dists)) in zip(rows, libs.items(), strict=True):
        if dists:
            mb, extra = added_mb(dists)
            version, licence = version_licence(dists[0])
            row += [version, licence, f"{mb:.1f} ({', '.join(extra)})"]
        else:
            row += ["", "", ""]
    return rows, notes


# ------------------------------------------------------------------------------------------------ HTML

DROP_TAGS = frozenset("nav aside script style form noscript template svg iframe button select menu dialog head".split())
DROP_ROLES = frozenset("navigation banner contentinfo complementary menu menubar search dialog alert".split())
BOILERPLATE_NAMES = frozenset(
    "nav navbar navigation menu sidebar footer breadcrumb breadcrumbs cookie cookies banner share social "
    "skip related comments subscribe newsletter masthead".split()
)
BLOCK_TAGS = frozenset(
    "p div section article main li ul ol dl dt dd pre blockquote table tr td th thead tbody caption figure "
    "figcaption h1 h2 h3 h4 h5 h6 br hr header footer address details summary body html".split()
)
HEADINGS = {f"h{i}": i for i in range(1, 7)}


def name_tokens(value: str | None) -> set[str]:
    return set(re.split(r"[\s_\-]+", (value or "").lower())) if value else set()


@dataclass
class Adapter:
    """A parser seen through four questions, so one main-content rule runs on every parser."""

    parse: Callable[[bytes], Any]
    tag: Callable[[Any], str]  # "" for text, "#" for comments and the like
    attr: Callable[[Any, str], str | None]
    kids: Callable[[Any], Iterable[Any]]
    text: Callable[[Any], str]  # a text node's text
    find_all: Callable[[Any], Iterable[Any]]  # every element, document order


def is_boilerplate(adapter: Adapter, node: Any, in_content: bool) -> bool:
    tag = adapter.tag(node)
    if tag in DROP_TAGS or (tag in ("header", "footer") and not in_content):
        return True
    if (adapter.attr(node, "role") or "").lower() in DROP_ROLES:
        return True
    if adapter.attr(node, "hidden") is not None or (adapter.attr(node, "aria-hidden") or "") == "true":
        return True
    names = name_tokens(adapter.attr(node, "class")) | name_tokens(adapter.attr(node, "id"))
    return bool(names & BOILERPLATE_NAMES)


def content_root(adapter: Adapter, doc: Any) -> Any:
    mains, articles, body = [], [], None
    for node in adapter.find_all(doc):
        tag = adapter.tag(node)
        if tag == "main" or (adapter.attr(node, "role") or "").lower() == "main":
            mains.append(node)
        elif tag == "article":
            articles.append(node)
        elif tag == "body" and body is None:
            body = node
    if mains:
        return mains[0]
    if len(articles) == 1:
        return articles[0]
    return body if body is not None else doc


def html_text(adapter: Adapter, data: bytes) -> str:
    return "\n".join(block.text for block in html_blocks(adapter, data))


def html_blocks(adapter: Adapter, data: bytes) -> list[Block]:
    doc = adapter.parse(data)
    root = content_root(adapter, doc)
    in_content = adapter.tag(root) in ("main", "article") or adapter.attr(root, "role") == "main"
    blocks: list[Block] = []
    current: list[str] = []
    level = 0

    def flush() -> None:
        nonlocal level
        text = re.sub(r"\s+", " ", "".join(current)).strip()
        if text:
            blocks.append(Block(level, text))
        current.clear()
        level = 0

    def walk(node: Any, inside: bool) -> None:
        nonlocal level
        for kid in adapter.kids(node):
            tag = adapter.tag(kid)
            if tag == "":
                current.append(adapter.text(kid))
                continue
            if tag == "#" or is_boilerplate(adapter, kid, inside):
                continue
            if tag in BLOCK_TAGS:
                flush()
                level = HEADINGS.get(tag, 0)
                walk(kid, inside or tag in ("main", "article"))
                flush()
            else:
                walk(kid, inside)

    walk(root, in_content)
    flush()
    return blocks


def lxml_adapter() -> Adapter:
    import lxml.html

    def kids(node: Any) -> Iterable[Any]:
        for child in node:
            yield child
            if child.tail:
                yield ("", child.tail)

    def walk_text(node: Any) -> Iterable[Any]:
        if node.text:
            yield ("", node.text)
        yield from kids(node)

    def tag(node: Any) -> str:
        if isinstance(node, tuple):
            return ""
        return node.tag if isinstance(node.tag, str) else "#"

    return Adapter(
        parse=lambda data: lxml.html.document_fromstring(data),
        tag=tag,
        attr=lambda node, name: node.get(name),
        kids=walk_text,
        text=lambda node: node[1],
        find_all=lambda doc: (n for n in doc.iter() if isinstance(n.tag, str)),
    )


def selectolax_adapter() -> Adapter:
    from selectolax.lexbor import LexborHTMLParser

    def tag(node: Any) -> str:
        return "" if node.tag == "-text" else ("#" if node.tag.startswith("-") or node.tag == "!doctype" else node.tag)

    return Adapter(
        parse=lambda data: LexborHTMLParser(data),
        tag=tag,
        attr=lambda node, name: node.attributes.get(name) if name in node.attributes else None,
        kids=lambda node: node.iter(include_text=True) if hasattr(node, "iter") else node.root.iter(include_text=True),
        text=lambda node: node.text(deep=False),
        find_all=lambda doc: doc.root.traverse(),
    )


def bs4_adapter() -> Adapter:
    from bs4 import BeautifulSoup, Tag
    from bs4.element import NavigableString

    def tag(node: Any) -> str:
        if isinstance(node, Tag):
            return node.name
        # Comments, doctypes and CDATA are NavigableString subclasses: only the plain class is text
        return "" if type(node) is NavigableString else "#"

    def attr(node: Any, name: str) -> str | None:
        value = node.get(name)
        return " ".join(value) if isinstance(value, list) else value

    return Adapter(
        parse=lambda data: BeautifulSoup(data, "lxml"),
        tag=tag,
        attr=attr,
        kids=lambda node: node.children,
        text=lambda node: str(node),
        find_all=lambda doc: doc.find_all(True),
    )


def html_trafilatura(data: bytes) -> str:
    import trafilatura

    return trafilatura.extract(data, include_comments=False, include_tables=True, with_metadata=False) or ""


def html_production(data: bytes) -> str:
    from zapomni_core.files.formats import extract_document

    return "\n".join(s.text for s in extract_document(Path("x.html"), data).sections)


BOILER_NAV = "Home Products Pricing Enterprise Careers Investors Partners Login Signup Dashboard".split()
BOILER_FOOT = "Copyright Acme Incorporated Imprint Privacy Terms Sitemap Impressum Follow Mastodon".split()
BOILER_SIDE = "Trending Popular Sponsored Webinar Giveaway Podcast".split()
BOILER_COOKIE = "We use cookies to improve your experience Accept Reject Preferences".split()
BOILER_SCRIPT = "var trackingPixel = gtagConfig dataLayer push analyticsEvent".split()


def make_html(blocks: Sequence[Block], semantic: bool) -> tuple[bytes, list[str]]:
    from html import escape

    nav = "".join(f'<li><a href="/{w.lower()}">{w}</a></li>' for w in BOILER_NAV)
    foot = " ".join(BOILER_FOOT)
    side = "".join(f"<li><a href='#'>{w} story of the week</a></li>" for w in BOILER_SIDE)
    body = "".join(
        f"<h{min(b.level, 6)}>{escape(b.text)}</h{min(b.level, 6)}>" if b.level else f"<p>{escape(b.text)}</p>"
        for b in blocks
    )
    script = f"<script>{' '.join(BOILER_SCRIPT)}();</script><style>.x{{color:red}}</style>"
    cookie = f'<div class="cookie-banner">{" ".join(BOILER_COOKIE)}<button>Accept</button></div>'
    form = '<form><label>Newsletter signup email</label><input name="e"><button>Subscribe</button></form>'
    if semantic:
        page = (
            f"<header><div class='logo'>Acme</div><nav><ul>{nav}</ul></nav></header>{cookie}"
            f"<main><article>{body}</article>{form}</main><aside><ul>{side}</ul></aside>"
            f"<footer>{foot}</footer>{script}"
        )
    else:
        page = (
            f"<div id='top'><div class='navbar'><ul>{nav}</ul></div></div>{cookie}"
            f"<div id='content'><div class='post'>{body}</div>{form}</div>"
            f"<div class='sidebar'><ul>{side}</ul></div><div id='footer'>{foot}</div>{script}"
        )
    html = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title>{script}</head><body>{page}</body></html>"
    boiler = words(" ".join(BOILER_NAV + BOILER_FOOT + BOILER_SIDE + BOILER_COOKIE + BOILER_SCRIPT))
    boiler += ["newsletter", "signup", "email", "subscribe", "story", "of", "the", "week"] * 0
    return html.encode("utf-8"), boiler


def node_pages() -> list[tuple[bytes, list[str], list[str]]]:
    """(html, main-text words from the .md source, boilerplate-only words) for the Node.js API pages here."""
    import lxml.html

    pages = []
    for name in NODE_PAGES:
        html_path, md_path = NODE_DOCS / f"{name}.html", NODE_DOCS / f"{name}.md"
        if not (html_path.is_file() and md_path.is_file()):
            continue
        md = md_path.read_text(encoding="utf-8")
        md = re.sub(r"<!--.*?-->", " ", md, flags=re.S)
        md = re.sub(r"^\[[^\]]+\]:.*$", " ", md, flags=re.M)
        md = re.sub(r"\]\([^)]*\)", "]", md)
        truth = words(md)
        data = html_path.read_bytes()
        tree = lxml.html.document_fromstring(data)
        boiler_text = " ".join(
            el.text_content() for el in tree.iter() if el.get("role") == "navigation" or el.tag == "header"
        )
        vocab = set(truth)
        boiler = [w for w in words(boiler_text) if w not in vocab]
        pages.append((data, truth, boiler))
    return pages


def leak(boiler: Sequence[str], got: Sequence[str], truth_vocab: set[str]) -> float:
    only = [w for w in boiler if w not in truth_vocab]
    return sum((Counter(only) & Counter(got)).values()) / max(len(only), 1)


def bench_html() -> tuple[list[list[str]], list[str]]:
    generated = []
    for path in PROSE:
        blocks = prose_blocks(path)
        truth = [w for b in blocks for w in words(b.text)]
        for semantic in (True, False):
            data, boiler = make_html(blocks, semantic)
            generated.append((data, truth, boiler))
    real = node_pages()
    notes = [
        f"Generated: {len(generated)} pages (half with semantic tags, half plain divs named by class/id).",
        f"Real: {len(real)} Node.js API pages ({sum(len(d) for d, _, _ in real) / 1e6:.1f} MB) from `{NODE_DOCS}`"
        if real
        else "Real: no Node.js docs found on this machine.",
    ]
    extractors: dict[str, tuple[Callable[[bytes], str], list[str]]] = {}
    try:
        import trafilatura  # noqa: F401

        extractors["trafilatura"] = (html_trafilatura, ["trafilatura", "lxml_html_clean"])
    except ImportError as exc:  # justext needs lxml[html_clean]; a venv without it cannot import trafilatura
        notes.append(f"trafilatura left out: it does not import here ({exc}).")
    for label, make, dists in (
        ("selectolax (Lexbor) + rule", selectolax_adapter, ["selectolax"]),
        ("bs4 + lxml + rule", bs4_adapter, ["beautifulsoup4", "lxml"]),
        ("lxml.html + rule", lxml_adapter, ["lxml"]),
    ):
        adapter = make()
        extractors[label] = (partial(html_text, adapter), dists)
    if has_production():
        extractors["production (`extract_document`)"] = (html_production, [])
    rows = []
    for name, (extract, dists) in extractors.items():
        row = [name]
        for corpus in (generated, real):
            if not corpus:
                row += ["", ""]
                continue
            recalls, leaks = [], []
            for data, truth, boiler in corpus:
                got = words(extract(data))
                recalls.append(recall_precision(truth, got)[0])
                leaks.append(leak(boiler, got, set(truth)))
            row += [f"{statistics.mean(recalls):.3f}", f"{statistics.mean(leaks):.3f}"]
        speed_set = real or generated
        seconds = median_seconds(partial(list_of, extract, [d for d, _, _ in speed_set]))
        row.append(f"{len(speed_set) / seconds:.1f}")
        if dists:
            mb, extra = added_mb(dists)
            version, licence = version_licence(dists[0])
            row += [version, licence, f"{mb:.1f} ({', '.join(extra)})"]
        else:
            row += ["", "", ""]
        rows.append(row)
    return rows, notes


# ------------------------------------------------------------------------------------------------ DOCX

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def make_docx(blocks: Sequence[Block]) -> tuple[bytes, list[str], list[str]]:
    import docx

    document = docx.Document()
    truth: list[str] = []
    headings: list[str] = []
    for i, block in enumerate(blocks):
        if block.level:
            document.add_heading(block.text, level=min(block.level, 9))
            headings.append(block.text)
        else:
            document.add_paragraph(block.text)
        truth += words(block.text)
        if i == len(blocks) // 2:
            table = document.add_table(rows=2, cols=2)
            for r in range(2):
                for c in range(2):
                    table.cell(r, c).text = f"cell{r}{c} value"
                    truth += words(f"cell{r}{c} value")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue(), truth, headings


def docx_python_docx(data: bytes) -> tuple[str, list[str]]:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    parts, headings = [], []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            parts.append(item.text)
            style = item.style.name if item.style is not None else ""
            if style.startswith("Heading") or style == "Title":
                headings.append(item.text)
        elif isinstance(item, Table):
            parts += [cell.text for row in item.rows for cell in row.cells]
    return "\n".join(parts), headings


def docx_stdlib(data: bytes) -> tuple[str, list[str]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        body = ElementTree.fromstring(archive.read("word/document.xml")).find(f"{W}body")
        styles = ElementTree.fromstring(archive.read("word/styles.xml"))
    heading_ids = {
        s.get(f"{W}styleId")
        for s in styles.iter(f"{W}style")
        if re.match(r"(heading \d|title)$", (_attribute(s.find(f"{W}name"), f"{W}val")).lower())
    }
    parts, headings = [], []
    assert body is not None, "a DOCX without a body"
    for para in body.iter(f"{W}p"):
        text = "".join(t.text or "" for t in para.iter(f"{W}t"))
        parts.append(text)
        style = para.find(f"{W}pPr/{W}pStyle")
        if style is not None and style.get(f"{W}val") in heading_ids:
            headings.append(text)
    return "\n".join(parts), headings


def docx_production(data: bytes) -> tuple[str, list[str]]:
    from zapomni_core.files.formats import extract_document

    sections = extract_document(Path("x.docx"), data).sections
    return "\n".join(s.text for s in sections), []


def bench_docx() -> list[list[str]]:
    docs = [make_docx(prose_blocks(p)) for p in PROSE]
    rows = []
    candidates = [("python-docx", docx_python_docx, ["python-docx"]), ("stdlib zipfile + ElementTree", docx_stdlib, [])]
    if has_production():
        candidates.append(("production (`extract_document`)", docx_production, []))
    for name, extract, dists in candidates:
        recalls, heads = [], []
        for data, truth, headings in docs:
            text, found = extract(data)
            recalls.append(recall_precision(truth, words(text))[0])
            heads.append(found == headings)
        seconds = median_seconds(partial(list_of, extract, [d for d, _, _ in docs]))
        row = [name, f"{len(docs) / seconds:.0f}", f"{statistics.mean(recalls):.3f}"]
        row.append("" if name.startswith("production") else f"{sum(heads)}/{len(heads)}")
        if dists:
            mb, extra = added_mb(dists)
            version, licence = version_licence(dists[0])
            row += [version, licence, f"{mb:.1f} ({', '.join(extra)})"]
        else:
            row += ["", "", ""] if name.startswith("production") else ["", "PSF", "0"]
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------ Markdown


def md_headings_markdown_it(text: str) -> list[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.level == 0]


FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")


def md_headings_lines(text: str) -> list[str]:
    headings: list[str] = []
    fence = ""
    previous = ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            previous = ""
            continue
        if match:
            fence, previous = match.group(1), ""
            continue
        atx = ATX.match(line)
        if atx:
            headings.append((atx.group(2) or "").strip())
            previous = ""
        elif SETEXT.match(line) and previous.strip() and not previous.startswith("    "):
            headings.append(previous.strip())
            previous = ""
        else:
            previous = line
    return headings


def bench_markdown() -> tuple[list[list[str]], str]:
    files = sorted(NODE_DOCS.glob("*.md")) if NODE_DOCS.is_dir() else []
    files += [p for p in (ROOT / "docs").rglob("*.md")] + [ROOT / "README.md"]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    size = sum(len(t.encode()) for t in texts) / 1e6
    truth = [md_headings_markdown_it(t) for t in texts]
    rows = []
    for name, extract, dists in (
        ("markdown-it-py", md_headings_markdown_it, ["markdown-it-py"]),
        ("line parser", md_headings_lines, []),
    ):
        found = [extract(t) for t in texts]
        same = sum(f == t for f, t in zip(found, truth, strict=True))
        seconds = median_seconds(partial(list_of, extract, texts))
        row = [name, f"{len(texts) / seconds:.0f}", f"{size / seconds:.1f}", f"{same}/{len(texts)}"]
        if dists:
            mb, extra = added_mb(dists)
            version, licence = version_licence(dists[0])
            row += [
                version,
                licence,
                f"{mb:.1f}" + (f" ({', '.join(extra)})" if extra else " (runtime already has it)"),
            ]
        else:
            row += ["", "", "0"]
        rows.append(row)
    return (
        rows,
        f"{len(texts)} files, {size:.1f} MB ({len(files) - len(list((ROOT / 'docs').rglob('*.md'))) - 1} Node.js docs)",
    )


# ------------------------------------------------------------------------------------------------ report


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    logging.disable(logging.WARNING)  # pdfminer and trafilatura log every oddity of a real file
    warnings.simplefilter("ignore")
    sys.setrecursionlimit(10_000)
    started = time.perf_counter()
    pdf_rows, pdf_notes = bench_pdf()
    html_rows, html_notes = bench_html()
    docx_rows = bench_docx()
    md_rows, md_note = bench_markdown()
    report = [
        "# Document text extraction: PDF, HTML, DOCX, Markdown",
        "",
        f"Generated by `bench/document_formats.py` on {platform.system()} {platform.machine()}, 2 shared cores, "
        f"Python {platform.python_version()}, in {time.perf_counter() - started:.0f} s. Speed is the median of "
        f'{RUNS} runs. "Adds MB" is the installed size (files in each RECORD, no .pyc) of the library\'s '
        "dependency closure less what Zapomni's runtime already installs, with the distributions it adds.",
        "",
        "## PDF",
        "",
        *pdf_notes,
        "Recall / precision of words against the source text; order = share of the source's adjacent word "
        "pairs adjacent in the output. Agreement (real PDFs) = share of the words the other two libraries "
        "both found.",
        "",
        table(
            [
                "library",
                *(
                    f"{kind}: recall / precision / order"
                    for kind in ("1 col", "2 col", "reversed", "shifted", "truncated")
                ),
                "generated pages/s",
                "real pages/s",
                "real agreement",
                "version",
                "licence",
                "adds MB",
            ],
            pdf_rows,
        ),
        "",
        "## HTML",
        "",
        *html_notes,
        "Recall = share of the main text's words kept; leak = share of the boilerplate-only words kept. "
        "Files/s on the real pages.",
        "",
        table(
            [
                "extractor",
                "generated recall",
                "generated leak",
                "real recall",
                "real leak",
                "files/s",
                "version",
                "licence",
                "adds MB",
            ],
            html_rows,
        ),
        "",
        "## DOCX",
        "",
        f"{len(PROSE)} documents generated with python-docx from this repository's README and decision records "
        "(headings, paragraphs, one 2×2 table each).",
        "",
        table(["extractor", "files/s", "recall", "headings exact", "version", "licence", "adds MB"], docx_rows),
        "",
        "## Markdown",
        "",
        f"{md_note}. Headings exact = files whose heading list equals markdown-it-py's (CommonMark).",
        "",
        table(["parser", "files/s", "MB/s", "headings exact", "version", "licence", "adds MB"], md_rows),
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "document_formats.md"
    out.write_text("\n".join(report), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
