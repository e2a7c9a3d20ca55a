"""The limits a console request meets besides its role: a body size, and (under `serve --http`) the per-token
rate limit the MCP endpoint applies, so a token cannot escape its rate by switching to the console."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """`max_body`: bytes a POST may declare (browsers always send Content-Length for a form); `wait`: for a
    token id, 0 when a request may go now (and it is counted), else the seconds until one may; None: no rate.
    `sign_in`: the same for a sign-in attempt, by client address and (once it is verified) by token."""

    max_body: int = 12 * MB
    wait: Callable[[str], float] | None = None
    sign_in: Callable[[str], float] | None = None


# Sign-in attempts per client address and per token: a burst of this many, then one every 6 s. A person signs
# in a few times a day; guessing tokens or flooding the session table is what this stops.
SIGN_IN_BURST = 10
SIGN_IN_RATE = 1 / 6
