"""What a client is told when a call fails: the one mapping from exceptions to the wire.

Validation failures become messages an LLM can act on (which field, what is allowed); refusals keep
the engine's message; anything else is an internal error, sanitised here and logged in full. The
transport says whether its client is local (stdio: the user's own machine, who may see server
paths) or remote (HTTP), and a remote client gets the same messages without the paths.
"""

from __future__ import annotations

from typing import Any, get_args

import structlog
from pydantic import BaseModel, ValidationError

from zapomni_core import ZapomniError

log = structlog.get_logger(__name__)

# The kinds of failure a call can report besides the engine's own refusals (named by their class).
INVALID_ARGUMENTS = "InvalidArguments"
INTERNAL_ERROR = "InternalError"

_UNION_MEMBERS = {"str", "int", "float", "bool"}
_FLAT_VALUE = "must be a string, number or boolean (nested objects and lists are not allowed in metadata)"


def describe_validation_error(tool: str, model: type[BaseModel], exc: ValidationError) -> str:
    problems: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        if loc and loc[-1] in _UNION_MEMBERS and len(loc) >= 2:
            problems[".".join(loc[:-1])] = _FLAT_VALUE
            continue
        field, message = ".".join(loc), _message(error, _holder(model, loc[:-1]))
        if not field:  # a rule across fields; its message starts with the field it is about, if one
            named, _, rest = message.partition(": ")
            field, message = (named, rest) if named in model.model_fields and rest else ("arguments", message)
        problems.setdefault(field, message)
    lines = [f"Invalid arguments for {tool}:"]
    lines += [f"- {field}: {message}" for field, message in problems.items()]
    lines.append(f"Allowed arguments: {allowed_arguments(model)}.")
    return "\n".join(lines)


def allowed_arguments(model: type[BaseModel]) -> str:
    if not model.model_fields:
        return "none"
    parts = []
    for name, info in model.model_fields.items():
        parts.append(f"{name} ({'required' if info.is_required() else 'optional'})")
    return ", ".join(parts)


def _holder(model: type[BaseModel], path: list[str]) -> type[BaseModel]:
    """The model whose field `path` leads into: `filters.speakr` is a key of SearchFilters, not of the request."""
    for part in path:
        info = model.model_fields.get(part)
        if info is None:  # a list index or a union member
            continue
        nested = _models_in(info.annotation)
        if not nested:
            return model
        model = nested[0]
    return model


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (`SearchFilters | None`, `list[Model]`), outermost first."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _message(error: Any, model: type[BaseModel]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown argument; allowed: {', '.join(model.model_fields) or 'none'}"
    if kind == "missing":
        return "is required"
    message = str(error["msg"])
    if message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    return message[0].lower() + message[1:] if message else kind


def failure_message(tool: str, exc: Exception, request_id: str, *, local: bool) -> str:
    """The message for a tool call that raised `exc` (validation is `describe_validation_error`'s); logs it."""
    if isinstance(exc, ZapomniError):  # a refusal; the core maps database failures into this tree
        # A database failure mapped at the core's edge keeps the driver's words in the log only.
        cause = {} if exc.__cause__ is None else {"cause": repr(exc.__cause__)}
        log.warning("tool.refused", error=type(exc).__name__, reason=str(exc), **cause)
        return public_message(exc, local=local)
    # The client gets no paths, hosts or traces; the log line has all of them.
    log.error("tool.failed", exc_info=exc)
    return f"Internal error while running {tool} (request {request_id}). The server log (stderr) has the details."


def error_kind(exc: Exception) -> str:
    """What went wrong, in one word for counting: the refusal's class, or an internal error."""
    return type(exc).__name__ if isinstance(exc, ZapomniError) else INTERNAL_ERROR


def public_message(exc: ZapomniError, *, local: bool) -> str:
    """The engine's message, with the server paths it names left out unless the client is local."""
    return str(exc) if local else exc.public()
