#!/usr/bin/env bash
# stop-ceph-rgw.sh - stops the Ceph RGW test cluster started by start-ceph-rgw.sh.
# Usage: bash scripts/s3/stop-ceph-rgw.sh [BASE_DIR]   (or S3_DATA_DIR=BASE_DIR; default /tmp/quire-s3)
#        S3_PURGE=1 ... also deletes BASE_DIR/ceph-s3 (configuration, logs, monitor store)
# Only the processes recorded in BASE_DIR/ceph-s3/run/*.pid whose command line names
# this cluster's ceph.conf are signalled (TERM, then KILL after 20 s). Objects live in
# RAM (memstore), so they are gone after a stop anyway.
set -euo pipefail
BASE="${1:-${S3_DATA_DIR:-/tmp/quire-s3}}"
log() { printf '[stop-ceph-rgw %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
if [ ! -d "$BASE/ceph-s3" ]; then log "nothing to stop in $BASE"; exit 0; fi
D="$(cd "$BASE/ceph-s3" && pwd -P)"
CONF="$D/ceph.conf"

pid_of() {
  local f="$D/run/$1.pid" p
  [ -s "$f" ] || return 0
  p="$(cat "$f" 2>/dev/null || true)"
  [[ "$p" =~ ^[0-9]+$ ]] || return 0
  [ -r "/proc/$p/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- "$CONF" && echo "$p"
  return 0
}
alive() {  # is pid $1 still one of our daemons?
  [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$CONF"
}
stop_one() {
  local n="$1" p
  p="$(pid_of "$n")"
  if [ -z "$p" ]; then rm -f "$D/run/$n.pid"; return 0; fi
  kill -TERM "$p" 2>/dev/null || true
  # the daemon removes its pid file early in shutdown: wait on the pid itself
  for _ in $(seq 1 200); do alive "$p" || break; sleep 0.1; done
  if alive "$p"; then
    log "$n (pid $p) ignored SIGTERM for 20 s, sending SIGKILL"
    kill -KILL "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$p" || break; sleep 0.1; done
  fi
  rm -f "$D/run/$n.pid"
  log "stopped $n (pid $p)"
}
# gateway first, then the OSD, then the monitor
stop_one client.rgw.s3
stop_one osd.0
stop_one mon.a
if [ "${S3_PURGE:-0}" = 1 ]; then
  [ -f "$D/.ceph-s3" ] && rm -rf "$D" && log "purged $D"
fi
exit 0
