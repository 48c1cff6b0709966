"""Write a verl-style JSONL run log from the twin itself, with known stack properties: the test bed
of ``twin fit --profile`` (tests/importers/logs/test_profile.py), whose fit must recover what made the log.

Each window of steps has its own lognormal response lengths; every step logs the summaries verl
logs (response_length/mean, max, min, clip_ratio: drawn from that window's distribution, a batch
of the scenario's size) and the phases the twin simulates for the window with the given
properties (timing_s/gen, old_log_prob, update_actor, update_weights).

    python tools/make_twin_log.py SCENARIO OUT.jsonl --set cluster.compute_scale=0.6 ...
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from twin import runner
from twin.config.load import apply_overrides, load_scenario

MEDIANS = (500.0, 700.0, 900.0, 1100.0)


def make(scenario: str, overrides: dict, steps_per_window: int = 3, medians=MEDIANS, sigma: float = 0.5,
         seed: int = 0) -> list[dict]:
    """The log's records: ``len(medians)`` windows of ``steps_per_window`` steps."""
    from twin.config.io import read_mapping
    from twin.config.load import scenario_path

    data = apply_overrides(read_mapping(scenario_path(scenario)), overrides)
    base = load_scenario(data)
    cap = base.workload.response_tokens.upper_bound()
    batch = base.algorithm.prompts_per_step * base.algorithm.responses_per_prompt
    rng = np.random.default_rng(seed)
    records, step = [], 1
    for median in medians:
        dist = {"kind": "lognormal", "median": median, "sigma": sigma, "max": cap}
        report = runner.run(apply_overrides(data, {"workload.response_tokens": dist})).to_dict()
        b, c = report["breakdown"], report["counters"]
        for _ in range(steps_per_window):
            drawn = np.minimum(np.rint(rng.lognormal(np.log(median), sigma, batch)).clip(1), cap)
            records.append({"step": step, "data": {
                "response_length/mean": float(drawn.mean()), "response_length/max": float(drawn.max()),
                "response_length/min": float(drawn.min()), "response_length/clip_ratio": float((drawn >= cap).mean()),
                "timing_s/gen": b["generation"], "timing_s/update_actor": b["update_actor"],
                **({"timing_s/old_log_prob": b["old_logprob"]} if "old_logprob" in b else {}),
                "timing_s/update_weights": c["weight_sync_s"]}})
            step += 1
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("out")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    args = ap.parse_args()
    overrides = {}
    for item in args.set:
        k, _, v = item.partition("=")
        overrides[k] = float(v)
    with open(args.out, "w") as f:
        for r in make(args.scenario, overrides):
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
