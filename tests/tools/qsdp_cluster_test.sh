#!/usr/bin/env bash
# Checks scripts/qsdp-cluster on a tiny model: argument errors anywhere; with
# root and `ip netns`, a 2-host run at one rate whose summary holds every
# variant, the compute floor and its figures, with each host and floor run
# on its own CPUs. Usage: qsdp_cluster_test.sh QSDP_CLUSTER QCCL
# Exit status: 0 when every check passes; 1 otherwise; 77 (skipped) for the
# run without root or network namespaces.
set -u
script=$1
qccl=$2
failures=0
out=$(mktemp)
dir=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT

check() {  # check NAME CONDITION...: CONDITION is a command
  local name=$1
  shift
  if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; failures=$((failures + 1)); fi
}

"$script" --hosts 1 -- --hidden 32 >"$out" 2>&1
check "refuses one host" [ $? -eq 2 ]
check "says why" grep -q -- '--hosts must be a whole number >= 2' "$out"
"$script" --fast >"$out" 2>&1
check "refuses an unknown option" [ $? -eq 2 ]

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "skipped: the run needs root and network namespaces"
  [ "$failures" -eq 0 ] && exit 77 || exit 1
fi

"$script" --qccl "$qccl" --hosts 2 --rates 1gbit --variants "fp32 W8G8" --steps 2 \
  --prefix "qq$$" --output "$dir/run" -- --hidden 32 --layers 1 --batch 2 >"$out" 2>&1
check "runs" [ $? -eq 0 ]
summary="$dir/run/summary.txt"
check "pins the hosts" grep -q 'each host pinned to its CPUs' "$dir/run/1gbit/run.log"
check "says the hosts are pinned" grep -q '(each host pinned to its share of the CPUs)' "$summary"
check "a row per variant and the floor" [ "$(grep -cE '^(fp32|W8G8|compute floor) +[0-9.]+ \(' "$summary")" -eq 3 ]
check "fp32 is its own reference" grep -qE '^fp32 +[0-9.]+ \(1\.00x\)' "$summary"
check "the floor's line names its runs" \
  grep -qE '^compute floor: 2 single-rank runs side by side.*: [0-9.]+ ms/step \(median; [0-9.]+, [0-9.]+\)' "$summary"
# Each floor run on its host's CPUs: host k's list from scripts/host-cpus.
mapfile -t cpus < <("$(dirname "$script")/host-cpus" 2)
for k in 1 2; do
  cores=$(echo "${cpus[$((k - 1))]}" | tr ',' '\n' | wc -l)
  check "floor run $k ran on its host's $cores CPU(s)" \
    grep -qE "\"cpu\": \"[^\"]*, $cores cores?\"" "$dir/run/floor/$k/qsdp.json"
done
check "the perplexities are printed" [ "$(grep -cE '^(fp32|W8G8) +[0-9]+\.[0-9]{3}$' "$summary")" -eq 2 ]

"$script" --qccl "$qccl" --hosts 2 --rates 1gbit --variants fp32 --steps 1 --no-floor --no-pin \
  --prefix "qq$$" --output "$dir/free" -- --hidden 32 --layers 1 --batch 2 >"$out" 2>&1
check "runs without floor and pinning" [ $? -eq 0 ]
check "then has no floor" bash -c "! grep -q 'compute floor' '$dir/free/summary.txt'"
check "and says the hosts ran on any CPU" grep -q '(hosts on any CPU)' "$dir/free/summary.txt"

if [ "$failures" -ne 0 ]; then
  echo "$failures qsdp-cluster check(s) failed"
  sed 's/^/    /' "$out" | tail -20
  exit 1
fi
echo "all qsdp-cluster checks passed"
