"""Generated bad (and good) input for the ``twin`` command: mutated built-in scenarios and overrides.

One case is a scenario file's text (or None: a built-in scenario) and the command-line
arguments after it. :func:`case` draws one from a seeded generator, so a run is reproducible;
``tools/fuzz.py`` runs many through the real command, ``tests/test_fuzz.py`` a few in process.
Every case must end in exit 0 (and a sane report) or exit 2 with one ``twin: error:`` line:
never a traceback, a hang or a blown memory limit.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"

# Where a mutation lands: every section and the size fields that drive allocations.
PATHS = [
    "name", "model", "model.num_layers", "model.hidden_size", "model.num_heads", "model.vocab_size",
    "cluster.nodes", "cluster.gpus_per_node", "cluster.gpu", "cluster.host_cpu_cores", "cluster.nics_per_node",
    "cluster.compute_scale", "cluster.inter_node_link", "cluster.intra_node_link",
    "placement.mode", "placement.rollout.gpus", "placement.rollout.tp", "placement.rollout.max_num_seqs",
    "placement.rollout.max_num_batched_tokens", "placement.rollout.block_size",
    "placement.rollout.gpu_memory_utilization", "placement.rollout.engine", "placement.rollout.router",
    "placement.trainer.gpus", "placement.trainer.tp", "placement.trainer.pp", "placement.trainer.sp",
    "placement.trainer.zero_stage", "placement.trainer.micro_batch_tokens", "placement.reward_model_gpus",
    "algorithm.name", "algorithm.prompts_per_step", "algorithm.responses_per_prompt", "algorithm.minibatches",
    "algorithm.ppo_epochs", "algorithm.staleness", "algorithm.partial_rollout",
    "algorithm.dynamic_sampling.zero_variance_fraction", "algorithm.dynamic_sampling.max_rounds",
    "workload.prompt_tokens", "workload.response_tokens", "workload.response_tokens.max",
    "workload.multi_turn", "reward", "reward.kind", "reward.workers", "reward.cpu_seconds",
    "reward.max_retries", "reward.latency_s", "weight_sync.method", "weight_sync.storage_bytes_per_s",
    "weight_sync.bucket_bytes", "weight_sync.gather_convert_bytes_per_s",
    "evaluation.every_steps", "evaluation.prompts", "run.steps", "run.seed", "run.steady_tolerance",
    # added with framework profiles, streaming updates, MoE layouts, precision, schedules
    "framework", "algorithm.updates_per_sync", "placement.trainer.ep", "placement.trainer.cp",
    "placement.trainer.expert_load_imbalance", "placement.trainer.controller_positions_per_s",
    "placement.trainer.dtype", "placement.rollout.pp", "placement.rollout.expert_parallel",
    "placement.rollout.dp_attention", "placement.rollout.dtype", "placement.rollout.kv_dtype",
    "weight_sync.expert_transfer", "weight_sync.delta", "weight_sync.delta_density",
    "weight_sync.call_overhead_s", "weight_sync.tensor_overhead_s", "workload.schedule",
    "workload.schedule.growth", "workload.schedule.windows",
]

NUMBERS = [0, -1, 1, 2, 3, 7, 1e-300, 1e300, 10**12, 125_000_000_000, 10**9, 1e12, 0.5, 2**63, -(2**63),
           float("nan"), float("inf"), float("-inf"), 1.5, 10_000_000]
ODD = [True, False, None, "", "abc", "1e3", [], [1, 2], {}, {"kind": "fixed"}, {"a": {"b": {"c": 1}}},
       "\u00e9\u00e8", "x" * 5000]
DISTRIBUTIONS = [
    {"kind": "fixed", "value": float("nan")}, {"kind": "uniform", "low": 1, "high": float("inf")},
    {"kind": "lognormal", "median": 100, "sigma": 1e6, "max": 4096},
    {"kind": "mixture", "min": 1, "max": 100, "components": [{"weight": float("inf"), "mean": 10, "sd": 1}]},
    {"kind": "mixture", "min": 1, "max": 100, "components": [{"weight": 1, "mean": float("nan"), "sd": 1}]},
    {"kind": "empirical", "values": [1, 2], "weights": [float("inf"), 1]},
    {"kind": "empirical", "values": [], "weights": []},
    {"kind": "fixed", "value": 1e12}, {"kind": "fixed", "value": -5}, {"kind": "normal"},
]


def _yaml_value(value) -> str:
    """A value as YAML text for ``--set`` (inf and nan in YAML's own spelling)."""
    if isinstance(value, float) and value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == float("-inf"):
        return "-.inf"
    return yaml.safe_dump(value, default_flow_style=True, width=10**9).strip().removesuffix("\n...")


def _set(data: dict, path: str, value) -> None:
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {} if child is None or not isinstance(child, str) else {"preset": child}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _value(rng: random.Random):
    pick = rng.random()
    if pick < 0.45:
        return rng.choice(NUMBERS)
    if pick < 0.7:
        return rng.choice(DISTRIBUTIONS)
    return rng.choice(ODD)


def _text_attack(rng: random.Random, base: str) -> str:
    """Hostile YAML text: deep nesting, an alias bomb, duplicate keys, bad bytes, garbage."""
    kind = rng.randrange(7)
    if kind == 0:
        depth = rng.choice([50, 500, 5000])
        return base + "\ndescription: " + "[" * depth + "]" * depth + "\n"
    if kind == 1:
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
        return "\n".join(lines) + f"\n{base}\ndescription: *a8\n"
    if kind == 2:
        return base + "\nrun: {steps: 1}\nrun: {steps: 2}\n"
    if kind == 3:
        return base.replace("name:", "name: \udcff", 1)
    if kind == 4:
        return rng.choice(["", "- a\n- b\n", "just text", "{", "a: [1, 2", "\t\tbad: indent", "42"])
    if kind == 5:
        return base + "\nplacement: {rollout: {tp: 1, tp: 2}}\n"
    return base + "\n" + "x: " + "{" * 200 + "}" * 200 + "\n"


def builtin_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


def case(rng: random.Random) -> tuple[str | None, list[str]]:
    """One case: (scenario file text or None, arguments after ``twin``)."""
    name = rng.choice(builtin_names())
    command = rng.choice(["check", "check", "run"])
    small = ["--set", "run.steps=1", "--set", "algorithm.prompts_per_step=4"]
    args = [command] + (["--no-verdict"] if command == "run" else [])
    roll = rng.random()
    if roll < 0.15:  # hostile file text
        text = _text_attack(rng, (SCENARIOS / f"{name}.yaml").read_text())
        return text, args + small
    if roll < 0.6:  # a mutated file
        data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
        for _ in range(rng.randint(1, 3)):
            _set(data, rng.choice(PATHS), _value(rng))
        text = yaml.safe_dump(data, allow_unicode=True, width=10**9)
        return text, args + small
    # a built-in with bad overrides (or a bad pressure)
    sets = []
    for _ in range(rng.randint(1, 3)):
        sets += ["--set", f"{rng.choice(PATHS)}={_yaml_value(_value(rng))}"]
    if rng.random() < 0.1:
        sets += ["--set", rng.choice(["=1", "noequals", "a..b=1", "placement.rollout.gpus.x=1"])]
    if command == "check" and rng.random() < 0.25:
        return None, ["whatif", name, *small, *sets[:2], "--pressure",
                      rng.choice(["placement.rollout.gpus=abc", "more_gpus", "cluster.nodes=0",
                                  "placement.rollout.gpus=24,placement.trainer.gpus=40", "reward_x2"])]
    return None, [args[0], name, *args[1:], *small, *sets]
