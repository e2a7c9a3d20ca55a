"""Turn validation failures into messages an LLM can act on: which field, what is allowed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

_UNION_MEMBERS = {"str", "int", "float", "bool"}
_FLAT_VALUE = "must be a string, number or boolean (nested objects and lists are not allowed in metadata)"


def describe_validation_error(tool: str, model: type[BaseModel], exc: ValidationError) -> str:
    problems: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        if loc and loc[-1] in _UNION_MEMBERS and len(loc) >= 2:
            problems[".".join(loc[:-1])] = _FLAT_VALUE
            continue
        field, message = ".".join(loc), _message(error, model)
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
