"""Memory ids as a person types them: the full UUID, or the first characters the tables show.

Tables print the first 8 characters of an id, so `get`, `update` and `delete` accept any unique
prefix of 4 or more characters, as git does with commits. A prefix is looked up by paging through
the workspace's memories, which is fine for a command line and is not something the engine offers.
"""

from __future__ import annotations

import re

from zapomni_cli.errors import CliError
from zapomni_core import MAX_PAGE, UUID_PATTERN, ListMemoriesRequest, ZapomniCore

MIN_PREFIX = 4
_PREFIX = re.compile(r"^[0-9a-f][0-9a-f-]{3,35}$")
# What a prefix stands for until it is resolved: a well-formed id, so the request validates.
PLACEHOLDER = "00000000-0000-4000-8000-000000000000"


def normalise(value: str) -> str:
    return value.strip().lower()


def is_full(value: str) -> bool:
    return re.fullmatch(UUID_PATTERN, value) is not None


def is_prefix(value: str) -> bool:
    """A partial id to look up (anything else is passed on, for the request model to refuse)."""
    return not is_full(value) and _PREFIX.fullmatch(value) is not None


def for_validation(value: str) -> str:
    """The id to validate the request with: a prefix stands in as a placeholder until it is resolved."""
    return PLACEHOLDER if is_prefix(value) else value


async def resolve(core: ZapomniCore, workspace: str | None, values: list[str]) -> list[str]:
    """Full ids for `values`; a prefix that matches no memory, or several, is refused."""
    prefixes = [value for value in values if is_prefix(value)]
    if not prefixes:
        return values
    matches: dict[str, list[str]] = {prefix: [] for prefix in prefixes}
    cursor = None
    while True:
        page = await core.memories.page(
            ListMemoriesRequest(workspace=workspace, limit=MAX_PAGE, cursor=cursor, order="oldest")
        )
        for memory in page.memories:
            for prefix, found in matches.items():
                if memory.memory_id.startswith(prefix):
                    found.append(memory.memory_id)
        cursor = page.next_cursor
        if cursor is None:
            break
    resolved = []
    for value in values:
        if value not in matches:
            resolved.append(value)
            continue
        found = matches[value]
        if not found:
            raise CliError(f"ID {value}: no memory in workspace {page.workspace!r} has an id starting with it")
        if len(found) > 1:
            shown = ", ".join(memory_id[:13] + "…" for memory_id in found[:5])
            raise CliError(f"ID {value}: {len(found)} memories start with it ({shown}); give more characters")
        resolved.append(found[0])
    return resolved
