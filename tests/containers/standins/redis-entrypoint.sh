#!/bin/sh
# The stand-in redis image's entrypoint, as the real one: `--flag ...` means `redis-server --flag ...`, and
# a redis-server started as root drops to the redis user (999:1000) first.
set -e
case "${1:-}" in -*) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
    exec setpriv --reuid=999 --regid=1000 --init-groups "$@"
fi
exec "$@"
