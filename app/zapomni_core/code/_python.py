"""Python: functions, classes and methods (decorators included in their span), calls, imports."""

from __future__ import annotations

import re

from tree_sitter import Node

from ._parsing import CalleeGrammar, Def, Extraction, clean_doc, collect_calls, signature, text
from ._structure import Import

QUERIES = {
    "python": """
(function_definition) @function
(class_definition) @class
(call function: (_) @call)
(import_statement) @import
(import_from_statement) @import
""",
}

CALLEES = CalleeGrammar(
    names=frozenset({"identifier"}),
    members={"attribute": ("object", ".", "attribute")},
    see_through={},
    call_types=frozenset({"call"}),
    call_field="function",
    ignore=frozenset({"lambda", "parenthesized_expression"}),
)

_STRING = re.compile(r"^[A-Za-z]*(\"\"\"|'''|\"|')(.*)\1$", re.DOTALL)


def extract(captures: dict[str, list[Node]], source: bytes) -> Extraction:
    defs = [_definition(n, source, "function") for n in captures.get("function", ())]
    defs += [_definition(n, source, "class") for n in captures.get("class", ())]
    imports = [i for n in captures.get("import", ()) for i in _imports(n)]
    return Extraction([d for d in defs if d is not None], collect_calls(captures.get("call", ()), CALLEES), imports)


def _definition(node: Node, source: bytes, kind: str) -> Def | None:
    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
    if name is None or body is None:
        return None
    parent = node.parent
    span = parent if parent is not None and parent.type == "decorated_definition" else node
    return Def(
        kind="class" if kind == "class" else "function",
        name=text(name),
        scope=node,
        span=span,
        signature=signature(source, node.start_byte, body.start_byte, strip=":"),
        docstring=_docstring(body),
        bases=_bases(node) if kind == "class" else [],
        holds_methods=kind == "class",
    )


def _docstring(body: Node) -> str | None:
    first = body.named_children[0] if body.named_child_count else None
    if first is None or first.type != "expression_statement" or not first.named_child_count:
        return None
    literal = first.named_children[0]
    if literal.type != "string":
        return None
    match = _STRING.match(text(literal))
    return clean_doc([match.group(2)]) if match else None


def _bases(node: Node) -> list[str]:
    arguments = node.child_by_field_name("superclasses")
    if arguments is None:
        return []
    bases: list[str] = []
    for argument in arguments.named_children:
        if argument.type == "subscript":  # Generic[T], Base[int]: the class is the subscripted value
            value = argument.child_by_field_name("value")
            argument = value if value is not None else argument
        if argument.type in ("identifier", "attribute"):
            bases.append("".join(text(argument).split()))
    return bases


def _imports(node: Node) -> list[Import]:
    line = node.start_point.row + 1
    if node.type == "import_statement":
        found: list[Import] = []
        for item in node.children_by_field_name("name"):
            if item.type == "aliased_import":
                name, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
                found.append(Import(_dotted(name), (), text(alias) if alias else None, line))
            else:
                found.append(Import(_dotted(item), (), None, line))
        return found
    module = node.child_by_field_name("module_name")
    names: list[tuple[str, str]] = []
    for item in node.children_by_field_name("name"):
        if item.type == "aliased_import":
            name, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
            names.append((_dotted(name), text(alias) if alias else _dotted(name)))
        else:
            names.append((_dotted(item), _dotted(item)))
    if any(child.type == "wildcard_import" for child in node.children):
        names.append(("*", "*"))
    return [Import(_dotted(module), tuple(names), None, line)]


def _dotted(node: Node | None) -> str:
    return "".join(text(node).split()) if node is not None else ""
