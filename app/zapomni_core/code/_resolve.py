"""Link a codebase's parsed files: which call reaches which symbol, which class extends which, which
file imports which. Only dictionaries are consulted (no scans), so the work is linear in the number
of symbols, imports and calls.

Modules. Each file is a module named by `module_name`; a namespace is a module, a package prefix of
one (`pkg` for `pkg/sub/mod.py`, even without `__init__.py`) or a Rust inline `mod`. Imports map to
namespaces per language:
- Python: dotted modules; relative imports (`.x`, `..x`) from the importing file's package; a dotted
  absolute import not found as such may match the end of exactly one module's name (the codebase's
  root is often above the import root, as in `backend/app/x.py` imported as `app.x`);
  `from pkg import mod` binds the submodule when pkg defines no `mod`.
- JavaScript/TypeScript: relative specifiers only, tried as written, with each extension and as
  `<dir>/index.<ext>`; a `.js` specifier also finds the `.ts` source. Bare specifiers ('react',
  path aliases) are external.
- Go: an import path names the codebase directory that is its longest proper path suffix
  (`example.com/proj/internal/store` -> `internal/store`); a path equal to the module path seen in
  other matches names the root directory.
- Rust: `crate::`, `self::`, `super::` paths, a first segment naming a child module (declared by
  `mod x;`) or a crate-level module; other first segments are external crates. `use` paths are read
  relative to the file's module, also inside inline modules.

Calls. Each distinct callee expression in a symbol's body is resolved once, in this order:
1. `self.x`, `this.x`, `cls.x`, a Go method's receiver `r.x`, Rust `self.x` and `Self::x`: method x of
   the enclosing class (for Rust and Go, the type the impl/receiver names), else of its resolved bases,
   nearest first (`super().x` / `super.x` start at the bases; `cls()`/`Self()` and JavaScript
   `super()` are the class or its base). Two bases at the same depth defining x are ambiguous,
   except in Python, where the first base in declaration order wins as in the MRO.
2. A bare name: a function or class nested in the calling function or an enclosing function, else a
   top-level symbol of the same namespace (Go: the same package directory; Rust inline modules also
   see the file's items, as `use super::*` gives them), else a name imported into the file (the
   import followed to its file; re-exports are not followed; a JavaScript default import is taken to
   be the same-named symbol of the target), else a name glob-imported into the file (`from m import *`,
   `use m::*`, Go dot-imports), else — not in Go, where it cannot happen — a function or class
   defined exactly once at top level in the whole codebase in the same language family, unless its
   name is a common builtin.
3. A dotted or `::` path `a.b.c`: its head resolves as a bare name (or `crate`/`self`/`super` in
   Rust), then each segment is looked up as a submodule or top-level symbol of a module, or a method
   or nested class of a class (walking up its bases). The target must be a function, method or class;
   calling a class resolves to the class (its constructor).
4. Everything else is unresolved: methods on values of unknown type (`obj.method()`, `self.a.b()`),
   attributes that hold callables, builtins and library calls, calls through expressions
   (`f()()`, `a[0]()`). When a step yields several distinct candidates the call is ambiguous:
   counted, not linked.
Unresolved and ambiguous counts are per distinct callee expression per symbol. A call never
resolves to its caller unless these rules name the caller itself (true recursion).

Inheritance: each written base resolves like a path from the class's own scope, skipping the class
itself (so `class Config(Config)` finds the imported Config); only bases that are classes in the
codebase become INHERITS pairs. Imports: a file imports the file that defines each imported symbol or
module; a Go package import links to every file of that package directory.
"""

from __future__ import annotations

import builtins
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Final

from ._structure import CodeLinks, ParsedFile, Symbol

NsKey = tuple[str, str, str]  # (language family, Rust crate root or "", dotted namespace)
Target = str | NsKey  # a symbol's qualified name or a namespace


class _Ambiguous:
    def __repr__(self) -> str:
        return "AMBIGUOUS"


AMBIGUOUS: Final = _Ambiguous()
Outcome = Target | _Ambiguous | None

_FAMILIES = {"python": "python", "javascript": "js", "typescript": "js", "go": "go", "rust": "rust"}
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_TS_FOR_JS = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_BUILTINS: dict[str, frozenset[str]] = {
    "python": frozenset(dir(builtins)),
    "js": frozenset(
        "require console parseInt parseFloat setTimeout setInterval clearTimeout clearInterval Promise Array Object"
        " String Number Boolean Symbol Map Set WeakMap WeakSet Date Error TypeError RangeError JSON Math fetch"
        " isNaN isFinite encodeURIComponent decodeURIComponent structuredClone queueMicrotask BigInt RegExp Proxy"
        " Reflect URL URLSearchParams alert describe it test expect beforeEach afterEach".split()
    ),
    "rust": frozenset("Some None Ok Err Box Vec String Option Result drop Default From Into".split()),
    "go": frozenset(),
}
_SELF = {"python": frozenset({"self", "cls"}), "js": frozenset({"this"}), "rust": frozenset({"self"})}
_CONSTRUCTOR_SELF = {"python": "cls", "rust": "Self"}
_SEPARATOR = re.compile(r"::|\.")
_SEGMENT = re.compile(r"^[\w$#]+$")
_GO_RECEIVER = re.compile(r"^func\s*\(\s*([A-Za-z_]\w*)\s")


def resolve(files: Sequence[ParsedFile]) -> CodeLinks:
    """Resolve calls, inheritance and imports across `files` (the whole codebase). Pure."""
    return _Resolver(files).links()


@dataclass(slots=True)
class _File:
    parsed: ParsedFile
    family: str
    root: str  # Rust crate root directory ("" elsewhere): what `crate::` means in this file
    key: NsKey
    bindings: dict[str, Target] = field(default_factory=dict)
    globs: list[NsKey] = field(default_factory=list)


def _crate_root(path: str) -> str:
    parts = PurePosixPath(path).parts[:-1]
    if "src" not in parts:
        return ""
    return "/".join(parts[: len(parts) - parts[::-1].index("src")])


def _prefixes(dotted: str) -> Iterable[str]:
    parts = dotted.split(".")
    return (".".join(parts[:i]) for i in range(1, len(parts) + 1))


class _Resolver:
    def __init__(self, parsed: Sequence[ParsedFile]) -> None:
        self.files: list[_File] = []
        for p in parsed:
            family = _FAMILIES.get(p.language)
            if family is not None:
                root = _crate_root(p.path) if family == "rust" else ""
                self.files.append(_File(p, family, root, (family, root, p.module)))
        self.by_qn: dict[str, Symbol] = {}
        self.home: dict[str, _File] = {}
        self.children: dict[str, dict[str, str]] = {}
        self.members: dict[NsKey, dict[str, str]] = {}
        self.ns_files: dict[NsKey, list[str]] = {}
        self.known: set[NsKey] = set()
        self.top_level: dict[tuple[str, str], set[str]] = {}
        self.by_path = {f.parsed.path: f for f in self.files}
        self.go_dirs = {posixpath.dirname(f.parsed.path): f.key for f in self.files if f.family == "go"}
        self.go_roots: set[str] = set()
        self.py_suffixes: dict[str, set[NsKey]] = {}
        self.type_alias: dict[str, str] = {}  # Rust impl target written elsewhere -> the class it names
        self._bases: dict[str, list[str]] = {}
        self.import_edges: dict[tuple[str, str], None] = {}
        self._index_symbols()
        self._index_go_roots()
        for f in self.files:
            self._bind_imports(f)
        self._attach_foreign_impls()

    # ---- indexing ------------------------------------------------------------------------------

    def _index_symbols(self) -> None:
        for f in self.files:
            self._add_namespace(f.key, f.parsed.path)
            if f.family == "python":
                parts = f.key[2].split(".")
                for i in range(1, len(parts) - 1):
                    self.py_suffixes.setdefault(".".join(parts[i:]), set()).add(f.key)
            for s in f.parsed.symbols:
                if s.qualified_name in self.by_qn:
                    continue  # the same name defined twice (index.js and index.ts): the first one wins
                self.by_qn[s.qualified_name] = s
                self.home[s.qualified_name] = f
                if s.parent is not None:
                    self.children.setdefault(s.parent, {}).setdefault(s.name, s.qualified_name)
                    continue
                namespace = (f.family, f.root, s.qualified_name.rpartition(".")[0])
                self.members.setdefault(namespace, {}).setdefault(s.name, s.qualified_name)
                if namespace != f.key:
                    self._add_namespace(namespace, f.parsed.path)
                self.top_level.setdefault((f.family, s.name), set()).add(s.qualified_name)

    def _add_namespace(self, key: NsKey, path: str) -> None:
        paths = self.ns_files.setdefault(key, [])
        if path not in paths:
            paths.append(path)
        family, root, dotted = key
        self.known.update((family, root, prefix) for prefix in _prefixes(dotted))

    def _index_go_roots(self) -> None:
        # The Go module path is whatever precedes a matched directory; an import of exactly that
        # path is the root package.
        for f in self.files:
            if f.family == "go":
                for imp in f.parsed.imports:
                    segments = imp.module.split("/")
                    for i in range(1, len(segments)):
                        if "/".join(segments[i:]) in self.go_dirs:
                            self.go_roots.add("/".join(segments[:i]))
                            break

    def _attach_foreign_impls(self) -> None:
        """Rust `impl Store` in another module than `struct Store`: its methods join Store's."""
        for f in self.files:
            if f.family != "rust":
                continue
            for s in f.parsed.symbols:
                owner = s.parent
                if s.kind != "method" or owner is None or owner in self.by_qn or owner in self.type_alias:
                    continue
                dotted, _, name = owner.rpartition(".")
                found = self._lookup(f, None, (f.family, f.root, dotted), name, exclude=None)
                if isinstance(found, str) and self.by_qn[found].kind == "class":
                    self.type_alias[owner] = found
                    target = self.children.setdefault(found, {})
                    for method, qualified in self.children.get(owner, {}).items():
                        target.setdefault(method, qualified)

    # ---- imports -------------------------------------------------------------------------------

    def _bind_imports(self, f: _File) -> None:
        for imp in f.parsed.imports:
            module = self._import_target(f, imp.module)
            if module is None:
                continue
            if not imp.names:
                self._link_namespace(f, module)
                local = imp.alias or self._default_binding(f, imp.module)
                if local == ".":  # Go dot-import
                    f.globs.append(module)
                elif local and local != "_":
                    f.bindings[local] = self._binding_target(f, imp.module, module) if not imp.alias else module
                continue
            for name, local in imp.names:
                if name == "*":
                    f.globs.append(module)
                    self._link_namespace(f, module)
                    continue
                lookup = local if name == "default" else name  # default import: the same-named symbol
                target = self._member(module, lookup)
                if isinstance(target, str):
                    f.bindings[local] = target
                    self._link(f, self.home[target].parsed.path)
                elif isinstance(target, tuple):
                    f.bindings[local] = target
                    self._link_namespace(f, target)
                else:
                    self._link_namespace(f, module)
            if imp.alias:
                f.bindings[imp.alias] = module

    def _default_binding(self, f: _File, written: str) -> str | None:
        if f.family == "python":
            return written.split(".")[0] if not written.startswith(".") else None
        if f.family == "rust":
            return written.split("::")[-1]
        return None

    def _binding_target(self, f: _File, written: str, module: NsKey) -> NsKey:
        """`import a.b.c` binds `a`: the namespace above the imported one by as many segments."""
        if f.family != "python":
            return module
        depth = written.count(".")
        dotted = module[2].split(".")
        return (module[0], module[1], ".".join(dotted[: len(dotted) - depth]))

    def _import_target(self, f: _File, written: str) -> NsKey | None:
        if f.family == "python":
            return self._python_module(f, written)
        if f.family == "js":
            path = self._js_file(f, written)
            return self.by_path[path].key if path is not None else None
        if f.family == "go":
            return self._go_package(written)
        return self._rust_module(f, written)

    def _python_module(self, f: _File, written: str) -> NsKey | None:
        if written.startswith("."):
            level = len(written) - len(written.lstrip("."))
            package = f.key[2].split(".")
            if PurePosixPath(f.parsed.path).stem != "__init__":
                package = package[:-1]
            if level - 1 > len(package):
                return None
            base = package[: len(package) - (level - 1)]
            rest = written[level:]
            key = ("python", "", ".".join(base + (rest.split(".") if rest else [])))
            return key if key in self.known else None
        key = ("python", "", written)
        if key in self.known:
            return key
        candidates = self.py_suffixes.get(written, set()) if "." in written else set()
        return next(iter(candidates)) if len(candidates) == 1 else None

    def _js_file(self, f: _File, specifier: str) -> str | None:
        if not specifier.startswith("."):
            return None
        base = posixpath.normpath(posixpath.join(posixpath.dirname(f.parsed.path), specifier))
        if base.startswith(".."):
            return None
        stem, extension = posixpath.splitext(base)
        candidates = [base, *(stem + e for e in _TS_FOR_JS.get(extension, ()))]
        candidates += [base + e for e in _JS_EXTENSIONS] + [f"{base}/index{e}" for e in _JS_EXTENSIONS]
        return next((c for c in candidates if c in self.by_path and self.by_path[c].family == "js"), None)

    def _go_package(self, path: str) -> NsKey | None:
        segments = path.split("/")
        for i in range(1, len(segments)):  # longest proper suffix first
            key = self.go_dirs.get("/".join(segments[i:]))
            if key is not None:
                return key
        return self.go_dirs.get("") if path in self.go_roots else None

    def _rust_module(self, f: _File, written: str) -> NsKey | None:
        segments = written.split("::")
        head, rest = segments[0], segments[1:]
        if head == "crate":
            key: NsKey | None = ("rust", f.root, "crate")
        elif head == "self":
            key = f.key
        elif head == "super":
            key, rest = f.key, segments
        else:
            local, crate_level = ("rust", f.root, f"{f.key[2]}.{head}"), ("rust", f.root, f"crate.{head}")
            key = local if local in self.known else crate_level if crate_level in self.known else None
        for segment in rest:
            if key is None:
                return None
            key = self._submodule(key, segment)
        return key

    def _submodule(self, key: NsKey, name: str) -> NsKey | None:
        family, root, dotted = key
        if name == "super" and family == "rust":
            parent = dotted.rpartition(".")[0]
            return (family, root, parent) if parent else None
        sub = (family, root, f"{dotted}.{name}")
        return sub if sub in self.known else None

    def _link_namespace(self, f: _File, key: NsKey) -> None:
        for path in self.ns_files.get(key, ()):
            self._link(f, path)

    def _link(self, f: _File, path: str) -> None:
        if path != f.parsed.path:
            self.import_edges[(f.parsed.path, path)] = None

    # ---- name resolution -----------------------------------------------------------------------

    def _namespace_of(self, symbol: Symbol, f: _File) -> NsKey:
        qualified, parent = symbol.qualified_name, symbol.parent
        while parent is not None:
            above = self.by_qn.get(parent)
            if above is None:  # a Go receiver or Rust impl type defined nowhere in the codebase
                qualified = parent
                break
            qualified, parent = above.qualified_name, above.parent
        return (f.family, f.root, qualified.rpartition(".")[0])

    def _lookup(self, f: _File, scope: str | None, namespace: NsKey, name: str, exclude: str | None) -> Outcome:
        """A bare name seen from `scope` (a qualified name) in `namespace`: step 2 of the module docs."""
        while scope is not None:
            symbol = self.by_qn.get(scope)
            if symbol is None:
                break
            if symbol.kind != "class":  # class bodies are not enclosing scopes of their methods
                hit = self.children.get(scope, {}).get(name)
                if hit is not None and hit != exclude:
                    return hit
            scope = symbol.parent
        for key in (namespace, f.key) if f.family == "rust" and namespace != f.key else (namespace,):
            hit = self.members.get(key, {}).get(name)
            if hit is not None and hit != exclude:
                return hit
        bound = f.bindings.get(name)
        if bound is not None and bound != exclude:
            return bound
        if f.family == "rust":
            sub = self._submodule(namespace, name)
            if sub is not None:
                return sub
        globbed = {hit for g in f.globs if (hit := self.members.get(g, {}).get(name)) and hit != exclude}
        if globbed:
            return globbed.pop() if len(globbed) == 1 else AMBIGUOUS
        if f.family == "go" or name in _BUILTINS[f.family]:
            return None
        unique = self.top_level.get((f.family, name), set()) - {exclude}
        if not unique:
            return None
        return next(iter(unique)) if len(unique) == 1 else AMBIGUOUS

    def _member(self, owner: Outcome, name: str) -> Outcome:
        if owner is None or owner is AMBIGUOUS:
            return owner
        if isinstance(owner, tuple):
            hit = self.members.get(owner, {}).get(name)
            return hit if hit is not None else self._submodule(owner, name)
        assert isinstance(owner, str)
        symbol = self.by_qn.get(owner)
        # An owner defined nowhere is a Rust impl or Go receiver type known only by its methods.
        if (symbol.kind == "class") if symbol is not None else owner in self.children:
            return self._find_method(owner, name)
        return None

    def _find_method(self, cls: str, name: str) -> Outcome:
        """Method or nested class `name` of `cls`, else of its bases, nearest depth first."""
        python = cls in self.home and self.home[cls].family == "python"
        level, seen = [cls], {cls}
        while level:
            hits = list(dict.fromkeys(h for c in level if (h := self.children.get(c, {}).get(name)) is not None))
            if hits:
                return hits[0] if len(hits) == 1 or python else AMBIGUOUS
            following: list[str] = []
            for c in level:
                for base in self.bases(c):
                    if base not in seen:
                        seen.add(base)
                        following.append(base)
            level = following
        return None

    def bases(self, cls: str) -> list[str]:
        cached = self._bases.get(cls)
        if cached is not None:
            return cached
        self._bases[cls] = []  # a cycle through a base's own bases ends here
        symbol = self.by_qn.get(cls)
        if symbol is None or symbol.kind != "class":
            return []
        f = self.home[cls]
        namespace = self._namespace_of(symbol, f)
        found: list[str] = []
        for written in symbol.bases:
            target = self._path(f, symbol.parent, namespace, written, exclude=cls)
            if isinstance(target, str) and target != cls and self.by_qn[target].kind == "class" and target not in found:
                found.append(target)
        self._bases[cls] = found
        return found

    def _path(self, f: _File, scope: str | None, namespace: NsKey, written: str, exclude: str | None) -> Outcome:
        parts, separators = _SEPARATOR.split(written), _SEPARATOR.findall(written)
        if not all(_SEGMENT.match(p) for p in parts):
            return None
        head = parts[0]
        if f.family == "rust" and separators and separators[0] == "::" and head in ("crate", "self", "super"):
            current: Outcome = {
                "crate": ("rust", f.root, "crate"),
                "self": namespace,
                "super": self._submodule(namespace, "super"),
            }[head]
        else:
            current = self._lookup(f, scope, namespace, head, exclude)
        for part in parts[1:]:
            current = self._member(current, part)
        return current

    # ---- calls ---------------------------------------------------------------------------------

    def _enclosing_class(self, symbol: Symbol) -> str | None:
        current = symbol
        while current.parent is not None:
            above = self.by_qn.get(current.parent)
            if above is None:
                return self.type_alias.get(current.parent, current.parent) if current.kind == "method" else None
            if above.kind == "class":
                return above.qualified_name
            current = above
        return None

    def _self_names(self, f: _File, symbol: Symbol) -> frozenset[str]:
        if f.family == "go":
            match = _GO_RECEIVER.match(symbol.signature) if symbol.kind == "method" else None
            return frozenset({match.group(1)}) if match else frozenset()
        return _SELF.get(f.family, frozenset())

    def _call(self, f: _File, caller: Symbol, callee: str) -> Outcome:
        parts, separators = _SEPARATOR.split(callee), _SEPARATOR.findall(callee)
        head, family = parts[0], f.family
        if not all(_SEGMENT.match(p) for p in parts[1:]) or not (_SEGMENT.match(head) or head == "super()"):
            return None
        if len(parts) == 1 and head == _CONSTRUCTOR_SELF.get(family):
            return self._enclosing_class(caller)
        if len(parts) == 1 and family == "js" and head == "super":
            cls = self._enclosing_class(caller)
            bases = self.bases(cls) if cls else []
            return bases[0] if bases else None
        receiver = separators[0] if separators else ""
        is_self = (receiver == "." and head in self._self_names(f, caller)) or (
            family == "rust" and receiver == "::" and head == "Self"
        )
        is_super = len(parts) == 2 and (
            (family == "python" and head == "super()") or (family == "js" and head == "super")
        )
        if is_self or is_super:
            cls = self._enclosing_class(caller)
            if cls is None or len(parts) != 2:
                return None
            if is_self:
                return self._symbol(self._find_method(cls, parts[1]))
            for base in self.bases(cls):
                found = self._find_method(base, parts[1])
                if found is not None:
                    return self._symbol(found)
            return None
        namespace = self._namespace_of(caller, f)
        return self._symbol(self._path(f, caller.qualified_name, namespace, callee, exclude=None))

    def _symbol(self, outcome: Outcome) -> Outcome:
        return None if isinstance(outcome, tuple) else outcome  # a module is not callable

    def links(self) -> CodeLinks:
        calls: dict[tuple[str, str], None] = {}
        unresolved = ambiguous = 0
        for f in self.files:
            for symbol in f.parsed.symbols:
                for callee in symbol.calls:
                    target = self._call(f, symbol, callee)
                    if target is AMBIGUOUS:
                        ambiguous += 1
                    elif isinstance(target, str):
                        calls[(symbol.qualified_name, target)] = None
                    else:
                        unresolved += 1
        inherits = {(cls, base): None for cls, s in self.by_qn.items() if s.kind == "class" for base in self.bases(cls)}
        return CodeLinks(
            calls=tuple(calls),
            inherits=tuple(inherits),
            imports=tuple(self.import_edges),
            unresolved_calls=unresolved,
            ambiguous_calls=ambiguous,
        )
