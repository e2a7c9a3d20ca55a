"""The layers point one way — adapters → zapomni_core → zapomni_db — and the adapters see only the core's public face.

The adapters (zapomni_mcp, zapomni_cli, zapomni_ops, zapomni_http) import the engine as `from zapomni_core import
...`, never from a module inside it: what they use is declared once, in zapomni_core/__init__.py's
`__all__`, and the modules behind it may move freely (as they did when memories got their package).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import zapomni_core
from tests.static.imports import module_imports

APP = Path(__file__).resolve().parents[2] / "app"
ADAPTERS = ("zapomni_mcp", "zapomni_cli", "zapomni_ops", "zapomni_http", "zapomni_console")
# What each package must not import (its own layer or a higher one).
FORBIDDEN = {
    "zapomni_db": ("zapomni_core", *ADAPTERS),
    "zapomni_core": ADAPTERS,
}


def imports(package: str) -> list[tuple[str, str]]:
    """(file:line, module) of every absolute import in `package`, also inside functions."""
    return [
        (f"{path.relative_to(APP)}:{line}", module)
        for path in sorted((APP / package).rglob("*.py"))
        for line, module in module_imports(path)
    ]


def test_no_package_imports_a_layer_above_it() -> None:
    upward = [
        f"{where} {module}"
        for package, above in FORBIDDEN.items()
        for where, module in imports(package)
        if module.partition(".")[0] in above
    ]
    assert upward == []


def test_adapters_reach_the_core_only_through_its_public_face() -> None:
    inside = [
        f"{where} {module}"
        for adapter in ADAPTERS
        for where, module in imports(adapter)
        if module.startswith("zapomni_core.")
    ]
    assert inside == [], "import these from zapomni_core (add them to its __all__ if they belong there):\n" + (
        "\n".join(inside)
    )


def test_the_public_face_names_only_what_it_holds() -> None:
    assert sorted(set(zapomni_core.__all__)) == sorted(zapomni_core.__all__)
    missing = [name for name in zapomni_core.__all__ if not hasattr(zapomni_core, name)]
    assert missing == []
    # Loaded when first used (PEP 562): a name in __all__ with no home would only fail where it is imported.
    assert sorted(zapomni_core._HOMES) == sorted(zapomni_core.__all__)
    # Importing a submodule sets the package's attribute of its name: a public name must not be one.
    submodules = {path.stem for path in Path(zapomni_core.__file__).parent.iterdir()}
    assert submodules & set(zapomni_core.__all__) == set()


# Inside zapomni_core, the services (each a package of the tools' requests, replies and a service) stand on the
# kernel (workspace registry, job runner, write pipeline), which stands on the search and on what a memory is
# made of (content); none of those three imports a service. Services reach each other only upward
# (graph → code → files; graph, workspaces and transfer → memories, jobs), and react to each other through
# callbacks wired once in runtime.py (e.g. MemoryService's queue_extraction, JobService's on_cancelled).
SERVICES = ("access", "code", "files", "graph", "health", "jobs", "memories", "transfer", "workspaces")
BELOW_THE_SERVICES = ("content", "kernel", "search")


def core_arrows() -> dict[str, set[str]]:
    """Which parts of zapomni_core (its subpackages and top-level modules) each part imports."""

    def part(module: str) -> str:
        return module.split(".")[1] if module.count(".") else "__init__"

    arrows: dict[str, set[str]] = defaultdict(set)
    for where, module in imports("zapomni_core"):
        if not module.startswith("zapomni_core."):
            continue
        source = where.split(":")[0].removesuffix(".py").split("/")
        importer = source[1] if len(source) > 2 else source[1].removesuffix("__init__") or "__init__"
        if importer != part(module):
            arrows[importer].add(part(module))
    return arrows


def test_the_kernel_the_search_and_the_content_import_no_service() -> None:
    arrows = core_arrows()
    upward = {part: sorted(arrows[part] & set(SERVICES)) for part in BELOW_THE_SERVICES if arrows[part] & set(SERVICES)}
    assert upward == {}


def test_the_core_has_no_circle_of_imports() -> None:
    arrows = core_arrows()
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def circle_from(part: str, path: list[str]) -> list[str] | None:
        seen[part] = 1
        for target in sorted(arrows.get(part, ())):
            if seen.get(target) == 1:
                return [*path[path.index(target) :], target] if target in path else [part, target]
            if target not in seen and (found := circle_from(target, [*path, target])):
                return found
        seen[part] = 2
        return None

    circles = [found for part in sorted(arrows) if part not in seen and (found := circle_from(part, [part]))]
    assert circles == []
