#!/usr/bin/env bash
# The codec kernels' AVX2 (x86-64-v3) and baseline x86-64 versions, which a
# CPU with AVX-512 never selects: the kernel tests run under qemu-user with
# an emulated CPU of the level given, check that GCC's dispatch chose that
# level's version, and compare every kernel's output with the pinned bits
# (KernelsTest.GiveTheSameBitsOnEveryInstructionSet) and with the scalar
# references.
#
#   kernels_isa_test.sh QCCL_TESTS LEVEL     LEVEL: x86-64-v3 or x86-64
#
# Exit status: 0 when they pass; 1 when a test fails; 2 for bad arguments;
# 77 (skipped) without qemu-x86_64 (Debian's qemu-user, which
# scripts/install-deps installs).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: kernels_isa_test.sh QCCL_TESTS LEVEL" >&2; exit 2; }
tests=$1
level=$2
case "$level" in
  # QEMU's CPU models: Haswell has AVX2, FMA, F16C, BMI1/2, LZCNT and MOVBE
  # (x86-64-v3) and no AVX-512; qemu64 is baseline x86-64 (SSE2).
  x86-64-v3) cpu=Haswell ;;
  x86-64) cpu=qemu64 ;;
  *) echo "kernels_isa_test: unknown level '$level' (x86-64-v3 or x86-64)" >&2; exit 2 ;;
esac
command -v qemu-x86_64 >/dev/null || {
  echo "kernels_isa_test: skipped: no qemu-x86_64 (apt-get install qemu-user)"
  exit 77
}
# QEMU warns of every feature of the model that it does not emulate (none
# of them is in x86-64-v3); the test itself checks the level selected.
QCCL_EXPECT_KERNELS=$level qemu-x86_64 -cpu "$cpu" "$tests" \
  --gtest_filter='KernelsTest.*:PackedLevels*:ChecksumLanes.*:FileAndLanes/Checksums.*' \
  --gtest_brief=1 2> >(grep -v "^qemu-x86_64: warning: TCG doesn't support requested feature" >&2)
