#!/usr/bin/env bash
# Checks scripts/cluster. Usage: cluster_test.sh CLUSTER QCCL MODE
#   MODE arguments: argument checking and the "cannot run here" path (any machine);
#   MODE netns: teardown on success, failure and TERM, refusal of existing
#     namespaces, the ranks' CPUs with and without --pin, and a 2-host run on
#     100 Mbit/s links whose timings show the shaping. Needs root and `ip netns`; exits 77 (skipped) with the reason
#     otherwise.
set -u
cluster=$1
qccl=$2
mode=$3
failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

. "$(dirname "$0")/script_checks.sh"

if [ "$mode" = arguments ]; then
  expect "help" 0 'usage: scripts/cluster' -- "$cluster" --help
  expect "no command" 2 'no command' -- "$cluster" --hosts 2
  expect "one host" 2 '--hosts must be a whole number from 2 to 64' -- "$cluster" --hosts 1 -- true
  expect "hosts not a number" 2 '--hosts must be' -- "$cluster" --hosts four -- true
  expect "no ranks per host" 2 '--ranks-per-host must be a whole number from 1 to 16' -- \
    "$cluster" --ranks-per-host 0 -- true
  expect "too many ranks per host" 2 '--ranks-per-host must be' -- "$cluster" --ranks-per-host 17 -- true
  expect "bad rate" 2 '--rate must look like 100mbit' -- "$cluster" --rate 1gb -- true
  expect "burst without a number" 2 '--burst must be a whole number of bytes' -- "$cluster" --burst 16KiB -- true
  expect "burst below a packet" 2 '--burst must be from 2k' -- "$cluster" --burst 1500 -- true
  expect "burst too large" 2 '--burst must be from 2k .* to 256m' -- "$cluster" --burst 512m -- true
  expect "queue of zero" 2 '--queue-ms must be a whole number of milliseconds from 1 to 10000' -- \
    "$cluster" --queue-ms 0 -- true
  expect "queue not a number" 2 '--queue-ms must be' -- "$cluster" --queue-ms 5ms -- true
  expect "burst on an unshaped link" 2 'need a --rate other than unshaped' -- \
    "$cluster" --rate unshaped --burst 16k -- true
  expect "bad prefix" 2 '--prefix must be' -- "$cluster" --prefix Bad-Name -- true
  expect "public subnet refused" 2 'private /24' -- "$cluster" --subnet 8.8.8 -- true
  expect "octet range" 2 'octet above 255' -- "$cluster" --subnet 10.300.1 -- true
  expect "unknown option" 2 "unknown option '--fast'" -- "$cluster" --fast -- true
  if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    expect "explains that it needs root" 3 'needs root' -- \
      setpriv --reuid=65534 --regid=65534 --clear-groups "$cluster" --hosts 2 -- true
  else
    echo "skipped: the non-root check (needs root and setpriv to drop privileges)"
  fi
  finish cluster
fi

skip_without_netns

prefix="qt$$"
prefix=${prefix:0:8}
ours() { ip netns list | awk '{print $1}' | grep "^${prefix}-" || true; }

expect "runs a command on every host" 0 'hello from 10\.7[0-9]\.' -- \
  "$cluster" --hosts 3 --prefix "$prefix" --subnet 10.78.0 -- \
  sh -c 'echo hello from $(ip -4 -o addr show eth0 | awk "{print \$4}")'
[ -z "$(ours)" ] && echo "ok: removed its namespaces after success" ||
  { echo "FAIL: left $(ours)"; failures=$((failures + 1)); }

expect "shapes with the given bucket and queue" 0 'tbf .*burst 16Kb lat 5ms' -- \
  "$cluster" --hosts 2 --rate 1gbit --burst 16k --queue-ms 5 --prefix "$prefix" --subnet 10.78.0 -- \
  sh -c '/usr/sbin/tc qdisc show dev eth0'
expect "keeps the default bucket and queue" 0 'tbf .*burst 500000b lat 100ms' -- \
  "$cluster" --hosts 2 --rate 1gbit --prefix "$prefix" --subnet 10.78.0 -- \
  sh -c '/usr/sbin/tc qdisc show dev eth0'

# CPUs: unpinned, every rank may run on every CPU this test may (OpenMPI's
# default binding once put both of 2 hosts' ranks on core 0); with --pin,
# 2 hosts get disjoint CPUs, and a host beyond the CPUs' count shares
# host 0's (CPU i mod C).
affinity() {  # "RANK LIST" per rank, sorted by rank
  "$cluster" "$@" --prefix "$prefix" --subnet 10.78.0 -- \
    sh -c 'echo "$OMPI_COMM_WORLD_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"' \
    2>/dev/null | sort -n
}
mine=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
cpu_count=$(nproc)
lists=$(affinity --hosts 2 | awk '{print $2}' | sort -u)
[ "$lists" = "$mine" ] && echo "ok: unpinned ranks may use every CPU ($mine)" ||
  { echo "FAIL: unpinned ranks ran on '$(echo $lists)', not on every CPU ($mine)"; failures=$((failures + 1)); }
expand() { local part; for part in ${1//,/ }; do
  if [[ "$part" == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi; done; }
pinned=$(affinity --hosts 2 --pin)
first=$(expand "$(echo "$pinned" | awk '$1 == 0 {print $2}')")
second=$(expand "$(echo "$pinned" | awk '$1 == 1 {print $2}')")
if [ "$cpu_count" -ge 2 ]; then
  shared=$(comm -12 <(echo "$first" | sort) <(echo "$second" | sort))
  [ -n "$first" ] && [ -n "$second" ] && [ -z "$shared" ] &&
    echo "ok: --pin gives 2 hosts CPUs of their own ($(echo $first) / $(echo $second))" ||
    { echo "FAIL: --pin gave 2 hosts '$(echo $first)' and '$(echo $second)'"; failures=$((failures + 1)); }
fi
if [ "$cpu_count" -le 63 ]; then
  over=$(affinity --hosts $((cpu_count + 1)) --pin)
  [ "$(echo "$over" | awk -v h="$cpu_count" '$1 == h {print $2}')" = "$(echo "$over" | awk '$1 == 0 {print $2}')" ] &&
    [ "$(echo "$over" | awk '$1 == 0 {print $2}')" = "$(expand "$mine" | head -1)" ] &&
    echo "ok: --pin with more hosts than CPUs wraps around" ||
    { echo "FAIL: --pin with $((cpu_count + 1)) hosts gave: $(echo $over)"; failures=$((failures + 1)); }
fi

# 2 hosts x 2 ranks: ranks 0-1 on host 0 and 2-3 on host 1, which MPI's
# shared-memory split finds; the hierarchical allreduce then sends across
# hosts half the vector per rank (a 2-host ring of each half-vector slice),
# a third of what the flat ring sends from a rank at a host boundary.
placed=$("$cluster" --hosts 2 --ranks-per-host 2 --prefix "$prefix" --subnet 10.78.0 -- \
  sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' 2>/dev/null | sort -n | tr '\n' ' ')
[ "$placed" = "0 ${prefix}-h0 1 ${prefix}-h0 2 ${prefix}-h1 3 ${prefix}-h1 " ] &&
  echo "ok: --ranks-per-host 2 places ranks host by host" ||
  { echo "FAIL: --ranks-per-host 2 placed '$placed'"; failures=$((failures + 1)); }
json=$(mktemp)
"$cluster" --hosts 2 --ranks-per-host 2 --rate unshaped --prefix "$prefix" --subnet 10.78.0 -- \
  "$qccl" bench allreduce --algo ring,hierarchical --min-bytes 1M --max-bytes 1M --iters 2 \
  --warmup 1 --json >"$json" 2>"$out"
expect_json "hierarchical allreduce on 2 hosts x 2 ranks" $? "$json" <<'PY'
import json, sys
rows = {r["algorithm"]: r for r in json.load(open(sys.argv[1]))["rows"]}
assert all(r["wrong"] == 0 for r in rows.values()), rows
assert rows["ring"]["sent_bytes_per_rank"] == 1.5 * 2**20, rows["ring"]
assert rows["hierarchical"]["sent_bytes_per_rank"] == 0.5 * 2**20, rows["hierarchical"]
PY

expect "passes on the command's failure" 1 '' -- \
  "$cluster" --hosts 2 --prefix "$prefix" --subnet 10.78.0 -- false
[ -z "$(ours)" ] && echo "ok: removed its namespaces after failure" ||
  { echo "FAIL: left $(ours)"; failures=$((failures + 1)); }

"$cluster" --hosts 2 --prefix "$prefix" --subnet 10.78.0 -- sleep 60 >/dev/null 2>&1 &
runner=$!
for _ in $(seq 100); do [ -n "$(ours)" ] && break; sleep 0.1; done
sleep 1
kill -TERM "$runner"
wait "$runner"
status=$?
[ "$status" -eq 143 ] && [ -z "$(ours)" ] && echo "ok: TERM stops the run and removes the namespaces" ||
  { echo "FAIL: after TERM: exit $status, left '$(ours)'"; failures=$((failures + 1)); }

ip netns add "${prefix}-h0"
expect "refuses when its namespaces exist" 4 'exist already' -- \
  "$cluster" --hosts 2 --prefix "$prefix" -- true
ip netns list | grep -q "^${prefix}-h0" && echo "ok: left the existing namespace alone" ||
  { echo "FAIL: removed a namespace it did not create"; failures=$((failures + 1)); }
ip netns del "${prefix}-h0"

# 2 hosts at 100 Mbit/s: MPI fp32 on 1 MiB must take about 1 MiB at
# 12.5 MB/s = 84 ms (more than 60 ms: the shaping is on); Global-QSGD sends a
# quarter of that, so it must be faster.
json=$(mktemp)
"$cluster" --hosts 2 --rate 100mbit --prefix "$prefix" --subnet 10.78.0 -- \
  "$qccl" bench allreduce --codec global-qsgd --algo ring,native --min-bytes 1M --max-bytes 1M \
  --iters 3 --warmup 1 --link-rate 100mbit --json >"$json" 2>"$out"
expect_json "shaped 2-host run" $? "$json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
rows = {r["algorithm"]: r for r in report["rows"]}
native, ring = rows["native"], rows["ring"]
assert report["ranks"] == 2 and report["link_rate_bps"] == 1e8, report
assert all(r["wrong"] == 0 for r in rows.values()), rows
assert native["median_us"] > 60000, f"native took {native['median_us']} us: links not shaped?"
assert ring["median_us"] < native["median_us"], (ring, native)
# The links' token bucket (scripts/cluster: 4 ms at the rate) lets an
# iteration that starts with it full finish up to 4 ms before its wire time
# (a 1 MiB 8-bit ring: 21 ms), so the wire fraction may exceed 1 by that
# much; 5% more for timing.
wire_s = ring["sent_bytes_per_rank"] * 8 / report["link_rate_bps"]
assert 0.3 < ring["wire_fraction"] <= 1.05 * wire_s / (wire_s - 0.004), ring
print(f"native {native['median_us']:.0f} us, global-qsgd ring {ring['median_us']:.0f} us, "
      f"wire {ring['wire_fraction']:.2f}")
PY
[ -z "$(ours)" ] || { echo "FAIL: left $(ours)"; failures=$((failures + 1)); }
finish cluster
