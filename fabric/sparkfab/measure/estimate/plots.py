"""PNG plots for the estimate (matplotlib, no display)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from sparkfab.errors import Unavailable
from sparkfab.files.outputs import PNG_METADATA, write_file
from sparkfab.measure.counters.traffic import rates
from sparkfab.measure.estimate import EMULATED_GBPS, Setup, bytes_per_token, extra_time, tp_projection

MISSING = "plots need matplotlib, which is not installed: pip install 'sparkfab[plots]'"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display), imported on first use. Text is
    text: labels, titles and legends carry run labels, directory and test names and model
    names, which matplotlib would otherwise read as mathtext (`$...$`) and refuse.
    matplotlib is an extra (`sparkfab[plots]`): without it, `Unavailable` says how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise Unavailable(MISSING) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["text.parse_math"] = False
    plt.rcParams["text.usetex"] = False
    return plt


def estimate_plots(s: Setup, out: Path, ttft: float | None) -> list[Path]:
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    tokens = [1024 * 2**k for k in range(0, 8)]
    bpt = bytes_per_token(s)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    ax.plot(
        [t / 1000 for t in tokens],
        [extra_time(t * bpt, s.from_gbps, s.to_gbps) for t in tokens],
        "o-",
        label=f"{s.from_gbps:g} -> {s.to_gbps:g} Gb/s",
    )
    ax.plot(
        [t / 1000 for t in tokens],
        [extra_time(t * bpt, s.from_gbps, EMULATED_GBPS) for t in tokens],
        "s--",
        label=f"{s.from_gbps:g} -> {EMULATED_GBPS:g} Gb/s (emulated)",
    )
    ax.set_xscale("log", base=2)
    ax.set_xticks([t / 1000 for t in tokens], [f"{t // 1024}K" for t in tokens])
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("extra time to first token, upper bound (s)")
    ax.set_title(f"{s.model.name} at TP{s.tp}: prefill penalty of a slower link")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    paths = [out / "penalty_vs_prompt.png"]
    fig.savefig(paths[0], metadata=PNG_METADATA)
    plt.close(fig)
    if ttft is not None:
        rows = tp_projection(s, ttft, baseline_tp=s.tp)
        fig, ax = plt.subplots(figsize=(6, 4.2), dpi=120)
        ax.bar([f"TP{r.tp}" for r in rows], [100 * r.increase_bound for r in rows], color="#4878a8")
        for i, r in enumerate(rows):
            ax.text(i, 100 * r.increase_bound + 0.5, f"<= {100 * r.increase_bound:.0f}%", ha="center")
        ax.set_ylabel(f"TTFT increase at {s.to_gbps:g} Gb/s, upper bound (%)")
        ax.set_xlabel(f"TP size (8K prompt; baseline measured at TP{s.tp})")
        ax.set_title("Projected penalty against TP size")
        fig.tight_layout()
        paths.append(out / "penalty_vs_tp.png")
        fig.savefig(paths[1], metadata=PNG_METADATA)
        plt.close(fig)
    return paths


def traffic_plot(sr: Any, out: Path, direction: str = "tx", window: tuple[float, float] | None = None) -> Path:
    """Like the paper's Figure 4: 1 ms rates over the whole run, and a zoom panel."""
    plt = pyplot()
    panels = 2 if window else 1
    fig, axes = plt.subplots(panels, 1, figsize=(9, 3.2 * panels), dpi=120, squeeze=False)
    t1, r1 = rates(sr, 0.001, direction)
    t100, r100 = rates(sr, 0.1, direction)
    ax = axes[0][0]
    ax.plot(t1, r1, lw=0.6, color="#1f5fa8", label="1 ms average")
    ax.plot(t100, r100, lw=1.4, color="#d9822b", drawstyle="steps-post", label="100 ms average")
    ax.set_xlabel("time since the first sample (s)")
    ax.set_ylabel(f"{direction} rate (Gb/s)")
    ax.set_title(f"Traffic sent by one host ({direction}), 1 ms resolution")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    if window:
        ax.axvspan(window[0], window[1], color="grey", alpha=0.2)
        tz, rz = rates(sr, 0.001, direction, window)
        z = axes[1][0]
        z.plot(tz, rz, lw=0.8, color="#1f5fa8")
        z.set_xlabel("time since the first sample (s)")
        z.set_ylabel(f"{direction} rate (Gb/s)")
        z.set_title(f"zoom: {window[0]:g}-{window[1]:g} s, 1 ms averages")
        z.grid(True, alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata=PNG_METADATA)
    plt.close(fig)
    write_file(out, buf.getvalue(), flag="--plot")
    return out
