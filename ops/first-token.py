#!/usr/bin/env python3
"""The appliance's first HTTP token: made on the first start, kept in a file (0600), printed once.

    python ops/first-token.py TOKEN_FILE

Run by ops/up-local and the compose stack's entrypoint once FalkorDB answers and the schema is migrated.
When TOKEN_FILE holds a token already, nothing is made and nothing printed (its mode is tightened if
loose): later starts stay quiet, and deleting the file is how an operator asks for a new one (revoke the
old one with `zapomni token revoke`). Otherwise `zapomni token create` makes an admin token for every
workspace, which goes into TOKEN_FILE (created 0600 and linked into place whole, never half-written nor
readable by others) and, this once, to stderr with the client line to paste. Only stderr: stdout may
belong to something else, and the token must reach no log but the container's own output.
Exit 0: there is a token; 1: none could be made (the CLI's message is on stderr).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from zapomni_core import Settings
from zapomni_http.binding import public_url


def existing(path: Path) -> bool:
    """True when `path` holds a token; a loose mode is tightened on the way."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return False
    if stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o600)
        print(f"{path} was readable by others: now 0600 (revoke its token if others may have read it)", file=sys.stderr)
    if info.st_size == 0:  # left by a crash before the write: make a token anew
        path.unlink()
        return False
    return True


def create(name: str) -> str:
    command = ["zapomni", "token", "create", "--name", name, "--all", "--role", "admin", "--json"]
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"zapomni token create failed ({result.returncode}); no token for the HTTP server")
    return str(json.loads(result.stdout)["token"])


def keep(path: Path, token: str) -> bool:
    """Write `token` into `path`, 0600; False when another start put one there first (theirs is kept)."""
    os.umask(0o077)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, path)  # never replaces a token file that exists
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink()


def announce(path: Path, token: str, url: str) -> None:
    print(
        f"""
zapomni: the HTTP server's first token (admin, every workspace). It is shown this once; it is kept in
{path} (mode 0600). Connect Claude Code with:

  claude mcp add --transport http zapomni {url} --header "Authorization: Bearer {token}"

Other clients: the README, "Serve over HTTP". More tokens, narrower ones: zapomni token create --help.
""",
        file=sys.stderr,
        flush=True,
    )


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit("usage: first-token.py TOKEN_FILE")
    path = Path(sys.argv[1])
    if existing(path):
        return 0
    name = "appliance-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    token = create(name)
    if not keep(path, token):
        # Another start won the race: its token is the one on file, so this one is revoked, not left working.
        subprocess.run(["zapomni", "token", "revoke", name], stdout=subprocess.DEVNULL, check=False)
        return 0
    announce(path, token, public_url(Settings()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
