#!/usr/bin/env bash
# start-ceph-rgw.sh - quire's own S3 test server: a throw-away single-node Ceph cluster
# (RADOS Gateway, from Debian's packages) on 127.0.0.1, for `npm run test:s3` and the
# durability tests on S3. No Docker and nothing from outside Debian's repositories.
# scripts/with-s3.sh starts and stops it around a command; docs/s3.md says more.
#
# Usage:  bash scripts/s3/start-ceph-rgw.sh [BASE_DIR]      (or S3_DATA_DIR=BASE_DIR)
#         eval "$(bash scripts/s3/start-ceph-rgw.sh /tmp/s3)"   # export the printed variables
#
# What it does (idempotent):
#   1. apt-get installs radosgw, ceph-mon, ceph-osd and ceph-common if a binary is
#      missing (needs root, or install them yourself: any Debian or Ubuntu with Ceph 16+);
#   2. if a cluster started by this script already runs under BASE_DIR and answers, it
#      only prints the environment again (and makes sure the bucket exists);
#   3. otherwise it wipes BASE_DIR/ceph-s3 and builds a fresh cluster there: 1 monitor,
#      1 OSD on "memstore" (objects live in RAM and are gone when stopped), pools of
#      size 1, no mgr, cephx off, everything bound to 127.0.0.1;
#   4. starts radosgw (beast frontend) on 127.0.0.1:$S3_PORT, creates an S3 user with
#      fixed keys and the bucket $S3_BUCKET, checks that conditional PUTs work (the one
#      feature quire's store protocol needs), and prints `export ...` lines on stdout
#      (progress goes to stderr). The same lines go to BASE_DIR/ceph-s3/s3.env.
# Stop it with scripts/s3/stop-ceph-rgw.sh (same BASE_DIR).
#
# Environment knobs (all optional):
#   S3_DATA_DIR     base dir if no argument is given   (default /tmp/quire-s3)
#   S3_PORT         S3 HTTP port on 127.0.0.1           (default 7480)
#   CEPH_MON_PORT   monitor port on 127.0.0.1           (default 3300)
#   S3_BUCKET       bucket to create                    (default notes-test)
#   S3_ACCESS_KEY / S3_SECRET_KEY   S3 credentials      (default s3testaccesskey / s3testsecretkey)
#   S3_REGION       value printed as AWS_REGION         (default us-east-1)
#   S3_MEMSTORE_BYTES  capacity the in-RAM OSD reports  (default 8 GiB; the OSD refuses writes near it)
#   S3_START_TIMEOUT   seconds to wait for each daemon  (default 120)
#   S3_SKIP_INSTALL=1  never run apt-get
#   S3_SELFTEST=0      skip the If-None-Match smoke test done after start
set -euo pipefail

BASE="${1:-${S3_DATA_DIR:-/tmp/quire-s3}}"
S3_PORT="${S3_PORT:-7480}"
MON_PORT="${CEPH_MON_PORT:-3300}"
BUCKET="${S3_BUCKET:-notes-test}"
ACCESS_KEY="${S3_ACCESS_KEY:-s3testaccesskey}"
SECRET_KEY="${S3_SECRET_KEY:-s3testsecretkey}"
REGION="${S3_REGION:-us-east-1}"
MEMSTORE_BYTES="${S3_MEMSTORE_BYTES:-8589934592}"
TIMEOUT="${S3_START_TIMEOUT:-120}"

log() { printf '[start-ceph-rgw %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$BASE"
BASE="$(cd "$BASE" && pwd -P)"
D="$BASE/ceph-s3"             # everything this script owns lives here
CONF="$D/ceph.conf"
ENDPOINT="http://127.0.0.1:${S3_PORT}"
T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

# ---------------------------------------------------------------- install ----
need_install() {
  local b
  for b in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool curl; do
    command -v "$b" >/dev/null 2>&1 || return 0
  done
  return 1
}
if need_install; then
  [ "${S3_SKIP_INSTALL:-0}" = 1 ] && die "ceph binaries missing and S3_SKIP_INSTALL=1"
  [ "$(id -u)" = 0 ] || die "ceph packages missing; run as root (or install radosgw ceph-mon ceph-osd ceph-common curl)"
  PKGS="radosgw ceph-mon ceph-osd ceph-common"
  command -v curl >/dev/null 2>&1 || PKGS="$PKGS curl"
  APT_LOG="$BASE/ceph-s3-apt.log"
  log "installing $PKGS via apt-get (log: $APT_LOG) ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >"$APT_LOG" 2>&1 || log "apt-get update reported errors (continuing)"
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends \
      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
      $PKGS >>"$APT_LOG" 2>&1 || { tail -25 "$APT_LOG" >&2; die "apt-get install failed (log: $APT_LOG)"; }
  need_install && die "packages installed but binaries still missing (log: $APT_LOG)"
  log "install done after $(elapsed)s"
fi

# ------------------------------------------------------------- helpers ------
pid_of() {  # prints the pid of daemon $1 if it runs with our config, else nothing
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
s3_http_code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$ENDPOINT/" 2>/dev/null || true; }
s3_curl() {  # SigV4-signed request with the test user's keys
  curl -s -m 30 --aws-sigv4 "aws:amz:${REGION}:s3" --user "${ACCESS_KEY}:${SECRET_KEY}" \
       -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}
ceph_() { timeout 60 ceph -c "$CONF" --connect-timeout 30 "$@"; }
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ensure_bucket() {  # PUT /bucket answers 200 both when created and when we already own it
  local code
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    code="$(s3_curl -o "$D/log/create-bucket.out" -w '%{http_code}' -X PUT "$ENDPOINT/$BUCKET" || true)"
    [ "$code" = 200 ] && return 0
    sleep 1
  done
  die "creating bucket $BUCKET failed: HTTP $code $(cat "$D/log/create-bucket.out" 2>/dev/null)"
}
print_env() {
  cat >"$D/s3.env" <<EOF
export AWS_ENDPOINT_URL_S3=$ENDPOINT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=$REGION
export S3_BUCKET=$BUCKET
export S3_FORCE_PATH_STYLE=true
export AWS_REQUEST_CHECKSUM_CALCULATION=WHEN_REQUIRED
export AWS_RESPONSE_CHECKSUM_VALIDATION=WHEN_REQUIRED
EOF
  cat "$D/s3.env"
}

# ------------------------------------------- already running? (idempotent) ----
if [ -f "$D/.ceph-s3" ] && [ -n "$(pid_of client.rgw.s3)" ] && [ -n "$(pid_of osd.0)" ] \
   && [ -n "$(pid_of mon.a)" ] && [ "$(s3_http_code)" = 200 ]; then
  log "already running at $ENDPOINT (data in $D)"
  ensure_bucket
  print_env
  exit 0
fi

# ------------------------------------------------ clean up, fresh cluster ----
if [ -e "$D" ]; then
  [ -f "$D/.ceph-s3" ] || [ -z "$(ls -A "$D" 2>/dev/null)" ] \
    || die "$D exists and was not created by this script; refusing to wipe it"
  leftover=
  for n in client.rgw.s3 osd.0 mon.a; do           # leftovers of an earlier run
    p="$(pid_of "$n")"
    if [ -n "$p" ]; then log "stopping leftover $n (pid $p)"; kill -TERM "$p" 2>/dev/null || true; leftover="$leftover $p"; fi
  done
  for p in $leftover; do   # wait on the pids themselves (pid files vanish early)
    for _ in $(seq 1 150); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
  done
fi
port_busy "$S3_PORT" && die "127.0.0.1:$S3_PORT is already in use (set S3_PORT)"
port_busy "$MON_PORT" && die "127.0.0.1:$MON_PORT is already in use (set CEPH_MON_PORT)"
rm -rf "$D"

# if anything below fails, stop whatever this run already started
STARTED_OK=
cleanup_on_failure() {
  [ -n "$STARTED_OK" ] && return 0
  local n p
  for n in client.rgw.s3 osd.0 mon.a; do
    p="$(pid_of "$n")"
    [ -n "$p" ] || continue
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  log "start failed; daemons stopped, logs kept in $D/log"
}
trap cleanup_on_failure EXIT

mkdir -p "$D/mon.a" "$D/osd.0" "$D/rgw" "$D/run" "$D/log" "$D/tmp"
touch "$D/.ceph-s3"
FSID="$(cat /proc/sys/kernel/random/uuid)"

cat >"$CONF" <<EOF
# generated by quire's scripts/s3/start-ceph-rgw.sh - single-node throw-away Ceph cluster on loopback
[global]
fsid = $FSID
mon_host = v2:127.0.0.1:$MON_PORT
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_ipv6 = false
ms_bind_msgr1 = false
# no cephx: loopback-only test cluster (S3 requests are still SigV4-authenticated by RGW)
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_mon_client_mode = crc
ms_client_mode = crc
ms_mon_service_mode = crc
ms_service_mode = crc
ms_mon_cluster_mode = crc
ms_cluster_mode = crc
run_dir = $D/run
pid_file = $D/run/\$name.pid
admin_socket =
log_file = $D/log/\$name.log
tmp_dir = $D/tmp
crash_dir = $D/tmp
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_warn_on_pool_no_redundancy = false
mon_warn_on_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
mon_data_avail_crit = 1
mon_data_avail_warn = 2
[mon]
mon_data = $D/mon.\$id
mon_allow_pool_delete = true
# commit map changes quickly (default 1 s batching makes pool creation slow)
paxos_propose_interval = 0.05
paxos_min_wait = 0.01
[osd]
osd_data = $D/osd.\$id
osd_objectstore = memstore
memstore_device_bytes = $MEMSTORE_BYTES
osd_fast_shutdown = true
[client.rgw.s3]
rgw_frontends = beast endpoint=127.0.0.1:$S3_PORT
rgw_data = $D/rgw
rgw_dns_name = localhost
rgw_thread_pool_size = 64
EOF

# ---------------------------------------------------------------- monitor ----
log "creating monitor (fsid $FSID)"
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$D/monmap" >"$D/log/monmaptool.log" 2>&1
ceph-mon -c "$CONF" --mkfs -i a --monmap "$D/monmap" >"$D/log/mon-mkfs.log" 2>&1 \
  || die "ceph-mon --mkfs failed: $(tail -5 "$D/log/mon-mkfs.log")"
ceph-mon -c "$CONF" -i a >"$D/log/mon-start.log" 2>&1 || die "ceph-mon failed to start: $(tail -5 "$D/log/mon-start.log")"
ok=
for _ in $(seq 1 "$TIMEOUT"); do
  if ceph_ mon stat >/dev/null 2>&1; then ok=1; break; fi
  sleep 1
done
[ -n "$ok" ] || die "monitor did not answer; see $D/log/mon.a.log"
log "monitor up after $(elapsed)s"

# -------------------------------------------------------------------- OSD ----
OSD_UUID="$(cat /proc/sys/kernel/random/uuid)"
OSD_ID="$(ceph_ osd new "$OSD_UUID" 2>>"$D/log/osd-new.log")"
[ "$OSD_ID" = 0 ] || die "unexpected osd id '$OSD_ID'"
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$OSD_UUID" >"$D/log/osd-mkfs.log" 2>&1 \
  || die "ceph-osd --mkfs failed: $(tail -5 "$D/log/osd-mkfs.log")"
ceph-osd -c "$CONF" -i 0 >"$D/log/osd-start.log" 2>&1 || die "ceph-osd failed to start: $(tail -5 "$D/log/osd-start.log")"
ok=
for _ in $(seq 1 "$TIMEOUT"); do
  if ceph_ osd dump 2>/dev/null | grep -q '^osd\.0 up'; then ok=1; break; fi
  sleep 1
done
[ -n "$ok" ] || die "osd.0 did not come up; see $D/log/osd.0.log"
log "osd.0 up after $(elapsed)s"

# ------------------------------------------------------------------- RGW ----
radosgw -c "$CONF" -n client.rgw.s3 >"$D/log/rgw-start.log" 2>&1 || die "radosgw failed to start: $(tail -5 "$D/log/rgw-start.log")"
ok=
for _ in $(seq 1 "$TIMEOUT"); do
  [ "$(s3_http_code)" = 200 ] && { ok=1; break; }
  [ -z "$(pid_of client.rgw.s3)" ] && [ -s "$D/run/client.rgw.s3.pid" ] && break
  sleep 0.5
done
[ -n "$ok" ] || die "radosgw did not answer on $ENDPOINT; see $D/log/client.rgw.s3.log"
log "radosgw answering on $ENDPOINT after $(elapsed)s"

timeout 60 radosgw-admin -c "$CONF" -n client.admin user create --uid=s3test --display-name="S3 test user" \
  --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >"$D/log/user-create.log" 2>&1 \
  || die "radosgw-admin user create failed: $(tail -5 "$D/log/user-create.log")"
ensure_bucket

# smoke test of the feature the tests rely on: create-only PUT must give 200, then 412
if [ "${S3_SELFTEST:-1}" = 1 ]; then
  k="$ENDPOINT/$BUCKET/.start-s3-selftest-$$"
  c1="$(s3_curl -o /dev/null -w '%{http_code}' -X PUT -H 'If-None-Match: *' --data-binary one "$k" || true)"
  c2="$(s3_curl -o /dev/null -w '%{http_code}' -X PUT -H 'If-None-Match: *' --data-binary two "$k" || true)"
  s3_curl -o /dev/null -X DELETE "$k" || true
  [ "$c1/$c2" = "200/412" ] || die "conditional PUT self-test failed: got $c1/$c2, expected 200/412"
  log "self-test: PUT If-None-Match:* -> $c1, again -> $c2"
fi
STARTED_OK=1
log "bucket '$BUCKET' ready; total start time $(elapsed)s"
print_env
