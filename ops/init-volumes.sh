#!/bin/sh
# The compose stack's one-shot init-volumes service (compose.yaml mounts this file into the FalkorDB image,
# which runs it as root, with no network, before anything else starts):
#
# 1. Gives the stack's uid:gid (ZAPOMNI_UID:ZAPOMNI_GID, 10001:10001) the volumes and ./backups, so every
#    long-running service runs as that user, never as root.
# 2. Makes sure the stack has a password: /secrets/falkordb.password, generated on the first start (32
#    random bytes as 64 hex characters, one line, mode 0600 in a 0700 directory). FalkorDB and the Redis
#    cache read it through /secrets/redis-auth.conf (`requirepass`, rewritten from the password at every
#    start, so replacing the password file and restarting the stack rotates it); the zapomni containers
#    read the password file itself (read-only mount). It is never printed.
# POSIX sh: the image's /bin/sh is dash.
set -eu
uid="${ZAPOMNI_UID:-10001}"
gid="${ZAPOMNI_GID:-10001}"

chown -R "$uid:$gid" /var/lib/falkordb/data /data /backups /ollama

umask 077
install -d -o "$uid" -g "$gid" -m 0700 /secrets
if [ ! -s /secrets/falkordb.password ]; then
    head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n' >/secrets/falkordb.password.new
    echo >>/secrets/falkordb.password.new
    mv /secrets/falkordb.password.new /secrets/falkordb.password
    echo "init-volumes: generated the stack's password (/secrets/falkordb.password in the secrets volume)"
fi
IFS= read -r password </secrets/falkordb.password
printf 'requirepass %s\n' "$password" >/secrets/redis-auth.conf.new
mv /secrets/redis-auth.conf.new /secrets/redis-auth.conf
chown "$uid:$gid" /secrets/falkordb.password /secrets/redis-auth.conf
chmod 0600 /secrets/falkordb.password /secrets/redis-auth.conf
