#!/bin/sh
# The compose stack's one-shot ollama-init service (compose.yaml mounts this file into the ollama image):
# make sure the Ollama server has the models Zapomni uses, EMBEDDING_MODEL and LLM_MODEL.
#
# Idempotent, and offline once the models are in the volume: a model the server already has is not
# pulled again (a pull asks the registry even then, and would fail without network). Exit 0 when every
# model is present; 1 when the server does not answer within OLLAMA_INIT_WAIT_S or a pull fails.
# POSIX sh: the ollama image's /bin/sh is dash.
set -eu

: "${OLLAMA_HOST:=ollama:11434}"
export OLLAMA_HOST
models="${EMBEDDING_MODEL:-nomic-embed-text} ${LLM_MODEL:-llama3.1:8b}"
wait_s="${OLLAMA_INIT_WAIT_S:-120}"

echo "ollama-init: waiting for the Ollama server at $OLLAMA_HOST"
waited=0
until ollama list >/dev/null 2>&1; do
    if [ "$waited" -ge "$wait_s" ]; then
        echo "ollama-init: no Ollama server answered at $OLLAMA_HOST within ${wait_s}s" >&2
        exit 1
    fi
    sleep 2
    waited=$((waited + 2))
done

for model in $models; do
    if ollama show "$model" >/dev/null 2>&1; then
        echo "ollama-init: $model is present"
    else
        echo "ollama-init: pulling $model"
        ollama pull "$model"
    fi
done
echo "ollama-init: ready: $models"
