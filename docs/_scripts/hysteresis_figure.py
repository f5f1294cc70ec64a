"""Draw the figures of the Concepts page with the real asafe controller.

Run by ``docs/conf.py`` at every build (the PNGs land in ``docs/_generated/``), or
by hand::

    python docs/_scripts/hysteresis_figure.py OUTDIR

``hysteresis.png``: a synthetic compute/communication ratio crosses alpha and beta;
the states come from :class:`asafe.Hysteresis`, once as a single threshold
(alpha = beta) and once with a band.

``feedback.png``: compression shrinks the transfers it is judged by. Measured in
compressed bytes, the ratio jumps above beta as soon as compression is on and the
controller flaps; a dwell time slows the flapping but does not stop it; measured
in uncompressed-equivalent bytes the ratio describes the workload and compression
stays on. The states come from :class:`asafe.AdaptiveRuntime` (dwell included).

Everything is deterministic: a seeded generator and a simulated clock.
"""
from __future__ import annotations

import os
import sys

import numpy as np

ALPHA, BETA = 0.5, 2.0
STEP = 0.1  # seconds between two evaluations of the controller


def mode_with_ratio(ratio: float):
    """A mode vector whose compute/communication ratio is ``ratio``."""
    import asafe

    return asafe.ModeVector({"compute": ratio, "communication": 1.0})


def synthetic_ratio(seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """A phased ratio: compute-heavy, communication-heavy, wandering around 1, compute-heavy."""
    t = np.arange(0.0, 60.0, STEP)
    knots_t = [0, 10, 16, 28, 32, 44, 48, 60]
    knots_r = [3.0, 3.0, 0.3, 0.3, 1.0, 1.0, 3.0, 3.0]
    base = np.interp(t, knots_t, np.log(knots_r))
    rng = np.random.default_rng(seed)
    noise = np.convolve(rng.normal(0.0, 1.0, t.size + 20), np.ones(20) / 20, mode="same")[10:-10]
    noise *= 0.22 / noise.std()
    return t, np.exp(base + noise)


def states_of(domain, ratios) -> np.ndarray:
    state, out = False, []
    for r in ratios:
        state = domain.decide(mode_with_ratio(float(r)), state)
        out.append(state)
    return np.array(out)


def toggles(states: np.ndarray) -> int:
    return int(np.count_nonzero(states[1:] != states[:-1]) + (1 if states[0] else 0))


def counted(states: np.ndarray) -> str:
    n = toggles(states)
    return f"{n} toggle" if n == 1 else f"{n} toggles"


def log_ratio_axis(ax, top: float) -> None:
    from matplotlib.ticker import NullFormatter

    ax.set_yscale("log")
    ax.set_yticks([0.25, 0.5, 1, 2, 4])
    ax.set_yticklabels(["0.25", "0.5", "1", "2", "4"])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0.15, top)
    ax.set_ylabel("ratio (log scale)")


def shade(ax, t, states, color, label=None) -> None:
    on = np.asarray(states, dtype=bool)
    edges = np.flatnonzero(np.diff(np.r_[0, on.astype(int), 0]))
    for k, (start, stop) in enumerate(zip(edges[::2], edges[1::2])):
        right = t[stop] if stop < t.size else t[-1] + STEP
        ax.axvspan(t[start], right, color=color, alpha=0.35, lw=0, label=label if k == 0 else None)


def strip(ax, t, states, label, color) -> None:
    ax.fill_between(t, 0, states.astype(float), step="post", color=color, alpha=0.8, lw=0)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def draw_hysteresis(path: str) -> None:
    import matplotlib.pyplot as plt

    import asafe

    t, ratio = synthetic_ratio()
    single = states_of(asafe.Hysteresis(alpha=1.0, beta=1.0), ratio)
    band = states_of(asafe.Hysteresis(alpha=ALPHA, beta=BETA), ratio)

    fig, axes = plt.subplots(3, 1, figsize=(8, 4.6), sharex=True,
                             gridspec_kw={"height_ratios": [4, 0.6, 0.6], "hspace": 0.15})
    ax = axes[0]
    shade(ax, t, band, "#9ecae1", label="compression on (alpha/beta)")
    ax.plot(t, ratio, color="black", lw=1.2, label="compute / communication ratio")
    ax.axhline(BETA, color="#d62728", ls="--", lw=1, label=f"beta = {BETA}: off above")
    ax.axhline(ALPHA, color="#2ca02c", ls="--", lw=1, label=f"alpha = {ALPHA}: on below")
    ax.axhline(1.0, color="grey", ls=":", lw=1, label="single threshold = 1")
    log_ratio_axis(ax, 8)
    ax.legend(loc="upper center", fontsize=7, ncol=3, framealpha=0.9)
    ax.set_title("Hysteresis(alpha=0.5, beta=2.0) against a single threshold", fontsize=10)
    strip(axes[1], t, single, f"single threshold\n{counted(single)}", "#7f7f7f")
    strip(axes[2], t, band, f"alpha/beta\n{counted(band)}", "#3182bd")
    axes[2].set_xlabel("time (s)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def simulate_feedback(accounting: str, dwell: float, shrink: float = 8.0):
    """Closed loop: the controller's decision changes what the next mode measures.

    The workload's own ratio is 0.3 (communication-heavy). With ``accounting ==
    "compressed"`` the measured transfer time shrinks by ``shrink`` while
    compression is on; with ``"uncompressed"`` transfers are counted as the bytes
    they would have been, so the measurement describes the workload.
    """
    import asafe

    runtime = asafe.AdaptiveRuntime(
        [asafe.Optimization("compression", asafe.Hysteresis(ALPHA, BETA))],
        dwell=dwell, dwell_tasks=0, interval=0.0, signals=False,
    )
    t = np.arange(0.0, 30.0, STEP)
    compute, communication = 0.3, 1.0  # seconds of work per second, the workload
    measured_ratio = compute / communication
    smoothing = STEP / 0.8  # the sliding window: about 0.8 s of measurements
    ratios, states = [], []
    for now in t:
        on = runtime.state("compression")
        seen = communication / shrink if (on and accounting == "compressed") else communication
        measured_ratio += smoothing * (compute / seen - measured_ratio)
        runtime.evaluate(mode=mode_with_ratio(measured_ratio), now=1000.0 + now)
        ratios.append(measured_ratio)
        states.append(runtime.state("compression"))
    return t, np.array(ratios), np.array(states)


def draw_feedback(path: str) -> None:
    import matplotlib.pyplot as plt

    runs = [
        ("compressed bytes,\nno dwell", "compressed", 0.0, "#d62728"),
        ("compressed bytes,\ndwell 3 s", "compressed", 3.0, "#ff7f0e"),
        ("uncompressed-\nequivalent bytes", "uncompressed", 0.0, "#3182bd"),
    ]
    fig, axes = plt.subplots(4, 1, figsize=(8, 4.8), sharex=True,
                             gridspec_kw={"height_ratios": [3.5, 0.6, 0.6, 0.6], "hspace": 0.15})
    ax = axes[0]
    for k, (label, accounting, dwell, color) in enumerate(runs):
        t, ratio, state = simulate_feedback(accounting, dwell)
        if k != 1:
            ax.plot(t, ratio, color=color, lw=1.2, label="measured ratio, " + label.replace("-\n", "-").replace("\n", " "))
        strip(axes[k + 1], t, state, f"{label}\n{counted(state)}", color)
    ax.axhline(BETA, color="#d62728", ls="--", lw=1, label=f"beta = {BETA}")
    ax.axhline(ALPHA, color="#2ca02c", ls="--", lw=1, label=f"alpha = {ALPHA}")
    log_ratio_axis(ax, 6)
    ax.legend(loc="upper right", fontsize=7, framealpha=0.9)
    ax.set_title("A communication-heavy phase (workload ratio 0.3); compression shrinks transfers 8x",
                 fontsize=10)
    axes[-1].set_xlabel("time (s)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(outdir: str) -> list[str]:
    """Write both figures into ``outdir``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    os.makedirs(outdir, exist_ok=True)
    paths = [os.path.join(outdir, "hysteresis.png"), os.path.join(outdir, "feedback.png")]
    draw_hysteresis(paths[0])
    draw_feedback(paths[1])
    return paths


if __name__ == "__main__":
    print("\n".join(main(sys.argv[1] if len(sys.argv) > 1 else ".")))
