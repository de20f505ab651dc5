"""The runs of scripts/mergecomp-table and what is read from them: the
commands (`qccl plan`, `qccl train` per bucket plan, and the single-rank
reference), running one under scripts/cluster, and the step times and
predictions in their logs and summaries."""

import json
import os
import statistics
from collections import deque

from bench_cli import ClusterUnavailable, RunFailed, run_logged
import mergecomp_options

CLUSTER_PREFIX = "qmct"  # the namespaces scripts/cluster creates: qmct-sw, qmct-h0..
TAIL_LINES = 20


# ---- Commands -----------------------------------------------------------------

def _common_options(args, codec):
    """The options every run shares, so that the runs differ only in plan."""
    return (["--model", args.model, "--codec", codec, "--batch", str(args.batch),
             "--threads", "1", "--seed", str(mergecomp_options.SEED), "--epochs", "1",
             "--max-steps-per-epoch", str(args.steps), "--quiet"]
            + mergecomp_options.codec_settings(codec))


def plan_command(args, codec, summary_path):
    """`qccl plan`: profiles, measures, and predicts each plan's step time."""
    return ([args.qccl, "plan"] + _common_options(args, codec)
            + ["--plan-steps", str(args.plan_steps), "--summary-json", summary_path])


def train_command(args, codec, plan, log_path, summary_path):
    """`qccl train` with the buckets of PLAN (mergecomp: the live scheduler)."""
    command = ([args.qccl, "train"] + _common_options(args, codec)
               + ["--buckets", plan, "--log", log_path, "--summary-json", summary_path, "--force"])
    if plan == "mergecomp":
        command += ["--plan-steps", str(args.plan_steps)]
    return command


def single_rank_command(args, log_path, summary_path):
    """T_1's run: one in-process rank, fp32 in one bucket, no network."""
    command = train_command(args, "fp32", "one", log_path, summary_path)
    return command + ["--ranks", "1"]


def on_cluster(root, hosts, rate, command):
    return ([os.path.join(root, "scripts", "cluster"), "--hosts", str(hosts), "--rate", rate,
             "--prefix", CLUSTER_PREFIX, "--"] + command)


# ---- Running ------------------------------------------------------------------

def run(command, output_path, timeout):
    """COMMAND with its stdout and stderr in OUTPUT_PATH; RunFailed (with the
    output's last lines) unless it exits 0 in time. A run past `timeout`, or
    one whose caller is interrupted, is stopped."""
    status = run_logged(command, output_path, timeout)
    if status is None:
        raise RunFailed(f"stopped after {timeout} s (--timeout)\n{tail(output_path)}")
    if status in (3, 4) and os.path.basename(command[0]) == "cluster":
        raise ClusterUnavailable(tail(output_path))
    if status != 0:
        raise RunFailed(f"exit status {status}\n{tail(output_path)}")


def tail(path, lines=TAIL_LINES):
    try:
        with open(path, errors="replace") as f:
            return "".join(deque(f, maxlen=lines)).rstrip()
    except OSError:
        return ""


# ---- Reading results ----------------------------------------------------------

def read_log(path):
    """The JSON lines of a `qccl train --log` file."""
    if not os.path.exists(path):
        raise RunFailed(f"the run wrote no log '{path}'")
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_summary(path):
    """The first summary of a --summary-json file (one codec per run)."""
    if not os.path.exists(path):
        raise RunFailed(f"the run wrote no summary '{path}'")
    with open(path) as f:
        summaries = json.load(f)
    if not summaries:
        raise RunFailed(f"the summary '{path}' is empty")
    return summaries[0]


def plan_event(lines):
    """MergeComp's plan event of a log, or None."""
    return next((line for line in lines if line.get("event") == "plan"), None)


def timed_seconds(lines, skip, after_step=None):
    """The `seconds` of the steps that count: steps are numbered from 0 in
    the log; those numbered below SKIP are left out, and with AFTER_STEP
    (the step in which MergeComp planned, whose time includes the search)
    so is every step up to and including it."""
    last_left_out = skip - 1 if after_step is None else max(skip - 1, after_step)
    return [line["seconds"] for line in lines
            if line.get("event") == "step" and line["step"] > last_left_out]


def median_ms(seconds):
    return 1000 * statistics.median(seconds) if seconds else None


def prediction_named(predictions, name):
    return next((p for p in predictions if p.get("name") == name), None)
