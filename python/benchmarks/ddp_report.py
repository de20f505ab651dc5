"""The report of scripts/ddp-compare: one Markdown table per (model, link
rate), the rows as CSV, and an SVG plot of test accuracy against ms/step
(one panel per model and rate), all from the rows the runs produced."""

import csv
import io
import statistics

CSV_FIELDS = ("model", "rate", "hosts", "repeat", "system", "method", "settings", "steps",
              "warmup_steps",
              "ms_per_step", "accuracy", "test_loss", "data_bytes_per_step",
              "wire_tx_bytes_per_step", "error")


def size_text(value):
    if value is None:
        return "-"
    if value >= 1024 * 1024:
        return f"{value / (1024 * 1024):.1f} MiB"
    if value >= 1024:
        return f"{value / 1024:.1f} KiB"
    return f"{value:.0f} B"


def groups(rows):
    """(model, rate, hosts) → its rows, in the order they first appear."""
    grouped = {}
    for row in rows:
        grouped.setdefault((row["model"], row["rate"], row["hosts"]), []).append(row)
    return grouped


def baseline(rows):
    """The row the speed-ups are against: DDP's plain allreduce, else qccl's fp32."""
    for system, method in (("PyTorch DDP", "none"), ("qccl train", "fp32")):
        for row in rows:
            if row["system"] == system and row["method"] == method and not row.get("error"):
                return row
    return None


def medians(rows):
    """One row per (model, rate, hosts, system, method), in the order they
    first appear: the first successful repeat's row with ms/step replaced by
    the median over the successful repeats, and `runs` holding each one's
    ms/step; a run that failed every time keeps its first failure."""
    grouped = {}
    for row in rows:
        key = (row["model"], row["rate"], row["hosts"], row["system"], row["method"])
        grouped.setdefault(key, []).append(row)
    table = []
    for members in grouped.values():
        measured = [r for r in members if not r.get("error") and r.get("ms_per_step")]
        if not measured:
            table.append(members[0])
            continue
        runs = [r["ms_per_step"] for r in measured]
        table.append(dict(measured[0], ms_per_step=statistics.median(runs), runs=runs))
    return table


def _ms_text(row):
    runs = row.get("runs") or []
    median = f"{row['ms_per_step']:.1f}"
    return median if len(runs) < 2 else f"{median} ({', '.join(f'{v:.0f}' for v in runs)})"


def _cell(row, key, text):
    return "failed" if row.get("error") else ("-" if row.get(key) is None else text(row[key]))


def markdown(rows):
    """One table per (model, rate, hosts); failed runs are listed under it."""
    out = io.StringIO()
    for (model, rate, hosts), members in groups(rows).items():
        base = baseline(members)
        against = f"{base['system']} {base['method']}" if base else "-"
        out.write(f"### {model}, {hosts} hosts at {rate}\n\n")
        out.write(f"| system | communication | settings | steps | ms/step | speed-up vs {against} "
                  "| test accuracy | test loss | data sent/step | wire tx/step |\n")
        out.write("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
        for r in members:
            speedup = "-"
            if base and not r.get("error") and r.get("ms_per_step"):
                speedup = f"{base['ms_per_step'] / r['ms_per_step']:.2f}×"
            out.write(f"| {r['system']} | {r['method']} | {r.get('settings', '')} | "
                      f"{_cell(r, 'steps', str)} | {_cell(r, 'ms_per_step', lambda v: _ms_text(r))} | "
                      f"{speedup} | {_cell(r, 'accuracy', lambda v: f'{100 * v:.2f}%')} | "
                      f"{_cell(r, 'test_loss', lambda v: f'{v:.4f}')} | "
                      f"{_cell(r, 'data_bytes_per_step', size_text)} | "
                      f"{_cell(r, 'wire_tx_bytes_per_step', size_text)} |\n")
        failed = [r for r in members if r.get("error")]
        for r in failed:
            out.write(f"\n- {r['system']} {r['method']} failed: {r['error']}")
        out.write("\n\n" if failed else "\n")
    return out.getvalue()


def csv_text(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: ("" if row.get(key) is None else row[key]) for key in CSV_FIELDS})
    return out.getvalue()


# ---- The plot ----------------------------------------------------------------
# Drawn by qccl's own plots (src/qccl/reports/svg_plot.h, through the qccl
# extension, which the runs need anyway; Debian's python3-matplotlib is not
# a dependency): a panel per (model, rate, hosts), test accuracy against
# ms/step, each run its own colour and marker and labelled with its method.


def _run_name(row):
    return f"{row['system']} {row['method']}"


def _label(row):
    return row["method"] if row["system"] == "PyTorch DDP" else _run_name(row)


def plot_panels(rows):
    """The plot's panels as qccl's plots take them: one per (model, rate,
    hosts), a series per measured run; failed runs are left out."""
    panels = []
    for (model, rate, hosts), members in groups(rows).items():
        points = [r for r in members if not r.get("error") and r.get("ms_per_step") is not None
                  and r.get("accuracy") is not None]
        panels.append({
            "title": f"{model}, {hosts} hosts at {rate}",
            "x_label": "ms per step (log scale)", "y_label": "test accuracy (%)", "log_x": True,
            "off_scale_outliers": True,
            "series": [{"name": _run_name(r), "points": [(r["ms_per_step"], 100 * r["accuracy"])],
                        "markers": True, "labels": [_label(r)]} for r in points]})
    return panels


def svg(rows):
    from qccl._native import native  # the extension: only the plot needs it
    return native.plots.render_svg(plot_panels(rows))
