"""Go: functions, methods (named `<package>.<Receiver>.<Method>`), type declarations, calls, imports.

Every `type X …` is a class; embedded struct fields and embedded interfaces are its bases, and an
interface's method specs are its methods. An import's alias is the one written, else the last path
element (skipping a `/vN` major-version suffix), which is the package name by convention.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from ._parsing import CalleeGrammar, Def, Extraction, clean_doc, collect_calls, comments_above, signature, text
from ._structure import Import

QUERIES = {
    "go": """
(package_clause) @package
(function_declaration) @function
(method_declaration) @method
(type_spec) @class
(method_elem) @function
(call_expression function: (_) @call)
(import_spec) @import
""",
}

CALLEES = CalleeGrammar(
    names=frozenset({"identifier", "field_identifier", "package_identifier", "type_identifier"}),
    members={"selector_expression": ("operand", ".", "field")},
    see_through={"generic_type": "type"},
    call_types=frozenset({"call_expression"}),
    call_field="function",
    ignore=frozenset({"func_literal", "parenthesized_expression"}),
)

_DIRECTIVE = re.compile(r"^//(go:|[a-z0-9]+:[a-z0-9])")  # //go:generate, //nolint:… are not documentation
_VERSION = re.compile(r"^v\d+$")


def extract(captures: dict[str, list[Node]], source: bytes) -> Extraction:
    defs = [_function(n, source) for n in captures.get("function", ())]
    defs += [_method(n, source) for n in captures.get("method", ())]
    defs += [_type(n, source) for n in captures.get("class", ())]
    imports = [i for n in captures.get("import", ()) if (i := _import(n)) is not None]
    package = next((_package(n) for n in captures.get("package", ())), None)
    calls = collect_calls(captures.get("call", ()), CALLEES)
    return Extraction([d for d in defs if d is not None], calls, imports, package)


def _function(node: Node, source: bytes) -> Def | None:
    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
    if name is None:
        return None
    end = body.start_byte if body is not None else node.end_byte
    return Def(
        kind="function",
        name=text(name),
        scope=node,
        span=node,
        signature=signature(source, node.start_byte, end),
        docstring=_doc(node),
    )


def _method(node: Node, source: bytes) -> Def | None:
    found = _function(node, source)
    receiver = node.child_by_field_name("receiver")
    parameter = receiver.named_children[0] if receiver is not None and receiver.named_child_count else None
    owner = _type_name(parameter.child_by_field_name("type")) if parameter is not None else ""
    if found is None or not owner:
        return found
    found.owner = owner
    return found


def _type(node: Node, source: bytes) -> Def | None:
    name, body = node.child_by_field_name("name"), node.child_by_field_name("type")
    if name is None or body is None:
        return None
    brace = _opening_brace(body)
    return Def(
        kind="class",
        name=text(name),
        scope=node,
        span=node,
        signature="type " + signature(source, node.start_byte, brace if brace is not None else node.end_byte),
        docstring=_doc(node),
        bases=_embedded(body),
        holds_methods=True,
    )


def _opening_brace(body: Node) -> int | None:
    if body.type == "struct_type":
        fields = next((c for c in body.named_children if c.type == "field_declaration_list"), None)
        return fields.start_byte if fields is not None else None
    if body.type == "interface_type":
        return next((c.start_byte for c in body.children if c.type == "{"), None)
    return None


def _embedded(body: Node) -> list[str]:
    bases: list[str] = []
    if body.type == "struct_type":
        fields = next((c for c in body.named_children if c.type == "field_declaration_list"), None)
        for field in fields.named_children if fields is not None else ():
            if field.type == "field_declaration" and field.child_by_field_name("name") is None:
                bases.append(_type_name(field.child_by_field_name("type")))
    elif body.type == "interface_type":
        for element in body.named_children:
            if element.type == "type_elem" and element.named_child_count == 1:  # not a union constraint
                bases.append(_type_name(element.named_children[0]))
    return [b for b in bases if b]


def _type_name(node: Node | None) -> str:
    """The named type under pointers and type arguments: *Repo[T] -> Repo, pkg.Base stays as written."""
    while node is not None and node.type in ("pointer_type", "generic_type", "parenthesized_type"):
        node = node.child_by_field_name("type") or (node.named_children[-1] if node.named_child_count else None)
    if node is None or node.type not in ("type_identifier", "qualified_type"):
        return ""
    return "".join(text(node).split())


def _doc(node: Node) -> str | None:
    comments = comments_above(node, wrappers=frozenset({"type_declaration"}))
    lines: list[str] = []
    for comment in comments:
        raw = text(comment)
        if raw.startswith("/*"):
            lines += raw[2:-2].splitlines()
        elif not _DIRECTIVE.match(raw):
            lines.append(raw[2:].removeprefix(" "))
    return clean_doc(lines) if lines else None


def _import(node: Node) -> Import | None:
    path_node = node.child_by_field_name("path")
    if path_node is None:
        return None
    path = text(path_node)[1:-1]
    name = node.child_by_field_name("name")
    return Import(path, (), text(name) if name is not None else _default_name(path), node.start_point.row + 1)


def _default_name(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    if len(parts) > 1 and _VERSION.match(parts[-1]):
        parts.pop()
    return parts[-1] if parts else path


def _package(node: Node) -> str | None:
    name = next((c for c in node.named_children if c.type == "package_identifier"), None)
    return text(name) if name is not None else None
