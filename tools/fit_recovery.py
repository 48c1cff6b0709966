"""How well `twin fit` recovers known clipped lognormals from per-step summaries (docs/fit.md).

    PYTHONPATH=. python tools/fit_recovery.py

For each (median, sigma, cap) and seed: draws `steps` x `n` response lengths, writes the
summaries a run logs per step (mean, max, min, clip ratio; or without the clip ratio, or with
the max alone), fits them as one window, and compares the fit with the true distribution.
Prints mean |error| / worst |error| over the seeds.
"""

from __future__ import annotations

import math

import numpy as np

from twin.importers.logs import fit_lengths
from twin.importers.logs.lognormal import clipped_mean
from twin.importers.logs.readers import RESPONSE, Step

KNOWN = [(800, 0.5, 4096), (1500, 0.8, 4096), (3000, 0.6, 8192), (6000, 0.7, 8192), (500, 1.0, 2048),
         (2000, 0.3, 2400), (1000, 0.5, 16384), (3000, 1.2, 4096), (300, 0.4, 8192), (4000, 0.9, 16384)]


def trial(median, sigma, cap, n, steps, seed, keys, batch):
    rng = np.random.default_rng(seed)
    x = np.minimum(np.round(rng.lognormal(math.log(median), sigma, (steps, n))), cap)
    every = lambda r: {"response_length/mean": r.mean(), "response_length/max": r.max(),  # noqa: E731
                       "response_length/min": r.min(), "response_length/clip_ratio": (r >= cap).mean()}
    recs = [Step(i, "", {k: v for k, v in every(r).items() if k.split("/")[-1] in keys}) for i, r in enumerate(x)]
    out = fit_lengths(recs, RESPONSE, cap_hint=cap, batch=batch, what="response")["fitted"]
    return (out["mean"] / clipped_mean(math.log(median), sigma, cap) - 1, out["median"] / median - 1,
            out["sigma"] / sigma - 1, (x >= cap).mean())


def table(title, n, steps, keys, batch=None, seeds=20):
    print(f"\n{title}: {steps} steps x {n} responses, keys {', '.join(keys)}, batch told: {batch or n}")
    print("| median | sigma | cap | clip ratio | mean err % (avg / worst) | median err % | sigma err % |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    worst = np.zeros(3)
    for median, sigma, cap in KNOWN:
        r = np.array([trial(median, sigma, cap, n, steps, s, keys, batch or n) for s in range(seeds)])
        a = np.abs(r[:, :3]) * 100
        worst = np.maximum(worst, a.max(0))
        print(f"| {median} | {sigma} | {cap} | {r[:, 3].mean():.3f} | " + " | ".join(
            f"{a[:, i].mean():.1f} / {a[:, i].max():.1f}" for i in range(3)) + " |")
    print(f"worst over all: mean {worst[0]:.1f}%, median {worst[1]:.1f}%, sigma {worst[2]:.1f}%")


if __name__ == "__main__":
    all_keys = ("mean", "max", "min", "clip_ratio")
    table("A. every summary", 1024, 16, all_keys)
    table("B. a short window", 256, 4, all_keys)
    table("C. no clip ratio logged (sigma from min/max)", 1024, 16, ("mean", "max", "min"))
    table("D. no clip ratio, no min (sigma from max vs mean)", 1024, 16, ("mean", "max"))
    table("E. every summary, batch size wrongly assumed 4x", 1024, 16, ("mean", "max", "min"), batch=4096)
