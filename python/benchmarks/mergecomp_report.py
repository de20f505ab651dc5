"""The report of scripts/mergecomp-table: the arithmetic (prediction error,
scaling factor, MergeComp's gain), runs.csv, table.md, results.json and one
bar plot per link rate, from the rows the runs produced.

A row is a dict: rate, codec, plan, repeat, groups, predicted_ms,
measured_ms, prediction_error, scaling_factor, bucket_policy, status ("ok" or
"failed"), timed_steps, error, log. A cell of the table is every row of one
rate, codec and plan: its median over the repeats and their range."""

import csv
import html
import io
import json
import math
import statistics

PLAN_TITLES = {"layerwise": "layer-wise", "one": "one bucket", "ddp": "DDP",
               "mergecomp": "MergeComp"}
PLAN_COLOURS = {"layerwise": "#1f77b4", "one": "#ff7f0e", "ddp": "#2ca02c",
                "mergecomp": "#d62728"}
GIVEN_COLOUR = "#9467bd"  # groups:N1,N2,.. given by hand


def plan_title(plan):
    return PLAN_TITLES.get(plan, f"`{plan}`")


def plan_colour(plan):
    return PLAN_COLOURS.get(plan, GIVEN_COLOUR)
CSV_FIELDS = ("rate", "codec", "plan", "repeat", "groups", "predicted_ms", "measured_ms",
              "prediction_error", "scaling_factor", "bucket_policy", "status", "timed_steps",
              "error")
SCALING_FACTOR_TEXT = (
    "scaling factor = T_n / (n·T_1), T = samples per second. With the same batch B per rank, "
    "T_n = n·B/t_n and T_1 = B/t_1, so it is t_1/t_n: the single-rank step time (fp32, one "
    "bucket, no network) over the run's step time. 1 is perfect scaling.")


# ---- Arithmetic -----------------------------------------------------------------

def prediction_error(predicted_ms, measured_ms):
    """(predicted − measured) / measured: positive when the plan was too slow on paper."""
    if predicted_ms is None or not measured_ms:
        return None
    return (predicted_ms - measured_ms) / measured_ms


def scaling_factor(single_rank_ms, measured_ms):
    if single_rank_ms is None or not measured_ms:
        return None
    return single_rank_ms / measured_ms


def cell_rows(rows, rate, codec, plan):
    """The successful runs of one cell."""
    return [r for r in rows if (r["rate"], r["codec"], r["plan"]) == (rate, codec, plan)
            and r.get("status") == "ok"]


def median_of(cell, key):
    values = [r[key] for r in cell if r.get(key) is not None]
    return statistics.median(values) if values else None


def gain(rows, codec_rate, base_plan):
    """MergeComp's gain over BASE_PLAN: the median measured_base over the
    median measured_mergecomp (medians over the repeats)."""
    codec, rate = codec_rate
    base = median_of(cell_rows(rows, rate, codec, base_plan), "measured_ms")
    merged = median_of(cell_rows(rows, rate, codec, "mergecomp"), "measured_ms")
    return base / merged if base and merged else None


def median_absolute_error(rows):
    """(median |prediction error|, how many runs have one)."""
    errors = [abs(r["prediction_error"]) for r in rows if r.get("prediction_error") is not None]
    return (statistics.median(errors) if errors else None), len(errors)


# ---- CSV and JSON -----------------------------------------------------------------

def csv_text(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _csv_value(row.get(key)) for key in CSV_FIELDS})
    return out.getvalue()


def _csv_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str) and value:
        return value.splitlines()[0]  # an error's first line; its output is in logs/
    return value


def results_json(settings, reference, rows, plan_runs):
    return json.dumps({"settings": settings, "scaling_factor": SCALING_FACTOR_TEXT,
                       "single_rank": reference, "runs": rows, "plan_runs": plan_runs},
                      indent=2) + "\n"


# ---- table.md -----------------------------------------------------------------------

def _cell(rows, rate, codec, plan):
    """median measured ms/step [min–max] (median predicted ms/step), scaling
    factor of the median; with how many runs failed."""
    every = [r for r in rows if (r["rate"], r["codec"], r["plan"]) == (rate, codec, plan)]
    if not every:
        return "not run"
    cell = cell_rows(rows, rate, codec, plan)
    failed = len(every) - len(cell)
    if not cell:
        return "**failed**"
    measured = [r["measured_ms"] for r in cell]
    predicted = median_of(cell, "predicted_ms")
    factor = median_of(cell, "scaling_factor")
    text = (f"{statistics.median(measured):.1f} [{min(measured):.1f}–{max(measured):.1f}] "
            f"({'–' if predicted is None else f'{predicted:.1f}'}), "
            f"{'–' if factor is None else f'{factor:.2f}'}")
    return text + (f", {failed} failed" if failed else "")


def _policies(cell):
    """The plans MergeComp chose over the repeats, most frequent first."""
    counts = {}
    for r in cell:
        if r.get("bucket_policy"):
            counts[r["bucket_policy"]] = counts.get(r["bucket_policy"], 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return " ".join(p if n == 1 else f"{p} (×{n})" for p, n in ranked) or "–"


def _times(value):
    return "–" if value is None else f"{value:.2f}×"


def rate_table(rows, rate, codecs, plans):
    """The markdown table of one link rate: a row per codec."""
    bases = [p for p in plans if p != "mergecomp"] if "mergecomp" in plans else []
    header = (["codec"] + [plan_title(p) for p in plans]
              + (["MergeComp's plan"] if "mergecomp" in plans else [])
              + [f"gain over {plan_title(b)}" for b in bases])
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for codec in codecs:
        cells = [f"`{codec}`"] + [_cell(rows, rate, codec, p) for p in plans]
        if "mergecomp" in plans:
            cells.append(_policies(cell_rows(rows, rate, codec, "mergecomp")))
        cells += [_times(gain(rows, (codec, rate), b)) for b in bases]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(rows, plan_runs, settings, reference):
    rates = list(dict.fromkeys(settings["rates"]))
    out = [f"# MergeComp experiment: {settings['model']}, {settings['hosts']} hosts",
           "",
           f"Batch {settings['batch']} per rank, {settings['steps']} steps per run; a run's time "
           f"is the median step of steps {settings['skipped_steps']}..{settings['steps'] - 1} "
           f"(steps counted from 0; MergeComp plans after profiling {settings['plan_steps']}), "
           f"and each cell the median over {settings.get('repeats', 1)} runs.",
           "",
           f"Single rank (T_1): {_reference_text(reference)}. {SCALING_FACTOR_TEXT}",
           "",
           "Each cell: median measured ms/step [fastest–slowest run] (median predicted "
           "ms/step), scaling factor of the median. "
           "Gain: the other plan's median ms/step over MergeComp's.",
           ""]
    for rate in rates:
        out += [f"## {rate}", "", rate_table(rows, rate, settings["codecs"], settings["plans"]),
                ""]
    error, count = median_absolute_error(rows)
    summary = "–" if error is None else f"{100 * error:.1f}%"
    out += [f"Median |prediction error| over {count} runs: {summary}.", ""]
    failed = [r for r in [reference or {}] + plan_runs + rows if r and r.get("status") != "ok"]
    if failed:
        out += ["## Failed runs", ""]
        out += [f"- {r['rate']} `{r['codec']}` {r['plan']}: {_first_line(r.get('error'))} "
                f"(output: {r.get('log', '–')})" for r in failed]
        out.append("")
    return "\n".join(out)


def _reference_text(reference):
    if not reference or reference.get("status") != "ok":
        return "**failed**, so no scaling factors"
    return f"{reference['measured_ms']:.1f} ms/step"


def _first_line(text):
    return (text or "no message").splitlines()[0]


# ---- The plot -------------------------------------------------------------------------
# Hand-written SVG, one file per rate: a group of bars per codec, one bar per
# plan (its measured ms/step), on a linear axis from 0. A failed run is an
# "×" on the axis. The codecs' names are written slanted under their bars;
# the margins grow to hold the longest, so none leaves the image.

BAR_W, GROUP_GAP, PLOT_H = 14, 18, 260
LEFT, TOP, FONT = 64, 48, 11
SLANT = math.radians(35)
WIDE = set("mwMW@%=+<>~^#&")


def text_width(text, size=FONT):
    """A generous estimate of TEXT's width in pixels (no font is read): each
    character at least as wide as in DejaVu Sans or Helvetica."""
    return size * sum(1.05 if c in WIDE or ord(c) > 127 else 0.82 if c.isupper() else 0.66
                      for c in text)


def slanted_extent(text):
    """(leftwards, downwards) reach of TEXT written ending at a point and
    slanted down to the left by SLANT, its ascent and descent included."""
    w = text_width(text)
    return (w * math.cos(SLANT) + 0.8 * FONT * math.sin(SLANT),
            w * math.sin(SLANT) + 0.25 * FONT * math.cos(SLANT))


def _ticks(high, count=5):
    """Round tick values from 0 up to at least HIGH."""
    step = 10 ** math.floor(math.log10(high / count)) if high > 0 else 1
    for factor in (1, 2, 5, 10):
        if high / (step * factor) <= count:
            step *= factor
            break
    return [i * step for i in range(int(math.ceil(high / step - 1e-9)) + 1)]


def svg(rows, rate, codecs, plans):
    measured = {(c, p): median_of(cell_rows(rows, rate, c, p), "measured_ms")
                for c in codecs for p in plans}
    measured = {key: value for key, value in measured.items() if value is not None}
    ticks = _ticks(max(list(measured.values()) + [1.0]))
    top_value = ticks[-1]
    group_w = len(plans) * BAR_W + GROUP_GAP
    label_x = [GROUP_GAP / 2 + c * group_w + len(plans) * BAR_W / 2 for c in range(len(codecs))]
    extents = [slanted_extent(codec) for codec in codecs]
    left = max([LEFT] + [reach + 4 - x for (reach, _), x in zip(extents, label_x)])
    width = round(max(left + len(codecs) * group_w, left + len(plans) * 110) + 20)
    axis_y = TOP + PLOT_H
    height = round(axis_y + 14 + max([drop for _, drop in extents] + [0]) + 8)
    y = (lambda v: axis_y - v / top_value * PLOT_H)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="{FONT}">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="18" font-weight="bold">measured ms/step at '
             f'{html.escape(rate)}</text>']
    for i, plan in enumerate(plans):  # legend
        x = left + i * 110
        parts += [f'<rect x="{x}" y="28" width="10" height="10" fill="{plan_colour(plan)}"/>',
                  f'<text x="{x + 14}" y="37">{html.escape(plan_title(plan))}</text>']
    for v in ticks:
        parts += [f'<line x1="{left}" x2="{width - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                  f'stroke="#ddd"/>',
                  f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>']
    for c, codec in enumerate(codecs):
        for p, plan in enumerate(plans):
            x, value = left + label_x[c] + (p - len(plans) / 2) * BAR_W, measured.get((codec, plan))
            if value is None:
                parts.append(f'<text x="{x + BAR_W / 2}" y="{y(0) - 3}" text-anchor="middle" '
                             f'fill="{plan_colour(plan)}">×</text>')
                continue
            parts.append(f'<rect x="{x:.1f}" y="{y(value):.1f}" width="{BAR_W - 2}" '
                         f'height="{y(0) - y(value):.1f}" fill="{plan_colour(plan)}">'
                         f'<title>{html.escape(codec)}, {html.escape(plan_title(plan))}: {value:.1f} ms'
                         f'</title></rect>')
        at = f"{left + label_x[c]:.1f} {axis_y + 14}"
        parts.append(f'<text x="{left + label_x[c]:.1f}" y="{axis_y + 14}" text-anchor="end" '
                     f'transform="rotate(-{math.degrees(SLANT):g} {at})">{html.escape(codec)}</text>')
    parts += [f'<line x1="{left}" x2="{width - 20}" y1="{y(0)}" y2="{y(0)}" stroke="#444"/>',
              f'<text x="{left - 46}" y="{TOP + PLOT_H / 2}" text-anchor="middle" '
              f'transform="rotate(-90 {left - 46} {TOP + PLOT_H / 2})">ms per step</text>']
    return "\n".join(parts + ["</svg>"]) + "\n"
