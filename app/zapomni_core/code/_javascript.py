"""JavaScript and TypeScript (one module: TypeScript's grammar extends JavaScript's).

Functions include arrow functions and function expressions bound to a name (`const f = () => …`,
a class field `handle = () => …`), named by the binding. TypeScript interfaces are classes whose
method signatures are methods; `namespace X {}` only adds `.X` to the names inside. Imports cover
ES modules, `export … from` (a dependency that binds no local name) and CommonJS `require`.
"""

from __future__ import annotations

from tree_sitter import Node

from ._parsing import CalleeGrammar, Def, Extraction, clean_doc, collect_calls, comments_above, signature, text
from ._structure import Import

_COMMON = """
(function_declaration) @function
(generator_function_declaration) @function
(method_definition) @function
(variable_declarator name: (identifier) value: [(arrow_function) (function_expression) (generator_function)]) @function
(class_declaration) @class
(variable_declarator name: (identifier) value: (class)) @class
(call_expression function: (_) @call)
(new_expression constructor: (_) @call)
(import_statement) @import
(export_statement source: (_)) @import
(variable_declarator value: (call_expression function: (identifier) arguments: (arguments . (string) .))) @require
"""
_TYPESCRIPT = (
    _COMMON
    + """
(public_field_definition value: [(arrow_function) (function_expression)]) @function
(interface_body (method_signature) @function)
(abstract_method_signature) @function
(abstract_class_declaration) @class
(interface_declaration) @class
(internal_module) @namespace
"""
)
QUERIES = {
    "javascript": _COMMON + "(field_definition value: [(arrow_function) (function_expression)]) @function\n",
    "typescript": _TYPESCRIPT,
    "tsx": _TYPESCRIPT,
}

CALLEES = CalleeGrammar(
    names=frozenset({"identifier", "this", "super"}),
    members={"member_expression": ("object", ".", "property")},
    see_through={},
    call_types=frozenset({"call_expression"}),
    call_field="function",
    ignore=frozenset({"arrow_function", "function_expression", "parenthesized_expression", "import", "class"}),
)

_DECLARATIONS = frozenset({"lexical_declaration", "variable_declaration"})
_DOC_WRAPPERS = frozenset({"export_statement", *_DECLARATIONS})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "generator_function"})
_MEMBERS = frozenset({"method_definition", "field_definition", "public_field_definition"})


def extract(captures: dict[str, list[Node]], source: bytes) -> Extraction:
    defs = [_function(n, source) for n in captures.get("function", ())]
    defs += [_class(n, source) for n in captures.get("class", ())]
    defs += [_namespace(n) for n in captures.get("namespace", ())]
    imports = [_import(n) for n in captures.get("import", ())]
    imports += [i for n in captures.get("require", ()) if (i := _require(n)) is not None]
    return Extraction([d for d in defs if d is not None], collect_calls(captures.get("call", ()), CALLEES), imports)


def _function(node: Node, source: bytes) -> Def | None:
    if node.type in _MEMBERS and not _in_named_class(node):
        return None  # object-literal methods and anonymous classes: their calls stay with the enclosing code
    if node.type == "variable_declarator" or node.type.endswith("field_definition"):
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        value = node.child_by_field_name("value")
        if name is None or value is None or value.type not in _FUNCTION_VALUES:
            return None
        span = _declaration(node)
        body = value.child_by_field_name("body")
        return Def(
            kind="function",
            name=text(name),
            scope=value,
            span=span,
            signature=signature(source, span.start_byte, body.start_byte if body else value.end_byte, strip="{;"),
            docstring=_jsdoc(node),
        )
    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
    if name is None:
        return None
    return Def(
        kind="function",
        name=text(name),
        scope=node,
        span=node,
        signature=signature(source, node.start_byte, body.start_byte if body else node.end_byte, strip="{;,"),
        docstring=_jsdoc(node),
    )


def _in_named_class(member: Node) -> bool:
    body = member.parent
    owner = body.parent if body is not None and body.type == "class_body" else None
    if owner is None:
        return False
    if owner.type in ("class_declaration", "abstract_class_declaration"):
        return True
    return owner.type == "class" and owner.parent is not None and owner.parent.type == "variable_declarator"


def _class(node: Node, source: bytes) -> Def | None:
    declaration, span = node, node
    if node.type == "variable_declarator":  # const Foo = class extends Base {}
        value = node.child_by_field_name("value")
        if value is None:  # the query captures a declarator only with its class value
            return None
        declaration, span = value, _declaration(node)
    name, body = node.child_by_field_name("name"), declaration.child_by_field_name("body")
    if name is None or body is None:
        return None
    return Def(
        kind="class",
        name=text(name),
        scope=declaration,
        span=span,
        signature=signature(source, span.start_byte, body.start_byte),
        docstring=_jsdoc(node),
        bases=_bases(declaration),
        holds_methods=True,
    )


def _namespace(node: Node) -> Def | None:
    name = node.child_by_field_name("name")
    if name is None or name.type == "string":  # `declare module "x"` describes another package
        return None
    return Def(kind="namespace", name=text(name), scope=node, span=node)


def _declaration(declarator: Node) -> Node:
    """`const f = …` as a whole when it declares only f, so the span starts at the keyword."""
    parent = declarator.parent
    if parent is not None and parent.type in _DECLARATIONS and parent.named_child_count == 1:
        return parent
    return declarator


def _bases(node: Node) -> list[str]:
    bases: list[str] = []
    for child in node.named_children:
        if child.type == "class_heritage":
            for clause in child.named_children:
                if clause.type == "extends_clause":
                    bases += [_type_name(v) for v in clause.children_by_field_name("value")]
                elif clause.type == "implements_clause":
                    bases += [_type_name(t) for t in clause.named_children]
                else:  # JavaScript: class_heritage holds the extended expression itself
                    bases.append(_type_name(clause))
        elif child.type == "extends_type_clause":
            bases += [_type_name(t) for t in child.children_by_field_name("type")]
    return [b for b in bases if b]


def _type_name(node: Node) -> str:
    if node.type == "generic_type":
        name = node.child_by_field_name("name")
        return _type_name(name) if name is not None else ""
    return "".join(text(node).split())


def _jsdoc(node: Node) -> str | None:
    comments = comments_above(node, wrappers=_DOC_WRAPPERS)
    if not comments or not text(comments[-1]).startswith("/**"):
        return None
    body = text(comments[-1])[3:-2]
    return clean_doc(line.strip().removeprefix("*").removeprefix(" ") for line in body.splitlines())


def _string(node: Node | None) -> str:
    return text(node)[1:-1] if node is not None else ""


def _import(node: Node) -> Import:
    line = node.start_point.row + 1
    module = _string(node.child_by_field_name("source"))
    if node.type == "export_statement":
        return Import(module, (), None, line)
    names: list[tuple[str, str]] = []
    alias: str | None = None
    for child in node.named_children:
        if child.type == "import_require_clause":  # TypeScript: import x = require("./x")
            identifier = next((c for c in child.named_children if c.type == "identifier"), None)
            alias = text(identifier) if identifier is not None else None
            module = _string(child.child_by_field_name("source"))
        if child.type != "import_clause":
            continue
        for part in child.named_children:
            if part.type == "identifier":
                names.append(("default", text(part)))
            elif part.type == "namespace_import":
                identifier = next((c for c in part.named_children if c.type == "identifier"), None)
                alias = text(identifier) if identifier is not None else None
            elif part.type == "named_imports":
                for spec in part.named_children:
                    name, local = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                    if name is not None:
                        names.append((text(name), text(local or name)))
    return Import(module, tuple(names), alias, line)


def _require(declarator: Node) -> Import | None:
    call = declarator.child_by_field_name("value")
    function = call.child_by_field_name("function") if call is not None else None
    if call is None or function is None or text(function) != "require":
        return None
    arguments = call.child_by_field_name("arguments")
    module = _string(arguments.named_children[0]) if arguments is not None else ""
    target = declarator.child_by_field_name("name")
    line = declarator.start_point.row + 1
    if target is None:
        return None
    if target.type == "identifier":
        return Import(module, (), text(target), line)
    names: list[tuple[str, str]] = []
    for part in target.named_children:  # const { a, b: c } = require("./x")
        if part.type == "shorthand_property_identifier_pattern":
            names.append((text(part), text(part)))
        elif part.type == "pair_pattern":
            key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
            if key is not None and value is not None:
                names.append((text(key), text(value)))
    return Import(module, tuple(names), None, line)
