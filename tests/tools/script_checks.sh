# The checks shared by the tests of scripts/cluster and scripts/mpirun, sourced
# by them: they count failures in $failures and use $out as scratch.

# expect NAME EXIT_CODE PATTERN -- COMMAND...: runs COMMAND, checks its exit
# code and that PATTERN (extended regex) occurs in its stdout+stderr.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" >"$out" 2>&1
  local got=$?
  if [ "$got" -ne "$code" ] || ! grep -Eq -- "$pattern" "$out"; then
    echo "FAIL: $name (exit $got, expected $code; pattern '$pattern')"
    sed 's/^/    /' "$out" | tail -20
    failures=$((failures + 1))
  else
    echo "ok: $name"
  fi
}

# expect_json NAME STATUS JSON: a run that exited STATUS and wrote the JSON
# report JSON passes when STATUS is 0 and the Python checks on standard
# input (given the report's path) pass; a failure shows the run's output
# ($out) and the report. Removes JSON.
expect_json() {
  local name=$1 status=$2 json=$3
  if [ "$status" -eq 0 ] && /usr/bin/python3 - "$json"; then
    echo "ok: $name"
  else
    echo "FAIL: $name (exit $status)"
    sed 's/^/    /' "$out" "$json" | tail -20
    failures=$((failures + 1))
  fi
  rm -f "$json"
}

# finish WHAT: the summary line; exit 0 when every check passed, else 1.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures $1 check(s) failed"
    exit 1
  fi
  echo "all $1 checks passed"
  exit 0
}

# skip_without_netns: exits 77 (skipped), saying why, unless this machine can
# build the emulated cluster (root and `ip netns`).
skip_without_netns() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: the emulated cluster needs root"
    exit 77
  fi
  if ! ip netns list >/dev/null 2>&1; then
    echo "skipped: 'ip netns' does not work on this machine"
    exit 77
  fi
}
