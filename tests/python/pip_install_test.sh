#!/usr/bin/env bash
# What a PyTorch user does (docs/pytorch.md): `pip install .` into a new
# virtual environment that has PyPI's PyTorch 2, then the torchrun example in
# bf16 on 2 and 4 ranks, with qccl imported from the install, not the build
# tree. The new environment sees the cached PyTorch 2 of scripts/torch2-venv
# through a .pth file rather than downloading it again.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
torch2=$("$root/scripts/torch2-venv")
work=$(mktemp -d)
# The build directory: QCCL_PIP_BUILD_DIR (ctest's, inside the build tree),
# empty at the start so that the build starts from nothing as a user's does,
# and removed at the end. Where it lies under the source tree (scripts/build's
# build/ does), the compiler cache (where ccache is installed:
# cmake/compiler_cache.cmake) serves the objects an earlier run compiled.
build_dir=${QCCL_PIP_BUILD_DIR:-$work/build}
rm -rf "$build_dir"
trap 'rm -rf "$work" "$build_dir"' EXIT

/usr/bin/python3 -m venv "$work/venv"
python=$work/venv/bin/python
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$torch2/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
  > "$site/torch2.pth"

start=$(date +%s)
"$python" -m pip install --quiet --disable-pip-version-check --no-input \
  --config-settings=build-dir="$build_dir" "$root"
echo "pip install . took $(( $(date +%s) - start )) s"

cd "$work"  # away from the source tree and PYTHONPATH's build tree
unset PYTHONPATH
"$python" -c 'import qccl, torch; print("qccl", qccl.__version__, "from", qccl.__file__, "torch", torch.__version__)'
"$work/venv/bin/qccl" --version
# Where nvcc is found (cmake/cuda.cmake), the installed extension averages
# CUDA buckets (docs/gpu.md): its device code is built with it.
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then expect=True; else expect=False; fi
"$python" -c "from qccl._native import native; assert native.cuda_buckets is $expect, native.cuda_buckets"
echo "CUDA buckets in the installed extension: $expect"
# The installed extension is built with PyPI's pybind11: qccl.data's arrays
# must be right under NumPy 2 as well (the venv's own NumPy comes first).
"$python" -m pip install --quiet --disable-pip-version-check --no-input "numpy>=2"
"$python" "$root/tests/python/data_test.py" --must-work
for ranks in 2 4; do
  OMP_NUM_THREADS=1 "$python" "$root/scripts/torchrun" --standalone --nproc_per_node "$ranks" \
    "$root/examples/ddp_torchrun.py" > "$work/example.log" 2>&1 || { cat "$work/example.log"; exit 1; }
  grep -q "$ranks ranks, torch.bfloat16, .*replicas identical" "$work/example.log" || {
    cat "$work/example.log"; echo "the installed package's bf16 example failed on $ranks ranks"; exit 1; }
  grep "replicas" "$work/example.log"
done
