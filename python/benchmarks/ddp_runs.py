"""Runs one measurement on the emulated cluster (scripts/cluster): a PyTorch
DDP job of ddp_worker.py, or `qccl train` with the same model and settings,
and turns its output into one row of the report."""

import json
import os
import statistics
import sys

from bench_cli import ClusterUnavailable, RunFailed, run_logged
import ddp_options

CLUSTER_PREFIX = "qddp"  # the namespaces scripts/cluster creates: qddp-sw, qddp-h0..


def run_on_cluster(root, hosts, rate, command, log_path, timeout):
    """COMMAND under scripts/cluster; RunFailed unless it exits 0 in time.
    A run past `timeout`, or one whose caller is interrupted, is stopped."""
    cluster = [os.path.join(root, "scripts", "cluster"), "--hosts", str(hosts), "--rate", rate,
               "--prefix", CLUSTER_PREFIX, "--"]
    status = run_logged(cluster + command, log_path, timeout)
    if status is None:
        raise RunFailed(f"stopped after {timeout} s (--timeout); see {log_path}")
    if status in (3, 4):
        with open(log_path) as log:
            raise ClusterUnavailable(log.read().strip())
    if status != 0:
        raise RunFailed(f"exit status {status}; see {log_path}")


def ddp_command(root, args, model, hook, result_path, store_path):
    """The DDP job of (model, hook): one ddp_worker.py per host."""
    command = [sys.executable, os.path.join(root, "python", "benchmarks", "ddp_worker.py"),
               "--model", model, "--hook", hook, "--warmup-steps", str(args.warmup_steps),
               "--init-file", store_path, "--output", result_path, "--ifname", "eth0",
               "--timeout", str(args.timeout)]
    if model == "cnn":
        command += ["--epochs", str(args.cnn_epochs)]
    else:
        command += ["--epochs", "1", "--max-steps", str(args.recommender_steps),
                    "--fields", str(args.recommender_fields),
                    "--values-per-field", str(args.recommender_values)]
    if args.data_dir:
        command += ["--data-dir", args.data_dir]
    return command


def qccl_train_command(args, model, codec, summary_path, log_path):
    """`qccl train` on (model, codec) with the DDP runs' settings."""
    s = ddp_options.model_settings(model)
    command = [args.qccl, "train", "--model", model, "--codec", codec, "--batch", str(s["batch"]),
               "--optimizer", s["optimizer"], "--lr", str(s["lr"]), "--threads", "1",
               "--seed", str(ddp_options.SEED), "--quiet", "--force",
               "--summary-json", summary_path, "--log", log_path]
    if s["momentum"] is not None:
        command += ["--momentum", str(s["momentum"])]
    if model == "cnn":
        command += ["--epochs", str(args.cnn_epochs)]
    else:
        command += ["--epochs", "1", "--max-steps-per-epoch", str(args.recommender_steps),
                    "--fields", str(args.recommender_fields),
                    "--values-per-field", str(args.recommender_values)]
        if args.qccl_embedding_optimizer != "dense":
            command += ["--embedding-optimizer", args.qccl_embedding_optimizer]
    if args.data_dir and model == "cnn":
        command += ["--data-dir", args.data_dir]
    return command


def read_ddp_row(result_path):
    if not os.path.exists(result_path):
        raise RunFailed(f"the run wrote no result '{result_path}'")
    with open(result_path) as f:
        row = json.load(f)
    row.pop("step_seconds", None)
    return row


def qccl_train_row(summary_path, log_path, model, warmup_steps, embedding_optimizer="dense"):
    """A row from `qccl train`'s summary and its JSON-lines log: ms/step is
    the median wall time of the steps after the warm-up, as for DDP."""
    if not os.path.exists(summary_path) or not os.path.exists(log_path):
        raise RunFailed(f"`qccl train` wrote no summary '{summary_path}' or log '{log_path}'")
    with open(summary_path) as f:
        summary = json.load(f)[0]
    with open(log_path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    seconds = [line["seconds"] for line in lines if line.get("event") == "step"]
    timed = seconds[warmup_steps:]
    method = summary["codec"]
    if model == "recommender" and embedding_optimizer != "dense":
        method += " + " + embedding_optimizer  # the tables' optimizer
    return {"system": "qccl train", "model": model, "method": method,
            "ranks": summary["ranks"], "steps": summary["steps"], "warmup_steps": warmup_steps,
            "ms_per_step": 1000 * statistics.median(timed) if timed else None,
            "accuracy": summary["accuracy"], "test_loss": summary["test_loss"],
            "wire_tx_bytes_per_step": None,
            "data_bytes_per_step": summary.get("sent_bytes_per_step"),
            "settings": ddp_options.settings_text(model)}
