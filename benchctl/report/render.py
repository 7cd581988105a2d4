"""The report's tables as text: the full per-k table, health, claims, compute fits, rliable and cost views, and
rich tables for the terminal.  Formatting only; the numbers come from `benchctl.report.stats` / `rl`.  The
compact verdict table: `verdict`; the pages (markdown, HTML): `page`."""

from __future__ import annotations

import math
from enum import StrEnum

import numpy as np
import pandas as pd

from benchctl.report.health import INERT_FRACTION, STATES, inert_arms, shown_notes
from benchctl.report.stats import arm_health


class Kind(StrEnum):
    """What a view's cell holds; the pages style a cell by its kind, never by its text."""

    TEXT = "text"
    NUMBER = "number"
    SIGNIFICANT = "significant"  # a significant result without a direction (a Holm p-value)
    UP = "up"  # a significant gain over the baseline
    DOWN = "down"  # a significant loss
    BASELINE = "baseline"  # the baseline's own row (or an arm shown without one)
    FEW = "few"  # too few seeds: an estimate, no test
    WARN = "warn"  # runs that are not ok


class TableCell(str):
    """A view's cell: its text (a str, so it prints, compares and matches as text) and its `kind`."""

    kind: Kind

    def __new__(cls, text: str, kind: Kind = Kind.TEXT) -> TableCell:
        cell = super().__new__(cls, text)
        cell.kind = kind
        return cell


def kind_of(value) -> Kind:
    """A value's kind: a TableCell's own; plain numbers NUMBER, anything else TEXT."""
    if isinstance(value, TableCell):
        return value.kind
    is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    return Kind.NUMBER if is_number else Kind.TEXT


def cell_text(value) -> str:
    """A value as the tables print it: floats to 4 significant digits, NaN as '-'."""
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def percent(value, digits: int = 1, scale: float = 100.0) -> str:
    """A fraction as percent text ('41.3'), '-' for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{scale * value:.{digits}f}"


TOO_FEW = "too few seeds"
WARN = "\u26a0 "  # marks a health cell that is not ok


def health_by_arm(runs: pd.DataFrame | None) -> dict[str, str]:
    """arm -> 'ok' or its runs that are not ok ('collapsed: seed 1', from `stats.arm_health`), led by
    'inert: trained as its base (...)' when the arm's mechanism did not act (`health.inert_arms`), followed by
    its runs that never learned ('ok (never learned: seed 3)', `health.shown_notes`)."""
    if runs is None or "health" not in runs:
        return {}
    inert, out = inert_arms(runs), {}
    for arm in runs["arm"].unique():
        state = arm_health(runs, arm)
        own = runs[runs["arm"] == arm]
        note = shown_notes(own["health"].tolist(), own["seed"].tolist())
        state = state if not note else f"ok ({note})" if state == "ok" else f"{state}; {note}"
        out[arm] = state if arm not in inert else inert[arm] + ("" if state == "ok" else f"; {state}")
    return out


def _warns(state: str) -> bool:
    """Whether a health text names something not ok: any '; '-part other than 'ok', 'ok (<notes>)' or a shown
    note ('never learned: seed 3')."""
    parts = state.split("; ")
    return any(p != "ok" and not p.startswith("ok (") and not p.startswith("never learned:") for p in parts)


def health_cell(state: str) -> TableCell:
    """'ok' (or 'ok (never learned: seed 3)') as text, anything else marked WARN."""
    return TableCell(WARN + state, Kind.WARN) if _warns(state) else TableCell(state, Kind.TEXT)


def diff_kind(c) -> Kind:
    """UP / DOWN for a significant difference, FEW under MIN_SEEDS, NUMBER otherwise."""
    if bool(c["significant"]):
        return Kind.UP if c["diff"] > 0 else Kind.DOWN
    return Kind.FEW if bool(c["too_few_seeds"]) else Kind.NUMBER


def mde_text(mde: float) -> str:
    """The mde in points; '> 100' when no pass@k difference that large is possible (3 seeds, a large family)."""
    return "> 100" if mde >= 1.0 else percent(mde)


def _p_cell(c) -> TableCell:
    if bool(c["too_few_seeds"]):
        return TableCell(f"{TOO_FEW} ({int(c['seeds'])})", Kind.FEW)
    if not bool(c["primary"]):
        p = c["p_value"]
        return TableCell("-" if math.isnan(p) else f"{p:.3g} (secondary, unadjusted)", Kind.NUMBER)
    if math.isnan(c["p_holm"]):
        return TableCell("-", Kind.NUMBER)
    sig = bool(c["significant"])
    return TableCell(f"{c['p_holm']:.3g}{' *' if sig else ''}", Kind.SIGNIFICANT if sig else Kind.NUMBER)


def _diff_cells(c) -> dict[str, TableCell]:
    """The comparison columns of one main-table row (percent points)."""
    ci = f" [{percent(c['low'])}, {percent(c['high'])}]" if not math.isnan(c["low"]) else ""
    return {
        "diff vs baseline [CI]": TableCell(f"{percent(c['diff']):>5}{ci}", diff_kind(c)),
        "seed sd": TableCell(percent(c["seed_std"]), Kind.NUMBER),
        "p (Holm)": _p_cell(c),
        "mde (80% power)": TableCell(mde_text(c["mde"]), Kind.NUMBER),
    }


def main_table(passk: pd.DataFrame, comparisons: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The headline table: per (task, k, arm) pass@k [CI over seeds and problems], the difference to the baseline
    [CI] with its p-value (Holm-corrected in the primary family, unadjusted and marked secondary otherwise), or
    the too-few-seeds mark instead (percent points), the seed standard deviation of the difference, the minimum
    detectable effect, and the health of the arm's runs (and of the baseline's, where they are not ok)."""
    cmp = comparisons.set_index(["arm", "eval_task", "k"]) if not comparisons.empty else None
    health, rows = health_by_arm(runs), []
    blank = {"diff vs baseline [CI]": "", "seed sd": "", "p (Holm)": "", "mde (80% power)": ""}
    for r in passk.sort_values(["eval_task", "k", "arm"]).itertuples():
        row = {
            "task": r.eval_task,
            "k": r.k,
            "arm": r.arm,
            "seeds": TableCell(f"{r.seeds} (too few)", Kind.FEW)
            if r.too_few_seeds
            else TableCell(str(r.seeds), Kind.NUMBER),
            "problems": r.problems,
            "pass@k [CI]": TableCell(f"{percent(r.pass_at_k)} [{percent(r.low)}, {percent(r.high)}]", Kind.NUMBER),
        }
        c = cmp.loc[(r.arm, r.eval_task, r.k)] if cmp is not None and (r.arm, r.eval_task, r.k) in cmp.index else None
        row.update(_diff_cells(c) if c is not None else blank)
        state = health.get(r.arm, "ok")
        if c is not None and c["baseline_health"] != "ok":
            state = f"{state}; baseline {c['baseline']}: {c['baseline_health']}"
        row["health"] = health_cell(state)
        rows.append(row)
    return pd.DataFrame(rows)


def inert_runs(runs: pd.DataFrame) -> pd.Series:
    """Which runs' mechanism acted on under INERT_FRACTION of the steps (False without a mechanism column)."""
    if "mechanism_acted_frac" not in runs:
        return pd.Series(False, index=runs.index)
    return runs["mechanism_acted_frac"].lt(INERT_FRACTION).fillna(False)


def health_view(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that are not ok, noted (`health.NOTES`, e.g. entropy_decayed) or whose mechanism was inert: arm, seed,
    health, evidence, folder."""
    if "health" not in runs:
        return pd.DataFrame()
    bad = runs[(runs["health"] != "ok") | inert_runs(runs)]
    return bad[["arm", "seed", "health", "health_evidence", "path"]].rename(columns={"health_evidence": "evidence"})


def health_text(runs: pd.DataFrame, comparisons: pd.DataFrame) -> str:
    """One paragraph: how many runs are ok, and which comparisons involve runs that are not."""
    if "health" not in runs:
        return ""
    counts = runs["health"].value_counts()
    text = ", ".join(f"{counts.get(s, 0)} {s}" for s in STATES if s in counts)
    inert = int(inert_runs(runs).sum())
    text += f"; {inert} inert (mechanism acted on under {100 * INERT_FRACTION:g}% of steps)" if inert else ""
    text = f"{len(runs)} runs: {text}. States and thresholds: docs/report.md (benchctl.report.health)."
    if comparisons.empty or not comparisons["unhealthy"].any():
        return text
    bad = comparisons[comparisons["unhealthy"]].drop_duplicates(["arm", "baseline"])
    lines = [f"{r.arm} vs {r.baseline} (arm: {r.arm_health}; baseline: {r.baseline_health})" for r in bad.itertuples()]
    return f"{text} Comparisons with runs that are not ok (their numbers are kept, marked {WARN.strip()}): " + (
        "; ".join(lines) + "."
    )


def _claim_seeds(c) -> TableCell:
    """The claim's paired seeds, marked when fewer than expected (`3 of 4 seeds: s4 failed`, `lost_seeds`)."""
    from benchctl.report.lost_seeds import seeds_mark

    mark = seeds_mark(int(c.seeds), getattr(c, "seeds_expected", 0), getattr(c, "seeds_lost", "") or "")
    return TableCell(WARN + mark, Kind.WARN) if mark else TableCell(str(int(c.seeds)), Kind.NUMBER)


def claims_view(claims: pd.DataFrame) -> pd.DataFrame:
    """One row per claim: paper, claim, arm vs baseline, metric, margin (parity claims), our effect [CI], mde (the
    smallest effect the runs would detect with 80% power), seeds, verdict (followed by the claims.parquet `inert`
    note, marked, when the arm's or the baseline's mechanism did not act), the paper's effect (with the
    stated_effect bound the verdict read, where given)."""
    rows = []
    for c in claims.itertuples():
        # relative effects and pass@k differences in percent (points), other training metrics as they are
        scale, unit = (100.0, "%") if c.relative else (100.0, " pts") if c.metric == "pass@k" else (1.0, "")
        effect = "-" if pd.isna(c.effect) else f"{c.effect * scale:+.1f}{unit}"
        if pd.notna(c.low):
            effect += f" [{c.low * scale:+.1f}, {c.high * scale:+.1f}]"
        effect = TableCell(effect, Kind.NUMBER)
        metric = f"pass@{int(c.k)}" if c.metric == "pass@k" else c.metric
        parity = c.direction in ("at_least", "at_most")
        stated = getattr(c, "stated_effect", np.nan)
        rows.append(
            {
                "paper": c.paper,
                "claim": c.claim,
                "arm vs baseline": f"{c.arm} vs {c.baseline}",
                "metric": f"{metric} ({c.direction})",
                "margin": f"{getattr(c, 'margin', 0.0) * scale:.1f}{unit}" if parity else "-",
                "effect [CI]": effect,
                "mde": "-" if pd.isna(getattr(c, "mde", np.nan)) else f"{c.mde * scale:.1f}{unit}",
                "seeds": _claim_seeds(c),
                "verdict": c.verdict
                + (f" ({c.reason})" if isinstance(c.reason, str) and c.reason else "")
                + (f"; {WARN}{c.inert}" if isinstance(getattr(c, "inert", None), str) and c.inert else ""),
                "paper's effect": (f"(stated >= {stated * scale:.1f}{unit}) " if pd.notna(stated) else "")
                + c.paper_effect,
            }
        )
    return pd.DataFrame(rows)


CLAIMS_TERMINAL = ("claim", "arm vs baseline", "metric", "effect [CI]", "verdict", "mde", "seeds", "margin")


def claims_terminal_view(claims: pd.DataFrame) -> pd.DataFrame:
    """`claims_view` for the terminal: the verdict beside the effect, and each paper's own effect (prose) left to the
    page, so a 120-column terminal reads the claim, effect, verdict and mde."""
    view = claims_view(claims)
    return view[[c for c in CLAIMS_TERMINAL if c in view.columns]]


def asymptote_text(f) -> str:
    """A in percent with its CI; an unidentified asymptote as '>= low' (its lower limit, at least 0), never a point
    (benchctl.report.compute: identification)."""
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    if not np.isfinite(f.asymptote):
        return "-"
    if not bool(f.asymptote_identified):
        low = f.asymptote_low
        return f">= {pct(max(low, 0.0))} (not identified)" if np.isfinite(low) else "not identified"
    return pct(f.asymptote) + (
        "" if not np.isfinite(f.asymptote_low) else f" [{pct(f.asymptote_low)}, {pct(f.asymptote_high)}]"
    )


def compute_view(fits: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, task): asymptote A ('>= low' when not identified) and midpoint C_mid ('> budget' when past the
    largest compute evaluated) with CIs, efficiency B, and the verdict against the baseline."""
    if fits.empty:
        return pd.DataFrame()
    verdicts = {(r.arm, r.eval_task): r.verdict for r in comparisons.itertuples()} if len(comparisons) else {}

    def ci(value, low, high, fmt) -> str:
        if not np.isfinite(value):
            return TableCell("-", Kind.NUMBER)
        return TableCell(fmt(value) + ("" if not np.isfinite(low) else f" [{fmt(low)}, {fmt(high)}]"), Kind.NUMBER)

    tok = lambda v: f"{v:,.0f}"  # noqa: E731

    def midpoint(f) -> TableCell:
        if np.isfinite(f.midpoint) and f.midpoint > f.max_tokens:
            return TableCell(f"> {tok(f.max_tokens)} (past the budget)", Kind.NUMBER)
        return ci(f.midpoint, f.midpoint_low, f.midpoint_high, tok)

    return pd.DataFrame(
        {
            "arm": f.arm,
            "task": f.eval_task,
            "A (asymptote, %)": TableCell(asymptote_text(f), Kind.NUMBER),
            "C_mid (tokens)": midpoint(f),
            "B": ci(f.efficiency, f.efficiency_low, f.efficiency_high, lambda v: f"{v:.2f}"),
            "seeds": int(f.seeds),
            "vs baseline": verdicts.get((f.arm, f.eval_task), "baseline" if not verdicts else "-"),
        }
        for f in fits.itertuples()
    )


def rliable_table(aggregates: pd.DataFrame, improvement: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, k): each rliable aggregate as 'value [low, high]' (percent), and P(improvement)."""
    if aggregates.empty:
        return pd.DataFrame()
    rows = {}
    for r in aggregates.itertuples():
        row = rows.setdefault((r.arm, r.k), {"arm": r.arm, "k": r.k, "runs": r.runs, "tasks": r.tasks})
        row[r.metric] = TableCell(f"{percent(r.value)} [{percent(r.low)}, {percent(r.high)}]", Kind.NUMBER)
    for r in improvement.itertuples() if not improvement.empty else ():
        if (r.arm, r.k) in rows:
            row = rows[(r.arm, r.k)]
            row["baseline"] = r.baseline
            row["P(> baseline)"] = TableCell(
                f"{r.probability_of_improvement:.2f} [{r.low:.2f}, {r.high:.2f}]", Kind.NUMBER
            )
    return pd.DataFrame(list(rows.values())).fillna("")


def cost_view(cost: pd.DataFrame) -> pd.DataFrame:
    """The terminal's cost table: arm, runs, steps, rollout tokens/samples, total / rollout / update seconds, pass@1
    per task (the full table, every phase, is in cost.parquet and the page)."""
    keep = [
        "arm",
        "runs",
        "steps",
        "rollout_tokens",
        "rollout_samples",
        "time/step_s",
        "time/rollout_s",
        "time/update_s",
    ] + [c for c in cost.columns if c.startswith("pass@1:")]
    view = cost[[c for c in keep if c in cost.columns]].copy()
    for col in ("rollout_tokens", "rollout_samples"):
        if col in view:
            view[col] = [_compact(v) for v in view[col]]
    return view.rename(
        columns={
            "rollout_tokens": "tokens",
            "rollout_samples": "samples",
            "time/step_s": "total s",
            "time/rollout_s": "rollout s",
            "time/update_s": "update s",
        }
    )


def cost_page_view(cost: pd.DataFrame) -> pd.DataFrame:
    """The page's cost table: every column of cost.parquet, token and sample counts as 1.2M, seconds whole,
    pass@1 in percent."""
    view = cost.copy()
    for col in view.columns:
        if col.startswith("rollout_") or col in ("tokens", "samples"):
            view[col] = [TableCell(_compact(v), Kind.NUMBER) for v in view[col]]
        elif col.startswith("time/"):
            view[col] = [TableCell(percent(v, 0, 1.0), Kind.NUMBER) for v in view[col]]
        elif col.startswith("pass@"):
            view[col] = [TableCell(percent(v), Kind.NUMBER) for v in view[col]]
    return view.rename(columns={c: f"{c} (%)" for c in view.columns if c.startswith("pass@")})


def _compact(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"


def main_view(main: pd.DataFrame) -> pd.DataFrame:
    """The terminal's main table: without the problems column, shorter headings (the page has the full one)."""
    short = {"diff vs baseline [CI]": "diff [CI]", "mde (80% power)": "mde"}
    return main.drop(columns=[c for c in ("problems",) if c in main]).rename(columns=short)


NO_WRAP_MAX = 40  # longest cell of a column that does not wrap; a longer one is prose, and wraps [our choice]
WRAP_MIN = 14  # characters a column that wraps keeps [our choice]


def rich_table(frame: pd.DataFrame, title: str, wrap: tuple[str, ...] = ()):
    """A rich Table of a small frame (every cell as text). The `wrap` columns, and any whose longest cell is over
    `NO_WRAP_MAX` characters (prose), wrap; the others keep their longest cell's width, so on a narrow console the
    prose gives way first and no short column shrinks to nothing."""
    from rich.markup import escape
    from rich.table import Table

    cells = [[cell_text(v) for v in row] for row in frame.itertuples(index=False)]
    table = Table(title=escape(title))
    for i, col in enumerate(frame.columns):
        justify = "left" if frame[col].dtype == object else "right"
        longest = max([len(row[i]) for row in cells] + [len(word) for word in str(col).split()], default=1)
        wraps = col in wrap or longest > NO_WRAP_MAX
        width = min(longest, WRAP_MIN) if wraps else longest
        table.add_column(escape(str(col)), justify=justify, no_wrap=not wraps, min_width=width)
    for row in cells:
        table.add_row(*[escape(v) for v in row])
    return table
