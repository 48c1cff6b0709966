"""Does a scenario describe the logged run? What ``twin fit --case`` checks before it writes a case.

A log names neither the model nor the device, but it says how large a step was and how long it
took: the tokens a step held (verl's ``perf/total_num_tokens``, TRL's running ``num_tokens``),
the lengths, and the step time. From these:

- **batch**: the tokens a logged step held against the scenario's ``prompts_per_step ×
  responses_per_prompt`` trajectories of the mean prompt (the log's, else the scenario's) + response;
- **response cap**: a logged response longer than the scenario's cap;
- **model size and device**: the training FLOPs a step needs on the scenario's model (6 × active
  parameters × tokens, the dense-transformer count of Kaplan et al. 2020) over the logged step
  time, as a share of the scenario's GPUs' peak. Above 100% the run cannot have been on that
  model and those GPUs; below ``LOWEST_SHARE`` the log's model is far smaller or its device far
  slower (a CPU run against an H100 scenario).
"""

from __future__ import annotations

from twin.importers.logs.readers import SCALE, Step

BATCH_RATIO = 1.5      # a logged batch within ×1.5 of the scenario's is the same batch (lengths vary)
# The step's training FLOPs as a share of the GPUs' peak, below which the scenario's GPUs would idle
# 99.8% of the logged step: not a configuration anyone runs, so the log came from a smaller model
# or a slower device. A bound on purpose far below any RL step's share, not a fitted figure.
LOWEST_SHARE = 0.002


def _tokens_per_step(steps: list[Step]) -> float | None:
    """Mean tokens a logged step held: verl's per-step figure, or TRL's running count differenced."""
    per_step = [s.values[k] for s in steps for k in SCALE["tokens_per_step"] if k in s.values]
    if per_step:
        return sum(per_step) / len(per_step)
    seen = [(s.step, s.values[k]) for s in steps for k in SCALE["tokens_seen"] if k in s.values]
    deltas = [(b - a) / (j - i) for (i, a), (j, b) in zip(seen, seen[1:]) if j > i and b >= a]
    if not deltas and len(seen) == 1 and seen[0][0] == 1:
        deltas = [seen[0][1]]  # the first step's count is its own tokens
    return sum(deltas) / len(deltas) if deltas else None


def differences(scenario, steps: list[Step], last: dict) -> list[str]:
    """What differs between ``scenario`` and the run of ``steps`` (the case's window; ``last`` its
    fit), each a sentence naming both figures; empty when nothing the log shows differs."""
    out = []
    alg = scenario.algorithm
    batch = alg.prompts_per_step * alg.responses_per_prompt
    response = last["response"]["observed"]
    prompt_mean = last["prompt"]["observed"]["mean"] if last["prompt"] else \
        scenario.workload.prompt_tokens.clipped_mean()
    tokens = _tokens_per_step(steps)
    if tokens and response["mean"]:
        # Compared in tokens: TRL logs no prompt length, so the trajectories are only an estimate.
        per_trajectory = prompt_mean + response["mean"]
        expected = batch * per_trajectory
        if not 1 / BATCH_RATIO <= tokens / expected <= BATCH_RATIO:
            out.append(f"batch: the log's steps hold {tokens:,.0f} tokens (about {tokens / per_trajectory:,.0f} "
                       f"trajectories of {per_trajectory:,.0f}); the scenario's {batch:,} trajectories "
                       f"({alg.prompts_per_step} prompts × {alg.responses_per_prompt}) hold about {expected:,.0f}")
    cap = scenario.workload.response_tokens.upper_bound()
    if response["max"] and response["max"] > cap:
        out.append(f"response cap: the log's responses reach {response['max']:,.0f} tokens; the scenario's "
                   f"cap is {cap:,.0f}")
    step_time = next((t["mean"] for t in last["timings"].values() if t["metric"] == "step_time_s"), None)
    if step_time:
        trained = tokens or batch * (prompt_mean + response["mean"])
        model, cluster = scenario.model, scenario.cluster
        flops = 6 * model.active_params * trained
        share = flops / step_time / (cluster.total_gpus * cluster.gpu.compute.peak(model.dtype))
        what = (f"{model.active_params / 1e9:,.3g} B-parameter model on {cluster.total_gpus} × {cluster.gpu.name}")
        if share > 1:
            out.append(f"model size or device: training the logged {trained:,.0f} tokens on the scenario's {what} "
                       f"needs {share:,.1f}× the logged {step_time:.3g} s step at full peak: the run's model is "
                       "smaller or its devices faster or more")
        elif share < LOWEST_SHARE:
            out.append(f"model size or device: in the logged {step_time:.3g} s step the scenario's {what} would "
                       f"train at {share:.2%} of peak (below {LOWEST_SHARE:.1%}: idle GPUs): the run's model "
                       "is far smaller or its devices far slower (a CPU?)")
    return out
