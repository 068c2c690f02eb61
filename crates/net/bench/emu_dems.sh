#!/usr/bin/env bash
# The proxy on the link emulator (mpsched emu, issue 9) with the DEMS §3.2 profile of Guo et
# al., MobiCom 2017 (WiFi 7040 kbit/s 50 ms, LTE 9185 kbit/s 270 ms, 50/500 ms buffers):
# warm shared subflows, curl downloads through SOCKS5, median time per scheduler and size.
#
#   crates/net/bench/emu_dems.sh [RUNS] [SCHED ...]    (root; cleans up on exit)
set -euo pipefail
RUNS=${1:-5}; shift || true
SCHEDS=("${@:-dems-f minrtt}"); read -r -a SCHEDS <<< "${SCHEDS[*]}"
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
MP=$ROOT/.venv/bin/mpsched; BIN=$ROOT/target/release/mpsched-proxy
ID=px$$; ID=${ID:0:8}; C=mps-$ID-c; S=mps-$ID-s; W=$(mktemp -d); PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$MP" emu down "$ID" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT INT TERM
"$MP" emu up --id "$ID" --set path.lte.rtt=270ms --detach >/dev/null
for n in 262144 1048576 4194304; do head -c $n /dev/urandom > "$W/f$n"; done
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/psk"
ip netns exec "$S" python3 -m http.server 8080 --bind 10.200.0.2 --directory "$W" >/dev/null 2>&1 &
PIDS+=($!)
for sched in "${SCHEDS[@]}"; do
  printf 'default = "%s"\n' "$sched" > "$W/policy.toml"
  ip netns exec "$S" "$BIN" server --listen 10.200.0.2:7000 --psk-file "$W/psk" \
    --allow 10.200.0.0/16 --stats "$W/server-$sched.stats" 2>/dev/null &
  SP=$!
  sleep 0.5
  ip netns exec "$C" "$BIN" client --server 10.200.0.2:7000 --path wifi=10.200.0.1 \
    --path lte=10.200.1.1 --socks 127.0.0.1:1080 --psk-file "$W/psk" --policy "$W/policy.toml" 2>/dev/null &
  CP=$!
  for _ in $(seq 100); do
    ip netns exec "$S" bash -c 'exec 3<>/dev/tcp/10.200.0.2/8080' 2>/dev/null &&
      ip netns exec "$C" bash -c 'exec 3<>/dev/tcp/127.0.0.1/1080' 2>/dev/null && break
    sleep 0.1
  done
  for n in 262144 1048576 4194304; do
    ts=()
    for _ in $(seq "$RUNS"); do
      t=$(ip netns exec "$C" curl -sS --max-time 120 --socks5-hostname 127.0.0.1:1080 \
          -w '%{time_total}' -o "$W/got" "http://10.200.0.2:8080/f$n")
      cmp -s "$W/got" "$W/f$n" || { echo "$sched $n: BYTES DIFFER"; exit 1; }
      ts+=("$t")
    done
    med=$(printf '%s\n' "${ts[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$sched $n bytes: median $med s over $RUNS (${ts[*]})"
  done
  kill "$CP" "$SP"; wait "$CP" "$SP" 2>/dev/null || true
done
