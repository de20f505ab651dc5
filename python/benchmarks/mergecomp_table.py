"""scripts/mergecomp-table: MergeComp's experiment on qccl. For every link
rate and codec, `qccl plan` predicts the step time of four bucket plans
(layer-wise, one bucket, DDP's size caps, MergeComp's search), then
`qccl train` runs each plan on the emulated cluster and its median step
time is measured; one single-rank run gives T_1 for the scaling factors.

Runs go one after another; the report is rewritten after each, so a
stopped experiment keeps what it measured. Details: docs/mergecomp.md."""

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass

from bench_cli import exit_through_jobs_on_term
import mergecomp_options
import mergecomp_report
import mergecomp_runs
from mergecomp_runs import RunFailed

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@dataclass
class Run:
    kind: str  # "single-rank", "plan" or "train"
    rate: str  # the link rate, or "single rank"
    codec: str
    plan: str  # the bucket plan, or "qccl plan"
    repeat: int  # which of the cell's --repeats runs (0 for the others)
    name: str
    command: list
    log: str  # `qccl train --log` (train, single-rank)
    summary: str
    output: str  # the run's stdout and stderr


def planned_runs(args, root=None):
    """Every run, in order: T_1's, then per rate and codec `qccl plan`
    and one `qccl train` per plan."""
    root = root or ROOT
    runs_dir, logs_dir = os.path.join(args.output, "runs"), os.path.join(args.output, "logs")

    def make(index, kind, rate, codec, plan, build, repeat=0):
        slug = "".join(c if c.isalnum() else "_" for c in f"{rate}-{codec}-{plan}-{repeat}")
        name = f"{index:03d}-{slug}"
        log, summary = os.path.join(runs_dir, name + ".jsonl"), os.path.join(runs_dir, name + ".json")
        return Run(kind, rate, codec, plan, repeat, name, build(log, summary), log, summary,
                   os.path.join(logs_dir, name + ".log"))

    yield make(0, "single-rank", "single rank", "fp32", "one",
               lambda log, summary: mergecomp_runs.single_rank_command(args, log, summary))
    index = 1
    for rate in args.rates:
        cluster = (lambda command, rate=rate:
                   mergecomp_runs.on_cluster(root, args.hosts, rate, command))
        for codec in args.codecs:
            yield make(index, "plan", rate, codec, "qccl plan", lambda log, summary, codec=codec:
                       cluster(mergecomp_runs.plan_command(args, codec, summary)))
            index += 1
            # Repeats go round the plans, so that a drift in the machine's
            # load falls on every plan alike.
            for repeat in range(args.repeats):
                for plan in args.plans:
                    yield make(index, "train", rate, codec, plan,
                               lambda log, summary, codec=codec, plan=plan:
                               cluster(mergecomp_runs.train_command(args, codec, plan, log,
                                                                    summary)), repeat)
                    index += 1


def train_row(run, lines, summary, plan_predictions, skip, single_rank_ms):
    """The row of a finished `qccl train` run. MergeComp's prediction is the
    one its live scheduler logged; the other plans' come from `qccl plan`."""
    after_step = None
    if run.plan == "mergecomp":
        event = mergecomp_runs.plan_event(lines)
        if event is None:
            raise RunFailed("the mergecomp run logged no plan event")
        prediction = (mergecomp_runs.prediction_named(event["predictions"], "mergecomp")
                      or event["predictions"][0])
        after_step, policy = event["after_step"], event["bucket_policy"]
    else:
        prediction = mergecomp_runs.prediction_named(plan_predictions or [], run.plan)
        policy = summary.get("bucket_policy")
    seconds = mergecomp_runs.timed_seconds(lines, skip, after_step)
    if not seconds:
        raise RunFailed(f"no timed step: the log has no step after the first {skip}")
    measured = mergecomp_runs.median_ms(seconds)
    predicted = 1000 * prediction["seconds"] if prediction else None
    groups = summary.get("buckets") or (prediction or {}).get("groups")
    return {"rate": run.rate, "codec": run.codec, "plan": run.plan, "repeat": run.repeat,
            "groups": groups,
            "predicted_ms": predicted, "measured_ms": measured,
            "prediction_error": mergecomp_report.prediction_error(predicted, measured),
            "scaling_factor": mergecomp_report.scaling_factor(single_rank_ms, measured),
            "bucket_policy": policy, "status": "ok", "timed_steps": len(seconds),
            "error": None, "log": run.output}


class Experiment:
    """The runs' results so far, and the report written from them."""

    def __init__(self, args):
        self.args, self.skip = args, mergecomp_options.skipped_steps(args)
        self.reference, self.plan_runs, self.rows = None, [], []
        self.predictions = {}  # (rate, codec) -> `qccl plan`'s predictions

    def measure(self, run):
        """Runs RUN and records its result; RunFailed is recorded, not raised."""
        try:
            mergecomp_runs.run(run.command, run.output, self.args.timeout)
            if run.kind == "single-rank":
                self.reference = self._single_rank(run)
            else:
                self._record(run)
        except RunFailed as error:
            failure = {"rate": run.rate, "codec": run.codec, "plan": run.plan,
                       "repeat": run.repeat, "status": "failed", "error": str(error),
                       "log": run.output}
            if run.kind == "single-rank":
                self.reference = failure
            elif run.kind == "plan":
                self.plan_runs.append(failure)
            else:
                self.rows.append(failure)
            return False
        return True

    def _single_rank(self, run):
        seconds = mergecomp_runs.timed_seconds(mergecomp_runs.read_log(run.log), self.skip)
        if not seconds:
            raise RunFailed(f"no timed step: the log has no step after the first {self.skip}")
        return {"rate": run.rate, "codec": run.codec, "plan": run.plan, "status": "ok",
                "measured_ms": mergecomp_runs.median_ms(seconds), "timed_steps": len(seconds),
                "log": run.output}

    def _record(self, run):
        summary = mergecomp_runs.read_summary(run.summary)
        if run.kind == "plan":
            predictions = (summary.get("plan") or {}).get("predictions")
            if not predictions:
                raise RunFailed(f"`qccl plan` wrote no predictions in '{run.summary}'")
            self.predictions[(run.rate, run.codec)] = predictions
            self.plan_runs.append({"rate": run.rate, "codec": run.codec, "plan": run.plan,
                                   "status": "ok", "bucket_policy": summary.get("bucket_policy"),
                                   "plan_report": summary["plan"], "log": run.output})
            return
        single_rank_ms = (self.reference or {}).get("measured_ms")
        self.rows.append(train_row(run, mergecomp_runs.read_log(run.log), summary,
                                   self.predictions.get((run.rate, run.codec)), self.skip,
                                   single_rank_ms))

    def settings(self):
        a = self.args
        return {"model": a.model, "hosts": a.hosts, "batch": a.batch, "steps": a.steps,
                "warmup_steps": a.warmup_steps, "plan_steps": a.plan_steps,
                "skipped_steps": self.skip, "repeats": a.repeats, "rates": a.rates,
                "codecs": a.codecs,
                "plans": a.plans, "qccl": a.qccl}

    def write_report(self):
        settings, out = self.settings(), self.args.output
        files = {"runs.csv": mergecomp_report.csv_text(self.rows),
                 "table.md": mergecomp_report.markdown(self.rows, self.plan_runs, settings,
                                                       self.reference),
                 "results.json": mergecomp_report.results_json(settings, self.reference,
                                                               self.rows, self.plan_runs)}
        for rate in self.args.rates:
            files[f"plot-{rate}.svg"] = mergecomp_report.svg(self.rows, rate, self.args.codecs,
                                                             self.args.plans)
        for name, text in files.items():  # each file whole or not at all
            with open(os.path.join(out, name + ".tmp"), "w") as f:
                f.write(text)
            os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))


def environment_problem(args):
    """Why the runs cannot start here (a message), or None."""
    if not os.access(args.qccl, os.X_OK):
        return f"'{args.qccl}' is not the qccl program: build it (scripts/build) or pass --qccl PATH"
    check = subprocess.run([args.qccl, "plan", "--help"], capture_output=True, text=True)
    if check.returncode != 0:
        return f"'{args.qccl}' has no `plan` command: rebuild it"
    return None


def main(argv):
    exit_through_jobs_on_term()
    try:
        args = mergecomp_options.parse_arguments(argv, ROOT)
    except mergecomp_options.UsageError as error:
        print(f"mergecomp-table: {error}\nrun 'scripts/mergecomp-table --help' for the options",
              file=sys.stderr)
        return 2
    args.output = os.path.abspath(args.output)
    runs = list(planned_runs(args))
    if args.dry_run:
        for run in runs:
            print(shlex.join(run.command))
        return 0
    problem = environment_problem(args)
    if problem:
        print(f"mergecomp-table: {problem}", file=sys.stderr)
        return 2
    for folder in ("runs", "logs"):
        os.makedirs(os.path.join(args.output, folder), exist_ok=True)
    print(f"mergecomp-table: {len(runs)} runs, writing to {args.output}", file=sys.stderr)
    experiment = Experiment(args)
    for number, run in enumerate(runs, 1):
        print(f"mergecomp-table: [{number}/{len(runs)}] {run.rate}, {run.codec}: {run.plan}",
              file=sys.stderr)
        try:
            if not experiment.measure(run):
                print(f"mergecomp-table: {run.name} failed; its output: {run.output}",
                      file=sys.stderr)
        except mergecomp_runs.ClusterUnavailable as error:
            print(f"mergecomp-table: the emulated cluster does not run here: {error}",
                  file=sys.stderr)
            return 3
        experiment.write_report()
    with open(os.path.join(args.output, "table.md")) as f:
        print(f.read(), end="")
    failed = [r for r in [experiment.reference] + experiment.plan_runs + experiment.rows
              if r.get("status") != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
