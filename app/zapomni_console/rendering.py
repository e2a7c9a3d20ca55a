"""Pages from Jinja templates with autoescape on: memory text is always shown as text, never as HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse

from zapomni_core import package_version

TEMPLATES = Path(__file__).parent / "templates"
# A memory's kind (`ListedKind`) as the pages name it, in the order the kind filter offers them.
KIND_LABELS = {"note": "note", "document": "document", "code": "code", "turn": "conversation turn"}


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["version"] = package_version()
    env.globals["kind_labels"] = KIND_LABELS
    return env


class Renderer:
    def __init__(self) -> None:
        self._env = environment()

    def page(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self._env.get_template(template).render(request=request, **context)
        return HTMLResponse(html, status_code=status)


def describe(exc: ValidationError) -> str:
    """One line per problem, each naming the field ('filters.date_from: ...')."""
    lines = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"] if not isinstance(part, int)) or "request"
        lines.append(f"{field}: {error['msg']}")
    return "; ".join(dict.fromkeys(lines))
