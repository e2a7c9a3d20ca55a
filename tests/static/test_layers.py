"""The layers point one way — adapters → zapomni_core → zapomni_db — and the adapters see only the core's public face.

The adapters (zapomni_mcp, zapomni_cli, zapomni_ops, zapomni_http) import the engine as `from zapomni_core import
...`, never from a module inside it: what they use is declared once, in zapomni_core/__init__.py's
`__all__`, and the modules behind it may move freely (as they did when memories got their package).
"""

from __future__ import annotations

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
