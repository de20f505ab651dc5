"""What the benchmark scripts share: option errors, checked whole numbers,
and stopping a child run (scripts/cluster) cleanly."""
import argparse
import re
import subprocess


class UsageError(Exception):
    """A bad option: the message names it and what is valid."""


def whole_number(text, option, least, most=None):
    """`text` as an int in least..most, or a UsageError naming `option`."""
    if not re.fullmatch(r"[0-9]+", text) or int(text) < least or (most and int(text) > most):
        bound = f"{least}..{most}" if most else f"at least {least}"
        raise UsageError(f"{option} must be a whole number {bound}, got '{text}'")
    return int(text)


class CheckedParser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting."""

    def error(self, message):
        raise UsageError(message)


def stop_process(process):
    """TERM, on which scripts/cluster ends its ranks and removes its
    namespaces; KILL only if that hangs."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=60)
