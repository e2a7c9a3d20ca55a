"""Code parsing and call-graph resolution on small multi-file projects, against facts checked by hand.

Each fixture under tests/fixtures/code/<language> is a tiny project with cross-file calls, a call
through self/this/a receiver, a base class in another file, an import alias and library calls; the
expected CALLS, INHERITS and IMPORTS below were worked out by reading the fixture, not by running
the resolver.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from zapomni_core.code import LANGUAGES, Import, ParsedFile, Symbol, _languages, language_for, parse_source, resolve
from zapomni_core.code._parsing import module_name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"


def load(language: str) -> list[ParsedFile]:
    root = FIXTURES / language
    parsed = []
    for path in sorted(root.rglob("*")):
        detected = language_for(path.name)
        if detected is not None:
            parsed.append(parse_source(path.relative_to(root).as_posix(), path.read_bytes(), detected))
    return parsed


def symbol(files: list[ParsedFile], qualified_name: str) -> Symbol:
    found = [s for f in files for s in f.symbols if s.qualified_name == qualified_name]
    assert len(found) == 1, f"{qualified_name}: {len(found)} symbols"
    return found[0]


# ---- the call graph, by hand ------------------------------------------------------------------

EXPECTED = {
    "python": {
        "calls": {
            ("shop.base.Entity.describe", "shop.base.Entity.label"),  # self.label
            ("shop.models.Order.__init__", "shop.base.Entity.__init__"),  # super().__init__
            ("shop.models.Order.total", "shop.base.validate"),  # imported as `check`
            ("shop.models.Order.label", "shop.base.Entity.describe"),  # self.describe found on the base
            ("shop.models.make_order", "shop.models.Order"),  # constructor
            ("shop.service.OrderService.build", "shop.models.make_order"),  # m.make_order, `models as m`
            ("shop.service.OrderService.place", "shop.service.OrderService.build"),
            ("shop.service.OrderService.place", "shop.service.OrderService.place.log"),  # nested function
            ("shop.service.OrderService.place", "shop.service.render"),
            ("shop.service.configure", "shop.base.validate"),  # not imported, but defined once
            ("shop.cli.main", "shop.service.OrderService"),
        },
        "inherits": {("shop.models.Order", "shop.base.Entity")},
        "imports": {
            ("shop/models.py", "shop/base.py"),
            ("shop/service.py", "shop/models.py"),
            ("shop/service.py", "shop/base.py"),
            ("shop/cli.py", "shop/service.py"),
        },
        # str, super, len, json.dumps, entity.label, self.orders.append, print, service.place
        "unresolved": 8,
        "ambiguous": 1,  # configure() in cli.py: defined in base.py and service.py, imported from neither
    },
    "javascript": {
        "calls": {
            ("src.shapes.Shape.describe", "src.shapes.Shape.area"),  # this.area
            ("src.shapes.Square.constructor", "src.shapes.Shape"),  # super(...)
            ("src.shapes.Square.constructor", "src.util.index.clamp"),
            ("src.app.main", "src.shapes.Square"),  # new Sq, `Square as Sq`
            ("src.app.main", "src.util.index.double"),  # util.double, `* as util` from './util' (index.js)
            ("src.app.main", "src.app.report"),
            ("src.app.report", "src.app.report.format"),  # arrow function bound to a const
            ("src.app.report.format", "src.util.index.clamp"),  # helpers = require('./util/index')
        },
        "inherits": {("src.shapes.Square", "src.shapes.Shape")},
        "imports": {
            ("src/shapes.js", "src/util/index.js"),
            ("src/app.js", "src/util/index.js"),
            ("src/app.js", "src/shapes.js"),
        },
        "unresolved": 5,  # Math.min, Math.max, console.log, shape.describe, s.area
        "ambiguous": 0,
    },
    "typescript": {
        "calls": {
            ("src.models.user.User.name", "src.models.user.User.join"),
            ("src.models.user.Admin.name", "src.models.user.User.name"),  # super.name
            ("src.store.Store.add", "src.store.Store.log"),  # a class field holding an arrow function
            ("src.store.Store.add", "src.store.Store.key"),  # abstract method
            ("src.store.createStore", "src.store.UserStore"),
            ("src.index.seed", "src.store.createStore"),  # imported from "./store.js", the .ts source
            ("src.index.seed", "src.models.user.User"),
            ("src.index.seed", "src.models.user.Admin"),
        },
        "inherits": {
            ("src.models.user.User", "src.models.user.Named"),  # implements an interface
            ("src.models.user.Admin", "src.models.user.User"),
            ("src.store.UserStore", "src.store.Store"),  # extends Store<User>
        },
        "imports": {
            ("src/store.ts", "src/models/user.ts"),
            ("src/index.ts", "src/store.ts"),
            ("src/index.ts", "src/models/user.ts"),
        },
        "unresolved": 6,  # [a, b].join, this.items.push, console.info, user.name, store.add, who.name
        "ambiguous": 0,
    },
    "go": {
        "calls": {
            ("internal.store.Memory.Get", "internal.store.wrap"),  # same package, other file
            ("internal.store.Memory.Put", "internal.store.Base.Describe"),  # m.Describe via embedded Base
            ("main.main", "internal.store.NewMemory"),  # kv.NewMemory
            ("main.main", "main.run"),
        },
        "inherits": {("internal.store.Memory", "internal.store.Base")},
        "imports": {("main.go", "internal/store/memory.go"), ("main.go", "internal/store/store.go")},
        "unresolved": 6,  # fmt.Sprintf, fmt.Errorf, s.Put, panic, fmt.Println, s.Get
        "ambiguous": 0,
    },
    "rust": {
        "calls": {
            ("crate.total_area", "crate.shapes.circle.Circle.new"),  # Circle::new
            ("crate.total_area", "crate.util.log"),  # util::log through `mod util;`
            ("crate.shapes.circle.Circle.new", "crate.util.log"),
            ("crate.shapes.circle.Circle.scaled", "crate.shapes.circle.Circle.new"),  # Self::new
            ("crate.shapes.circle.Circle.area", "crate.util.square"),  # `square as sq`
            ("crate.shapes.Shape.describe", "crate.shapes.Shape.area"),  # self.area in a trait
        },
        "inherits": {("crate.shapes.circle.Circle", "crate.shapes.Shape")},  # impl Shape for Circle
        "imports": {
            ("src/lib.rs", "src/shapes/mod.rs"),
            ("src/lib.rs", "src/util.rs"),
            ("src/lib.rs", "src/shapes/circle.rs"),
            ("src/shapes/mod.rs", "src/shapes/circle.rs"),
            ("src/shapes/circle.rs", "src/shapes/mod.rs"),
            ("src/shapes/circle.rs", "src/util.rs"),
        },
        "unresolved": 3,  # Circle::new(..).area, a.to_string, x.powi
        "ambiguous": 0,
    },
}


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_call_graph_facts_checked_by_hand(language: str) -> None:
    files = load(language)
    links = resolve(files)
    expected = EXPECTED[language]
    assert set(links.calls) == expected["calls"]
    assert set(links.inherits) == expected["inherits"]
    assert set(links.imports) == expected["imports"]
    assert (links.unresolved_calls, links.ambiguous_calls) == (expected["unresolved"], expected["ambiguous"])
    assert len(links.calls) == len(set(links.calls))


def test_languages_do_not_leak_into_each_other() -> None:
    everything = [f for language in EXPECTED for f in load(language)]
    links = resolve(everything)
    expected: list[dict[str, Any]] = list(EXPECTED.values())
    assert set(links.calls) == set().union(*(e["calls"] for e in expected))
    assert set(links.inherits) == set().union(*(e["inherits"] for e in expected))
    assert links.unresolved_calls == sum(e["unresolved"] for e in expected)


# ---- symbols, by hand -------------------------------------------------------------------------


def test_python_symbols() -> None:
    files = load("python")
    build = symbol(files, "shop.service.OrderService.build")
    assert (build.kind, build.name, build.parent) == ("method", "build", "shop.service.OrderService")
    assert (build.line_start, build.line_end) == (15, 17)  # from the @staticmethod line
    assert build.signature == "def build(ident: int)"
    place = symbol(files, "shop.service.OrderService.place")
    assert place.signature == "def place(self, ident: int, *, notify: bool = False) -> str"
    assert place.docstring == "Place an order and render it.\n\nReturns the rendered order."
    assert (place.line_start, place.line_end) == (19, 32)
    assert place.calls == ("self.build", "self.orders.append", "log", "render")  # not the nested log's print
    log = symbol(files, "shop.service.OrderService.place.log")
    assert (log.kind, log.parent, log.calls, log.line_start) == ("function", place.qualified_name, ("print",), 28)
    order = symbol(files, "shop.models.Order")
    assert (order.kind, order.bases, order.docstring, order.signature) == (
        "class",
        ("Entity",),
        "An order of items.",
        "class Order(Entity)",
    )
    source = (FIXTURES / "python" / "shop" / "service.py").read_bytes()
    assert source[build.start_byte : build.end_byte].startswith(b"@staticmethod")
    models = next(f for f in files if f.path == "shop/models.py")
    assert models.imports == (Import(".base", (("Entity", "Entity"), ("validate", "check")), None, 1),)


def test_javascript_and_typescript_symbols() -> None:
    js = load("javascript")
    clamp = symbol(js, "src.util.index.clamp")
    assert (clamp.kind, clamp.line_start, clamp.line_end) == ("function", 4, 6)
    assert clamp.signature == "function clamp(value, low, high)"
    assert clamp.docstring == "Clamp a number into a range."
    double = symbol(js, "src.util.index.double")
    assert (double.kind, double.signature, double.line_start) == ("function", "const double = (x) =>", 8)
    app = next(f for f in js if f.path == "src/app.js")
    assert Import("./util", (), "util", 1) in app.imports
    assert Import("./shapes.js", (("Square", "Sq"),), None, 2) in app.imports

    ts = load("typescript")
    user = symbol(ts, "src.models.user.User")
    assert (user.kind, user.bases, user.line_start, user.line_end) == ("class", ("Named",), 8, 18)
    assert (user.signature, user.docstring) == ("class User implements Named", "A registered user.")
    join = symbol(ts, "src.models.user.User.join")
    assert (join.kind, join.signature) == ("method", "private join(a: string, b: string): string")
    named = symbol(ts, "src.models.user.Named")
    assert (named.kind, symbol(ts, "src.models.user.Named.name").signature) == ("class", "name(): string")
    log = symbol(ts, "src.store.Store.log")
    assert (log.kind, log.parent, log.line_start, log.line_end) == ("method", "src.store.Store", 13, 15)
    seed = symbol(ts, "src.index.seed")
    assert seed.signature == "const seed = async (names: string[]): Promise<number> =>"
    assert (seed.docstring, seed.line_start, seed.line_end) == ("Fill a store with users.", 6, 13)
    assert symbol(ts, "src.store.UserStore").bases == ("Store",)


def test_go_symbols() -> None:
    files = load("go")
    memory = symbol(files, "internal.store.Memory")
    assert (memory.kind, memory.bases, memory.line_start, memory.line_end) == ("class", ("Base",), 6, 9)
    assert (memory.signature, memory.docstring) == ("type Memory struct", "Memory keeps records in a map.")
    get = symbol(files, "internal.store.Memory.Get")
    assert (get.kind, get.name, get.parent) == ("method", "Get", "internal.store.Memory")
    assert get.signature == "func (m *Memory) Get(key string) (string, error)"
    assert (get.line_start, get.line_end, get.docstring) == (16, 22, None)
    new = symbol(files, "internal.store.NewMemory")
    assert (new.signature, new.docstring) == ("func NewMemory() *Memory", "NewMemory makes an empty store.")
    assert symbol(files, "internal.store.Store.Put").signature == "Put(key, value string) error"
    main = next(f for f in files if f.path == "main.go")
    assert main.module == "main"
    assert Import("example.com/demo/internal/store", (), "kv", 6) in main.imports
    assert Import("fmt", (), "fmt", 4) in main.imports


def test_rust_symbols() -> None:
    files = load("rust")
    total = symbol(files, "crate.total_area")
    assert (total.kind, total.line_start, total.line_end) == ("function", 10, 17)
    assert total.signature == "pub fn total_area(radii: &[f64]) -> f64"
    assert total.docstring == "Total area of circles\nwith the given radii."
    circle = symbol(files, "crate.shapes.circle.Circle")
    assert (circle.kind, circle.bases, circle.docstring) == ("class", ("Shape",), "A round shape.")  # above #[derive]
    assert (circle.signature, circle.line_start, circle.line_end) == ("pub struct Circle", 6, 8)
    new = symbol(files, "crate.shapes.circle.Circle.new")
    assert (new.kind, new.parent, new.docstring) == ("method", "crate.shapes.circle.Circle", "Makes a circle.")
    assert (new.signature, new.line_start, new.line_end) == ("pub fn new(radius: f64) -> Self", 12, 15)
    area = symbol(files, "crate.shapes.Shape.area")
    assert (area.kind, area.signature) == ("method", "fn area(&self) -> f64")
    circle_file = next(f for f in files if f.path == "src/shapes/circle.rs")
    assert circle_file.imports == (
        Import("super", (("Shape", "Shape"),), None, 1),
        Import("crate::util", (("log", "log"), ("square", "sq")), None, 2),
    )
    lib = next(f for f in files if f.path == "src/lib.rs")
    assert Import("self::shapes", (), None, 2) in lib.imports


# ---- robustness and plumbing ------------------------------------------------------------------

BROKEN = {
    "python": ("a.py", b"def first():\n    one()\n\ndef broken(:\n    pass\n\ndef last():\n    two()\n"),
    "javascript": ("a.js", b"function first() { one(); }\nconst x = (;\nfunction last() { two(); }\n"),
    "typescript": ("a.ts", b"function first(): void { one(); }\nlet y: = ;\nfunction last() { two(); }\n"),
    "go": ("a.go", b"package a\n\nfunc first() { one() }\n\nfunc broken( {\n}\n\nfunc last() { two() }\n"),
    "rust": ("src/a.rs", b"fn first() { one(); }\nfn broken( {\n}\nfn last() { two(); }\n"),
}


@pytest.mark.parametrize("language", sorted(BROKEN))
def test_a_file_with_syntax_errors_still_yields_its_other_symbols(language: str) -> None:
    path, source = BROKEN[language]
    parsed = parse_source(path, source, language)
    assert parsed.syntax_errors > 0
    names = {s.name: s for s in parsed.symbols}
    assert names["first"].calls == ("one",)
    assert names["last"].calls == ("two",)


def test_grammars_and_queries_load_once_and_parsers_once_per_thread() -> None:
    for language, extensions in LANGUAGES.items():
        parse_source(f"x{extensions[0]}", b"", language)
        grammar = _languages.grammar_for(f"x{extensions[0]}", language)
        assert _languages.get_grammar(grammar) is _languages.get_grammar(grammar)
        assert _languages.get_parser(grammar) is _languages.get_parser(grammar)
        query = _languages._queries[grammar]
        parse_source(f"y{extensions[0]}", b"", language)
        assert _languages._queries[grammar] is query
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(_languages.get_parser("python")))
    thread.start()
    thread.join()
    assert other[0] is not _languages.get_parser("python")


def test_parsing_in_threads_matches_parsing_in_one() -> None:
    jobs = [
        (p.relative_to(FIXTURES).as_posix(), p.read_bytes(), language)
        for p in sorted(FIXTURES.rglob("*"))
        if (language := language_for(p.name)) is not None
    ]
    sequential = [parse_source(*job) for job in jobs]
    with ThreadPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(lambda job: parse_source(*job), jobs)) == sequential


@pytest.mark.parametrize(
    ("path", "language", "module"),
    [
        ("pkg/sub/mod.py", "python", "pkg.sub.mod"),
        ("pkg/__init__.py", "python", "pkg"),
        ("src/pkg/mod.py", "python", "pkg.mod"),
        ("src/util/index.ts", "typescript", "src.util.index"),
        ("lib/x.test.js", "javascript", "lib.x.test"),
        ("internal/store/db.go", "go", "internal.store"),
        ("src/lib.rs", "rust", "crate"),
        ("src/main.rs", "rust", "crate"),
        ("src/a/b.rs", "rust", "crate.a.b"),
        ("src/a/b/mod.rs", "rust", "crate.a.b"),
    ],
)
def test_module_names(path: str, language: str, module: str) -> None:
    assert module_name(path, language) == module


def test_root_go_file_is_named_by_its_package() -> None:
    assert parse_source("tool.go", b"package tools\n\nfunc Run() {}\n", "go").symbols[0].qualified_name == "tools.Run"


def test_language_detection() -> None:
    assert [language_for(p) for p in ("a/b.PY", "x.pyi", "c.mjs", "d.tsx", "e.cts", "f.go", "g.rs", "h.md")] == [
        "python",
        "python",
        "javascript",
        "typescript",
        "typescript",
        "go",
        "rust",
        None,
    ]


def test_tsx_parses_jsx_and_rust_inline_modules_nest() -> None:
    tsx = parse_source("ui/App.tsx", b"export const App = () => <div onClick={() => go()} />;\n", "typescript")
    assert (tsx.syntax_errors, [(s.qualified_name, s.calls) for s in tsx.symbols]) == (0, [("ui.App.App", ("go",))])
    rust = parse_source("src/a.rs", b"mod inner {\n    pub fn f() { g(); }\n}\nfn g() {}\n", "rust")
    assert [(s.qualified_name, s.parent) for s in rust.symbols] == [("crate.a.inner.f", None), ("crate.a.g", None)]
    assert set(resolve([rust]).calls) == {("crate.a.inner.f", "crate.a.g")}


def test_signatures_are_capped_and_redefinitions_merge() -> None:
    parameters = ", ".join(f"argument_{i}: int" for i in range(40))
    source = (
        "class C:\n    @property\n    def x(self):\n        a()\n\n"
        "    @x.setter\n    def x(self, v):\n        b()\n\n"
        f"def f({parameters}):\n    pass\n"
    )
    parsed = parse_source("m.py", source.encode(), "python")
    assert [s.qualified_name for s in parsed.symbols] == ["m.C", "m.C.x", "m.f"]
    assert symbol([parsed], "m.C.x").calls == ("a", "b")
    assert len(symbol([parsed], "m.f").signature) == 300


def test_resolution_corner_cases() -> None:
    sources = [
        # Python imported from below the codebase root: `app.x` is backend/app/x.py.
        ("backend/app/x.py", "python", "def f():\n    pass\n"),
        ("backend/app/y.py", "python", "import app.x\nfrom app.x import f as g\n\ndef h():\n    g()\n    app.x.f()\n"),
        # Rust: a second impl block in another module adds methods to the same struct.
        ("src/a.rs", "rust", "pub struct Store;\nimpl Store {\n    fn base(&self) { Store::extra(); }\n}\n"),
        (
            "src/b.rs",
            "rust",
            "use crate::a::Store;\nimpl Store {\n    pub fn extra() {}\n    fn more(&self) { self.base(); }\n}\n",
        ),
        # Go: the root package is found through the module path the other imports reveal.
        ("lib.go", "go", "package lib\n\nfunc Do() {}\n"),
        ("util/u.go", "go", "package util\n\nfunc U() {}\n"),
        (
            "cmd/main.go",
            "go",
            'package main\n\nimport (\n\t"example.com/lib"\n\t. "example.com/lib/util"\n)\n\n'
            "func main() { lib.Do(); U() }\n",
        ),
        # JavaScript: a default import is the same-named symbol of the target; bare specifiers are external.
        ("web/a.js", "javascript", "export default function draw() {}\n"),
        (
            "web/b.js",
            "javascript",
            "import draw from './a';\nimport React from 'react';\nfunction go() { draw(); React.render(); }\n",
        ),
    ]
    links = resolve([parse_source(path, source.encode(), language) for path, language, source in sources])
    assert set(links.calls) == {
        ("backend.app.y.h", "backend.app.x.f"),
        ("crate.a.Store.base", "crate.b.Store.extra"),
        ("crate.b.Store.more", "crate.a.Store.base"),
        ("cmd.main", "lib.Do"),  # a directory's package is named by the directory
        ("cmd.main", "util.U"),  # dot-import
        ("web.b.go", "web.a.draw"),
    }
    assert set(links.imports) == {
        ("backend/app/y.py", "backend/app/x.py"),
        ("src/b.rs", "src/a.rs"),
        ("cmd/main.go", "lib.go"),
        ("cmd/main.go", "util/u.go"),
        ("web/b.js", "web/a.js"),
    }
    assert (links.unresolved_calls, links.ambiguous_calls) == (1, 0)  # React.render
