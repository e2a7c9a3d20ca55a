"""Which processes run background jobs on a store right now: one plain key per job runner, renewed while it runs
and expiring soon after it stops (or is killed), naming the job kinds it has handlers for.

A job can only say "waiting for a server" when something can tell that no server is there: the job rows cannot
(a pending job looks the same whether a runner is about to take it or none exists).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from zapomni_db.connection import Connection


class JobRunners:
    def __init__(self, connection: Connection, base_graph: str) -> None:
        self._connection = connection
        # "#" is in no workspace name: the key is no workspace's graph (as the keyword index stamp's).
        self._prefix = f"{base_graph}#job-runner#"

    async def announce(self, owner: str, kinds: Iterable[str], ttl_s: float) -> None:
        """This runner runs jobs of `kinds` for the next `ttl_s` seconds (renewed before they run out)."""
        await self._connection.command("SET", self._prefix + owner, json.dumps(sorted(kinds)), "PX", int(ttl_s * 1000))

    async def withdraw(self, owner: str) -> None:
        await self._connection.command("DEL", self._prefix + owner)

    async def kinds(self) -> set[str]:
        """The job kinds some live runner handles (empty: no server runs jobs on this store)."""
        kinds: set[str] = set()
        cursor: int | bytes = 0
        while True:
            cursor, keys = await self._connection.command("SCAN", cursor, "MATCH", self._prefix + "*", "COUNT", 1000)
            for key in keys:
                value = await self._connection.command("GET", key)
                if value is not None:  # expired between the scan and the read
                    kinds.update(json.loads(value))
            if int(cursor) == 0:
                return kinds
