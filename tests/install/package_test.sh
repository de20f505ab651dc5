#!/usr/bin/env bash
# The Debian package: `cpack -G DEB` on this build, then its file name, its
# control fields (the runtime packages it depends on) and its contents
# (the program, the libraries, exactly the public headers, the CMake
# package, the pkg-config file and the Python package, all under /usr).
# Usage: package_test.sh BUILD_DIR CPACK VERSION HEADER_LIST
set -euo pipefail

build=$1 cpack=$2 version=$3 header_list=$4
work=$build/package-test
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

command -v dpkg-shlibdeps >/dev/null ||
  fail "dpkg-shlibdeps is not installed (the package's Depends come from it): install dpkg-dev (scripts/install-deps does)"
if ! (cd "$work" && "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work") \
  >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log" >&2
  fail "cpack -G DEB exited with an error (output above)"
fi
deb=$work/qccl_${version}_amd64.deb
[ -f "$deb" ] || fail "cpack wrote no qccl_${version}_amd64.deb (it wrote: $(ls "$work"))"

field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = qccl ] || fail "the package is named $(field Package), not qccl"
[ "$(field Version)" = "$version" ] || fail "the package's version is $(field Version), not $version"
[ "$(field Architecture)" = amd64 ] || fail "the package is for $(field Architecture), not amd64"
depends=$(field Depends)
for package in 'libopenmpi3' 'libtorch[0-9.]+' 'zlib1g' 'libstdc\+\+6' 'libc6'; do
  grep -Eq "(^|, )$package( |,|$)" <<<"$depends" ||
    fail "Depends lacks $package (the program and libraries load it): $depends"
done

dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
for f in /usr/bin/qccl "/usr/lib/libqccl_core.so.$version" "/usr/lib/libqccl_engines.so.$version" \
         /usr/lib/libqccl_core.so /usr/lib/cmake/qccl/qcclConfig.cmake \
         /usr/lib/cmake/qccl/qcclConfigVersion.cmake /usr/lib/pkgconfig/qccl-core.pc; do
  grep -qx "$f" "$work/contents" || fail "the package lacks $f"
done
# The device library, where the build has one (its headers are listed).
if grep -qx 'qccl/codecs/device/cuda_vector.h' "$header_list"; then
  for f in "/usr/lib/libqccl_device.so.$version" /usr/lib/libqccl_device.so \
           /usr/lib/cmake/qccl/qcclDeviceTargets.cmake; do
    grep -qx "$f" "$work/contents" || fail "the package lacks $f (the build has the device library)"
  done
fi
# The Python package, where the build has one: in python3's own
# dist-packages under /usr.
if [ -d "$build/python/qccl" ]; then
  for f in __init__.py ddp.py '_qccl\.cpython-.*\.so'; do
    grep -Eqx "/usr/lib/python3\.[0-9]+/dist-packages/qccl/$f" "$work/contents" ||
      fail "the package lacks the Python package's $f"
  done
fi
grep '^/usr/include/qccl/.*\.h$' "$work/contents" | sed 's|^/usr/include/||' | sort \
  >"$work/packaged_headers"
sort "$header_list" >"$work/public_headers"
if ! diff -u "$work/public_headers" "$work/packaged_headers" >"$work/headers.diff"; then
  cat "$work/headers.diff" >&2
  fail "the packaged headers (+) differ from the public headers listed in src/CMakeLists.txt (-)"
fi
if grep -v '^/usr/' "$work/contents" | grep -q .; then
  fail "the package installs outside /usr: $(grep -v '^/usr/' "$work/contents" | head -3)"
fi

echo "$(basename "$deb"): $(stat -c %s "$deb") bytes"
echo "Depends: $depends"
