"""HTML: the main content only, sectioned at h1-h6 (lxml.html and a small main-content rule).

The rule: start from <main> (or role=main), else a lone <article>, else <body>; drop nav, aside, script,
style, form, noscript and the like, header/footer outside the content, elements whose role is navigation,
banner, contentinfo..., hidden ones, and those whose class or id names a menu, sidebar, footer, cookie
banner, breadcrumb... Measured against trafilatura and the same rule on selectolax and BeautifulSoup
(docs/decisions/0013-document-extraction.md): equal or better main text, and lxml is already here for DOCX.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from ._document import Block, Document, UnreadableFile, library_reason, sections_from_blocks
from ._text import BINARY, looks_binary

DROP_TAGS = frozenset(
    "nav aside script style form noscript template svg math iframe object embed button select menu dialog head".split()
)
DROP_ROLES = frozenset("navigation banner contentinfo complementary menu menubar search dialog alert".split())
BOILERPLATE_NAMES = frozenset(
    "nav navbar navigation menu sidebar footer breadcrumb breadcrumbs cookie cookies banner share social "
    "skip related comments subscribe newsletter masthead".split()
)
BLOCK_TAGS = frozenset(
    "p div section article main li ul ol dl dt dd pre blockquote table tr caption figure figcaption "
    "h1 h2 h3 h4 h5 h6 hr header footer address details summary body html".split()
)
HEADINGS = {f"h{i}": i for i in range(1, 7)}
CELLS = frozenset(("td", "th"))
CONTENT = frozenset(("main", "article"))
_PERMALINKS = frozenset(("#", "¶", "§", "🔗"))

_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
# WHATWG: these labels mean windows-1252, whose extra printable characters pages rely on.
_LATIN1_LABELS = frozenset(("iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii"))


def decode_html(data: bytes) -> str:
    """BOM, then the declared charset, then UTF-8; bytes none of them decode are refused."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(codec).lstrip("\ufeff")
            except UnicodeDecodeError as exc:
                raise UnreadableFile(f"not valid {codec} HTML (bad byte at offset {exc.start})") from None
    if looks_binary(data):
        raise UnreadableFile(BINARY)
    declared = _CHARSET.search(data[:4096])
    encodings = ["utf-8"]
    if declared:
        label = declared.group(1).decode("ascii").lower()
        label = "cp1252" if label in _LATIN1_LABELS else label
        with contextlib.suppress(LookupError):  # an unknown label: UTF-8 is the best guess
            encodings.insert(0, codecs.lookup(label).name)
    error: UnicodeDecodeError | None = None
    for encoding in dict.fromkeys(encodings):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as exc:
            error = error or exc
        except LookupError:  # a label of a non-text codec ("rot13", "base64"): not a charset
            continue
    assert error is not None
    return _undecodable(data, encodings[0], error)


def _undecodable(data: bytes, encoding: str, error: UnicodeDecodeError) -> str:
    if encoding == "cp1252":  # five bytes are undefined in windows-1252; Latin-1 maps them all
        return data.decode("latin-1")
    byte = data[error.start]
    raise UnreadableFile(
        f"not {encoding} HTML (invalid byte 0x{byte:02x} at offset {error.start}); convert it to UTF-8"
    )


def _names(value: str | None) -> set[str]:
    return set(re.split(r"[\s_\-]+", value.lower())) if value else set()


def _is_boilerplate(element: etree._Element, in_content: bool) -> bool:
    tag = element.tag
    if tag in DROP_TAGS or (tag in ("header", "footer") and not in_content):
        return True
    if (element.get("role") or "").lower() in DROP_ROLES:
        return True
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    if tag == "a" and (element.get("href") or "").startswith("#") and (element.text or "").strip() in _PERMALINKS:
        return True  # a heading's permalink anchor ("#", "¶") would end every heading path
    return bool((_names(element.get("class")) | _names(element.get("id"))) & BOILERPLATE_NAMES)


def _content_root(document: etree._Element) -> etree._Element:
    articles = []
    for element in document.iter(tag=etree.Element):
        if element.tag == "main" or (element.get("role") or "").lower() == "main":
            return element
        if element.tag == "article":
            articles.append(element)
    if len(articles) == 1:
        return articles[0]
    body = document.find("body")
    return body if body is not None else document


@dataclass
class _Blocks:
    """Collects text runs into paragraphs and headings as the walk opens and closes block elements."""

    blocks: list[Block] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    level: int | None = None
    pre: int = 0  # depth inside <pre>: whitespace there is the content

    def text(self, text: str) -> None:
        self.runs.append(text if self.pre else re.sub(r"\s+", " ", text))

    def flush(self, level: int | None = None) -> None:
        text = "".join(self.runs)
        text = text.strip("\n").rstrip() if self.pre else re.sub(r" *\n *", "\n", text).strip()
        if text.strip():
            self.blocks.append(Block(text, self.level))
        self.runs.clear()
        self.level = level


def html_blocks(document: etree._Element) -> list[Block]:
    root = _content_root(document)
    out = _Blocks()
    content_depth = 1 if root.tag in CONTENT or (root.get("role") or "").lower() == "main" else 0
    # An explicit stack, not recursion: real pages nest deeper than Python's recursion limit allows.
    stack: list[tuple[bool, etree._Element]] = [(True, root)]
    while stack:
        opening, element = stack.pop()
        tag = element.tag if isinstance(element.tag, str) else None
        if opening:
            if tag is None or _is_boilerplate(element, content_depth > 0):
                if element.tail and element is not root:  # comments too: only their tail is text
                    out.text(element.tail)
                continue
            content_depth += tag in CONTENT
            if tag in BLOCK_TAGS:
                out.flush(HEADINGS.get(tag))
            elif tag in CELLS and "".join(out.runs).strip():
                out.runs.append(" | ")
            elif tag == "br":
                out.runs.append("\n")
            out.pre += tag == "pre"
            if element.text:
                out.text(element.text)
            stack.append((False, element))
            stack.extend((True, child) for child in reversed(element))
        else:
            content_depth -= tag in CONTENT
            if tag in BLOCK_TAGS:
                out.flush()
            out.pre -= tag == "pre"  # after the flush: the <pre> block itself keeps its whitespace
            if element.tail and element is not root:
                out.text(element.tail)
    out.flush()
    return out.blocks


def extract_html(data: bytes) -> Document:
    text = _XML_DECLARATION.sub("", decode_html(data))  # lxml refuses str input that declares an encoding
    if not text.strip():
        return Document(format="html", sections=())
    try:
        document = lxml.html.document_fromstring(text)
    except etree.ParserError:  # "Document is empty": markup with no elements at all
        return Document(format="html", sections=())
    except Exception as exc:
        raise UnreadableFile(f"corrupt HTML: {library_reason(exc)}") from None
    return Document(format="html", sections=sections_from_blocks(html_blocks(document)))
