#!/bin/sh
# Benchmarks (a) and (b) of BENCHMARKS.md in ns-3 beside mpsched, alternating, for the speed
# ratio. Needs ns-3's development package (Debian: `apt-get install libns3-dev`, 3.37) and a
# C++ compiler; says so in one line and exits 2 otherwise.
#
#   bench/ns3/run.sh [RUNS]        (default 3 runs of each case on each side)
set -eu
runs=${1:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/target/ns3"
if ! pkg-config --exists ns3-core ns3-point-to-point ns3-applications 2>/dev/null; then
    echo "bench/ns3/run.sh: ns-3 not found by pkg-config (apt-get install libns3-dev)" >&2
    exit 2
fi
command -v g++ >/dev/null || { echo "bench/ns3/run.sh: no g++" >&2; exit 2; }
mkdir -p "$out"
# Only the ns3 libraries: Debian's .pc files also name libgsl.so, which the runtime package
# does not ship (the ns-3 libraries link it themselves).
libs=$(pkg-config --libs ns3-core ns3-network ns3-internet ns3-point-to-point \
    ns3-applications ns3-traffic-control | tr ' ' '\n' | grep -E '^-lns3|^-L' | tr '\n' ' ')
g++ -O2 -std=c++17 "$root/bench/ns3/bulk.cc" -o "$out/bulk" $(pkg-config --cflags ns3-core) $libs
(cd "$root" && cargo build --release -q -p mpsched-sim --example bench_run)
echo "ns-3 $(pkg-config --modversion ns3-core); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
for case in a b; do
    i=0
    while [ "$i" -lt "$runs" ]; do
        "$out/bulk" "$case"
        "$root/target/release/examples/bench_run" "$case"
        i=$((i + 1))
    done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
