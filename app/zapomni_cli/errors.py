"""Failures worded for the command line: the flag a person typed (`--tag`), not the field path (`metadata.tags.0`).

The engine's request models speak in field paths, as the MCP tools must; this maps them back to
the flags and positionals that filled them. `zapomni_mcp.errors` does the same job for MCP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from zapomni_core import TOKEN_NAME_RULE, WORKSPACE_RULE, ZapomniError

M = TypeVar("M", bound=BaseModel)

# Field path (list indices left out) -> what the person typed. The longest matching prefix wins.
FLAGS: dict[tuple[str, ...], str] = {
    ("text",): "TEXT",
    ("query",): "QUERY",
    ("memory_id",): "ID",
    ("memory_ids",): "ID",
    ("workspace",): "--workspace",
    ("name",): "NAME",
    ("confirm",): "--confirm",
    ("limit",): "--limit",
    ("cursor",): "--cursor",
    ("order",): "--order",
    ("mode",): "--mode",
    ("min_score",): "--min-score",
    ("metadata",): "metadata (--tag, --source, --date)",
    ("metadata", "tags"): "--tag",
    ("metadata", "source"): "--source",
    ("metadata", "date"): "--date",
    ("filters",): "",  # a rule across filters: its message names them (see _WORDS)
    ("filters", "tags"): "--tag",
    ("filters", "source"): "--source",
    ("filters", "date_from"): "--date-from",
    ("filters", "date_to"): "--date-to",
    ("filters", "kind"): "--kind",
    ("filters", "thread"): "--thread",
    ("filters", "speaker"): "--speaker",
    ("path",): "PATH",
    ("include",): "--include",
    ("exclude",): "--exclude",
    ("tags",): "--tag",
    ("languages",): "--language",
    ("symbol",): "SYMBOL",
    ("kind",): "--kind",
    ("job_id",): "JOB_ID",
    ("wait_s",): "--wait",
    ("state",): "--state",
}

# Field names inside messages about several fields at once ("date_from must not be later than date_to").
_WORDS = {
    "date_from": "--date-from",
    "date_to": "--date-to",
    "memory_ids": "IDs",
    "memory_id": "ID",
    "confirm": "--confirm",
    "job_id": "JOB_ID",
    "all_workspaces": "--all",
}
_WORD_PATTERN = re.compile(r"\b(" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")\b")
# Fields whose offending value is worth quoting back (short, and the person may have typed several).
_QUOTED = {"--tag", "ID", "JOB_ID"}


class CliError(ZapomniError):
    """A failure to report as `zapomni <command>: <message>` (a line each) and exit with `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def validate(model: type[M], data: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> M:
    """`model` validated from `data`; a refusal becomes a CliError (exit 2) naming the flags."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CliError("\n".join(describe_validation_error(exc, labels)), code=2) from None


def flag_for(loc: tuple[Any, ...], overrides: Mapping[str, str] | None = None) -> str | None:
    """The flag that filled the field at `loc`, or None when the path is not one the CLI fills."""
    path = tuple(str(part) for part in loc if not isinstance(part, int))
    if overrides and path and path[0] in overrides:
        return overrides[path[0]]
    for end in range(len(path), 0, -1):
        if path[:end] in FLAGS:
            return FLAGS[path[:end]]
    return None


def in_cli_words(message: str) -> str:
    return _WORD_PATTERN.sub(lambda match: _WORDS[match.group(1)], message)


def describe_validation_error(exc: ValidationError, overrides: Mapping[str, str] | None = None) -> list[str]:
    """One line per problem, each naming the flag: ['--tag: must be at most 100 characters (got 'x…')']."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        flag = flag_for(error["loc"], overrides)
        message = _message(error, flag)
        if flag is None and error["loc"]:
            flag = ".".join(str(part) for part in error["loc"])  # not one of ours: say what it is anyway
        line = f"{flag}: {message}" if flag else message
        if line not in lines:
            lines.append(line)
    return lines


def describe_engine_error(message: str, overrides: Mapping[str, str] | None = None) -> str:
    """An engine error ("cursor: not a cursor this server made") with its leading field as the flag."""
    field, sep, rest = message.partition(": ")
    if sep and re.fullmatch(r"[a-z_]+", field):
        if field in {"memory_id", "job_id"}:
            return in_cli_words(rest)  # "no memory <id> in workspace 'x'" names the memory already
        flag = flag_for((field,), overrides)
        if flag:
            return f"{flag}: {in_cli_words(rest)}"
    return in_cli_words(message)


def _message(error: Mapping[str, Any], flag: str | None) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        if flag in {"--workspace", "NAME"}:
            return f"must be {WORKSPACE_RULE}{_got(error)}"
        if flag == "ID":
            return f"not a memory id{_got(error)}: give the id `add` printed, or its first 8 characters"
        if flag == "JOB_ID":
            return f"not a job id{_got(error)}: give the id list_jobs shows (its first 8 characters will do)"
        if flag == "--name":  # a token's (zapomni token create)
            return f"must be {TOKEN_NAME_RULE}"
    if kind == "missing":
        return "required"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters{_got(error) if flag in _QUOTED else ''}"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} allowed (got {ctx.get('actual_length')})"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')} (got {error.get('input')})"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')} (got {error.get('input')})"
    message = str(error["msg"]).removeprefix("Value error, ")
    return in_cli_words(_lower(message)) + (_got(error) if flag in _QUOTED else "")


def _got(error: Mapping[str, Any]) -> str:
    value = error.get("input")
    if not isinstance(value, str):
        return ""
    shown = value if len(value) <= 40 else value[:39] + "…"
    return f" (got {shown!r})"


def _lower(message: str) -> str:
    return message[:1].lower() + message[1:]
