"""How large (and how small) a scenario may be, and why: the bounds that keep every input
within what the simulation can hold in memory and finish in time.

The simulation keeps state per GPU (an engine per rollout group, a data-parallel rank per
trainer GPU, each priced one by one), per trajectory in flight (its row in the producer's
arrays, its queue entry, its KV-cache slot: about ``BYTES_PER_TRAJECTORY``, measured on
`twin run`), per turn of a multi-turn trajectory, per reward server and per reward attempt.
Each bound below is generous for real runs (the largest clusters, a few million trajectories
per step) and far below what would exhaust memory or run for hours; the message of a value
beyond it says what the value would cost.

Each ``check_*`` raises :class:`InputError` naming the scenario field; the models of
:mod:`twin.config.scenario` call them from small validators.
"""

from __future__ import annotations

import math

import numpy as np

from twin.errors import InputError

GB = 1e9

# Per GPU: an engine's request slots and running list (~3 KB at vLLM's defaults), a
# trainer rank's balance entries and cost terms; priced one by one per learner pass.
MAX_GPUS = 2**17                 # 131,072: the largest clusters built (~100k GPUs)
# GPUs of one NVLink domain: the topology graph holds two whole domains (NVLink 5 switches reach
# 576 GPUs; GB200/GB300 NVL72 ship 72).
MAX_DOMAIN_GPUS = 1024
BYTES_PER_GPU = 4_000

# Per trajectory in flight: producer rows (10 columns), its group's share, the engine's
# request slot, the workload sample and learner arrays; measured ~330 bytes on `twin run`
# (524,288 trajectories per step: +170 MB).
MAX_TRAJECTORIES = 2**22         # 4,194,304 in flight: ~1.4 GB
BYTES_PER_TRAJECTORY = 330

MAX_TURNS = 2**25                # turns of all trajectories in flight, 24 bytes each: ~0.8 GB
MAX_TOOL_CALLS = 1024            # per trajectory (agentic runs make tens)
MAX_OPTIMIZER_STEPS = 1024       # ppo_epochs × minibatches: each a learner pass priced rank by rank
MAX_REWARD_SERVERS = 2**21       # a queue server per CPU core or sandbox: 24 bytes each, cleared per call
MAX_ATTEMPTS = 2**26             # sandbox attempts sampled per step (1 + max_retries each): 9 bytes each
MAX_RETRIES = 100
MAX_SECONDS = 86_400.0           # one sample of a reward, tool call or sandbox run: at most a day
MAX_CONTEXT_TOKENS = 2**24       # 16,777,216 tokens: beyond any model's context
MAX_BATCHED_TOKENS = 2**20       # the engine's cost table has an entry per token of its budget
MAX_BLOCK_SIZE = 1024            # vLLM's KV blocks hold 1 to 256 tokens
MAX_MICRO_BATCH_TOKENS = 2**24
MAX_STEPS = 10_000               # run.steps: rates settle within tens of steps
MAX_STALENESS = 1024             # beyond run.steps it changes nothing
MIN_COMPUTE_SCALE = 1e-3         # a stack reaching under 0.1% of its kernels' rates is not one
MIN_BYTES_PER_S = 1e6            # 1 MB/s: a 7B model's weights would take 4 hours per sync


def _gb(n: float) -> str:
    n = min(n, 10**30) / GB
    return f"~{n:,.0f} GB" if n >= 10 else f"~{n:,.1f} GB"


def _n(x: int | float) -> str:
    """A count for a message: with thousands separators, or its order of magnitude."""
    if isinstance(x, int):
        return f"{x:,}" if x < 10**15 else f"~1e{int(x.bit_length() * 0.30103)}"
    return f"{x:,.4g}" if x < 1e15 else f"~1e{int(math.log10(x))}"


def reach(dist) -> float:
    """How far a distribution's samples go: its upper bound, or (unbounded) the 99.9th
    percentile of 100,000 draws, as the memory check reads it."""
    bound = dist.upper_bound()
    if np.isfinite(bound):
        return float(bound)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.quantile(dist.sample(np.random.default_rng(0), 100_000), 0.999))


def _which(dist) -> str:
    return "its bound" if np.isfinite(dist.upper_bound()) else "its 99.9th percentile"


def _spec(dist) -> dict:
    return dist.model_dump(mode="json", exclude_defaults=True)


def _at_most(field: str, value, limit, problem: str, allowed: str) -> None:
    if value > limit:
        raise InputError(problem, field=field, value=value, allowed=allowed)


# --------------------------------------------------------------------------- per model
def check_cluster(c) -> None:
    """Cluster: GPUs in all, CPU cores in all (the rule reward's servers), compute share."""
    total = c.nodes * c.gpus_per_node
    if total > MAX_GPUS:
        raise InputError(
            f"{_n(c.nodes)} nodes of {c.gpus_per_node} GPUs are {_n(total)} GPUs: the simulation keeps "
            f"and prices state for every GPU ({_gb(total * BYTES_PER_GPU)} here)",
            field="cluster.nodes", value=c.nodes,
            allowed=f"at most {MAX_GPUS:,} GPUs in all ({MAX_GPUS // c.gpus_per_node:,} nodes of "
            f"{c.gpus_per_node})")
    cores = c.nodes * c.cpu_cores
    if cores > MAX_REWARD_SERVERS:
        field = "cluster.host_cpu_cores" if c.host_cpu_cores else "cluster.nodes"
        raise InputError(
            f"{_n(c.nodes)} nodes of {_n(c.cpu_cores)} CPU cores are {_n(cores)} cores: the rule reward "
            f"simulates a queue server per core ({_gb(cores * 24)}, cleared at every call)",
            field=field, value=c.host_cpu_cores if c.host_cpu_cores else c.nodes,
            allowed=f"at most {MAX_REWARD_SERVERS:,} CPU cores in all "
            f"({MAX_REWARD_SERVERS // c.nodes:,} per node on {c.nodes:,} nodes)")


def check_compute_scale(scale: float) -> None:
    if scale < MIN_COMPUTE_SCALE:
        raise InputError(
            "a framework reaching under 0.1% of its GPU kernels' rates is not a training stack; "
            "every phase would last over 1000 times what the profile measures",
            field="cluster.compute_scale", value=scale,
            allowed=f"{MIN_COMPUTE_SCALE:g}..1 (fitted stacks reach 0.2..1)")


def check_rate(field: str, bytes_per_s: float | None) -> None:
    if bytes_per_s is not None and bytes_per_s < MIN_BYTES_PER_S:
        raise InputError("under 1 MB/s a 7B model's weights would take hours to move at every step",
                         field=field, value=bytes_per_s, allowed=f"at least {MIN_BYTES_PER_S:.0e} bytes/s")


def check_rollout(r) -> None:
    _at_most("placement.rollout.max_num_batched_tokens", r.max_num_batched_tokens, MAX_BATCHED_TOKENS,
             "the engine's cost table holds an entry per token of its budget "
             f"({_gb(r.max_num_batched_tokens * 32)} and as many cost evaluations here)",
             f"1..{MAX_BATCHED_TOKENS:,} (vLLM's default is 8,192; long-context runs use up to 131,072)")
    _at_most("placement.rollout.block_size", r.block_size, MAX_BLOCK_SIZE,
             "a KV-cache block that large is not a paged KV cache",
             f"1..{MAX_BLOCK_SIZE} tokens (vLLM's blocks hold 1 to 256; 16 by default)")


def check_trainer(t) -> None:
    _at_most("placement.trainer.micro_batch_tokens", t.micro_batch_tokens, MAX_MICRO_BATCH_TOKENS,
             "a micro-batch of more tokens than any context needs more activation memory than any GPU has",
             f"1..{MAX_MICRO_BATCH_TOKENS:,}")
    if t.logprob_micro_batch_tokens is not None:
        _at_most("placement.trainer.logprob_micro_batch_tokens", t.logprob_micro_batch_tokens,
                 MAX_MICRO_BATCH_TOKENS, "a micro-batch of more tokens than any context needs more memory "
                 "than any GPU has", f"1..{MAX_MICRO_BATCH_TOKENS:,}")


def check_algorithm(a) -> None:
    """Trajectories per step and in flight (with staleness), optimizer steps per RL step."""
    r, p, s = a.responses_per_prompt, a.prompts_per_step, a.staleness
    per_step = p * r
    allowed = (f"at most {MAX_TRAJECTORIES:,} trajectories in flight: "
               "prompts_per_step × responses_per_prompt × (1 + staleness)")
    if r > MAX_TRAJECTORIES:
        field, value, what = "algorithm.responses_per_prompt", r, f"{_n(r)} responses per prompt"
    elif per_step > MAX_TRAJECTORIES:
        field, value, what = ("algorithm.prompts_per_step", p,
                              f"{_n(p)} prompts × {_n(r)} responses = {_n(per_step)} trajectories per step")
    elif per_step * (1 + s) > MAX_TRAJECTORIES:
        field, value, what = ("algorithm.staleness", s,
                              f"{_n(per_step)} trajectories per step × {_n(1 + s)} steps in flight")
    else:
        field = None
    if field:
        raise InputError(f"{what}: the simulation keeps ~{BYTES_PER_TRAJECTORY} bytes per trajectory in "
                         f"flight ({_gb(per_step * (1 + s) * BYTES_PER_TRAJECTORY)} here)",
                         field=field, value=value, allowed=allowed)
    _at_most("algorithm.staleness", s, MAX_STALENESS, "more staleness than steps changes nothing",
             f"0..{MAX_STALENESS}")
    _at_most("algorithm.minibatches", a.minibatches, per_step,
             f"each mini-batch takes at least one of the step's {_n(per_step)} trajectories",
             f"1..{per_step:,} (prompts_per_step × responses_per_prompt)")
    steps = a.ppo_epochs * a.minibatches
    if steps > MAX_OPTIMIZER_STEPS:
        field, value = (("algorithm.minibatches", a.minibatches) if a.minibatches > 1
                        else ("algorithm.ppo_epochs", a.ppo_epochs))
        raise InputError(f"{_n(a.ppo_epochs)} epochs × {_n(a.minibatches)} mini-batches = {_n(steps)} optimizer steps "
                         "per RL step, each a learner pass the simulation prices rank by rank",
                         field=field, value=value,
                         allowed=f"ppo_epochs × minibatches at most {MAX_OPTIMIZER_STEPS:,}")
    k = a.updates_per_sync
    for name, value in (("prompts_per_step", a.prompts_per_step), ("minibatches", a.minibatches)):
        if value % k:
            raise InputError(f"{_n(k)} updates per sync split the step's {name} into equal chunks",
                             field="algorithm.updates_per_sync", value=k,
                             allowed=f"a divisor of algorithm.{name} ({value:,}); verl: prompts_per_step = "
                                     "trigger_parameter_sync_step × require_batches × ppo_mini_batch_size")
    _at_most("algorithm.dynamic_sampling.max_rounds", a.dynamic_sampling.max_rounds, 1000,
             "over-generating more than 1000 rounds for one batch is not a sampling strategy", "1..1000")


def check_evaluation(e) -> None:
    n = e.prompts * e.samples_per_prompt
    if n > MAX_TRAJECTORIES:
        field, value = ("evaluation.prompts", e.prompts) if e.prompts > e.samples_per_prompt else \
            ("evaluation.samples_per_prompt", e.samples_per_prompt)
        raise InputError(f"{_n(e.prompts)} prompts × {_n(e.samples_per_prompt)} samples = {_n(n)} evaluation "
                         f"rollouts: the simulation keeps ~{BYTES_PER_TRAJECTORY} bytes per rollout in flight "
                         f"({_gb(n * BYTES_PER_TRAJECTORY)} here)", field=field, value=value,
                         allowed=f"at most {MAX_TRAJECTORIES:,} rollouts (prompts × samples_per_prompt)")


def check_run(r) -> None:
    _at_most("run.steps", r.steps, MAX_STEPS,
             "the simulation would run for hours; step rates settle within tens of steps",
             f"1..{MAX_STEPS:,}")


def check_seconds(field: str, dist) -> None:
    """A per-sample duration (reward, tool call, sandbox run): at most a day."""
    far = reach(dist)
    if not far <= MAX_SECONDS:
        raise InputError(f"samples reach {far:.3g} s ({_which(dist)}): the simulation advances every step "
                         "to the last of them", field=field, value=_spec(dist),
                         allowed=f"samples of at most {MAX_SECONDS:,.0f} s (a day); give a 'max'")


def check_tokens(field: str, dist) -> None:
    far = reach(dist)
    if not far <= MAX_CONTEXT_TOKENS:
        raise InputError(f"samples reach {far:.3g} tokens ({_which(dist)}), beyond any model's context",
                         field=field, value=_spec(dist), allowed=f"at most {MAX_CONTEXT_TOKENS:,} tokens; give a 'max'")


MAX_WINDOWS = MAX_STEPS          # a schedule window per step at most


def check_schedule(w) -> None:
    """workload.schedule: windows ascending from the start, within the run's length bounds and
    the lengths the engines and trainer are sized for (workload.response_tokens' and
    workload.prompt_tokens' bounds)."""
    windows = w.schedule.windows
    if w.schedule.growth is not None and w.response_tokens.max is None:
        raise InputError("growing lengths need the max response length they are capped at",
                         field="workload.response_tokens.max", value=None,
                         allowed="the engine's max response length, e.g. max: 16384")
    _at_most("workload.schedule.windows", len(windows), MAX_WINDOWS,
             "a schedule window per step is the finest a run can use", f"at most {MAX_WINDOWS:,} windows")
    if windows and windows[0].from_step > 1:
        raise InputError("the first schedule window must start the run", field="workload.schedule.windows[0].from_step",
                         value=windows[0].from_step, allowed="0 or 1 (steps count from 1)")
    for i in range(1, len(windows)):
        if windows[i].from_step <= max(windows[i - 1].from_step, 1):
            raise InputError("schedule windows must ascend by from_step", field=f"workload.schedule.windows[{i}].from_step",
                             value=windows[i].from_step, allowed=f"> {max(windows[i - 1].from_step, 1)} "
                             f"(windows[{i - 1}].from_step)")
        _at_most(f"workload.schedule.windows[{i}].from_step", windows[i].from_step, MAX_STEPS,
                 "beyond the longest run", f"at most {MAX_STEPS:,}")
    cap, prompt_cap = float(w.max_response_tokens), w.prompt_tokens.upper_bound()
    for i, win in enumerate(windows):
        reach = win.response_tokens.upper_bound()
        if not reach <= cap:
            raise InputError(f"window {i}'s responses reach {reach:,.0f} tokens, beyond the max response length "
                             f"{cap:,.0f} (workload.response_tokens' bound, which sizes the engines)",
                             field=f"workload.schedule.windows[{i}].response_tokens", value=_spec(win.response_tokens),
                             allowed=f"a 'max' of at most {cap:,.0f}, or raise workload.response_tokens' bound")
        if win.prompt_tokens is not None:
            check_tokens(f"workload.schedule.windows[{i}].prompt_tokens", win.prompt_tokens)
            reach = win.prompt_tokens.upper_bound()
            if np.isfinite(prompt_cap) and not reach <= prompt_cap:
                raise InputError(f"window {i}'s prompts reach {reach:,.0f} tokens, beyond workload.prompt_tokens' "
                                 f"bound {prompt_cap:,.0f}, which sizes the engines and trainer",
                                 field=f"workload.schedule.windows[{i}].prompt_tokens", value=_spec(win.prompt_tokens),
                                 allowed=f"a 'max' of at most {prompt_cap:,.0f}, or raise workload.prompt_tokens' bound")


def check_tool_calls(dist) -> None:
    far = reach(dist)
    if not far <= MAX_TOOL_CALLS:
        raise InputError(f"samples reach {far:.3g} tool calls per trajectory ({_which(dist)})",
                         field="workload.multi_turn.tool_calls", value=_spec(dist),
                         allowed=f"at most {MAX_TOOL_CALLS:,}; give a 'max'")


def check_sandbox(r) -> None:
    """A sandbox pool's sizes and durations."""
    _at_most("reward.workers", r.workers, MAX_REWARD_SERVERS,
             "the simulation keeps a queue server per sandbox (24 bytes each, cleared at every call)",
             f"1..{MAX_REWARD_SERVERS:,}")
    _at_most("reward.max_retries", r.max_retries, MAX_RETRIES,
             "every attempt of every sample is drawn up front", f"0..{MAX_RETRIES}")
    _at_most("reward.timeout_s", r.timeout_s, MAX_SECONDS, "a sandbox run of over a day is not a reward",
             f"at most {MAX_SECONDS:,.0f} s")
    check_seconds("reward.latency_s", r.latency_s)


# --------------------------------------------------------------------------- across models
def check_scenario(s) -> None:
    """Bounds that join fields of several parts: sandbox attempts, turns in flight."""
    a, r = s.algorithm, s.reward
    in_flight = a.prompts_per_step * a.responses_per_prompt * (1 + a.staleness)
    tries = r.attempts_per_sample  # only retries (a sandbox's) make it more than one
    attempts = in_flight * tries
    if attempts > MAX_ATTEMPTS:
        raise InputError(f"{in_flight:,} trajectories in flight × {tries} attempts each: every "
                         f"attempt is drawn up front ({_gb(attempts * 9)})", field="reward.max_retries",
                         value=tries - 1, allowed=f"at most {MAX_ATTEMPTS:,} attempts in flight "
                         f"(max_retries <= {MAX_ATTEMPTS // in_flight - 1} with this batch)")
    mt = s.workload.multi_turn
    if mt is not None:
        turns = in_flight * (1 + mt.tool_calls.clipped_mean())
        if turns > MAX_TURNS:
            raise InputError(f"{in_flight:,} trajectories in flight × {1 + mt.tool_calls.clipped_mean():.3g} turns "
                             f"on average: the simulation keeps every turn ({_gb(turns * 24)})",
                             field="workload.multi_turn.tool_calls", value=mt.tool_calls.kind,
                             allowed=f"at most {MAX_TURNS:,} turns in flight: fewer tool calls or trajectories")
