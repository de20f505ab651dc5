"""scripts/ddp-compare: the models of `qccl train` trained by PyTorch
DistributedDataParallel with several communication hooks, and by `qccl train`
itself, on the emulated cluster; one table of ms/step and test accuracy.

Every (model, link rate, hook) is one mpirun job under scripts/cluster, and
so is every (model, link rate, codec) of `qccl train`. The report is
rewritten after each run, so a stopped comparison keeps what it measured."""

import os
import shutil
import subprocess
import sys
import tempfile

from bench_cli import exit_through_jobs_on_term
import ddp_options
import ddp_report
import ddp_runs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def environment_problem(args):
    """Why the runs cannot start here (a message), or None."""
    try:  # the data of every run, and the qccl: hooks
        from ddp_hooks import QcclMissing, import_qccl
        import_qccl()
    except QcclMissing as error:
        return str(error)
    codecs = args.train_codecs + [ddp_options.parse_hook(h)[1] for h in args.hooks
                                  if ddp_options.parse_hook(h)[0] in ddp_options.QCCL_HOOKS]
    if not codecs:
        return None
    if not os.access(args.qccl, os.X_OK):
        return f"'{args.qccl}' is not the qccl program: build it (scripts/build) or pass --qccl PATH"
    for codec in dict.fromkeys(codecs):  # each codec spec, before the long part starts
        check = subprocess.run([args.qccl, "bench", "allreduce", "--ranks", "2", "--codec", codec,
                                "--min-bytes", "1K", "--max-bytes", "1K", "--iters", "1",
                                "--warmup", "0"], capture_output=True, text=True)
        if check.returncode != 0:
            return f"codec '{codec}' does not run: {check.stderr.strip()}"
    return None


def planned_runs(args):
    """(repeat, model, rate, system, method) of every run, in order: every
    run once per round, so that repeats of one run are spread over the
    sitting (interleaved) rather than back to back."""
    for repeat in range(1, args.repeats + 1):
        for model in args.models:
            for rate in args.rates:
                for hook in args.hooks:
                    if ddp_options.hook_applies(model, hook):
                        yield repeat, model, rate, "PyTorch DDP", hook
                for codec in args.train_codecs:
                    yield repeat, model, rate, "qccl train", codec


def run_name(index, model, rate, system, method):
    slug = "".join(c if c.isalnum() else "_" for c in method)
    return f"{index:02d}-{model}-{rate}-{'ddp' if system == 'PyTorch DDP' else 'qccl'}-{slug}"


def measure(args, model, rate, system, method, name):
    """One run's row (RunFailed when it fails)."""
    base = os.path.join(args.output, name)
    if system == "qccl train":
        command = ddp_runs.qccl_train_command(args, model, method, base + ".json", base + ".jsonl")
        ddp_runs.run_on_cluster(ROOT, args.hosts, rate, command, base + ".log", args.timeout)
        return ddp_runs.qccl_train_row(base + ".json", base + ".jsonl", model, args.warmup_steps,
                                       args.qccl_embedding_optimizer)
    store = tempfile.mkdtemp(prefix="ddp-compare-")
    try:
        command = ddp_runs.ddp_command(ROOT, args, model, method, base + ".json",
                                       os.path.join(store, "store"))
        ddp_runs.run_on_cluster(ROOT, args.hosts, rate, command, base + ".log", args.timeout)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return ddp_runs.read_ddp_row(base + ".json")


def write_report(rows, directory):
    table = ddp_report.medians(rows)
    files = {"comparison.md": ddp_report.markdown(table), "runs.csv": ddp_report.csv_text(rows),
             "comparison.svg": ddp_report.svg(table)}
    for name, text in files.items():
        with open(os.path.join(directory, name + ".tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(directory, name + ".tmp"), os.path.join(directory, name))


def main(argv):
    exit_through_jobs_on_term()
    try:
        args = ddp_options.parse_arguments(argv, ROOT)
    except ddp_options.UsageError as error:
        print(f"ddp-compare: {error}\nrun 'scripts/ddp-compare --help' for the options",
              file=sys.stderr)
        return 2
    problem = environment_problem(args)
    if problem:
        print(f"ddp-compare: {problem}", file=sys.stderr)
        return 2
    os.makedirs(args.output, exist_ok=True)
    print(f"ddp-compare: writing to {args.output}", file=sys.stderr)
    rows = []
    for index, (repeat, model, rate, system, method) in enumerate(planned_runs(args), 1):
        name = run_name(index, model, rate, system, method)
        print(f"ddp-compare: {model}, {args.hosts} hosts at {rate}: {system} {method}",
              file=sys.stderr)
        try:
            row = measure(args, model, rate, system, method, name)
        except ddp_runs.ClusterUnavailable as error:
            print(f"ddp-compare: the emulated cluster does not run here: {error}", file=sys.stderr)
            return 3
        except ddp_runs.RunFailed as error:
            print(f"ddp-compare: {name} failed: {error}", file=sys.stderr)
            row = {"system": system, "method": method, "model": model, "error": str(error)}
        row.update(rate=rate, hosts=args.hosts, repeat=repeat)
        rows.append(row)
        write_report(rows, args.output)
    print(ddp_report.markdown(ddp_report.medians(rows)), end="")
    return 1 if any(r.get("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
