#!/bin/sh
# The stand-in's run.sh, as the real image's: FalkorDB on 6379 over $FALKORDB_DATA_PATH (no browser, no TLS).
# shellcheck disable=SC2086  # REDIS_ARGS and FALKORDB_ARGS are word lists, as in the real image
exec redis-server --protected-mode no ${REDIS_ARGS:-} --dir "$FALKORDB_DATA_PATH" \
    --loadmodule "$FALKORDB_BIN_PATH/falkordb.so" ${FALKORDB_ARGS:-}
