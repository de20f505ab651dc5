"""Checks scripts/mergecomp-table without a cluster or the qccl program: its
options, the commands it builds, the step times and predictions it reads
from logs and summaries, its arithmetic, and its report. The last class runs
the whole experiment against a stand-in qccl and a stand-in scripts/cluster
that write canned logs. Standard library only:
    python3 -m unittest discover -s tests/python -p mergecomp_table_test.py"""

import contextlib
import csv
import io
import json
import math
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import unittest
import xml.etree.ElementTree as ElementTree

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python", "benchmarks"))

import mergecomp_options  # noqa: E402
import mergecomp_report  # noqa: E402
import mergecomp_runs  # noqa: E402
import mergecomp_table  # noqa: E402
from mergecomp_options import UsageError, parse_arguments  # noqa: E402
from mergecomp_runs import RunFailed  # noqa: E402


def step_lines(seconds):
    return [{"event": "step", "step": i, "seconds": s} for i, s in enumerate(seconds)]


def plan_event(after_step, chosen_seconds=0.020, groups=(60, 42)):
    return {"event": "plan", "after_step": after_step,
            "bucket_policy": "groups:" + ",".join(map(str, groups)),
            "predictions": [{"name": "mergecomp", "groups": len(groups), "sizes": list(groups),
                             "seconds": chosen_seconds},
                            {"name": "layerwise", "groups": 102, "seconds": 0.050},
                            {"name": "one", "groups": 1, "seconds": 0.030},
                            {"name": "ddp", "groups": 3, "seconds": 0.040}]}


def mergecomp_log(after_step=4, steps=12):
    """Profiled steps at 0.5 s, the planning step at 9 s, then 0.02-0.03 s:
    the plan event is logged inside step AFTER_STEP, before its step line."""
    seconds = [0.5] * after_step + [9.0] + [0.020, 0.030] * steps
    lines = step_lines(seconds[:steps])
    lines.insert(after_step, plan_event(after_step))
    return lines


def row(codec, plan, measured, predicted=None, rate="1gbit", status="ok", **more):
    r = {"rate": rate, "codec": codec, "plan": plan, "groups": 2, "predicted_ms": predicted,
         "measured_ms": measured, "prediction_error":
         mergecomp_report.prediction_error(predicted, measured),
         "scaling_factor": mergecomp_report.scaling_factor(10.0, measured),
         "bucket_policy": "groups:60,42", "status": status, "timed_steps": 19, "error": None}
    r.update(more)
    return r


class Options(unittest.TestCase):
    def test_defaults_cover_the_baseline_and_the_compressors(self):
        a = parse_arguments([], ROOT)
        self.assertEqual(a.rates, ["1gbit", "10gbit"])
        self.assertEqual(a.plans, ["layerwise", "one", "ddp", "mergecomp"])
        self.assertEqual(len(a.codecs), 11)
        for codec in ("fp32", "fp16", "dgc", "topk", "randk", "ef-signsgd", "signsgd", "onebit",
                      "signum", "global-qsgd:bits=8", "qsgd:bits=8,bucket=512,norm=2"):
            self.assertIn(codec, a.codecs)
        self.assertEqual((a.model, a.hosts, a.batch, a.steps), ("resmlp", 4, 32, 25))
        self.assertEqual(a.qccl, os.path.join(ROOT, "build", "qccl"))
        self.assertEqual(mergecomp_options.skipped_steps(a), 6)

    def test_bad_options_name_themselves(self):
        for argv, words in ((["--rates", "1gb"], "rate '1gb'"), (["--plans", "ring"], "plan 'ring'"),
                            (["--hosts", "1"], "--hosts"), (["--codecs", " "], "--codecs"),
                            (["--steps", "6"], "no timed step"),
                            (["--plan-steps", "1"], "--plan-steps"),
                            (["--plans", "groups:51,0"], "plan 'groups:51,0'"),
                            (["--repeats", "0"], "--repeats"),
                            (["--nonsense"], "unrecognized")):
            with self.assertRaises(UsageError) as caught:
                parse_arguments(argv, ROOT)
            self.assertIn(words, str(caught.exception))

    def test_the_skip_is_the_larger_of_warmup_and_planning(self):
        a = parse_arguments(["--warmup-steps", "9", "--plan-steps", "3"], ROOT)
        self.assertEqual(mergecomp_options.skipped_steps(a), 9)
        a = parse_arguments(["--warmup-steps", "0", "--plan-steps", "7"], ROOT)
        self.assertEqual(mergecomp_options.skipped_steps(a), 8)


class Commands(unittest.TestCase):
    def dry_run(self, argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = mergecomp_table.main(argv + ["--dry-run", "--output", "/results/x"])
        self.assertEqual(status, 0)
        return [line.split() for line in out.getvalue().splitlines()]

    def test_dry_run_prints_every_run_and_writes_nothing(self):
        commands = self.dry_run(["--rates", "1gbit 10gbit", "--codecs", "fp32 signsgd"])
        self.assertEqual(len(commands), 1 + 2 * 2 * (1 + 5 * 4))  # 5 repeats of 4 plans
        commands = self.dry_run(["--rates", "1gbit", "--codecs", "fp32", "--repeats", "2"])
        self.assertEqual(len(commands), 1 + 1 + 2 * 4)
        self.assertFalse(os.path.exists("/results/x"))

    def test_the_single_rank_run_is_fp32_in_one_bucket_without_the_cluster(self):
        single = self.dry_run(["--codecs", "fp16"])[0]
        self.assertTrue(single[0].endswith("qccl"))
        self.assertEqual(single[1], "train")
        for option, value in (("--ranks", "1"), ("--codec", "fp32"), ("--buckets", "one"),
                              ("--threads", "1"), ("--batch", "32")):
            self.assertEqual(single[single.index(option) + 1], value)

    def test_cluster_runs_share_their_settings_and_differ_in_plan(self):
        commands = self.dry_run(["--rates", "10gbit", "--codecs", "signsgd", "--hosts", "8",
                                 "--steps", "30", "--plan-steps", "4", "--batch", "16",
                                 "--repeats", "1"])
        plan, trains = commands[1], commands[2:]
        for command in commands[1:]:
            self.assertTrue(command[0].endswith(os.path.join("scripts", "cluster")))
            self.assertEqual(command[1:5], ["--hosts", "8", "--rate", "10gbit"])
            after = command[command.index("--") + 1:]
            for option, value in (("--codec", "signsgd"), ("--max-steps-per-epoch", "30"),
                                  ("--batch", "16"), ("--lr", "0.001"), ("--momentum", "0"),
                                  ("--threads", "1"), ("--epochs", "1")):
                self.assertEqual(after[after.index(option) + 1], value, (option, command))
            self.assertIn("--quiet", after)
        self.assertEqual(plan[plan.index("--") + 2], "plan")
        self.assertIn("--summary-json", plan)
        self.assertEqual(plan[plan.index("--plan-steps") + 1], "4")
        buckets = [c[c.index("--buckets") + 1] for c in trains]
        self.assertEqual(buckets, ["layerwise", "one", "ddp", "mergecomp"])
        self.assertEqual(trains[3][trains[3].index("--plan-steps") + 1], "4")
        self.assertNotIn("--plan-steps", trains[0])
        for train in trains:
            self.assertTrue(train[train.index("--log") + 1].endswith(".jsonl"))

    def test_codec_settings_follow_the_baseline_comparison(self):
        self.assertEqual(mergecomp_options.codec_settings("signum"),
                         ["--lr", "0.001", "--momentum", "0"])
        self.assertEqual(mergecomp_options.codec_settings("dgc:ratio=0.01"), ["--momentum", "0"])
        self.assertEqual(mergecomp_options.codec_settings("global-qsgd:bits=8"), [])


class Logs(unittest.TestCase):
    def test_the_median_leaves_out_the_warm_up(self):
        lines = step_lines([5.0] * 6 + [0.010, 0.030, 0.020])
        self.assertEqual(mergecomp_runs.timed_seconds(lines, 6), [0.010, 0.030, 0.020])
        self.assertAlmostEqual(mergecomp_runs.median_ms(mergecomp_runs.timed_seconds(lines, 6)), 20.0)
        self.assertIsNone(mergecomp_runs.median_ms([]))

    def test_mergecomp_counts_only_steps_after_its_planning_step(self):
        lines = mergecomp_log(after_step=4)
        event = mergecomp_runs.plan_event(lines)
        self.assertEqual(event["after_step"], 4)
        self.assertEqual(len(mergecomp_runs.timed_seconds(lines, 2, after_step=4)), 7)
        self.assertNotIn(9.0, mergecomp_runs.timed_seconds(lines, 2, after_step=4))
        # a late plan: its step, not the warm-up, bounds what is left out
        late = mergecomp_log(after_step=8, steps=14)
        timed = mergecomp_runs.timed_seconds(late, 6, after_step=8)
        self.assertEqual(len(timed), 14 - 9)
        self.assertEqual(set(timed), {0.020, 0.030})

    def test_other_events_are_not_steps(self):
        lines = step_lines([1.0, 0.02, 0.02]) + [{"event": "epoch", "seconds": 99.0}]
        self.assertEqual(mergecomp_runs.timed_seconds(lines, 1), [0.02, 0.02])
        self.assertIsNone(mergecomp_runs.plan_event(lines))

    def test_missing_files_fail_the_run(self):
        with tempfile.TemporaryDirectory() as folder:
            with self.assertRaises(RunFailed):
                mergecomp_runs.read_log(os.path.join(folder, "none.jsonl"))
            with self.assertRaises(RunFailed):
                mergecomp_runs.read_summary(os.path.join(folder, "none.json"))
            empty = os.path.join(folder, "empty.json")
            with open(empty, "w") as f:
                f.write("[]")
            with self.assertRaises(RunFailed):
                mergecomp_runs.read_summary(empty)

    def test_tail_keeps_the_last_lines(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write("".join(f"line {i}\n" for i in range(100)))
        try:
            self.assertEqual(mergecomp_runs.tail(f.name, 2), "line 98\nline 99")
        finally:
            os.unlink(f.name)


class Rows(unittest.TestCase):
    def run_of(self, plan):
        return mergecomp_table.Run("train", "1gbit", "fp16", plan, 0, "n", [], "l", "s", "out.log")

    def test_mergecomp_takes_its_live_prediction_and_plan(self):
        r = mergecomp_table.train_row(self.run_of("mergecomp"), mergecomp_log(4, 12),
                                      {"buckets": 2, "bucket_policy": "groups:60,42"},
                                      [{"name": "mergecomp", "seconds": 1.0, "groups": 5}], 6, 10.0)
        self.assertEqual((r["groups"], r["bucket_policy"], r["timed_steps"]), (2, "groups:60,42", 6))
        self.assertAlmostEqual(r["predicted_ms"], 20.0)
        self.assertAlmostEqual(r["measured_ms"], 25.0)  # median of 0.02 and 0.03 alternating
        self.assertAlmostEqual(r["prediction_error"], -0.2)
        self.assertAlmostEqual(r["scaling_factor"], 0.4)

    def test_other_plans_take_qccl_plans_prediction(self):
        predictions = plan_event(4)["predictions"]
        r = mergecomp_table.train_row(self.run_of("ddp"), step_lines([1.0] * 6 + [0.050] * 3),
                                      {"buckets": 3, "bucket_policy": "ddp"}, predictions, 6, 10.0)
        self.assertAlmostEqual(r["predicted_ms"], 40.0)
        self.assertAlmostEqual(r["prediction_error"], -0.2)
        self.assertEqual(r["bucket_policy"], "ddp")
        r = mergecomp_table.train_row(self.run_of("one"), step_lines([1.0] * 6 + [0.050]),
                                      {"buckets": 1}, None, 6, None)
        self.assertIsNone(r["predicted_ms"])
        self.assertIsNone(r["scaling_factor"])

    def test_a_mergecomp_run_without_a_plan_or_timed_steps_fails(self):
        with self.assertRaises(RunFailed):
            mergecomp_table.train_row(self.run_of("mergecomp"), step_lines([0.1] * 20), {}, None,
                                      6, 10.0)
        with self.assertRaises(RunFailed):
            mergecomp_table.train_row(self.run_of("one"), step_lines([0.1] * 6), {}, None, 6, 10.0)


class Arithmetic(unittest.TestCase):
    def test_prediction_error_is_relative_to_the_measurement(self):
        self.assertAlmostEqual(mergecomp_report.prediction_error(12.0, 10.0), 0.2)
        self.assertAlmostEqual(mergecomp_report.prediction_error(5.0, 10.0), -0.5)
        self.assertIsNone(mergecomp_report.prediction_error(None, 10.0))

    def test_scaling_factor_is_the_single_rank_time_over_the_runs(self):
        # T_n/(n·T_1) with T_n = n·B/t_n, T_1 = B/t_1: t_1/t_n whatever n and B
        n, batch, t1, tn = 4, 32, 0.012, 0.030
        throughput_n, throughput_1 = n * batch / tn, batch / t1
        self.assertAlmostEqual(mergecomp_report.scaling_factor(1000 * t1, 1000 * tn),
                               throughput_n / (n * throughput_1))
        self.assertIsNone(mergecomp_report.scaling_factor(None, 30.0))

    def test_gain_is_the_other_plans_time_over_mergecomps(self):
        rows = [row("fp16", "layerwise", 60.0), row("fp16", "ddp", 30.0), row("fp16", "mergecomp", 20.0),
                row("fp16", "one", 0, status="failed"), row("fp32", "layerwise", 99.0)]
        self.assertAlmostEqual(mergecomp_report.gain(rows, ("fp16", "1gbit"), "layerwise"), 3.0)
        self.assertAlmostEqual(mergecomp_report.gain(rows, ("fp16", "1gbit"), "ddp"), 1.5)
        self.assertIsNone(mergecomp_report.gain(rows, ("fp16", "1gbit"), "one"))
        self.assertIsNone(mergecomp_report.gain(rows, ("fp32", "1gbit"), "layerwise"))
        self.assertIsNone(mergecomp_report.gain(rows, ("fp16", "10gbit"), "ddp"))

    def test_median_absolute_error_skips_runs_without_a_prediction(self):
        rows = [row("a", "one", 10.0, 12.0), row("a", "ddp", 10.0, 7.0), row("a", "layerwise", 10.0),
                row("a", "mergecomp", 10.0, 10.5)]
        self.assertEqual(mergecomp_report.median_absolute_error(rows)[1], 3)
        self.assertAlmostEqual(mergecomp_report.median_absolute_error(rows)[0], 0.2)
        self.assertEqual(mergecomp_report.median_absolute_error([]), (None, 0))


class Report(unittest.TestCase):
    SETTINGS = {"model": "resmlp", "hosts": 4, "batch": 32, "steps": 25, "warmup_steps": 5,
                "plan_steps": 5, "skipped_steps": 6, "rates": ["1gbit"],
                "codecs": ["fp16", "qsgd:bits=8,bucket=512,norm=2"],
                "plans": ["layerwise", "one", "ddp", "mergecomp"]}
    QSGD = "qsgd:bits=8,bucket=512,norm=2"

    def rows(self):
        return [row("fp16", "layerwise", 60.0, 50.0), row("fp16", "one", 25.0, 24.0),
                row("fp16", "ddp", 30.0, 33.0), row("fp16", "mergecomp", 20.0, 21.0),
                row(self.QSGD, "layerwise", 80.0, 70.0),
                {"rate": "1gbit", "codec": self.QSGD, "plan": "one", "status": "failed",
                 "error": "exit status 1\nboom", "log": "logs/x.log"}]

    def test_csv_has_one_line_per_run_and_quotes_the_specs(self):
        parsed = list(csv.DictReader(io.StringIO(mergecomp_report.csv_text(self.rows()))))
        self.assertEqual(len(parsed), 6)
        self.assertEqual(list(parsed[0])[:10], ["rate", "codec", "plan", "repeat", "groups",
                                                "predicted_ms", "measured_ms", "prediction_error",
                                                "scaling_factor", "bucket_policy"])
        self.assertEqual(parsed[4]["codec"], self.QSGD)
        self.assertEqual(float(parsed[0]["prediction_error"]), round(-10 / 60, 6))
        self.assertEqual(float(parsed[3]["scaling_factor"]), 0.5)
        self.assertEqual((parsed[5]["status"], parsed[5]["measured_ms"], parsed[5]["error"]),
                         ("failed", "", "exit status 1"))

    def test_table_has_measured_predicted_and_factor_per_plan_and_the_gains(self):
        text = mergecomp_report.markdown(self.rows(), [], self.SETTINGS,
                                         {"status": "ok", "measured_ms": 10.0})
        fp16 = next(line for line in text.splitlines() if line.startswith("| `fp16`"))
        cells = [c.strip() for c in fp16.strip("|").split("|")]
        self.assertEqual(cells[1:5], ["60.0 [60.0–60.0] (50.0), 0.17",
                                      "25.0 [25.0–25.0] (24.0), 0.40",
                                      "30.0 [30.0–30.0] (33.0), 0.33",
                                      "20.0 [20.0–20.0] (21.0), 0.50"])
        self.assertEqual(cells[5:], ["groups:60,42", "3.00×", "1.25×", "1.50×"])
        qsgd = next(line for line in text.splitlines() if line.startswith("| `qsgd"))
        self.assertIn("**failed**", qsgd)
        self.assertIn("not run", qsgd)
        self.assertIn("| gain over layer-wise | gain over one bucket | gain over DDP |", text)
        self.assertIn("Median |prediction error| over 5 runs: 10.0%.", text)
        self.assertIn("T_1): 10.0 ms/step", text)
        self.assertIn("t_1/t_n", text)
        self.assertIn("## Failed runs", text)
        self.assertIn("exit status 1 (output: logs/x.log)", text)

    def test_a_cell_is_the_median_and_range_of_its_repeats(self):
        rows = [row("fp16", "one", t, 24.0) for t in (25.0, 21.0, 40.0)]
        rows += [row("fp16", "mergecomp", t, 21.0) for t in (20.0, 30.0, 10.0)]
        rows.append({"rate": "1gbit", "codec": "fp16", "plan": "one", "status": "failed",
                     "error": "boom", "log": "x"})
        settings = dict(self.SETTINGS, plans=["one", "mergecomp"])
        text = mergecomp_report.markdown(rows, [], settings, {"status": "ok", "measured_ms": 10.0})
        fp16 = next(line for line in text.splitlines() if line.startswith("| `fp16`"))
        cells = [c.strip() for c in fp16.strip("|").split("|")]
        self.assertEqual(cells[1:3], ["25.0 [21.0–40.0] (24.0), 0.40, 1 failed",
                                      "20.0 [10.0–30.0] (21.0), 0.50"])
        self.assertEqual(cells[3:], ["groups:60,42 (×3)", "1.25×"])

    def test_groups_given_by_hand_are_a_plan_of_their_own(self):
        a = parse_arguments(["--plans", "mergecomp groups:51,51"], ROOT)
        self.assertEqual(a.plans, ["mergecomp", "groups:51,51"])
        rows = [row("fp16", "mergecomp", 20.0, 21.0), row("fp16", "groups:51,51", 21.0)]
        settings = dict(self.SETTINGS, plans=a.plans)
        text = mergecomp_report.markdown(rows, [], settings, {"status": "ok", "measured_ms": 10.0})
        self.assertIn("| `groups:51,51` | MergeComp's plan | gain over `groups:51,51` |", text)
        self.assertIn("21.0 [21.0–21.0] (–), 0.48 | groups:60,42 | 1.05× |", text)
        ElementTree.fromstring(mergecomp_report.svg(rows, "1gbit", ["fp16"], a.plans))

    def test_without_mergecomp_there_are_no_gains(self):
        settings = dict(self.SETTINGS, plans=["layerwise", "one"])
        text = mergecomp_report.markdown(self.rows(), [], settings, None)
        self.assertNotIn("gain over", text)
        self.assertIn("**failed**, so no scaling factors", text)

    def test_plot_has_a_bar_per_measured_run_and_marks_failures(self):
        svg = mergecomp_report.svg(self.rows(), "1gbit", self.SETTINGS["codecs"],
                                   self.SETTINGS["plans"])
        tree = ElementTree.fromstring(svg)
        namespace = "{http://www.w3.org/2000/svg}"
        bars = [r for r in tree.iter(namespace + "rect") if r.find(namespace + "title") is not None]
        self.assertEqual(len(bars), 5)
        heights = {b.find(namespace + "title").text: float(b.get("height")) for b in bars}
        self.assertAlmostEqual(heights["fp16, layer-wise: 60.0 ms"],
                               3 * heights["fp16, MergeComp: 20.0 ms"], places=0)
        self.assertEqual(sum(t.text == "×" for t in tree.iter(namespace + "text")), 3)

    def test_plot_keeps_long_codec_names_inside_the_image_and_apart(self):
        codecs = ["fp16", "global-qsgd:bits=8,dither=linear,norm=inf,sparse=off",
                  "dgc:ratio=0.01,momentum=0.9,clip=off,warmup=0,sample=0.01", "signsgd"]
        rows = [row(codec, plan, 10.0 + i) for i, codec in enumerate(codecs)
                for plan in self.SETTINGS["plans"]]
        tree = ElementTree.fromstring(mergecomp_report.svg(rows, "1gbit", codecs,
                                                           self.SETTINGS["plans"]))
        namespace = "{http://www.w3.org/2000/svg}"
        width, height = float(tree.get("width")), float(tree.get("height"))
        slanted = []  # each codec's name, as its box in a frame turned with the text
        for text in tree.iter(namespace + "text"):
            if not text.get("transform", "").startswith("rotate(-35"):
                continue
            x, y = float(text.get("x")), float(text.get("y"))
            w = mergecomp_report.text_width(text.text)
            c, s = math.cos(math.radians(35)), math.sin(math.radians(35))
            ascent, descent = 0.8 * mergecomp_report.FONT, 0.25 * mergecomp_report.FONT
            for along, up in ((0, ascent), (0, -descent), (-w, ascent), (-w, -descent)):
                corner = (x + along * c - up * s, y - along * s - up * c)
                self.assertTrue(0 <= corner[0] <= width and 0 <= corner[1] <= height,
                                f"{text.text} leaves the image at {corner}")
            u, v = x * c - y * s, x * s + y * c  # the anchor, turned back by 35 degrees
            slanted.append((text.text, u - w, u, v - ascent, v + descent))
        self.assertEqual([t[0] for t in slanted], codecs)
        for a, b in zip(slanted, slanted[1:]):
            apart = a[2] <= b[1] or b[2] <= a[1] or a[4] <= b[3] or b[4] <= a[3]
            self.assertTrue(apart, f"{a[0]} and {b[0]} overlap")

    @unittest.skipUnless(shutil.which("rsvg-convert"),
                         "rsvg-convert is not installed (Debian's librsvg2-bin)")
    def test_plot_renders_to_png_at_its_size(self):
        svg = mergecomp_report.svg(self.rows(), "1gbit", self.SETTINGS["codecs"],
                                   self.SETTINGS["plans"])
        root = ElementTree.fromstring(svg)
        png = subprocess.run(["rsvg-convert", "--format=png"], input=svg.encode(),
                             capture_output=True, check=True).stdout
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(struct.unpack(">II", png[16:24]),
                         (int(root.get("width")), int(root.get("height"))))

    def test_ticks_are_round_and_reach_the_top(self):
        self.assertEqual(mergecomp_report._ticks(83.0), [0, 20, 40, 60, 80, 100])
        self.assertEqual(mergecomp_report._ticks(4.2)[-1], 5)


# A stand-in qccl: `plan` writes predictions, `train` a log and a summary
# with made-up step times (one rank 10 ms; layer-wise 40, one 30, DDP 35 and
# MergeComp 25 ms after planning); codec "broken" fails.
FAKE_QCCL = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, sys
    argv = sys.argv[1:]
    value = lambda option, default=None: argv[argv.index(option) + 1] if option in argv else default
    if "--help" in argv:
        sys.exit(0)
    if value("--codec") == "broken":
        print("qccl: the codec broke", file=sys.stderr)
        sys.exit(1)
    predictions = [{"name": "mergecomp", "groups": 2, "sizes": [60, 42], "seconds": 0.024},
                   {"name": "layerwise", "groups": 102, "seconds": 0.044},
                   {"name": "one", "groups": 1, "seconds": 0.027},
                   {"name": "ddp", "groups": 3, "seconds": 0.035}]
    plan = {"predictions": predictions, "best_seconds_by_groups": [0.027, 0.024]}
    if argv[0] == "plan":
        with open(value("--summary-json"), "w") as f:
            json.dump([{"codec": value("--codec"), "bucket_policy": "groups:60,42", "plan": plan}], f)
        sys.exit(0)
    buckets = value("--buckets")
    ms = {"layerwise": 40, "one": 30, "ddp": 35, "mergecomp": 25}[buckets]
    if value("--ranks") == "1":
        ms = 10
    steps = int(value("--max-steps-per-epoch"))
    with open(value("--log"), "w") as log:
        for step in range(steps):
            if buckets == "mergecomp" and step == 4:
                log.write(json.dumps(dict(plan, event="plan", after_step=4,
                                          bucket_policy="groups:60,42")) + "\\n")
            seconds = 1.0 if step < 5 else ms / 1000
            log.write(json.dumps({"event": "step", "step": step, "seconds": seconds}) + "\\n")
    with open(value("--summary-json"), "w") as f:
        policy = "groups:60,42" if buckets == "mergecomp" else buckets
        json.dump([{"buckets": {"layerwise": 102, "one": 1, "ddp": 3}.get(buckets, 2),
                    "bucket_policy": policy}], f)
    """)
FAKE_CLUSTER = "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n"


class WholeExperiment(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = self.folder.name
        os.makedirs(os.path.join(self.root, "scripts"))
        for path, text in (("scripts/cluster", FAKE_CLUSTER), ("qccl", FAKE_QCCL)):
            full = os.path.join(self.root, path)
            with open(full, "w") as f:
                f.write(text)
            os.chmod(full, os.stat(full).st_mode | stat.S_IEXEC)
        self.saved_root, mergecomp_table.ROOT = mergecomp_table.ROOT, self.root

    def tearDown(self):
        mergecomp_table.ROOT = self.saved_root
        self.folder.cleanup()

    def test_every_output_is_written_and_a_failed_codec_is_marked(self):
        output = os.path.join(self.root, "out")
        args = parse_arguments(["--codecs", "fp16", "--output", output], ROOT)
        for run in list(mergecomp_table.planned_runs(args))[1:]:  # never the real scripts/cluster
            self.assertEqual(run.command[0], os.path.join(self.root, "scripts", "cluster"))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = mergecomp_table.main(["--rates", "1gbit", "--codecs", "fp16 broken",
                                           "--steps", "10", "--qccl", os.path.join(self.root, "qccl"),
                                           "--repeats", "1", "--output", output])
        self.assertEqual(status, 1)  # a run failed
        with open(os.path.join(output, "results.json")) as f:
            results = json.load(f)
        self.assertAlmostEqual(results["single_rank"]["measured_ms"], 10.0)
        measured = {(r["codec"], r["plan"]): r for r in results["runs"]}
        self.assertAlmostEqual(measured["fp16", "mergecomp"]["measured_ms"], 25.0)
        self.assertAlmostEqual(measured["fp16", "mergecomp"]["predicted_ms"], 24.0)
        self.assertAlmostEqual(measured["fp16", "layerwise"]["predicted_ms"], 44.0)
        self.assertAlmostEqual(measured["fp16", "one"]["scaling_factor"], 1 / 3)
        self.assertEqual(measured["fp16", "mergecomp"]["timed_steps"], 4)
        self.assertEqual(measured["broken", "ddp"]["status"], "failed")
        self.assertEqual(results["plan_runs"][1]["status"], "failed")
        with open(measured["broken", "ddp"]["log"]) as f:
            self.assertIn("the codec broke", f.read())
        with open(os.path.join(output, "table.md")) as f:
            table = f.read()
        self.assertIn("| `fp16` | 40.0 [40.0–40.0] (44.0), 0.25 |", table)
        self.assertIn("1.60×", table)  # 40 ms layer-wise over 25 ms MergeComp
        with open(os.path.join(output, "runs.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 1 + 8)
        ElementTree.parse(os.path.join(output, "plot-1gbit.svg"))


if __name__ == "__main__":
    unittest.main(verbosity=1)
