"""Parse one source file into a ParsedFile: symbols with their own calls, imports, error count.

Each language module runs one tree-sitter query over the tree (the matching itself happens in C) and
turns the captured nodes into `Def`s (definition-like regions), callee expressions and imports. This
module then sweeps the definitions and calls once in byte order with a stack of open regions: a
definition's parent is the innermost open region, a call belongs to the innermost open symbol. That
is what makes a nested function's calls its own and keeps a method's calls off its class, in every
language alike, without walking every node in Python.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal, Protocol

from tree_sitter import Node

from zapomni_db import SymbolKind

from ._languages import LANGUAGES, get_cursor, get_parser, get_query, grammar_for
from ._structure import Import, ParsedFile, Symbol

SIGNATURE_MAX = 300
_CALLEE_MAX = 80


@dataclass(slots=True)
class Def:
    """A definition-like region found by a language module, before names are qualified."""

    kind: Literal["function", "class", "namespace"]  # a namespace (Rust impl/mod, TS namespace) is no symbol
    name: str
    scope: Node  # nested definitions and calls inside this node belong to it
    span: Node  # the symbol's own text: includes Python decorators, a JS `const f = () => …`
    signature: str = ""
    docstring: str | None = None
    bases: list[str] = field(default_factory=list)
    owner: str | None = None  # Go receiver type: the method belongs to <module>.<owner>
    holds_methods: bool = False  # functions directly inside are methods (classes, Rust impl blocks)
    adds_bases: tuple[str, ...] = ()  # Rust `impl Trait for Type`: Trait joins Type's bases when Type is here


@dataclass(slots=True)
class Extraction:
    defs: list[Def]
    calls: list[tuple[int, int, str]]  # (start byte, -end byte, callee expression): outer calls sort first
    imports: list[Import]
    package: str | None = None  # Go package clause: names a root-directory module


class LanguageSupport(Protocol):
    QUERIES: Mapping[str, str]  # grammar -> query source

    def extract(self, captures: dict[str, list[Node]], source: bytes) -> Extraction: ...


_SUPPORT_MODULES = {
    "python": "_python",
    "javascript": "_javascript",
    "typescript": "_javascript",
    "go": "_go",
    "rust": "_rust",
}


@functools.cache
def _support(language: str) -> LanguageSupport:
    if language not in _SUPPORT_MODULES:
        raise ValueError(f"unsupported language {language!r}; known: {', '.join(LANGUAGES)}")
    # Imported on demand: the language modules import this one for Def and the helpers below.
    return importlib.import_module(f"{__package__}.{_SUPPORT_MODULES[language]}")


def parse_source(path: str, source: bytes, language: str) -> ParsedFile:
    """Parse `source` (the file at relative POSIX `path`) as `language`. Pure and thread-safe."""
    support = _support(language)
    grammar = grammar_for(path, language)
    tree = get_parser(grammar).parse(source)
    query = get_query(grammar, support.QUERIES[grammar])
    captures = get_cursor(grammar, query).captures(tree.root_node)
    extraction = support.extract(captures, source)
    module = module_name(path, language, extraction.package)
    return ParsedFile(
        path=path,
        language=language,
        module=module,
        symbols=_assemble(extraction, module),
        imports=tuple(sorted(extraction.imports, key=lambda i: i.line)),
        syntax_errors=count_errors(tree.root_node),
    )


def module_name(path: str, language: str, package: str | None = None) -> str:
    """The qualified-name prefix of a file's symbols (see the package docs for the rules)."""
    pure = PurePosixPath(path)
    parts = list(pure.with_suffix("").parts)
    if language == "python":
        if len(parts) > 1 and parts[0] == "src":
            parts = parts[1:]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts) or pure.stem
    if language == "go":
        directory = pure.parent.parts
        return ".".join(directory) if directory else (package or pure.stem)
    if language == "rust":
        return rust_module(parts)
    return ".".join(parts)


def rust_module(parts: list[str]) -> str:
    if "src" not in parts[:-1]:
        return ".".join(parts)  # build.rs, tests/, benches/: outside the crate's module tree
    rel = parts[len(parts) - 1 - parts[::-1].index("src") + 1 :]
    if rel in (["lib"], ["main"]):
        return "crate"
    if rel[-1] == "mod":
        rel = rel[:-1]
    return ".".join(["crate", *rel])


def count_errors(root: Node) -> int:
    """ERROR and MISSING nodes, visiting only the subtrees that contain one."""
    if not root.has_error:
        return 0
    count, stack = 0, [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return count


@dataclass(slots=True)
class _Record:
    kind: SymbolKind
    name: str
    qualified_name: str
    definition: Def
    parent: str | None
    bases: list[str]
    calls: dict[str, None] = field(default_factory=dict)  # ordered set

    def freeze(self) -> Symbol:
        span = self.definition.span
        return Symbol(
            kind=self.kind,
            name=self.name,
            qualified_name=self.qualified_name,
            signature=self.definition.signature,
            docstring=self.definition.docstring,
            line_start=span.start_point.row + 1,
            line_end=last_row(span) + 1,
            start_byte=span.start_byte,
            end_byte=span.end_byte,
            parent=self.parent,
            bases=tuple(dict.fromkeys(self.bases)),
            calls=tuple(self.calls),
        )


@dataclass(slots=True)
class _Frame:
    end: int
    qualified_name: str
    record: _Record | None
    holds_methods: bool


def _assemble(extraction: Extraction, module: str) -> tuple[Symbol, ...]:
    defs = sorted(extraction.defs, key=lambda d: (d.scope.start_byte, -d.scope.end_byte))
    calls = sorted(extraction.calls)
    records: dict[str, _Record] = {}
    impls: list[tuple[str, tuple[str, ...]]] = []
    frames: list[_Frame] = []
    next_call = 0

    def close_before(offset: int) -> None:
        while frames and frames[-1].end <= offset:
            frames.pop()

    def attribute_calls_before(offset: int) -> None:
        nonlocal next_call
        while next_call < len(calls) and calls[next_call][0] < offset:
            position, _, callee = calls[next_call]
            next_call += 1
            close_before(position)
            owner = next((f.record for f in reversed(frames) if f.record is not None), None)
            if owner is not None:
                owner.calls.setdefault(callee)

    for d in defs:
        attribute_calls_before(d.scope.start_byte)
        close_before(d.scope.start_byte)
        top = frames[-1] if frames else None
        qualified, parent, kind = _qualify(d, top, module)
        record: _Record | None = None
        if kind is not None:
            # A redefinition (property setter, overload, conditional def) merges into the first one.
            record = records.get(qualified)
            if record is None:
                record = records[qualified] = _Record(kind, d.name, qualified, d, parent, list(d.bases))
        elif d.adds_bases:
            impls.append((qualified, d.adds_bases))
        frames.append(_Frame(d.scope.end_byte, qualified, record, d.holds_methods))
    attribute_calls_before(1 << 62)

    for qualified, traits in impls:
        target = records.get(qualified)
        if target is not None and target.kind == "class":
            target.bases.extend(traits)
    return tuple(r.freeze() for r in records.values())


def _qualify(d: Def, top: _Frame | None, module: str) -> tuple[str, str | None, SymbolKind | None]:
    """(qualified name, parent, symbol kind or None for a namespace) of a definition in context."""
    if d.owner is not None:
        owner = f"{module}.{d.owner}"
        return f"{owner}.{d.name}", owner, "method"
    prefix = top.qualified_name if top is not None else module
    qualified = f"{prefix}.{d.name}"
    parent = top.qualified_name if top is not None and (top.record is not None or top.holds_methods) else None
    if d.kind == "namespace":
        return qualified, None, None
    if d.kind == "class":
        return qualified, parent, "class"
    return qualified, parent, "method" if top is not None and top.holds_methods else "function"


# ---- helpers shared by the language modules -------------------------------------------------


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def last_row(node: Node) -> int:
    """The last row a node covers: a node ending at column 0 (a `///` comment's newline) ends a row earlier."""
    end = node.end_point
    return end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row


_OPEN_SPACE = re.compile(r"([(\[]) ")
_SPACE_CLOSE = re.compile(r" ([)\]])")


def collapse(raw: str) -> str:
    """Whitespace runs to one space, and none just inside brackets (multi-line parameter lists)."""
    single = " ".join(raw.split())
    return _SPACE_CLOSE.sub(r"\1", _OPEN_SPACE.sub(r"\1", single))


def signature(source: bytes, start: int, end: int, strip: str = "") -> str:
    """The declaration text between two byte offsets, collapsed, trailing `strip` characters dropped."""
    raw = collapse(source[start:end].decode("utf-8", "replace")).rstrip()
    if strip:
        raw = raw.rstrip(strip).rstrip()
    return raw[:SIGNATURE_MAX]


def clean_doc(lines: Iterable[str]) -> str | None:
    cleaned = inspect.cleandoc("\n".join(lines))
    return cleaned or None


def comments_above(
    node: Node,
    *,
    wrappers: frozenset[str] = frozenset(),
    skip: frozenset[str] = frozenset(),
    comment_types: frozenset[str] = frozenset({"comment"}),
) -> list[Node]:
    """The comment nodes directly above a declaration, top to bottom.

    A declaration's comment is often a sibling of an enclosing node (`export function`, a Go
    `type` group), so when nothing precedes the node inside a `wrappers` parent we look from the
    parent. Nodes of `skip` types (Rust attributes) may stand between the comment and the item.
    """
    top_row = node.start_point.row
    previous = node.prev_named_sibling
    while previous is None and node.parent is not None and node.parent.type in wrappers:
        node = node.parent
        top_row = node.start_point.row
        previous = node.prev_named_sibling
    while previous is not None and previous.type in skip and last_row(previous) >= top_row - 1:
        top_row = previous.start_point.row
        previous = previous.prev_named_sibling
    found: list[Node] = []
    while previous is not None and previous.type in comment_types and last_row(previous) >= top_row - 1:
        found.append(previous)
        top_row = previous.start_point.row
        previous = previous.prev_named_sibling
    found.reverse()
    return found


@dataclass(frozen=True)
class CalleeGrammar:
    """How a language spells a callee, so `a.b(x).c` reads "a.b().c" whatever the grammar's node names."""

    names: frozenset[str]  # leaf node types taken as written (identifier, this, self, crate…)
    members: Mapping[str, tuple[str, str, str]]  # node type -> (object field, separator, member field)
    see_through: Mapping[str, str]  # generic instantiations: node type -> field holding the callee
    call_types: frozenset[str]  # a call used as a receiver renders as "f()"
    call_field: str
    ignore: frozenset[str]  # callee node types that are no named callee at all (lambdas called in place)


def callee_text(node: Node, grammar: CalleeGrammar) -> str | None:
    """The callee as a dotted/`::` path, None for callees that name nothing (an inline lambda)."""
    kind = node.type
    if kind in grammar.ignore:
        return None
    if kind in grammar.names:
        return text(node)
    if kind in grammar.see_through:
        inner = node.child_by_field_name(grammar.see_through[kind])
        return callee_text(inner, grammar) if inner is not None else None
    if kind in grammar.members:
        object_field, separator, member_field = grammar.members[kind]
        target, member = node.child_by_field_name(object_field), node.child_by_field_name(member_field)
        if member is None:
            return None
        head = callee_text(target, grammar) if target is not None else ""
        return None if head is None else f"{head}{separator}{text(member)}"
    if kind in grammar.call_types:
        function = node.child_by_field_name(grammar.call_field)
        called = callee_text(function, grammar) if function is not None else None
        return None if called is None else f"{called}()"
    written = collapse(text(node))
    return written if len(written) <= _CALLEE_MAX else written[: _CALLEE_MAX - 1] + "…"


def collect_calls(nodes: Iterable[Node], grammar: CalleeGrammar) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    for node in nodes:
        callee = callee_text(node, grammar)
        if callee:
            found.append((node.start_byte, -node.end_byte, callee))
    return found
