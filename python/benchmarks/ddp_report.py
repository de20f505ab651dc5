"""The report of scripts/ddp-compare: one Markdown table per (model, link
rate), the rows as CSV, and an SVG plot of test accuracy against ms/step
(one panel per model and rate), all from the rows the runs produced."""

import csv
import html
import io
import math
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
# Hand-written SVG (Debian's python3-matplotlib is not a dependency): a panel
# per (model, rate) with linear axes padded 10% around its points, DDP runs
# as circles and `qccl train` runs as squares, each labelled with its method.

PANEL_W, PANEL_H, MARGIN = 440, 320, 56
COLOURS = {"PyTorch DDP": "#1f77b4", "qccl train": "#d62728"}


def _ticks(low, high, count=5):
    """About `count` round tick values covering [low, high]."""
    step = 10 ** math.floor(math.log10((high - low) / count))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= count:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _range(values):
    low, high = min(values), max(values)
    pad = (high - low) * 0.1 or max(abs(high) * 0.05, 1e-3)
    return low - pad, high + pad


def _panel(title, members, left, top):
    points = [r for r in members if not r.get("error") and r.get("ms_per_step") is not None]
    parts = [f'<text x="{left + PANEL_W / 2}" y="{top + 18}" text-anchor="middle" '
             f'font-weight="bold">{html.escape(title)}</text>']
    x0, y0, w, h = left + MARGIN, top + 30, PANEL_W - MARGIN - 16, PANEL_H - 30 - MARGIN
    parts.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    if not points:
        return parts
    xs = _range([r["ms_per_step"] for r in points])
    ys = _range([100 * r["accuracy"] for r in points])
    px = (lambda v: x0 + (v - xs[0]) / (xs[1] - xs[0]) * w)
    py = (lambda v: y0 + h - (v - ys[0]) / (ys[1] - ys[0]) * h)
    for v in _ticks(*xs):
        parts.append(f'<text x="{px(v):.1f}" y="{y0 + h + 16}" text-anchor="middle">{v:g}</text>')
    for v in _ticks(*ys):
        parts.append(f'<text x="{x0 - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    parts.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 36}" text-anchor="middle">ms per step</text>')
    parts.append(f'<text x="{left + 14}" y="{y0 + h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 {left + 14} {y0 + h / 2})">test accuracy (%)</text>')
    for r in points:
        x, y, colour = px(r["ms_per_step"]), py(100 * r["accuracy"]), COLOURS.get(r["system"], "#333")
        if r["system"] == "qccl train":
            parts.append(f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}"/>')
        else:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{colour}"/>')
        parts.append(f'<text x="{x + 7:.1f}" y="{y - 6:.1f}" fill="{colour}">'
                     f'{html.escape(r["method"])}</text>')
    return parts


def svg(rows):
    grouped = list(groups(rows).items())
    columns = min(2, max(1, len(grouped)))
    lines = math.ceil(len(grouped) / columns) if grouped else 1
    width, height = columns * PANEL_W, lines * PANEL_H + 28
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, ((model, rate, hosts), members) in enumerate(grouped):
        left, top = (i % columns) * PANEL_W, (i // columns) * PANEL_H
        parts += _panel(f"{model}, {hosts} hosts at {rate}", members, left, top)
    legend_y = lines * PANEL_H + 16
    for i, (system, colour) in enumerate(COLOURS.items()):
        x = 20 + i * 160
        shape = (f'<rect x="{x - 4}" y="{legend_y - 8}" width="8" height="8" fill="{colour}"/>'
                 if system == "qccl train" else
                 f'<circle cx="{x}" cy="{legend_y - 4}" r="4.5" fill="{colour}"/>')
        parts += [shape, f'<text x="{x + 10}" y="{legend_y}">{system}</text>']
    return "\n".join(parts + ["</svg>"]) + "\n"
