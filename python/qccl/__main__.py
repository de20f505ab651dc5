"""The `qccl` command a pip install puts on PATH (and `python -m qccl`):
the package's version and its codecs. Training and benchmarks are the C++
program's (`qccl train`, docs/training.md), built with CMake."""

import argparse
import sys


def main(argv=None):
    from . import __version__, codecs
    parser = argparse.ArgumentParser(
        prog="qccl", description="qccl's Python package: compressed collectives and a PyTorch "
        "DDP hook (docs/pytorch.md). `qccl train` and the benchmarks are the C++ program's.")
    parser.add_argument("--version", action="version", version=f"qccl {__version__}")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("codecs", help="list the codecs qccl.ddp_hook(codec=...) accepts")
    arguments = parser.parse_args(argv)
    if arguments.command == "codecs":
        for name, description in codecs():
            print(f"{name:<14} {description}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
