#!/usr/bin/env bash
# with-s3.sh - run a command with a real S3-compatible server (the project's own Ceph
# RGW on 127.0.0.1, scripts/s3/) and its environment exported, then stop the server again.
#
# Usage:  bash scripts/with-s3.sh npm run test:s3
#
# The server is started with scripts/s3/start-ceph-rgw.sh (the first run installs
# Debian packages, which needs root) and its `export` lines (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, AWS_REGION, S3_BUCKET, ...) are evaluated before the command
# runs. If a server was already running in the same data directory it is reused and
# left running (someone else started it); otherwise it is stopped on exit, also when
# the command fails. The command's exit status is this script's exit status.
#
# Knobs: S3_DATA_DIR (default /tmp/quire-s3), QUIRE_S3_SCRIPTS (a directory with
# another start-ceph-rgw.sh / stop-ceph-rgw.sh pair; default <repo>/scripts/s3), plus
# every knob of start-ceph-rgw.sh (S3_PORT, S3_BUCKET, ...).
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: bash scripts/with-s3.sh COMMAND [ARGS...]" >&2
  exit 2
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
scripts="${QUIRE_S3_SCRIPTS:-$repo/scripts/s3}"
base="${S3_DATA_DIR:-/tmp/quire-s3}"

for tool in start-ceph-rgw.sh stop-ceph-rgw.sh; do
  if [ ! -x "$scripts/$tool" ] && [ ! -f "$scripts/$tool" ]; then
    echo "with-s3: $scripts/$tool not found (set QUIRE_S3_SCRIPTS)" >&2
    exit 2
  fi
done

# Was our cluster already up? Then it belongs to someone else: reuse it, never stop it.
already_running=no
pidfile="$base/ceph-s3/run/client.rgw.s3.pid"
if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  already_running=yes
fi

stop() {
  if [ "$already_running" = no ]; then
    bash "$scripts/stop-ceph-rgw.sh" "$base" >&2 || echo "with-s3: stopping the server failed" >&2
  fi
}
trap stop EXIT

env_lines="$(bash "$scripts/start-ceph-rgw.sh" "$base")"
eval "$env_lines"

set +e
"$@"
status=$?
set -e
exit "$status"
