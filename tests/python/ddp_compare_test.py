"""Checks scripts/ddp-compare without training anything: its options and
their errors, the commands of both systems (the same settings), the report
on canned rows, and the click data it trains on (qccl.data) against the
values qccl's C++ generator printed.
Run with Debian's python3, which has python3-torch."""

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree
from contextlib import redirect_stderr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python", "benchmarks"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ddp_compare  # noqa: E402
import ddp_data  # noqa: E402
import ddp_models  # noqa: E402
import ddp_options  # noqa: E402
import ddp_report  # noqa: E402
import ddp_runs  # noqa: E402
import ddp_worker  # noqa: E402
from ddp_options import UsageError, parse_arguments, parse_hook  # noqa: E402


def row(system, method, ms, accuracy, model="recommender", rate="1gbit", **more):
    r = {"system": system, "method": method, "model": model, "rate": rate, "hosts": 4,
         "settings": "adam lr 0.003, batch 256/rank", "steps": 30, "warmup_steps": 5,
         "ms_per_step": ms, "accuracy": accuracy, "test_loss": 0.68,
         "data_bytes_per_step": None, "wire_tx_bytes_per_step": None}
    r.update(more)
    return r


class Options(unittest.TestCase):
    def test_hooks_parse_to_their_kind_and_parameter(self):
        self.assertEqual(parse_hook("none"), ("none", None))
        self.assertEqual(parse_hook("fp16"), ("fp16", None))
        self.assertEqual(parse_hook("sparse"), ("sparse", None))
        self.assertEqual(parse_hook("sparse-adam"), ("sparse-adam", None))
        self.assertEqual(parse_hook("powersgd:2"), ("powersgd", 2))
        self.assertEqual(parse_hook("qccl:global-qsgd:bits=8"), ("qccl", "global-qsgd:bits=8"))
        self.assertEqual(parse_hook("qccl-pg:intsgd"), ("qccl-pg", "intsgd"))

    def test_bad_hooks_name_the_hook_and_the_valid_forms(self):
        for spec, words in (("powersgd", "rank"), ("powersgd:0", "rank"), ("powersgd:x", "rank"),
                            ("qccl:", "codec spec"), ("qccl-pg:", "codec spec"),
                            ("fp8", "none, fp16")):
            with self.assertRaises(UsageError) as caught:
                parse_hook(spec)
            self.assertIn(spec, str(caught.exception))
            self.assertIn(words, str(caught.exception))

    def test_bad_options_are_refused(self):
        for argv, words in ((["--models", "mlp"], "model 'mlp'"),
                            (["--rates", "1gb"], "rate '1gb'"),
                            (["--hosts", "1"], "--hosts"), (["--hosts", "65"], "--hosts"),
                            (["--cnn-epochs", "0"], "--cnn-epochs"),
                            (["--recommender-steps", "5", "--warmup-steps", "5"], "no timed step"),
                            (["--hooks", "none powersgd"], "powersgd"),
                            (["--repeats", "0"], "--repeats"),
                            (["--recommender-fields", "0"], "--recommender-fields"),
                            (["--recommender-fields", "65"], "--recommender-fields"),
                            (["--recommender-values", "1"], "--recommender-values"),
                            (["--qccl-embedding-optimizer", "sparse-adam"],
                             "--qccl-embedding-optimizer 'sparse-adam'"),
                            (["--unknown"], "unrecognized")):
            with self.assertRaises(UsageError) as caught:
                parse_arguments(argv, ROOT)
            self.assertIn(words, str(caught.exception))

    def test_qccl_train_runs_fp32_and_the_qccl_hooks_codecs_by_default(self):
        a = parse_arguments(["--hooks", "none qccl:intsgd qccl-pg:fp32 qccl:intsgd"], ROOT)
        self.assertEqual(a.train_codecs, ["fp32", "intsgd"])
        self.assertEqual(parse_arguments(["--no-qccl-train"], ROOT).train_codecs, [])
        self.assertEqual(parse_arguments(["--train-codecs", "fp16"], ROOT).train_codecs, ["fp16"])

    def test_repeats_interleave_every_run_round_by_round(self):
        a = parse_arguments(["--models", "recommender", "--rates", "1gbit", "--hooks", "none",
                             "--train-codecs", "fp32 fp16", "--repeats", "2"], ROOT)
        runs = [(rep, system, method) for rep, _, _, system, method in ddp_compare.planned_runs(a)]
        self.assertEqual(runs, [(1, "PyTorch DDP", "none"), (1, "qccl train", "fp32"),
                                (1, "qccl train", "fp16"), (2, "PyTorch DDP", "none"),
                                (2, "qccl train", "fp32"), (2, "qccl train", "fp16")])

    def test_the_sparse_hooks_run_on_the_recommender_only(self):
        a = parse_arguments(["--models", "cnn recommender", "--rates", "1gbit",
                             "--hooks", "none sparse sparse-adam", "--no-qccl-train"], ROOT)
        runs = [(model, method) for _, model, _, _, method in ddp_compare.planned_runs(a)]
        self.assertEqual(runs, [("cnn", "none"), ("recommender", "none"),
                                ("recommender", "sparse"), ("recommender", "sparse-adam")])

    def test_sparse_adam_updates_only_the_touched_rows_of_the_tables(self):
        torch.manual_seed(4)
        net = ddp_models.Recommender(3, 50, sparse=True)
        optimizers = ddp_worker.make_optimizers("recommender", net, "sparse-adam")
        self.assertEqual([type(o).__name__ for o in optimizers], ["Adam", "SparseAdam"])
        self.assertEqual(sum(len(g["params"]) for o in optimizers for g in o.param_groups),
                         len(list(net.parameters())))
        before = [p.detach().clone() for p in net.parameters()]
        features = torch.randint(0, 25, (8, 3))  # rows 25..49 untouched
        net.loss(net(features), torch.rand(8).round()).backward()
        for optimizer in optimizers:
            optimizer.step()
        table = net.tables[0].weight.detach()
        touched = sorted(set(features[:, 0].tolist()))
        self.assertTrue(torch.equal(table[25:], before[0][25:]))
        self.assertFalse(torch.equal(table[touched], before[0][touched]))
        self.assertEqual([type(o).__name__ for o in
                          ddp_worker.make_optimizers("recommender", net, "sparse")], ["Adam"])

    def test_the_sparse_recommender_gives_the_dense_ones_gradients_as_rows(self):
        torch.manual_seed(3)
        dense = ddp_models.Recommender(3, 50)
        sparse = ddp_models.Recommender(3, 50, sparse=True)
        sparse.load_state_dict(dense.state_dict())
        features = torch.randint(0, 50, (8, 3))
        target = torch.rand(8).round()
        for net in (dense, sparse):
            net.loss(net(features), target).backward()
        self.assertTrue(sparse.tables[0].weight.grad.is_sparse)
        ddp_worker.densify_sparse_gradients(sparse)
        for a, b in zip(dense.parameters(), sparse.parameters()):
            self.assertFalse(b.grad.is_sparse)
            self.assertTrue(torch.equal(a.grad, b.grad))

    def test_bad_options_exit_2_before_any_run(self):
        with tempfile.TemporaryDirectory() as directory:
            output = os.path.join(directory, "out")
            with redirect_stderr(io.StringIO()) as err:
                status = ddp_compare.main(["--rates", "fast", "--output", output])
            self.assertEqual(status, 2)
            self.assertIn("rate 'fast'", err.getvalue())
            self.assertFalse(os.path.exists(output))


class Commands(unittest.TestCase):
    def test_both_systems_train_with_the_same_settings(self):
        a = parse_arguments(["--recommender-steps", "30", "--qccl", "/q"], ROOT)
        for model in ("cnn", "recommender"):
            s = ddp_options.model_settings(model)
            qccl = ddp_runs.qccl_train_command(a, model, "fp32", "s.json", "l.jsonl")
            value = (lambda option: qccl[qccl.index(option) + 1])
            self.assertEqual(value("--batch"), str(s["batch"]))
            self.assertEqual(value("--lr"), str(s["lr"]))
            self.assertEqual(value("--optimizer"), s["optimizer"])
            self.assertEqual(value("--seed"), str(ddp_options.SEED))
            self.assertEqual(value("--threads"), "1")
            ddp = ddp_runs.ddp_command(ROOT, a, model, "fp16", "r.json", "store")
            self.assertEqual(ddp[ddp.index("--hook") + 1], "fp16")
            self.assertEqual(ddp[ddp.index("--ifname") + 1], "eth0")
        self.assertEqual(ddp_options.model_settings("cnn")["momentum"], 0.9)
        self.assertEqual(value("--max-steps-per-epoch"), "30")
        self.assertEqual(ddp[ddp.index("--max-steps") + 1], "30")
        self.assertNotIn("--embedding-optimizer", qccl)

    def test_the_recommenders_shape_and_tables_optimizer_reach_both_systems(self):
        a = parse_arguments(["--recommender-fields", "26", "--recommender-values", "5000",
                             "--qccl-embedding-optimizer", "lazy-adam", "--qccl", "/q"], ROOT)
        qccl = ddp_runs.qccl_train_command(a, "recommender", "fp32", "s.json", "l.jsonl")
        ddp = ddp_runs.ddp_command(ROOT, a, "recommender", "sparse-adam", "r.json", "store")
        for command, fields, values in ((qccl, "--fields", "--values-per-field"),
                                        (ddp, "--fields", "--values-per-field")):
            self.assertEqual(command[command.index(fields) + 1], "26")
            self.assertEqual(command[command.index(values) + 1], "5000")
        self.assertEqual(qccl[qccl.index("--embedding-optimizer") + 1], "lazy-adam")
        worker = ddp_worker.parse_arguments(ddp[ddp.index("--model"):])
        self.assertEqual((worker.fields, worker.values_per_field), (26, 5000))
        cnn = ddp_runs.qccl_train_command(a, "cnn", "fp32", "s.json", "l.jsonl")
        self.assertNotIn("--embedding-optimizer", cnn)

    def test_qccl_train_ms_per_step_is_the_median_after_the_warm_up(self):
        with tempfile.TemporaryDirectory() as directory:
            summary, log = os.path.join(directory, "s.json"), os.path.join(directory, "l.jsonl")
            with open(summary, "w") as f:
                json.dump([{"codec": "fp32", "ranks": 4, "steps": 6, "accuracy": 0.6,
                            "test_loss": 0.5, "sent_bytes_per_step": 1000.0}], f)
            with open(log, "w") as f:
                for seconds in (9.0, 9.0, 0.3, 0.1, 0.2, 0.4):
                    f.write(json.dumps({"event": "step", "seconds": seconds}) + "\n")
                f.write(json.dumps({"event": "epoch", "seconds": 50.0}) + "\n")
            r = ddp_runs.qccl_train_row(summary, log, "recommender", 2)
            lazy = ddp_runs.qccl_train_row(summary, log, "recommender", 2, "lazy-adam")
        self.assertAlmostEqual(r["ms_per_step"], 250.0)
        self.assertEqual((r["system"], r["method"], r["accuracy"]), ("qccl train", "fp32", 0.6))
        self.assertEqual(r["data_bytes_per_step"], 1000.0)
        self.assertEqual(lazy["method"], "fp32 + lazy-adam")  # the tables' optimizer shows


class Report(unittest.TestCase):
    ROWS = [row("PyTorch DDP", "none", 800.0, 0.60, wire_tx_bytes_per_step=80 * 2**20),
            row("PyTorch DDP", "powersgd:1", 200.0, 0.58),
            row("qccl train", "global-qsgd:bits=8", 400.0, 0.61, data_bytes_per_step=3 * 2**20),
            {"system": "PyTorch DDP", "method": "qccl:intsgd", "model": "recommender",
             "rate": "1gbit", "hosts": 4, "error": "exit status 1; see x.log"},
            row("qccl train", "fp32", 900.0, 0.55, model="cnn", rate="100mbit")]

    def test_one_table_per_model_and_rate_with_speed_ups_against_ddp_allreduce(self):
        md = ddp_report.markdown(self.ROWS)
        self.assertIn("### recommender, 4 hosts at 1gbit", md)
        self.assertIn("### cnn, 4 hosts at 100mbit", md)
        self.assertIn("speed-up vs PyTorch DDP none", md)
        self.assertIn("| PyTorch DDP | powersgd:1 | adam lr 0.003, batch 256/rank | 30 | 200.0 | 4.00× | "
                      "58.00% |", md)
        self.assertIn("| 400.0 | 2.00× | 61.00% | 0.6800 | 3.0 MiB | - |", md)
        self.assertIn("80.0 MiB |", md)
        # Without a DDP allreduce run, qccl's fp32 is the reference.
        self.assertIn("speed-up vs qccl train fp32", md)
        self.assertIn("| 900.0 | 1.00× | 55.00% |", md)

    def test_repeats_show_their_median_and_each_run(self):
        rows = [row("PyTorch DDP", "none", 800.0, 0.60, repeat=1),
                row("qccl train", "fp32", 900.0, 0.55, repeat=1),
                row("PyTorch DDP", "none", 700.0, 0.60, repeat=2),
                {"system": "qccl train", "method": "fp32", "model": "recommender",
                 "rate": "1gbit", "hosts": 4, "repeat": 2, "error": "exit status 1"},
                row("PyTorch DDP", "none", 760.0, 0.60, repeat=3)]
        table = ddp_report.medians(rows)
        self.assertEqual([(r["method"], r["ms_per_step"]) for r in table],
                         [("none", 760.0), ("fp32", 900.0)])  # failed repeats left out
        md = ddp_report.markdown(table)
        self.assertIn("| 760.0 (800, 700, 760) | 1.00× |", md)
        self.assertIn("| 900.0 | 0.84× |", md)

    def test_a_failed_run_shows_as_failed_with_its_reason(self):
        md = ddp_report.markdown(self.ROWS)
        self.assertIn("| PyTorch DDP | qccl:intsgd |  | failed | failed | - | failed |", md)
        self.assertIn("- PyTorch DDP qccl:intsgd failed: exit status 1; see x.log", md)

    def test_csv_has_a_row_per_run_and_empty_cells_for_what_was_not_measured(self):
        lines = ddp_report.csv_text(self.ROWS).splitlines()
        self.assertEqual(lines[0].split(","), list(ddp_report.CSV_FIELDS))
        self.assertEqual(len(lines), 1 + len(self.ROWS))
        self.assertTrue(lines[2].startswith("recommender,1gbit,4,,PyTorch DDP,powersgd:1,"))  # no repeat
        self.assertTrue(lines[2].endswith(",200.0,0.58,0.68,,,"))

    def test_the_plot_has_a_panel_per_group_and_a_labelled_series_per_measured_run(self):
        panels = ddp_report.plot_panels(self.ROWS)
        self.assertEqual([p["title"] for p in panels],
                         ["recommender, 4 hosts at 1gbit", "cnn, 4 hosts at 100mbit"])
        for panel in panels:
            self.assertIn("ms per step", panel["x_label"])
            self.assertEqual(panel["y_label"], "test accuracy (%)")
        series = panels[0]["series"]  # the failed qccl:intsgd has no point
        self.assertEqual([s["name"] for s in series],
                         ["PyTorch DDP none", "PyTorch DDP powersgd:1",
                          "qccl train global-qsgd:bits=8"])
        self.assertEqual([s["labels"] for s in series],
                         [["none"], ["powersgd:1"], ["qccl train global-qsgd:bits=8"]])
        [(ms, accuracy)] = series[1]["points"]
        self.assertEqual(ms, 200.0)
        self.assertAlmostEqual(accuracy, 58.0)

    def test_the_plot_is_qccls_svg_with_every_run_labelled_once(self):
        root = ElementTree.fromstring(ddp_report.svg(self.ROWS))
        ns = "{http://www.w3.org/2000/svg}"
        legend = [g for g in root.iter(ns + "g") if g.get("class") == "legend-entry"]
        self.assertEqual([g.find(ns + "text").text for g in legend],
                         ["PyTorch DDP none", "PyTorch DDP powersgd:1",
                          "qccl train global-qsgd:bits=8", "qccl train fp32"])
        in_legend = {id(t) for g in legend for t in g.iter(ns + "text")}
        texts = [t.text for t in root.iter(ns + "text") if id(t) not in in_legend]
        self.assertIn("recommender, 4 hosts at 1gbit", texts)
        self.assertIn("cnn, 4 hosts at 100mbit", texts)
        for label in ("none", "powersgd:1", "qccl train global-qsgd:bits=8", "qccl train fp32"):
            self.assertEqual(texts.count(label), 1, label)
        self.assertNotIn("qccl:intsgd", " ".join(texts))  # failed: no point, no legend entry
        styles = {(m.get("fill"), m.get("class")) for g in legend for m in g
                  if (m.get("class") or "").startswith("marker")}
        self.assertEqual(len(styles), 4, "each run its own colour and marker")

    @unittest.skipUnless(shutil.which("rsvg-convert"),
                         "rsvg-convert is not installed (Debian's librsvg2-bin)")
    def test_the_plot_renders_to_png_at_its_size(self):
        svg = ddp_report.svg(self.ROWS)
        root = ElementTree.fromstring(svg)
        png = subprocess.run(["rsvg-convert", "--format=png"], input=svg.encode(),
                             capture_output=True, check=True).stdout
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        width, height = struct.unpack(">II", png[16:24])
        self.assertEqual((width, height), (int(root.get("width")), int(root.get("height"))))
        self.assertGreater(len(png), 2000)


class ClickData(unittest.TestCase):
    # Samples of qccl::data::ClickData({8, 100000, 200000, 20000}, seed 1),
    # the data of `qccl train --model recommender`, printed by the C++ code.
    CPP = {(False, 0): ([21324, 167, 35671, 52910, 25044, 86357, 4029, 57104], 1.0),
           (False, 777): ([40436, 1282, 54678, 1299, 21844, 2023, 57770, 5302], 0.0),
           (True, 1): ([98660, 721, 37324, 86, 13278, 61, 1542, 17340], 0.0),
           (True, 19999): ([73202, 31683, 58707, 99859, 2453, 8430, 6008, 23799], 1.0)}

    def test_the_benchmark_trains_on_qccls_samples(self):
        data = ddp_data.click_data(8, 100000, 200000, 20000, 1)
        for (test, i), (features, label) in self.CPP.items():
            self.assertEqual(data.features(np.array([i]), test)[0].tolist(), features)
            self.assertEqual(data.labels(np.array([i]), test)[0], label)
        self.assertEqual(int(data.labels(np.arange(20000), True).sum()), 8373)

    def test_out_of_range_samples_are_refused(self):
        data = ddp_data.click_data(8, 100000, 200000, 20000, 1)
        with self.assertRaises(ValueError):
            data.features(np.array([20000]), True)


if __name__ == "__main__":
    unittest.main(verbosity=1)
