"""Fixed costs: one dispatched operation, and one engine iteration of an eager decoder.

The iteration benchmark runs the probe's static engine (Llama-style layers, KV cache,
sampling, the host reading back the sampled tokens) at batch 1 and negligible width, for
1, 2, 4 and 8 layers: at that width every operation costs only its dispatch, so the time
is ``per_iteration + layers · ops_per_layer · per_op`` and a line through the points
gives both (calibrate.fit.overhead_fit). The single tiny ``add`` is kept as a cross-check:
it is the floor of dispatch without any Python around it.
"""

from __future__ import annotations

from calibrate.suites import Spec, coarse_to_fine, params
from calibrate.timing import Budget, Clock, median_time

LAYERS = (1, 2, 4, 8)


def plan(device: str, quick: bool, budget: Budget, clock: Clock) -> list[Spec]:
    from calibrate.probe.opcount import op_count

    per_layer = op_count("decode").per_layer
    out = [Spec(key="overhead/kernel", suite="overhead", op="kernel", dtype="fp32", size=1.0,
                params=params(op="add_"), measure=_kernel(device, budget, clock))]
    for layers in LAYERS:
        out.append(Spec(key=f"overhead/decode_iteration/layers={layers}", suite="overhead",
                        op="decode_iteration", dtype="fp32", size=float(layers),
                        params=params(layers=layers, ops_per_layer=per_layer),
                        measure=decode_iteration(device, layers, budget, clock)))
    from calibrate.probe.hf import available

    if available():  # transformers' generate, as TRL runs it without vLLM (twin: engine hf_generate)
        # quick: its line needs two layer counts (1 and 8, the ends); the others are optional
        needed = coarse_to_fine(LAYERS)[:2] if quick else LAYERS
        for layers in sorted(LAYERS, key=lambda n: n not in needed):
            out.append(Spec(key=f"overhead/hf_generate_step/layers={layers}", suite="overhead",
                            op="hf_generate_step", dtype="fp32", size=float(layers), params=params(layers=layers),
                            measure=hf_generate_step(device, layers, budget, clock), optional=layers not in needed))
    return out


HF_SHORT, HF_LONG = 2, 18  # new tokens of the two timed generate calls (their difference: 16 steps)


def hf_generate_step(device, layers, budget, clock):
    """One decode step of transformers' ``generate`` on a ``layers``-layer model of negligible
    width at batch 1: the difference of two timed calls (HF_LONG and HF_SHORT new tokens) over
    the steps between them, so that the call's setup and prefill cancel."""
    def run():
        import torch

        from calibrate.probe.hf import generate_hf, hf_model
        from calibrate.probe.model import DecoderConfig

        cfg = DecoderConfig(hidden=32, layers=layers, heads=2, kv_heads=1, intermediate=64, vocab=64,
                            max_positions=256, name="overhead")
        model = hf_model(cfg).to(device)
        prompts = torch.zeros(1, 4, dtype=torch.long, device=device)
        short, n = median_time(lambda: generate_hf(model, prompts, [HF_SHORT]), clock, budget)
        long, m = median_time(lambda: generate_hf(model, prompts, [HF_LONG]), clock, budget)
        return max(long - short, 0.0) / (HF_LONG - HF_SHORT), min(n, m)

    return run


def _kernel(device, budget, clock):
    def run():
        import torch

        x = torch.zeros(8, device=device)
        return median_time(lambda: x.add_(1.0), clock, budget)

    return run


def decode_iteration(device, layers, budget, clock):
    """A measurement of one eager decode iteration of ``layers`` tiny layers (see the module doc)."""
    def run():
        import torch

        from calibrate.probe.engine import StaticEngine
        from calibrate.probe.model import Decoder, DecoderConfig

        cfg = DecoderConfig(hidden=32, layers=layers, heads=2, kv_heads=1, intermediate=64, vocab=64,
                            max_positions=4096, name="overhead")
        model = Decoder(cfg).to(device)
        gen = torch.Generator(device=device).manual_seed(0)
        prompts = torch.zeros(1, 4, dtype=torch.long, device=device)
        engine = StaticEngine(model, prompts, [4000], gen)
        with torch.no_grad():
            engine.start()
            return median_time(engine.step, clock, budget)

    return run
