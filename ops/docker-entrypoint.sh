#!/usr/bin/env bash
# The container's entrypoint (also runs natively from a checkout: paths are relative to this file).
#
#   (nothing) | serve   `zapomni serve`, the MCP server on stdin/stdout, against the compose stack's
#                       services (ZAPOMNI_DB_MODE=server, FALKORDB_HOST=falkordb, REDIS_URL, OLLAMA_HOST,
#                       ZAPOMNI_EMBEDDER=ollama: set by compose), with the stack's password from the
#                       secrets volume mounted at /secrets (zapomni_stack_password in ops/env.sh).
#   standalone          all in one container: FalkorDB, the Redis cache and the health endpoint under
#                       supervisord (ops/supervisord.conf) over ZAPOMNI_APPLIANCE_DIR (/data), the baked
#                       ONNX embedder, and `zapomni serve` on stdin/stdout. When the client closes stdin
#                       (or on SIGTERM/SIGINT, passed on to the server) everything stops cleanly, FalkorDB
#                       saving, and the exit status is the server's. FalkorDB and the cache require a
#                       password: FALKORDB_PASSWORD when given (-e), else one generated on the volume's
#                       first start into /data/secrets/falkordb.password (ops/env.sh).
#                       e.g. docker run -i --rm -v zapomni-data:/data IMAGE standalone
#   local CMD...        CMD in a running standalone container's environment, for `docker exec`:
#                       docker exec -i CONTAINER /app/ops/docker-entrypoint.sh local zapomni backup
#   stack               the compose stack's long-running service: wait for FalkorDB, apply schema migrations,
#                       make the HTTP server's first token on the first start (kept in ZAPOMNI_HTTP_TOKEN_FILE,
#                       /data/secrets/http.token, mode 0600; printed once on stderr with the client line),
#                       then supervisord (ops/supervisord.conf, the servers only) runs the health endpoint
#                       and `zapomni serve --http` until the container stops.
#   health              the health endpoint alone (GET /healthz, /readyz) after the same wait and migrations:
#                       what the stack ran before it served HTTP.
#   anything else       `zapomni ARGS...`: backup, restore, doctor, migrate, export, import, ...
#
# Only MCP may reach stdout: every other message goes to stderr or to log files.
# Exit codes of standalone: the server's; 1 when the appliance did not start or supervisord went away
# under the server (`supervisorctl shutdown` from a `docker exec`); 3 when the data directory is still
# in use by another appliance after ZAPOMNI_OWNER_WAIT (15 s; a previous run may be finishing its
# shutdown), e.g. a second container on the same volume. Refusing, rather than
# attaching to the other container's FalkorDB, is deliberate: that FalkorDB stops when its container
# does, taking this session's database away mid-use.
set -euo pipefail
OPS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf 'zapomni-entrypoint: %s\n' "$*" >&2; }

# --- standalone: children, signals, shutdown ---------------------------------------------------------

supervisord_pid=''
serve_pid=''
waiter_pid=''
signalled=''

on_signal() {  # SIGTERM/SIGINT: pass it to whatever runs in the foreground; shutdown follows from there
    signalled="$1"
    if [ -n "$serve_pid" ]; then
        kill -s "$1" "$serve_pid" 2>/dev/null || true
    elif [ -n "$waiter_pid" ]; then
        kill -s TERM "$waiter_pid" 2>/dev/null || true
    fi
}

wait_for_pid() {  # wait_for_pid PID: its exit status, waiting on through the traps' interruptions
    local status
    while :; do
        status=0
        wait "$1" || status=$?
        # A trap interrupts `wait` with 128+n while the child lives on (or awaits reaping): wait again.
        if [ "$status" -gt 128 ] && kill -0 "$1" 2>/dev/null; then
            continue
        fi
        return "$status"
    done
}

wait_for_falkordb() {  # zapomni_wait_for_falkordb as a child, so that a signal cuts the wait short
    zapomni_wait_for_falkordb "$@" &
    waiter_pid=$!
    local status=0
    wait_for_pid "$waiter_pid" || status=$?
    waiter_pid=''
    return "$status"
}

exit_if_signalled() {
    if [ -n "$signalled" ]; then
        log "stopped by SIG$signalled"
        exit $((128 + $(kill -l "$signalled")))
    fi
}

stop_supervisord() {  # SIGTERM = supervisord's shutdown: health, cache, then FalkorDB, which saves
    [ -n "$supervisord_pid" ] || return 0
    if kill -0 "$supervisord_pid" 2>/dev/null; then
        log "stopping supervisord (FalkorDB saves on the way down)"
        kill -TERM "$supervisord_pid" 2>/dev/null || true
    fi
    wait_for_pid "$supervisord_pid" || true
    supervisord_pid=''
}

standalone_env() {
    # The topology is fixed: every service runs in here, on 127.0.0.1, over one directory. Only the
    # directory and the ports may be chosen; the image's values for the compose stack are overridden.
    export ZAPOMNI_APPLIANCE_DIR="${ZAPOMNI_APPLIANCE_DIR:-/data}"
    export FALKORDB_PORT="${FALKORDB_PORT:-6379}"
    export ZAPOMNI_DB_MODE=server FALKORDB_HOST=127.0.0.1 ZAPOMNI_EMBEDDER=onnx ZAPOMNI_SUPERVISOR_NODAEMON=true
    # Derived from the directory and ports by env.sh; the ONNX embedder has one model, its default.
    unset FALKORDB_DATA_DIR REDIS_URL ZAPOMNI_DATA_DIR EMBEDDING_MODEL
    # shellcheck source=ops/env.sh
    . "$OPS_DIR/env.sh"
}

standalone() {
    standalone_env
    zapomni_prepare_dirs

    # A client that restarts its server at once may find the previous one still stopping (saving):
    # give it ZAPOMNI_OWNER_WAIT seconds to let go before refusing.
    local owner_wait="${ZAPOMNI_OWNER_WAIT:-15}"
    if ! zapomni_lock_owner; then
        log "$ZAPOMNI_APPLIANCE_DIR is held by $(zapomni_describe_owner); waiting up to ${owner_wait} s for it to let go"
        if ! zapomni_lock_owner "$owner_wait"; then
            log "$ZAPOMNI_APPLIANCE_DIR is in use by $(zapomni_describe_owner) (it holds $ZAPOMNI_OWNER_LOCK).
Only one appliance may run over a data directory (is another container using this volume?). Not
attaching to it: its database would go away whenever that one stops. Stop it first, or use another volume."
            exit 3
        fi
    fi
    zapomni_write_owner $$ standalone
    for port_name in FALKORDB_PORT REDIS_CACHE_PORT ZAPOMNI_HEALTH_PORT; do
        if zapomni_port_in_use "${!port_name}"; then
            log "port ${!port_name} ($port_name) on 127.0.0.1 is already in use; set $port_name to another port"
            exit 3
        fi
    done
    # FalkorDB and the cache want a password: FALKORDB_PASSWORD (docker run -e), or the one generated
    # into the volume on the first start (ZAPOMNI_PASSWORD_FILE, /data/secrets/falkordb.password).
    zapomni_ensure_password || exit 1

    trap 'on_signal TERM' TERM
    trap 'on_signal INT' INT
    # In a session of its own: a terminal's Ctrl-C, or the MCP client killing our process group, must
    # not hit supervisord or FalkorDB directly; this script stops them, in order, after the server.
    # stdin is the MCP client's: supervisord gets none of it, and its output goes to stderr.
    local setsid=''
    command -v setsid >/dev/null && setsid=setsid
    $setsid supervisord -c "$ZAPOMNI_SUPERVISOR_CONF" </dev/null >&2 &
    supervisord_pid=$!
    log "supervisord (pid $supervisord_pid) is starting FalkorDB, Redis and the health endpoint over $ZAPOMNI_APPLIANCE_DIR"

    local status=0
    wait_for_falkordb "${ZAPOMNI_START_TIMEOUT:-300}" --supervised || status=$?
    if [ "$status" -ne 0 ] || [ -n "$signalled" ]; then
        stop_supervisord
        exit_if_signalled
        log "the appliance did not start; logs in $ZAPOMNI_LOG_DIR"
        exit 1
    fi

    # The MCP server, as a child: an explicit stdin (a background job's default is /dev/null), the
    # owner lock not inherited (this script holds it until everything has stopped).
    zapomni serve <&0 4>&- &
    serve_pid=$!
    local finished
    while :; do
        finished='' status=0
        wait -n -p finished "$serve_pid" "$supervisord_pid" || status=$?
        [ -z "${finished:-}" ] || break  # unset: a trap interrupted the wait, and nothing ended
    done
    if [ "$finished" = "$supervisord_pid" ]; then
        # Someone shut supervisord down (and FalkorDB with it): a server without its database is no use.
        supervisord_pid=''
        log "supervisord exited ($status) under the running server; stopping the server"
        kill -TERM "$serve_pid" 2>/dev/null || true
        wait_for_pid "$serve_pid" || true
        exit 1
    fi
    serve_pid=''
    log "zapomni serve exited ($status)${signalled:+ after SIG$signalled}"
    stop_supervisord
    exit "$status"
}

# --- the stack's modes ---------------------------------------------------------------------------------

stack_env() {  # the stack's modes: compose gives the settings, the secrets volume the password
    # shellcheck source=ops/env.sh
    . "$OPS_DIR/env.sh" --helpers
    zapomni_stack_password
}

stack_prepare() {  # the stack's modes: FalkorDB answering and the schema at the latest version
    stack_env
    # As PID 1 this shell ignores signals it does not trap: `docker stop` must not wait out its timeout.
    trap 'on_signal TERM' TERM
    trap 'on_signal INT' INT
    local status=0
    wait_for_falkordb "${ZAPOMNI_START_TIMEOUT:-300}" || status=$?
    exit_if_signalled
    [ "$status" -eq 0 ] || exit 1
    # Readiness includes the schema being at the latest version; a failure here exits, and the
    # container's restart policy tries again.
    zapomni migrate apply >&2
    exit_if_signalled
}

health() {
    stack_prepare
    trap - TERM INT  # the health server, exec'd in place of this shell, handles them itself
    exec zapomni health-server --host "${ZAPOMNI_HEALTH_HOST:-127.0.0.1}" "$@"
}

stack() {
    stack_prepare
    # supervisord's environment (ops/supervisord.conf): the servers only, FalkorDB and Redis being containers
    # of their own; its socket and pidfile in the container (a restart starts afresh), the programs' logs in
    # the data volume. The HTTP server starts with supervisord: the schema is migrated by now.
    export ZAPOMNI_SUPERVISOR_CONF="$OPS_DIR/supervisord.conf" ZAPOMNI_SUPERVISOR_PROGRAMS=supervisor/servers.conf
    export ZAPOMNI_SUPERVISOR_NODAEMON=true ZAPOMNI_HTTP_AUTOSTART=true
    export ZAPOMNI_RUN_DIR="${TMPDIR:-/tmp}/zapomni-run" ZAPOMNI_LOG_DIR="${ZAPOMNI_DATA_DIR:-/data}/log"
    export ZAPOMNI_SUPERVISOR_SOCKET="$ZAPOMNI_RUN_DIR/supervisor.sock"
    export ZAPOMNI_SUPERVISOR_PIDFILE="$ZAPOMNI_RUN_DIR/supervisord.pid"
    export ZAPOMNI_DATA_DIR="${ZAPOMNI_DATA_DIR:-/data}"
    export ZAPOMNI_HEALTH_HOST="${ZAPOMNI_HEALTH_HOST:-127.0.0.1}" ZAPOMNI_HEALTH_PORT="${ZAPOMNI_HEALTH_PORT:-8090}"
    export ZAPOMNI_HTTP_TOKEN_FILE="${ZAPOMNI_HTTP_TOKEN_FILE:-$ZAPOMNI_DATA_DIR/secrets/http.token}"
    # Memories are private: what the servers write (logs, the token) is this user's only. supervisord's own
    # umask setting applies only when it daemonises, which here it does not.
    umask 077
    mkdir -p "$ZAPOMNI_RUN_DIR" "$ZAPOMNI_LOG_DIR"
    chmod 700 "$ZAPOMNI_RUN_DIR" "$ZAPOMNI_LOG_DIR"
    # The token first, so a client can connect the moment the server answers; printed on the first start only.
    zapomni_first_token || exit 1
    exit_if_signalled
    trap - TERM INT  # supervisord, exec'd in place of this shell, stops the servers itself
    exec supervisord -c "$ZAPOMNI_SUPERVISOR_CONF" </dev/null >&2
}

mode="${1-serve}"
[ "$#" -eq 0 ] || shift
case "$mode" in
    serve)
        stack_env
        exec zapomni serve "$@"
        ;;
    standalone) standalone "$@" ;;
    local)
        # A command in a running standalone container's environment, as ops/local does natively:
        #   docker exec -i CONTAINER /app/ops/docker-entrypoint.sh local zapomni backup
        standalone_env
        [ "$#" -gt 0 ] || { log "usage: docker-entrypoint.sh local COMMAND [ARG...]"; exit 2; }
        if [ "$1" = supervisorctl ]; then shift; exec supervisorctl -c "$ZAPOMNI_SUPERVISOR_CONF" "$@"; fi
        exec "$@"
        ;;
    health) health "$@" ;;
    stack) stack ;;
    *)
        stack_env
        exec zapomni "$mode" "$@"
        ;;
esac
