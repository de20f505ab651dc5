#!/usr/bin/env bash
# Checks scripts/mpirun. Usage: mpirun_test.sh MPIRUN CLUSTER QCCL MODE
#   MODE arguments: the mpirun command lines it builds (--dry-run) for one
#     host and for many, and its refusals of bad input (any machine).
#   MODE hosts: the many-host path as a user runs it on real machines, on 2
#     emulated hosts (scripts/cluster --login): a hostfile, --net, the
#     namespace agent in place of ssh; `hostname`, `qccl bench allreduce`
#     (one host with 2 ranks, another with 1) and a short `qccl train`. Needs
#     root and `ip netns`; exits 77 (skipped) with the reason otherwise.
set -u
mpirun=$1
cluster=$2
qccl=$3
mode=$4
failures=0
out=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$out" "$tmp"' EXIT

. "$(dirname "$0")/script_checks.sh"

if [ "$mode" = arguments ]; then
  root=
  [ "$(id -u)" -ne 0 ] || root='--allow-run-as-root '
  printf 'node1 slots=2   # first\n\n# a comment\nnode2 slots=2\n' >"$tmp/hosts"
  expect "help" 0 'usage: scripts/mpirun' -- "$mpirun" --help
  expect "one host as before" 0 "^mpirun ${root}--oversubscribe --mca btl self,vader -np 4 build/qccl train --model cnn\$" -- \
    "$mpirun" --dry-run -np 4 build/qccl train --model cnn
  expect "a hostfile: TCP between hosts, shared memory within, unbound" 0 \
    "^mpirun ${root}--hostfile $tmp/hosts --bind-to none --mca btl tcp,self,vader -np 4 hostname\$" -- \
    "$mpirun" --dry-run --hostfile "$tmp/hosts" -np 4 hostname
  expect "--net sets both interfaces" 0 \
    "--mca btl_tcp_if_include 192\.168\.1\.0/24 --mca oob_tcp_if_include 192\.168\.1\.0/24 hostname\$" -- \
    "$mpirun" --dry-run --hostfile "$tmp/hosts" --net 192.168.1.0/24 hostname
  expect "--hosts, interface names, the emulated cluster's settings" 0 \
    "^mpirun ${root}--host node1:1,node2:1 --mca plm_rsh_agent '/opt/agent x' --mca routed direct --bind-to core --mca btl tcp,self,vader --mca btl_tcp_links 2 --mca btl_tcp_if_include eth1,ib0 --mca oob_tcp_if_include eth1,ib0 -np 2 -x PATH --mca btl_tcp_port_min_v4 50000 hostname\$" -- \
    "$mpirun" --dry-run --hosts node1:1,node2:1 --net eth1,ib0 --ssh-agent '/opt/agent x' --routed-direct \
    --bind-to core --tcp-links 2 -np 2 -x PATH --mca btl_tcp_port_min_v4 50000 hostname
  expect "other mpirun options after --" 0 "self,vader --verbose -np 2 hostname\$" -- \
    "$mpirun" --dry-run -- --verbose -np 2 hostname
  expect "the command's own options stay its own" 0 "-np 2 build/qccl train --hostfile x --net y\$" -- \
    "$mpirun" --dry-run -np 2 build/qccl train --hostfile x --net y
  if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    expect "--allow-run-as-root only as root" 0 '^mpirun --oversubscribe --mca btl self,vader true$' -- \
      setpriv --reuid=65534 --regid=65534 --clear-groups "$mpirun" --dry-run true
  fi
  expect "no command" 2 'no command' -- "$mpirun" -np 2
  expect "an MCA parameter the script sets is refused, naming its option" 2 "give the network with --net, not '--mca btl_tcp_if_include'" -- \
    "$mpirun" --hostfile "$tmp/hosts" --mca btl_tcp_if_include eth0 --dry-run hostname
  expect "the transport cannot be set twice" 2 "'--mca btl' is set by this script" -- \
    "$mpirun" --mca btl tcp,self --dry-run -np 2 hostname
  expect "missing hostfile" 2 "hostfile '$tmp/none' does not exist: write one line per host, 'NAME slots=N'" -- \
    "$mpirun" --hostfile "$tmp/none" hostname
  : >"$tmp/empty"
  expect "empty hostfile" 2 'names no host' -- "$mpirun" --hostfile "$tmp/empty" hostname
  printf 'node1 slots=2\nnode2 slot=2\n' >"$tmp/typo"
  expect "hostfile line with a typo" 2 "typo:2: 'slot=2' is not slots=N" -- "$mpirun" --hostfile "$tmp/typo" hostname
  expect "hostfile and hosts" 2 'either --hostfile or --hosts' -- \
    "$mpirun" --hostfile "$tmp/hosts" --hosts node1:1 hostname
  expect "hosts without slots" 2 "--hosts entry 'node2' is not NAME:N" -- "$mpirun" --hosts node1:1,node2 hostname
  expect "mpirun's own host options refused" 2 "give the hosts with --hostfile FILE or --hosts" -- \
    "$mpirun" -np 2 -H node1,node2 hostname
  expect "--net on one host" 2 '--net is for runs on several hosts' -- "$mpirun" --net eth1 hostname
  expect "--ssh-agent on one host" 2 '--ssh-agent is for runs on several hosts' -- "$mpirun" --ssh-agent rsh hostname
  expect "bad subnet" 2 "--net '10.0.0.0/40' has a prefix length above 32" -- \
    "$mpirun" --hosts node1:1 --net 10.0.0.0/40 hostname
  expect "bad interface" 2 '--net takes a subnet A.B.C.D/N .* or an interface name' -- \
    "$mpirun" --hosts node1:1 --net 'eth 1' hostname
  expect "bad link count" 2 '--tcp-links must be a whole number from 1 to 16' -- \
    "$mpirun" --hosts node1:1 --tcp-links 0 hostname
  expect "unknown option" 2 "unknown option '--hostfle': other mpirun options go after '--'" -- \
    "$mpirun" --hostfle "$tmp/hosts" hostname
  expect "runs on one host" 0 '^ran 2 ranks$' -- \
    "$mpirun" -np 2 sh -c '[ "$OMPI_COMM_WORLD_RANK" != 0 ] || echo "ran $OMPI_COMM_WORLD_SIZE ranks"'
  finish mpirun
fi

skip_without_netns

prefix="qm$$"
prefix=${prefix:0:8}
# What a user types on the first of two machines, with the namespaces'
# names for the machines' and the agent for ssh (docs/multi-node.md).
cat >"$tmp/user.sh" <<EOF
set -euo pipefail
printf '%s\n' "$prefix-h0 slots=2" "$prefix-h1 slots=1" >"$tmp/hosts"
launch() { "$mpirun" --hostfile "$tmp/hosts" --net "\$QCCL_CLUSTER_NET" --ssh-agent "\$QCCL_CLUSTER_AGENT" "\$@"; }
echo "== hostname"
launch -np 2 --map-by node hostname
echo "== bench"
launch -np 3 --display-map "$qccl" bench allreduce --codec global-qsgd --algo ring,native \
  --min-bytes 1M --max-bytes 1M --iters 3 --warmup 1 --json | tee "$tmp/bench.out"
echo "== train"
launch -np 2 --map-by node "$qccl" train --model mlp --codec global-qsgd:bits=8 --epochs 1 \
  --max-steps-per-epoch 5 --summary-json "$tmp/train.json"
EOF
started=$(date +%s)
"$cluster" --hosts 2 --prefix "$prefix" --subnet 10.74.0 --login -- bash "$tmp/user.sh" >"$out" 2>&1
status=$?
echo "the runs took $(($(date +%s) - started)) s"
section() { awk -v s="== $1" '$0 == s {on = 1; next} /^== / {on = 0} on' "$out"; }
if [ "$status" -ne 0 ]; then
  echo "FAIL: the runs on 2 hosts (exit $status)"
  sed 's/^/    /' "$out" | tail -30
  failures=$((failures + 1))
else
  echo "ok: hostname, bench allreduce and train ran on 2 hosts"
fi
[ "$(section hostname | sort | tr '\n' ' ')" = "$prefix-h0 $prefix-h1 " ] &&
  echo "ok: one rank on each host" ||
  { echo "FAIL: hostname printed: $(section hostname | tr '\n' ' ')"; failures=$((failures + 1)); }
# The job map: ranks 0 and 1 on host 0, rank 2 on host 1.
map=$(section bench | awk '/Data for node:/ {node = $4} /Process rank:/ {print $NF == "N/A" ? $(NF-2) : $NF, node}' |
  sort -u | tr '\n' ' ')
[[ "$map" == *"0 $prefix-h0"*"1 $prefix-h0"*"2 $prefix-h1"* ]] &&
  echo "ok: bench ranks on 2 hosts ($map)" ||
  { echo "FAIL: the bench's job map: '$map'"; failures=$((failures + 1)); }
if /usr/bin/python3 - "$tmp/bench.out" "$tmp/train.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read()  # the job map, then the JSON
bench = json.loads(text[text.index("\n{") + 1:])
assert bench["ranks"] == 3, bench
assert len(bench["rows"]) == 2 and all(r["wrong"] == 0 for r in bench["rows"]), bench["rows"]
train = json.load(open(sys.argv[2]))[0]
assert train["ranks"] == 2 and train["codec"].startswith("global-qsgd"), train
assert 0.1 < train["accuracy"] <= 1, train
print(f"bench: {len(bench['rows'])} rows, 0 wrong; train: test accuracy {train['accuracy']}")
PY
then
  echo "ok: the bench and the training's results"
else
  echo "FAIL: the bench's or the training's results"
  failures=$((failures + 1))
fi
[ -z "$(ip netns list | awk '{print $1}' | grep "^${prefix}-")" ] ||
  { echo "FAIL: namespaces left"; failures=$((failures + 1)); }
finish mpirun
