#!/usr/bin/env bash
# qccl as another project's dependency: installs this build into a fresh
# prefix under the build tree, checks what was installed, then uses it as a
# project outside the tree would:
#   1. the install tree: exactly the public headers, the libraries with
#      their sonames, the CMake package and the pkg-config file, a program
#      that runs; the core's library exports the public API only and does
#      not load libtorch;
#   2. examples/consumer: configured with find_package(qccl), built, and run
#      under mpirun with 2 ranks (a Global-QSGD allreduce, checked);
#   3. pkg-config: a core program built with `pkg-config --cflags --libs
#      qccl-core` alone, and run;
#   4. tests/install/find_package: version and component checks, and the
#      engines component finding Torch (configured only: a libtorch
#      translation unit takes ~20 s);
#   5. with the device library (WITH_DEVICE=ON, a build with CUDA):
#      libqccl_device.so exports the device headers' API and keeps its CUDA
#      runtime hidden, and examples/consumer_device is built with the C++
#      compiler alone and run: on a GPU, an allreduce on device memory
#      checked; without one, the library's clean refusal checked.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR CMAKE CXX GENERATOR VERSION \
#                        HEADER_LIST WITH_DEVICE MPIRUN...
set -euo pipefail

build=$1 source=$2 cmake=$3 cxx=$4 generator=$5 version=$6 header_list=$7 with_device=$8
shift 8
mpirun=("$@")

work=$build/install-test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "FAILED: $*" >&2
  exit 1
}
# Runs a command quietly; on failure shows its output and names the step.
quiet() {
  local log=$work/$1.log
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$(basename "$log" .log): '$*' exited with an error (output above)"
  fi
}
seconds() { echo "$(($(date +%s%N) / 1000000))"; }
start=$(seconds)
step() { echo "[$(($(seconds) - start)) ms] $*"; }

step "cmake --install $build --prefix $prefix"
quiet install "$cmake" --install "$build" --prefix "$prefix"
lib=$(cd "$prefix" && dirname "$(find . -name "libqccl_core.so.$version" | head -1)")
[ "$lib" != "." ] && [ -n "$lib" ] || fail "no libqccl_core.so.$version in the install"
lib=$prefix/${lib#./}

step "the install tree"
(cd "$prefix/include" && find . -type f | sed 's|^\./||' | sort) >"$work/installed_headers"
sort "$header_list" >"$work/public_headers"
if ! diff -u "$work/public_headers" "$work/installed_headers" >"$work/headers.diff"; then
  cat "$work/headers.diff" >&2
  fail "the installed headers (+) differ from the public headers listed in src/CMakeLists.txt (-)"
fi
soversion=${version%.*}
for f in "$lib/libqccl_core.so" "$lib/libqccl_core.so.$soversion" \
         "$lib/libqccl_engines.so" "$lib/libqccl_engines.so.$soversion" \
         "$lib/libqccl_engines.so.$version" "$lib/cmake/qccl/qcclConfig.cmake" \
         "$lib/cmake/qccl/qcclConfigVersion.cmake" "$lib/cmake/qccl/qcclCoreTargets.cmake" \
         "$lib/cmake/qccl/qcclEnginesTargets.cmake" "$lib/pkgconfig/qccl-core.pc" \
         "$prefix/bin/qccl"; do
  [ -e "$f" ] || fail "$f was not installed"
done
"$prefix/bin/qccl" --version | grep -qx "qccl $version" ||
  fail "the installed program's --version is not 'qccl $version'"
core_needs=$(readelf -d "$lib/libqccl_core.so" | grep NEEDED || true)
if grep -Eq 'libtorch|libc10' <<<"$core_needs"; then
  fail "libqccl_core.so loads libtorch: $core_needs"
fi
grep -q 'libtorch' <(readelf -d "$lib/libqccl_engines.so") ||
  fail "libqccl_engines.so does not load libtorch"
# Exported: what the public headers declare; not: the internals.
exported=$(nm -DC --defined-only "$lib/libqccl_core.so")
grep -q 'qccl::make_codec(' <<<"$exported" || fail "libqccl_core.so does not export qccl::make_codec"
grep -q 'typeinfo for qccl::Error' <<<"$exported" ||
  fail "libqccl_core.so does not export qccl::Error's type (callers could not catch it)"
# (Internals that exist: the static archive the tests link defines them.)
archived=$(nm -C --defined-only "$build/src/libqccl_core.a" 2>/dev/null)
for internal in 'qccl::make_global_qsgd_codec(' 'qccl::run_ring(' 'qccl::parse_spec_syntax('; do
  grep -qF " T $internal" <<<"$archived" ||
    fail "$internal is not in $build/src/libqccl_core.a: name another internal function here"
  if grep -qF "$internal" <<<"$exported"; then
    fail "libqccl_core.so exports the internal $internal: only what the installed headers declare may be"
  fi
done

step "examples/consumer: find_package(qccl), build, mpirun -np 2"
quiet consumer-configure "$cmake" -S "$source/examples/consumer" -B "$work/consumer" \
  -G "$generator" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
grep -q "^qccl_DIR:PATH=$lib/cmake/qccl$" "$work/consumer/CMakeCache.txt" ||
  fail "the consumer found another qccl: $(grep '^qccl_DIR' "$work/consumer/CMakeCache.txt")"
quiet consumer-build "$cmake" --build "$work/consumer"
quiet consumer-run "${mpirun[@]}" -np 2 "$work/consumer/consumer"
grep -q "within the bound on every rank" "$work/consumer-run.log" || {
  cat "$work/consumer-run.log" >&2
  fail "the consumer's allreduce was not within its error bound"
}
cat "$work/consumer-run.log"

step "pkg-config qccl-core: build and run a core program"
command -v pkg-config >/dev/null ||
  fail "pkg-config is not installed: install pkgconf (scripts/install-deps does)"
export PKG_CONFIG_PATH=$lib/pkgconfig
[ "$(pkg-config --modversion qccl-core)" = "$version" ] ||
  fail "pkg-config --modversion qccl-core is not $version"
read -r -a flags <<<"$(pkg-config --cflags --libs qccl-core)"
quiet pkgconfig-build "$cxx" -std=c++20 "$source/tests/install/pkgconfig_check.cc" "${flags[@]}" \
  -Wl,-rpath,"$lib" -o "$work/pkgconfig_check"
quiet pkgconfig-run "$work/pkgconfig_check"

step "find_package(qccl): versions, components, engines and Torch"
quiet find-package "$cmake" -S "$source/tests/install/find_package" -B "$work/find_package" \
  -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DQCCL_EXPECTED_VERSION="$version" \
  -DQCCL_EXPECTED_PREFIX="$prefix" -DQCCL_EXPECT_DEVICE="$with_device"
grep "gives qccl::core" "$work/find-package.log"

if [ "$with_device" = ON ]; then
  step "the device library: exports, examples/consumer_device built and run"
  for f in "$lib/libqccl_device.so" "$lib/libqccl_device.so.$soversion" \
           "$lib/libqccl_device.so.$version" "$lib/cmake/qccl/qcclDeviceTargets.cmake"; do
    [ -e "$f" ] || fail "$f was not installed"
  done
  device_exported=$(nm -DC --defined-only "$lib/libqccl_device.so")
  grep -q 'qccl::CudaVector::CudaVector(' <<<"$device_exported" ||
    fail "libqccl_device.so does not export qccl::CudaVector's constructor"
  # Its static CUDA runtime stays inside: a program's own runtime (or
  # PyTorch's) must not bind to it, nor it to theirs.
  if grep -Eq ' (cuda[A-Z]|__cuda)' <<<"$device_exported"; then
    fail "libqccl_device.so exports the CUDA runtime's functions: hide them (link it with -Wl,--exclude-libs,ALL)"
  fi
  # Its calls to its own functions bind within it (-Bsymbolic-functions):
  # no PLT slot names a function it defines.
  defined=$(nm -D --defined-only "$lib/libqccl_device.so" | awk '{print $3}' | sort -u)
  slots=$(readelf -rW "$lib/libqccl_device.so" | awk '/JUMP_SLOT/ {print $5}' | sed 's/@.*//' | sort -u)
  rebound=$(comm -12 <(echo "$defined") <(echo "$slots") | c++filt | grep 'qccl::' || true)
  [ -z "$rebound" ] ||
    fail "libqccl_device.so calls its own functions through the PLT (a program's copies would replace them): $(head -3 <<<"$rebound")"
  if grep -q 'qccl::device_kernels::' <<<"$device_exported"; then
    fail "libqccl_device.so exports the internal kernel launchers: only what the installed headers declare may be"
  fi
  quiet consumer-device-configure "$cmake" -S "$source/examples/consumer_device" \
    -B "$work/consumer_device" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  grep -q "^qccl_DIR:PATH=$lib/cmake/qccl$" "$work/consumer_device/CMakeCache.txt" ||
    fail "the device consumer found another qccl: $(grep '^qccl_DIR' "$work/consumer_device/CMakeCache.txt")"
  quiet consumer-device-build "$cmake" --build "$work/consumer_device"
  quiet consumer-device-run "$work/consumer_device/consumer_device"
  grep -Eq "within the bound, bitwise identical on every rank|CudaVector refused with qccl::Error: CUDA: " \
    "$work/consumer-device-run.log" || {
    cat "$work/consumer-device-run.log" >&2
    fail "the device consumer printed neither a checked allreduce nor a clean refusal"
  }
  cat "$work/consumer-device-run.log"
fi

step "done: the install works for other projects"
