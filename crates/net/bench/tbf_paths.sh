#!/usr/bin/env bash
# Two rate-limited paths between a client and a server network namespace (tc tbf: rate and
# drop-tail buffer only -- this machine has no netem, so there is no added propagation
# delay), the proxy pair, and curl downloads through SOCKS5. Prints goodput per download and
# the session's decision-latency distribution (bytes committed to a kernel subflow beyond
# its congestion window, one sample per record).
#
#   crates/net/bench/tbf_paths.sh [SCHED] [SIZE_BYTES] [RUNS] [extra proxy flags...]
#
# Rates and buffers: the DEMS §3.2 profile (Guo et al., MobiCom 2017): WiFi 7040 kbit/s with a
# 50 ms buffer, LTE 9185 kbit/s with a 500 ms buffer. Needs root. Cleans up on exit.
set -euo pipefail
SCHED=${1:-dems-f}; SIZE=${2:-10485760}; RUNS=${3:-3}; shift $(( $# < 3 ? $# : 3 )) || true
EXTRA=("$@")
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${MPSCHED_PROXY:-$ROOT/target/release/mpsched-proxy}
C=mpbc$$; S=mpbs$$; W=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$C" 2>/dev/null || true
  ip netns del "$S" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT INT TERM
ip netns add "$C"; ip netns add "$S"
ip -n "$C" link set lo up; ip -n "$S" link set lo up
ip link add va$$ netns "$C" type veth peer name vas$$ netns "$S"
ip link add vb$$ netns "$C" type veth peer name vbs$$ netns "$S"
ip -n "$C" addr add 10.77.1.1/24 dev va$$; ip -n "$S" addr add 10.77.1.2/24 dev vas$$
ip -n "$C" addr add 10.77.2.1/24 dev vb$$; ip -n "$S" addr add 10.77.2.2/24 dev vbs$$
for l in va$$ vb$$; do ip -n "$C" link set "$l" up; done
for l in vas$$ vbs$$; do ip -n "$S" link set "$l" up; done
ip -n "$S" addr add 10.77.0.1/32 dev lo
# Each source address leaves by its own veth (policy routing on the client side).
ip -n "$C" route add 10.77.0.1/32 via 10.77.1.2 dev va$$
ip -n "$C" rule add from 10.77.2.1 table 102
ip -n "$C" route add 10.77.0.1/32 via 10.77.2.2 dev vb$$ table 102
# Downlink bottlenecks: rate and drop-tail buffer (tbf latency = buffer in time).
ip netns exec "$S" tc qdisc add dev vas$$ root tbf rate 7040kbit burst 1600 latency 50ms
ip netns exec "$S" tc qdisc add dev vbs$$ root tbf rate 9185kbit burst 1600 latency 500ms
for ns in "$C" "$S"; do ip netns exec "$ns" ethtool -K lo gso off gro off tso off >/dev/null 2>&1 || true; done
for l in va$$ vb$$; do ip netns exec "$C" ethtool -K "$l" gso off gro off tso off >/dev/null 2>&1 || true; done
for l in vas$$ vbs$$; do ip netns exec "$S" ethtool -K "$l" gso off gro off tso off >/dev/null 2>&1 || true; done
head -c "$SIZE" /dev/urandom > "$W/file"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$W/psk"
printf 'default = "%s"\n' "$SCHED" > "$W/policy.toml"
ip netns exec "$S" python3 -m http.server 8080 --bind 10.77.0.1 --directory "$W" >/dev/null 2>&1 &
PIDS+=($!)
ip netns exec "$S" "$BIN" server --listen 10.77.0.1:7000 --psk-file "$W/psk" --allow 10.77.0.0/16 \
  --stats "$W/server.stats" "${EXTRA[@]}" 2>"$W/server.log" &
PIDS+=($!)
sleep 0.5
ip netns exec "$C" "$BIN" client --server 10.77.0.1:7000 --path wifi=10.77.1.1 --path lte=10.77.2.1 \
  --socks 127.0.0.1:1080 --psk-file "$W/psk" --policy "$W/policy.toml" "${EXTRA[@]}" 2>"$W/client.log" &
PIDS+=($!)
for _ in $(seq 100); do  # until the HTTP server and the SOCKS port answer
  ip netns exec "$S" bash -c 'exec 3<>/dev/tcp/10.77.0.1/8080' 2>/dev/null &&
    ip netns exec "$C" bash -c 'exec 3<>/dev/tcp/127.0.0.1/1080' 2>/dev/null && break
  sleep 0.1
done
for i in $(seq 1 "$RUNS"); do
  rm -f "$W/got"
  t=$(ip netns exec "$C" curl -sS --max-time 120 --socks5-hostname 127.0.0.1:1080 \
      -w '%{time_total}' -o "$W/got" http://10.77.0.1:8080/file)
  if cmp -s "$W/got" "$W/file"; then ok=identical; else ok=DIFFERENT; fi
  awk -v t="$t" -v n="$SIZE" -v s="$SCHED" -v ok="$ok" -v i="$i" 'BEGIN {
    printf "run %d %s: %d bytes in %.3f s, goodput %.2f Mbit/s = %.1f%% of 16.225 Mbit/s, bytes %s\n",
      i, s, n, t, n*8/t/1e6, 100*n*8/t/16.225e6, ok }'
done
kill "${PIDS[2]}" "${PIDS[1]}" 2>/dev/null || true
sleep 0.5
grep '"event":"session"' "$W/server.stats" || cat "$W/server.log"
