"""What the benchmark scripts share: option errors, checked whole numbers,
running a child (scripts/cluster) with its output in a file and stopping it
cleanly, and exiting through it on SIGTERM."""
import argparse
import re
import signal
import subprocess


class UsageError(Exception):
    """A bad option: the message names it and what is valid."""


class RunFailed(Exception):
    """A run that exited non-zero, timed out or wrote no result."""


class ClusterUnavailable(Exception):
    """scripts/cluster cannot run here (status 3) or its namespaces exist (4)."""


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


def run_logged(command, output_path, timeout):
    """COMMAND with its stdout and stderr in OUTPUT_PATH; its exit status, or
    None when it ran past `timeout` seconds. A run past its time, or one whose
    caller is interrupted, is stopped."""
    with open(output_path, "w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_process(process)
            return None
        except BaseException:  # interrupted or terminated: the run goes too
            stop_process(process)
            raise


def _exit_on_term(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through the running job, which stops it


def exit_through_jobs_on_term():
    """SIGTERM raises SystemExit, so a running job is stopped on the way out."""
    signal.signal(signal.SIGTERM, _exit_on_term)
