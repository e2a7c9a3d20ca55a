# shellcheck shell=bash
# The Zapomni appliance environment: source it, don't run it. Every ops script does
# (`ops/local CMD` runs any command with it); the container entrypoint too.
#
#   . ops/env.sh             the appliance environment (defaults below) + the helper functions
#   . ops/env.sh --helpers   only PATH and the helper functions: for the container's stack modes,
#                            whose environment comes from compose and must not get appliance defaults
#
# Each variable keeps a value already in the environment; the defaults describe the native appliance
# of `make up-local`. The standalone container sets ZAPOMNI_APPLIANCE_DIR=/data and FALKORDB_PORT=6379
# before sourcing this. It prints nothing: stdout may belong to an MCP client (`ops/local zapomni serve`).

ZAPOMNI_OPS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"  # always this file's directory
export ZAPOMNI_OPS_DIR

# A checkout's virtualenv comes first, so `zapomni`, `python` and `supervisord` are the project's.
# (In the image there is none: the Dockerfile's PATH already has them.)
if [ -x "$ZAPOMNI_OPS_DIR/../.venv/bin/python" ]; then
    _zapomni_venv_bin="$(cd "$ZAPOMNI_OPS_DIR/../.venv/bin" && pwd)"
    case "$PATH" in
        "$_zapomni_venv_bin" | "$_zapomni_venv_bin":*) ;;
        *) PATH="$_zapomni_venv_bin:$PATH" ;;
    esac
    export PATH
    unset _zapomni_venv_bin
fi

if [ "${1-}" != "--helpers" ]; then
    # Where everything lives: db/ (FalkorDB's AOF + RDB), backups/, run/ (supervisor socket and
    # pidfile, owner.lock), log/ (supervisord's and each program's log, rotated by supervisord).
    : "${ZAPOMNI_APPLIANCE_DIR:=${XDG_DATA_HOME:-$HOME/.local/share}/zapomni-appliance}"
    export ZAPOMNI_APPLIANCE_DIR
    : "${ZAPOMNI_RUN_DIR:=$ZAPOMNI_APPLIANCE_DIR/run}"; export ZAPOMNI_RUN_DIR
    : "${ZAPOMNI_LOG_DIR:=$ZAPOMNI_APPLIANCE_DIR/log}"; export ZAPOMNI_LOG_DIR
    # Held (flock) by whoever runs this appliance: the supervisord of up-local, or the standalone
    # entrypoint. Its text names the holder: "<pid> <host> <kind>".
    : "${ZAPOMNI_OWNER_LOCK:=$ZAPOMNI_RUN_DIR/owner.lock}"; export ZAPOMNI_OWNER_LOCK

    # Ports, all bound to 127.0.0.1. 6479/6480, not 6379/6380, so a system Redis does not collide.
    : "${FALKORDB_PORT:=6479}"; export FALKORDB_PORT
    : "${REDIS_CACHE_PORT:=6480}"; export REDIS_CACHE_PORT
    : "${REDIS_CACHE_MAXMEMORY:=256mb}"; export REDIS_CACHE_MAXMEMORY
    : "${ZAPOMNI_HEALTH_HOST:=127.0.0.1}"; export ZAPOMNI_HEALTH_HOST
    : "${ZAPOMNI_HEALTH_PORT:=8090}"; export ZAPOMNI_HEALTH_PORT
    # MCP over HTTP (the `http` program, `zapomni serve --http`); its token, made on the first start
    # (zapomni_first_token), is kept in ZAPOMNI_HTTP_TOKEN_FILE, mode 0600.
    : "${ZAPOMNI_HTTP_HOST:=127.0.0.1}"; export ZAPOMNI_HTTP_HOST
    : "${ZAPOMNI_HTTP_PORT:=8765}"; export ZAPOMNI_HTTP_PORT
    : "${ZAPOMNI_HTTP_TOKEN_FILE:=$ZAPOMNI_APPLIANCE_DIR/secrets/http.token}"; export ZAPOMNI_HTTP_TOKEN_FILE
    # Extra redis-server arguments for FalkorDB, appended to its command line by supervisord.
    # Empty normally; the tests slow loading down with "--key-load-delay 300000 ...".
    : "${FALKORDB_EXTRA_ARGS:=}"; export FALKORDB_EXTRA_ARGS

    # What `zapomni` (serve, health-server, backup, doctor, ...) reads: the appliance's servers.
    : "${ZAPOMNI_DB_MODE:=server}"; export ZAPOMNI_DB_MODE
    : "${FALKORDB_HOST:=127.0.0.1}"; export FALKORDB_HOST
    : "${FALKORDB_DATA_DIR:=$ZAPOMNI_APPLIANCE_DIR/db}"; export FALKORDB_DATA_DIR
    : "${ZAPOMNI_DATA_DIR:=$ZAPOMNI_APPLIANCE_DIR}"; export ZAPOMNI_DATA_DIR
    : "${ZAPOMNI_BACKUP_DIR:=$ZAPOMNI_APPLIANCE_DIR/backups}"; export ZAPOMNI_BACKUP_DIR

    # The password of FalkorDB and of the Redis cache (their requirepass): other local users can reach
    # 127.0.0.1 too. FALKORDB_PASSWORD when set in the environment; else the one that the appliance's
    # first start generates into ZAPOMNI_PASSWORD_FILE (zapomni_ensure_password: one line, mode 0600).
    # The cache takes REDIS_CACHE_PASSWORD when set, else the same password; REDIS_URL, unless set,
    # carries it (redis://:PASSWORD@127.0.0.1:PORT/0, percent-encoded). Nothing here prints it.
    : "${ZAPOMNI_PASSWORD_FILE:=$ZAPOMNI_APPLIANCE_DIR/secrets/falkordb.password}"; export ZAPOMNI_PASSWORD_FILE
    # Which of them came from the environment (and stay as they are), for zapomni_load_password.
    _zapomni_password_from_file=''; [ -n "${FALKORDB_PASSWORD:-}" ] || _zapomni_password_from_file=yes
    _zapomni_cache_password_derived=''; [ -n "${REDIS_CACHE_PASSWORD:-}" ] || _zapomni_cache_password_derived=yes
    _zapomni_redis_url_derived=''; [ -n "${REDIS_URL:-}" ] || _zapomni_redis_url_derived=yes

    # supervisord: ops/supervisord.conf reads all of the above through %(ENV_...)s.
    : "${ZAPOMNI_SUPERVISOR_CONF:=$ZAPOMNI_OPS_DIR/supervisord.conf}"; export ZAPOMNI_SUPERVISOR_CONF
    : "${ZAPOMNI_SUPERVISOR_SOCKET:=$ZAPOMNI_RUN_DIR/supervisor.sock}"; export ZAPOMNI_SUPERVISOR_SOCKET
    : "${ZAPOMNI_SUPERVISOR_PIDFILE:=$ZAPOMNI_RUN_DIR/supervisord.pid}"; export ZAPOMNI_SUPERVISOR_PIDFILE
    # up-local daemonises supervisord; the standalone entrypoint keeps it as its child (true).
    : "${ZAPOMNI_SUPERVISOR_NODAEMON:=false}"; export ZAPOMNI_SUPERVISOR_NODAEMON
    # The programs supervisord runs (ops/supervisord.conf): here the databases as well as the servers.
    : "${ZAPOMNI_SUPERVISOR_PROGRAMS:=supervisor/databases.conf supervisor/servers.conf}"
    export ZAPOMNI_SUPERVISOR_PROGRAMS
    # up-local starts the HTTP server itself, once the schema is migrated; standalone serves stdio only.
    : "${ZAPOMNI_HTTP_AUTOSTART:=false}"; export ZAPOMNI_HTTP_AUTOSTART
fi

# --- the password ----------------------------------------------------------------------------------

_zapomni_urlencode() {  # _zapomni_urlencode TEXT: TEXT percent-encoded for a URL's userinfo, byte by byte
    local LC_ALL=C
    local text="$1" encoded='' char i
    for ((i = 0; i < ${#text}; i++)); do
        char="${text:i:1}"
        case "$char" in
            [A-Za-z0-9._~-]) encoded+="$char" ;;
            *) printf -v char '%%%02X' "'$char"; encoded+="$char" ;;
        esac
    done
    printf '%s' "$encoded"
}

# zapomni_load_password: export FALKORDB_PASSWORD, REDIS_CACHE_PASSWORD and REDIS_URL. Those the caller's
# environment set stay as they are; the rest come from ZAPOMNI_PASSWORD_FILE, when it is there (before
# the appliance's first start it is not: then there is no password, and nothing to connect to either).
zapomni_load_password() {
    local password=''
    if [ -n "${_zapomni_password_from_file:-}" ] && [ -r "$ZAPOMNI_PASSWORD_FILE" ]; then
        IFS= read -r password <"$ZAPOMNI_PASSWORD_FILE" || true  # the first line; a missing newline is fine
        if [ -n "$password" ]; then FALKORDB_PASSWORD="$password"; export FALKORDB_PASSWORD; fi
    fi
    if [ -n "${_zapomni_cache_password_derived:-}" ] && [ -n "${FALKORDB_PASSWORD:-}" ]; then
        REDIS_CACHE_PASSWORD="$FALKORDB_PASSWORD"; export REDIS_CACHE_PASSWORD
    fi
    if [ -n "${_zapomni_redis_url_derived:-}" ]; then
        REDIS_URL="redis://127.0.0.1:$REDIS_CACHE_PORT/0"
        if [ -n "${REDIS_CACHE_PASSWORD:-}" ]; then
            REDIS_URL="redis://:$(_zapomni_urlencode "$REDIS_CACHE_PASSWORD")@127.0.0.1:$REDIS_CACHE_PORT/0"
        fi
        export REDIS_URL
    fi
}

# zapomni_ensure_password: at a start (up-local, standalone), after taking owner.lock. Unless
# FALKORDB_PASSWORD came from the environment, make sure ZAPOMNI_PASSWORD_FILE holds one: generate it
# the first time (secrets.token_urlsafe(32): 43 characters of [A-Za-z0-9_-], one line), created 0600
# under umask 077 and linked into place whole, so it is never readable by others nor half-written;
# an existing one is kept, its permissions tightened when they are looser. Then zapomni_load_password.
zapomni_ensure_password() {
    if [ -n "${_zapomni_password_from_file:-}" ]; then
        python - "$ZAPOMNI_PASSWORD_FILE" <<'PY' || return 1  # the script comes on stdin, not the caller's
import os, secrets, stat, sys

path = sys.argv[1]
os.umask(0o077)
directory = os.path.dirname(path)
if not os.path.isdir(directory):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
try:
    mode = stat.S_IMODE(os.stat(path).st_mode)
except FileNotFoundError:
    temporary = f"{path}.{os.getpid()}.new"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)  # never replaces one that another start created meanwhile
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)
else:
    if mode & 0o077:
        os.chmod(path, mode & 0o700)
        print(f"{path} was readable by others (mode {mode:o}): now 0{mode & 0o700:o}", file=sys.stderr)
PY
    fi
    zapomni_load_password
    if [ -z "${FALKORDB_PASSWORD:-}" ]; then
        printf 'zapomni: %s holds no password (its first line is empty): delete it, a new one is generated\n' \
            "$ZAPOMNI_PASSWORD_FILE" >&2
        return 1
    fi
}

# zapomni_stack_password: in the compose stack's containers (the entrypoint's serve, health and command
# modes). Unless FALKORDB_PASSWORD is set, read the stack's password from ZAPOMNI_STACK_PASSWORD_FILE
# (/secrets/falkordb.password, the secrets volume that init-volumes fills) into FALKORDB_PASSWORD, and put
# it into REDIS_URL when that names no user or password. No file (a client run without the secrets
# volume): nothing changes, and the server says the database refused it.
zapomni_stack_password() {
    local file="${ZAPOMNI_STACK_PASSWORD_FILE:-/secrets/falkordb.password}" password=''
    if [ -z "${FALKORDB_PASSWORD:-}" ] && [ -r "$file" ]; then
        IFS= read -r password <"$file" || true
        [ -z "$password" ] || { FALKORDB_PASSWORD="$password"; export FALKORDB_PASSWORD; }
    fi
    case "${REDIS_URL:-}" in
        redis://*@*) ;;
        redis://*)
            if [ -n "${FALKORDB_PASSWORD:-}" ]; then
                REDIS_URL="redis://:$(_zapomni_urlencode "$FALKORDB_PASSWORD")@${REDIS_URL#redis://}"
                export REDIS_URL
            fi
            ;;
    esac
}

zapomni_password_source() {  # where the password comes from, for messages (never the password itself)
    if [ -z "${_zapomni_password_from_file:-}" ]; then
        echo "FALKORDB_PASSWORD from the environment"
    else
        echo "the first line of $ZAPOMNI_PASSWORD_FILE"
    fi
}

# zapomni_first_token: once FalkorDB answers and the schema is migrated, on the first start only (no
# ZAPOMNI_HTTP_TOKEN_FILE yet), make the HTTP server's first token (admin, every workspace), keep it in that
# file (0600) and print it once on stderr with the client line to paste (ops/first-token.py). 0 = there is one.
zapomni_first_token() {
    python "$ZAPOMNI_OPS_DIR/first-token.py" "$ZAPOMNI_HTTP_TOKEN_FILE"
}

[ "${1-}" = "--helpers" ] || zapomni_load_password

# --- helpers ---------------------------------------------------------------------------------------

zapomni_supervisorctl() {  # supervisorctl on this appliance's supervisord
    supervisorctl -c "$ZAPOMNI_SUPERVISOR_CONF" "$@"
}

zapomni_supervisord_pid() {  # print supervisord's pid when it answers on the socket; else fail
    local pid
    pid="$(zapomni_supervisorctl pid 2>/dev/null)" || return 1
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    printf '%s\n' "$pid"
}

zapomni_prepare_dirs() {  # the appliance's directories, private to this user
    mkdir -p "$ZAPOMNI_APPLIANCE_DIR" "$ZAPOMNI_RUN_DIR" "$ZAPOMNI_LOG_DIR" "$FALKORDB_DATA_DIR" &&
        chmod 700 "$ZAPOMNI_APPLIANCE_DIR" "$ZAPOMNI_RUN_DIR"
}

zapomni_lock_owner() {  # zapomni_lock_owner [WAIT_S]: take owner.lock on fd 4: 0 = ours now, 1 = held by another
    # An flock belongs to the open file, not to a process: this shell and every child that inherits
    # fd 4 share it, and it is released when the last of them exits. supervisord inherits it, so the
    # lock lives as long as supervisord; fd 4 on purpose, as `supervisorctl reload` closes only 5 and
    # up, and supervisord's programs get none of them. (Python's flock, as macOS has no flock(1).)
    # WAIT_S (default 0) gives an owner that is stopping the time to finish.
    exec 4<>"$ZAPOMNI_OWNER_LOCK" || return 2
    python -c 'import fcntl, sys, time
deadline = time.monotonic() + float(sys.argv[1])
while True:
    try:
        fcntl.flock(4, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
    except BlockingIOError:
        if time.monotonic() >= deadline:
            sys.exit(1)
        time.sleep(0.1)' "${1:-0}"
}

zapomni_write_owner() {  # zapomni_write_owner PID KIND: say who holds the lock (the lock itself is on fd 4)
    printf '%s %s %s\n' "$1" "$(hostname 2>/dev/null || echo unknown-host)" "$2" >"$ZAPOMNI_OWNER_LOCK"
}

zapomni_owner_field() {  # zapomni_owner_field 1|2|3: the holder's pid, host or kind, from owner.lock
    local line
    line="$(head -n 1 "$ZAPOMNI_OWNER_LOCK" 2>/dev/null)" || return 0
    printf '%s\n' "$line" | cut -d' ' -f"$1"
}

zapomni_describe_owner() {  # one line naming the current holder of owner.lock
    local pid host kind
    pid="$(zapomni_owner_field 1)"
    host="$(zapomni_owner_field 2)"
    kind="$(zapomni_owner_field 3)"
    case "$kind" in
        standalone) kind="a standalone appliance (docker-entrypoint.sh standalone)" ;;
        supervisord) kind="the supervisord of ops/up-local" ;;
        up-local) kind="ops/up-local, still starting" ;;
        '') kind="an unknown process" ;;
    esac
    printf 'pid %s on host %s: %s\n' "${pid:-?}" "${host:-?}" "$kind"
}

zapomni_port_in_use() {  # zapomni_port_in_use PORT: something on 127.0.0.1 accepts connections
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# zapomni_wait_for_falkordb TIMEOUT_S [--supervised]
# Wait until FalkorDB at FALKORDB_HOST:FALKORDB_PORT answers and has finished loading its dataset.
# supervisord calls a program RUNNING while redis-server is still LOADING, so this asks the database.
# --supervised also watches this appliance's supervisord and gives up at once when falkordb is FATAL
# or supervisord is gone. Progress goes to stderr; 0 = ready, 1 = not in time or gave up.
zapomni_wait_for_falkordb() {
    python - "$@" <<'PY' >&2  # the script comes on stdin, so it never reads the caller's
import os, sys, time, xmlrpc.client

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

timeout_s = float(sys.argv[1])
supervised = "--supervised" in sys.argv[2:]
host, port = os.environ.get("FALKORDB_HOST", "localhost"), int(os.environ.get("FALKORDB_PORT", "6379"))
where = f"FalkorDB at {host}:{port}"
client = redis.Redis(
    host=host, port=port, password=os.environ.get("FALKORDB_PASSWORD") or None,
    socket_timeout=5, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0),
)
supervisor = None
if supervised:
    from supervisor.xmlrpc import SupervisorTransport
    url = "unix://" + os.environ["ZAPOMNI_SUPERVISOR_SOCKET"]

    def supervisor():  # a new connection each time: one that failed is not usable again (CannotSendRequest)
        return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=SupervisorTransport(None, None, url))

parent = os.getppid()  # a waiter whose caller is gone (killed by a signal) stops waiting
started = time.monotonic()
deadline = started + timeout_s
said, next_check = "", 0.0
# A supervisord started a moment ago has no socket yet: until it has answered once, silence is a start, not an end.
supervisor_answered, SUPERVISOR_START_S = False, 30.0
while True:
    state = "not answering"
    try:
        client.ping()
        info = client.info("persistence")
        if int(info.get("loading", 0)) == 0:
            print(f"{where} is ready ({time.monotonic() - started:.1f} s)", flush=True)
            sys.exit(0)
        state = f"loading its dataset ({float(info.get('loading_loaded_perc', 0)):.0f}%)"
    except redis.exceptions.AuthenticationError as exc:
        sys.exit(f"{where} refused the password (FALKORDB_PASSWORD): {exc}")
    except redis.exceptions.BusyLoadingError:
        state = "loading its dataset"
    except redis.exceptions.ResponseError as exc:
        if "NOAUTH" in str(exc):
            sys.exit(f"{where} wants a password: set FALKORDB_PASSWORD")
        state = f"answering with an error: {exc}"
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
        pass
    if state != said:
        print(f"waiting for {where}: {state}", flush=True)
        said = state
    now = time.monotonic()
    if supervisor is not None and now >= next_check:
        next_check = now + 1.0
        try:
            process = supervisor().supervisor.getProcessInfo("falkordb")
            supervisor_answered = True
        except (OSError, xmlrpc.client.Error) as exc:
            if supervisor_answered:
                sys.exit(f"supervisord stopped answering while waiting for {where}: {exc}")
            if now - started > SUPERVISOR_START_S:
                sys.exit(f"supervisord did not answer within {SUPERVISOR_START_S:.0f} s of its start: {exc}")
            process = None
        if process is not None and process["statename"] in ("FATAL", "EXITED", "STOPPED"):
            sys.exit(f"supervisord gave up on falkordb ({process['statename']}: {process['spawnerr'] or 'it exited'}); "
                     f"see {process['stdout_logfile']}")
    if os.getppid() != parent:
        sys.exit(f"stopped waiting for {where}: the caller has gone")
    if now > deadline:
        sys.exit(f"{where} was not ready within {timeout_s:.0f} s (last: {state})")
    time.sleep(0.1)
PY
}
