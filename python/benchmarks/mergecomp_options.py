"""The command line of scripts/mergecomp-table and the training settings of
each codec. Standard library only: the checks run anywhere."""

import datetime
import os
import re

from bench_cli import CheckedParser, UsageError, whole_number

PLANS = ("layerwise", "one", "ddp", "mergecomp")

# fp32 is the baseline; the rest are MergeComp's nine schemes (§5: fp16 and
# eight compressors, QSGD at 8 bits) plus Global-QSGD at 8 bits. The specs
# are the defaults of docs/baselines.md and docs/codecs.md.
DEFAULT_CODECS = ("fp32 fp16 dgc topk randk ef-signsgd qsgd:bits=8,bucket=512,norm=2 signsgd "
                  "onebit signum global-qsgd:bits=8")
DEFAULT_RATES = "1gbit 10gbit"
SEED = 1


def codec_settings(codec):
    """Optimizer options of CODEC, as in docs/baselines.md's comparison:
    the votes take ±1 steps (small lr, no momentum); DGC and SigNUM keep a
    momentum of their own, so the optimizer runs without one."""
    name = codec.split(":", 1)[0]
    if name in ("signsgd", "signum"):
        return ["--lr", "0.001", "--momentum", "0"]
    if name == "dgc":
        return ["--momentum", "0"]
    return []


def skipped_steps(args):
    """Steps left out of every run's median: the warm-up, and MergeComp's
    profiled steps plus the first step on its new buckets, for every plan
    alike so that the plans are timed over the same steps."""
    return max(args.warmup_steps, args.plan_steps + 1)


def _parser():
    p = CheckedParser(
        prog="scripts/mergecomp-table",
        description="Measured and predicted step time of each bucket plan (layer-wise, one "
                    "bucket, DDP, MergeComp) for each codec and link rate on the emulated "
                    "cluster, with scaling factors against one rank.")
    p.add_argument("--rates", default=DEFAULT_RATES, help=f"link rates (default '{DEFAULT_RATES}')")
    p.add_argument("--codecs", default=DEFAULT_CODECS, help="codec specs (default: fp32, fp16, "
                   "the nine compressors and global-qsgd:bits=8)")
    p.add_argument("--plans", default=" ".join(PLANS), help=f"plans: {', '.join(PLANS)} or "
                   f"groups:N1,N2,.. given by hand (default '{' '.join(PLANS)}')")
    p.add_argument("--model", default="resmlp", help="qccl train's model (default resmlp)")
    p.add_argument("--hosts", default="4", help="emulated hosts, one rank each (default 4)")
    p.add_argument("--batch", default="32", help="samples per rank per step (default 32)")
    p.add_argument("--steps", default="25", help="steps per run, --max-steps-per-epoch (default 25)")
    p.add_argument("--warmup-steps", default="5", help="first steps not timed (default 5)")
    p.add_argument("--plan-steps", default="5", help="steps MergeComp profiles (default 5)")
    p.add_argument("--repeats", default="5", help="training runs per cell; the table gives "
                   "their median and range (default 5)")
    p.add_argument("--qccl", default=None, help="the qccl program (default build/qccl)")
    p.add_argument("--timeout", default="900", help="seconds per run before it is stopped (default 900)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--output", default=None, help="results folder (default mergecomp-table-DATE)")
    return p


def parse_arguments(argv, root):
    """The checked options; UsageError names the first bad one."""
    a = _parser().parse_args(argv)
    a.rates, a.codecs, a.plans = a.rates.split(), a.codecs.split(), a.plans.split()
    for rate in a.rates:
        if not re.fullmatch(r"[1-9][0-9]*(kbit|mbit|gbit)|unshaped", rate):
            raise UsageError(f"rate '{rate}': use e.g. 1gbit, 10gbit or unshaped")
    for plan in a.plans:
        if plan not in PLANS and not re.fullmatch(r"groups:[1-9][0-9]*(,[1-9][0-9]*)*", plan):
            raise UsageError(f"plan '{plan}': use {', '.join(PLANS)} or groups:N1,N2,.. "
                             "(e.g. groups:51,51, MergeComp Table 3's even split)")
    for name, values in (("--rates", a.rates), ("--codecs", a.codecs), ("--plans", a.plans)):
        if not values:
            raise UsageError(f"{name} is empty")
    a.hosts = whole_number(a.hosts, "--hosts", 2, 64)
    a.batch = whole_number(a.batch, "--batch", 1)
    a.steps = whole_number(a.steps, "--steps", 1)
    a.warmup_steps = whole_number(a.warmup_steps, "--warmup-steps", 0)
    a.plan_steps = whole_number(a.plan_steps, "--plan-steps", 2)
    a.repeats = whole_number(a.repeats, "--repeats", 1)
    a.timeout = whole_number(a.timeout, "--timeout", 1)
    if a.steps <= skipped_steps(a):
        raise UsageError(f"--steps {a.steps} leaves no timed step: every run skips "
                         f"{skipped_steps(a)} (the larger of --warmup-steps and --plan-steps + 1)")
    a.qccl = os.path.abspath(a.qccl) if a.qccl else os.path.join(root, "build", "qccl")
    a.output = a.output or "mergecomp-table-" + datetime.datetime.now().strftime("%Y-%m-%d-%H%M")
    return a
