"""``twin validate --probe``: run the probe loop here, predict it with the twin, compare.

One profile (calibrated on this machine) serves every configuration; nothing is tuned per
configuration. A configuration passes when its step time is within ``STEP_TOLERANCE`` and
every phase within ``PHASE_TOLERANCE`` of the measurement (relative error of the median
over the measured steps). The exit code is 1 when any configuration fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from calibrate.probe.loop import PHASES, ProbeConfig, run_probe
from calibrate.probe.model import DecoderConfig

STEP_TOLERANCE = 0.15
PHASE_TOLERANCE = 0.25
# A dispatch check this far from its calibrated price says the machine is not the one profiled.
# (It under-reads: timed back to back for 150 s, generation moved ~+28% while it moved ~+5%.)
DRIFT_NOTICE = 0.05

# Sized for a 2-core CPU: each runs in a few seconds. They differ in model size and shape,
# batch, response lengths and engine kind.
CPU_CONFIGS = (
    ProbeConfig("small-static", DecoderConfig(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=352,
                                              vocab=512, name="probe-small"),
                prompts=4, group=4, prompt_len=32, response_min=16, response_max=64, engine="static",
                reward_workers=4, reward_latency_s=0.02, steps=5, warmup_steps=3),
    ProbeConfig("medium-continuous", DecoderConfig(hidden=256, layers=4, heads=4, kv_heads=2, intermediate=704,
                                                   vocab=1024, name="probe-medium"),
                prompts=8, group=4, prompt_len=32, response_min=16, response_max=96, engine="continuous",
                slots=16, reward_workers=4, reward_latency_s=0.02, steps=5, warmup_steps=3),
    ProbeConfig("wide-static-long", DecoderConfig(hidden=384, layers=3, heads=6, kv_heads=2, intermediate=1024,
                                                  vocab=1024, name="probe-wide"),
                prompts=4, group=2, prompt_len=64, response_min=64, response_max=160, engine="static",
                reward_workers=2, reward_latency_s=0.03, steps=5, warmup_steps=3),
    ProbeConfig("deep-continuous", DecoderConfig(hidden=192, layers=8, heads=6, kv_heads=3, intermediate=512,
                                                 vocab=768, name="probe-deep"),
                prompts=6, group=4, prompt_len=24, response_min=8, response_max=80, engine="continuous",
                slots=8, reward_workers=6, reward_latency_s=0.01, steps=5, warmup_steps=3),
)
# TRL's GRPOTrainer without vLLM (issue 22): transformers' own generate over the whole batch
# (calibrate.probe.hf), predicted with the twin's hf_generate engine; run when transformers is
# installed (pip install '.[hf]').
TRL_CONFIGS = (
    ProbeConfig("trl-hf-small", DecoderConfig(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=352,
                                              vocab=512, name="probe-small"),
                prompts=4, group=4, prompt_len=32, response_min=16, response_max=64, engine="hf_generate",
                reward_workers=4, reward_latency_s=0.02, steps=5, warmup_steps=3),
    ProbeConfig("trl-hf-medium", DecoderConfig(hidden=256, layers=4, heads=4, kv_heads=2, intermediate=704,
                                               vocab=1024, name="probe-medium"),
                prompts=8, group=4, prompt_len=32, response_min=32, response_max=128, engine="hf_generate",
                reward_workers=4, reward_latency_s=0.02, steps=5, warmup_steps=3),
)
DEFAULT_CONFIGS = CPU_CONFIGS  # the CPU set (CI and tests); GPU_CONFIGS for --device cuda

# Sized for one large GPU (0.5-3 B parameters, 64-512 sequences), bf16, so that the
# three run in about three minutes on an H100/H200 class GPU: the probe's eager generation
# dispatches every op from Python (~66 per layer per iteration), so an iteration costs a few
# ms of host time whatever the model, and responses are kept at 256-1024 tokens.
_GPU_VOCAB = 32768
GPU_CONFIGS = (
    ProbeConfig("gpu-0.5b-static", DecoderConfig(hidden=896, layers=24, heads=14, kv_heads=2, intermediate=4864,
                                                 vocab=_GPU_VOCAB, max_positions=2048, name="probe-0.5b",
                                                 dtype="bf16"),
                prompts=16, group=4, prompt_len=128, response_min=256, response_max=512, engine="static",
                reward_workers=8, reward_latency_s=0.02, steps=2, micro_rows=16),
    ProbeConfig("gpu-1.5b-continuous", DecoderConfig(hidden=1536, layers=28, heads=12, kv_heads=2,
                                                     intermediate=8960, vocab=_GPU_VOCAB, max_positions=2048,
                                                     name="probe-1.5b", dtype="bf16"),
                prompts=32, group=4, prompt_len=128, response_min=128, response_max=768, engine="continuous",
                slots=64, reward_workers=8, reward_latency_s=0.02, steps=2, micro_rows=16),
    ProbeConfig("gpu-3b-static", DecoderConfig(hidden=2048, layers=36, heads=16, kv_heads=2, intermediate=11008,
                                               vocab=_GPU_VOCAB, max_positions=2048, name="probe-3b",
                                               dtype="bf16"),
                prompts=16, group=4, prompt_len=256, response_min=256, response_max=512, engine="static",
                reward_workers=8, reward_latency_s=0.02, steps=2, micro_rows=8),
)


def configs_for(device: str) -> tuple[ProbeConfig, ...]:
    """The configurations sized for ``device``; TRL's when transformers is installed."""
    from calibrate.probe.hf import available

    base = GPU_CONFIGS if device.startswith("cuda") else CPU_CONFIGS
    return base + (TRL_CONFIGS if available() and not device.startswith("cuda") else ())


@dataclass
class Comparison:
    """Predicted and measured seconds of one configuration, per phase and for the step."""

    config: str
    predicted: dict[str, float]
    measured: dict[str, float]
    failures: list[str] = field(default_factory=list)
    # an eager decode iteration (DISPATCH_LAYERS layers) as calibrated, and timed just before
    # and just after this configuration ran: whether the machine is still the profiled one
    dispatch_s: dict[str, float] = field(default_factory=dict)
    # the step `twin run` gives this configuration's scenario (calibrate.predict.simulated_step_s)
    simulated_step_s: float | None = None

    def error(self, key: str) -> float:
        return (self.predicted[key] - self.measured[key]) / self.measured[key]

    @property
    def ok(self) -> bool:
        return not self.failures


def compare(name: str, predicted: dict[str, float], measured: dict[str, float]) -> Comparison:
    cmp = Comparison(name, predicted, measured)
    for key in (*PHASES, "step"):
        tol = STEP_TOLERANCE if key == "step" else PHASE_TOLERANCE
        if abs(cmp.error(key)) > tol:
            cmp.failures.append(f"{key} {cmp.error(key):+.0%} (tolerance ±{tol:.0%})")
    return cmp


DISPATCH_LAYERS = 4


def calibrated_iteration_s(profile_path: Path, layers: int = DISPATCH_LAYERS) -> float:
    """The profile's price of one tiny eager decode iteration: per_iteration + layers · ops · per_kernel."""
    import yaml

    from calibrate.probe.opcount import op_count

    o = (yaml.safe_load(Path(profile_path).read_text()) or {})["overhead"]
    return o["per_iteration_s"] + layers * op_count("decode").per_layer * o["per_kernel_s"]


def iteration_now_s(device: str, layers: int = DISPATCH_LAYERS) -> float:
    """One tiny eager decode iteration timed now, as the overhead suite times it."""
    from calibrate.suites.overhead import decode_iteration
    from calibrate.timing import QUICK, Clock

    return decode_iteration(device, layers, QUICK, Clock(device))()[0]


def run(profile_path: Path, configs=DEFAULT_CONFIGS, progress=None, device: str = "cpu") -> list[Comparison]:
    """Run each configuration on ``device``, predict it from ``profile_path``, compare. Around
    each configuration the host's dispatch speed is timed again (an eager decode iteration),
    so that a miss on a machine that drifted since calibration shows as such."""
    from calibrate.predict import predict_median, simulated_step_s

    calibrated = calibrated_iteration_s(profile_path)
    out = []
    for cfg in configs:
        before = iteration_now_s(device)
        result = run_probe(cfg, progress, device)
        after = iteration_now_s(device)
        measured = {p: result.median(p) for p in (*PHASES, "step")}
        predicted = predict_median(cfg, Path(profile_path), [s.targets for s in result.steps])
        cmp = compare(cfg.name, predicted, measured)
        cmp.dispatch_s = {"calibrated": calibrated, "before": before, "after": after}
        cmp.simulated_step_s = simulated_step_s(cfg, Path(profile_path))
        out.append(cmp)
    return out


def render(comparisons: list[Comparison]) -> str:
    lines = [f"{'configuration':20s} {'phase':13s} {'predicted s':>12s} {'measured s':>11s} {'error':>7s}"]
    for c in comparisons:
        for key in (*PHASES, "step"):
            lines.append(f"{c.config:20s} {key:13s} {c.predicted[key]:12.4f} {c.measured[key]:11.4f} "
                         f"{c.error(key):+7.1%}")
        lines.append(f"{'':20s} {'-> ' + ('within tolerance' if c.ok else 'MISS: ' + '; '.join(c.failures))}")
        if c.simulated_step_s is not None:
            miss = c.simulated_step_s / c.measured["step"] - 1
            lines.append(f"{'':20s}    twin run on this scenario (the simulator, its own draws of these lengths, "
                         f"without the probe's dispatch terms): step {c.simulated_step_s:.4f} s ({miss:+.1%})")
        if c.dispatch_s:
            d = c.dispatch_s
            drift = [d[k] / d["calibrated"] - 1 for k in ("before", "after")]
            lines.append(f"{'':20s}    host dispatch (an eager {DISPATCH_LAYERS}-layer decode iteration): "
                         f"{d['calibrated'] * 1e3:.3f} ms calibrated, {d['before'] * 1e3:.3f} ms before "
                         f"({drift[0]:+.0%}), {d['after'] * 1e3:.3f} ms after ({drift[1]:+.0%})")
            if max(abs(x) for x in drift) > DRIFT_NOTICE:
                lines.append(f"{'':20s}    the machine changed since calibration: part of this error is the "
                             "machine's (this check moved less than generation did when both were timed)")
    lines.append(summary(comparisons))
    return "\n".join(lines)


def summary(comparisons: list[Comparison]) -> str:
    """One line: configurations inside every tolerance, and the worst step error."""
    ok = sum(c.ok for c in comparisons)
    worst = max(comparisons, key=lambda c: abs(c.error("step")))
    return (f"validate --probe: {ok}/{len(comparisons)} configurations within tolerance (step ±{STEP_TOLERANCE:.0%}, "
            f"each phase ±{PHASE_TOLERANCE:.0%}); worst step {worst.error('step'):+.1%} {worst.config}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``twin validate --probe`` and ``python -m calibrate.validate_probe``."""
    p = argparse.ArgumentParser(prog="twin validate --probe", description=(
        "Run the probe RL loop on this machine's CPU or GPU for several configurations, predict each with the twin "
        "from a profile calibrated here, print predicted vs measured per phase. Exit 1 when a configuration "
        f"misses (step ±{STEP_TOLERANCE:.0%}, phase ±{PHASE_TOLERANCE:.0%})."))
    p.add_argument("--profile", type=Path, default=None,
                   help="a profile calibrated on this machine (default: run `python -m calibrate --device DEVICE "
                        "--quick` first into a temporary folder)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="where the probe runs (default: the profile's kind, gpu -> cuda; without a profile, cuda "
                        "when a GPU is visible); selects the configuration set sized for it")
    p.add_argument("--only", default=None, help="comma-separated configuration names")
    p.add_argument("--json", dest="json_path", type=Path, default=None, help="also write the comparison as JSON")
    args = p.parse_args(argv)
    if args.profile is not None and not args.profile.is_file():
        print(f"validate --probe: error: profile not found: {args.profile}", file=sys.stderr)
        return 2
    device = args.device or _default_device(args.profile)
    if device == "cuda" and not _cuda_available():
        print("validate --probe: error: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    all_configs = configs_for(device)
    configs = all_configs
    if args.only:
        names = [n.strip() for n in args.only.split(",")]
        unknown = [n for n in names if n not in {c.name for c in all_configs}]
        if unknown:
            print(f"validate --probe: error: unknown configuration {unknown[0]!r} for {device}; allowed: "
                  + ", ".join(c.name for c in all_configs), file=sys.stderr)
            return 2
        configs = tuple(c for c in all_configs if c.name in names)
    progress = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        profile = args.profile
        if profile is None:
            from calibrate.cli import main as calibrate_main

            profile = Path(tmp) / f"{device}.yaml"
            code = calibrate_main(["--device", device, "--quick", "--only", "matmul,memory,attention,overhead",
                                   "--out", str(profile)])
            if code:
                return code
        comparisons = run(profile, configs, progress, device)
    print(render(comparisons))
    if args.json_path:
        args.json_path.write_text(json.dumps([c.__dict__ for c in comparisons], indent=2) + "\n")
    return 0 if all(c.ok for c in comparisons) else 1


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _default_device(profile: Path | None) -> str:
    if profile is not None:
        import yaml

        data = yaml.safe_load(profile.read_text()) or {}
        return "cuda" if data.get("kind") == "gpu" else "cpu"
    return "cuda" if _cuda_available() else "cpu"


if __name__ == "__main__":
    sys.exit(main())
