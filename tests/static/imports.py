"""Reading a source file's imports without running it: what the static checks of layers and dependencies walk."""

from __future__ import annotations

import ast
from pathlib import Path


def module_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in `path`, also inside functions and `TYPE_CHECKING` blocks."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found
