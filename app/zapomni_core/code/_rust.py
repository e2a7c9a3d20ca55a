"""Rust: functions, structs/enums/unions/traits as classes, impl methods, calls, `use` and `mod x;`.

Functions inside `impl Type` or `impl Trait for Type` are methods of Type (`crate.a.Type.method`);
a trait's own functions, with or without a default body, are methods of the trait. An
`impl Trait for Type` in the file that defines Type adds Trait to Type's bases, which is where Rust
spells "implements". Inline `mod x { }` adds `.x` to the names inside; `mod x;` is recorded as an
import of "self::x". Macro invocations (`println!`) are not calls.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from ._parsing import CalleeGrammar, Def, Extraction, clean_doc, collect_calls, comments_above, signature, text
from ._structure import Import

QUERIES = {
    "rust": """
(function_item) @function
(function_signature_item) @function
(struct_item) @class
(enum_item) @class
(union_item) @class
(trait_item) @class
(impl_item) @impl
(mod_item) @mod
(call_expression function: (_) @call)
(use_declaration) @import
""",
}

CALLEES = CalleeGrammar(
    names=frozenset({"identifier", "self", "super", "crate", "type_identifier", "metavariable"}),
    members={
        "scoped_identifier": ("path", "::", "name"),
        "scoped_type_identifier": ("path", "::", "name"),
        "field_expression": ("value", ".", "field"),
    },
    see_through={"generic_function": "function", "generic_type": "type"},
    call_types=frozenset({"call_expression"}),
    call_field="function",
    ignore=frozenset({"closure_expression", "parenthesized_expression"}),
)

_COMMENTS = frozenset({"line_comment", "block_comment"})
_ATTRIBUTES = frozenset({"attribute_item"})


def extract(captures: dict[str, list[Node]], source: bytes) -> Extraction:
    defs = [_item(n, source, "function") for n in captures.get("function", ())]
    defs += [_item(n, source, "class") for n in captures.get("class", ())]
    defs += [_impl(n) for n in captures.get("impl", ())]
    imports: list[Import] = []
    for node in captures.get("mod", ()):
        name = node.child_by_field_name("name")
        if name is None:
            continue
        if node.child_by_field_name("body") is not None:
            defs.append(Def(kind="namespace", name=text(name), scope=node, span=node))
        else:
            imports.append(Import(f"self::{text(name)}", (), None, node.start_point.row + 1))
    imports += [i for n in captures.get("import", ()) for i in _use(n)]
    calls = collect_calls(captures.get("call", ()), CALLEES)
    return Extraction([d for d in defs if d is not None], calls, imports)


def _item(node: Node, source: bytes, kind: str) -> Def | None:
    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
    if name is None:
        return None
    return Def(
        kind="class" if kind == "class" else "function",
        name=text(name),
        scope=node,
        span=node,
        signature=signature(source, node.start_byte, body.start_byte if body else node.end_byte, strip=";"),
        docstring=_doc(node),
        bases=_bounds(node) if node.type == "trait_item" else [],
        holds_methods=kind == "class",
    )


def _impl(node: Node) -> Def | None:
    name = _type_name(node.child_by_field_name("type"))
    if not name:
        return None
    trait = node.child_by_field_name("trait")
    traits = (_path(trait),) if trait is not None else ()
    return Def(kind="namespace", name=name, scope=node, span=node, holds_methods=True, adds_bases=traits)


def _type_name(node: Node | None) -> str:
    """The type an impl block is for, as its last path segment: `impl<T> a::Store<T>` -> Store."""
    while node is not None and node.type in ("generic_type", "reference_type", "pointer_type"):
        node = node.child_by_field_name("type")
    if node is not None and node.type == "scoped_type_identifier":
        node = node.child_by_field_name("name")
    return text(node) if node is not None and node.type == "type_identifier" else ""


def _path(node: Node) -> str:
    """A trait as written, without type arguments: `From<u8>` -> From, `fmt::Display` stays."""
    if node.type == "generic_type":
        inner = node.child_by_field_name("type")
        node = inner if inner is not None else node
    return "".join(text(node).split())


def _bounds(node: Node) -> list[str]:
    bounds = node.child_by_field_name("bounds")
    if bounds is None:
        return []
    kinds = ("type_identifier", "scoped_type_identifier", "generic_type")
    return [_path(b) for b in bounds.named_children if b.type in kinds]


def _is_doc(comment: Node) -> bool:
    raw = text(comment)
    if comment.type == "line_comment":
        return raw.startswith("///") and not raw.startswith("////")
    return raw.startswith("/**") and not raw.startswith(("/***", "/**/"))


def _doc(node: Node) -> str | None:
    comments = comments_above(node, skip=_ATTRIBUTES, comment_types=_COMMENTS)
    docs: list[Node] = []
    for comment in reversed(comments):  # only the doc comments right above count
        if not _is_doc(comment):
            break
        docs.append(comment)
    lines: list[str] = []
    for comment in reversed(docs):
        raw = text(comment).rstrip("\n")
        if comment.type == "line_comment":
            lines.append(raw[3:].removeprefix(" "))
        else:
            lines += (line.strip().removeprefix("*").removeprefix(" ") for line in raw[3:-2].splitlines())
    return clean_doc(lines) if lines else None


def _segments(node: Node) -> list[str]:
    return [s for s in "".join(text(node).split()).split("::") if s]


def _leaves(node: Node, prefix: list[str]) -> Iterator[tuple[list[str], str | None]]:
    """Each imported path of a `use` tree, with its `as` alias: a::{b, c::{d as e}} -> a::b, a::c::d as e."""
    kind = node.type
    if kind in ("identifier", "self", "crate", "super", "metavariable", "scoped_identifier"):
        yield prefix + _segments(node), None
    elif kind == "use_as_clause":
        path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if path is not None:
            yield prefix + _segments(path), text(alias) if alias is not None else None
    elif kind == "scoped_use_list":
        path, items = node.child_by_field_name("path"), node.child_by_field_name("list")
        inner = prefix + (_segments(path) if path is not None else [])
        for child in items.named_children if items is not None else ():
            yield from _leaves(child, inner)
    elif kind == "use_list":
        for child in node.named_children:
            yield from _leaves(child, prefix)
    elif kind == "use_wildcard":
        path = node.named_children[0] if node.named_child_count else None
        yield prefix + (_segments(path) if path is not None else []) + ["*"], None


def _use(node: Node) -> list[Import]:
    argument = node.child_by_field_name("argument")
    if argument is None:
        return []
    line = node.start_point.row + 1
    whole: list[Import] = []
    grouped: dict[str, list[tuple[str, str]]] = {}
    for segments, alias in _leaves(argument, []):
        if segments and segments[-1] == "self":  # use a::b::{self} imports module b itself
            segments = segments[:-1]
        if len(segments) == 1:
            whole.append(Import(segments[0], (), alias, line))
        elif segments:
            name = segments[-1]
            grouped.setdefault("::".join(segments[:-1]), []).append((name, alias or name))
    return whole + [Import(module, tuple(names), None, line) for module, names in grouped.items()]
