"""``twin check``: the resolved plan, memory per role, and tier-1 phase estimates."""

from __future__ import annotations

from typing import Any

import yaml

from twin.config.plan import Plan
from twin.config.scenario import resolved_dict
from twin.config.warnings import warnings
from twin.cost.engine import engine_costs
from twin.cost.memory import GiB, memory_report, resident_trainer_bytes
from twin.cost.mixers import mix_note
from twin.cost.phases import generation_bound, phase_estimates, sample_step, step_estimate


def check_report(plan: Plan) -> dict[str, Any]:
    """Everything ``twin check`` shows, as data (also its --json output)."""
    memory = memory_report(plan)
    report: dict[str, Any] = {
        "scenario": resolved_dict(plan.scenario),
        "plan": plan.summary(),
        "warnings": warnings(plan),
        "memory": {
            m.role: {
                "items_gib": {k: round(v / GiB, 3) for k, v in m.items.items()},
                "used_gib": round(m.used_bytes / GiB, 3),
                "capacity_gib": round(m.capacity_bytes / GiB, 3),
                "fits": m.fits,
                "problem": m.problem,
            }
            for m in memory
        },
    }
    if plan.mode.shares_gpus:  # beside the engine's budget on every shared GPU, while it generates
        report["memory"]["rollout"]["trainer_resident_gib"] = round(resident_trainer_bytes(plan) / GiB, 3)
    if all(m.fits for m in memory):
        step = sample_step(plan)
        phases = phase_estimates(plan, step)
        gen = generation_bound(engine_costs(plan), plan.rollout_engines, step)
        report["estimate"] = {
            "phases_s": {k: round(v, 4) for k, v in phases.items()},
            "generation_floors_s": {k: round(v, 4) for k, v in gen.items()},
            "step_s": round(step_estimate(plan, phases), 4),
        }
    return report


def render_check(plan: Plan, report: dict[str, Any], resolved: bool = False) -> str:
    """The summary a person reads first; with ``resolved``, the whole scenario after it."""
    s, lines = plan, []
    arch, c, p, a = s.model, s.cluster, s.placement, s.algorithm
    about = s.scenario.description.strip()
    lines.append(f"Scenario {s.name}" + (f" — {about}" if about else ""))
    lines.append("")
    lines.append(
        f"Model {arch.name}: {arch.total_params / 1e9:.2f} B parameters "
        f"({arch.active_params / 1e9:.2f} B active), {arch.dtype}, "
        f"KV cache {arch.kv_bytes_per_token / 1024:.0f} KiB/token"
        + (f" (full-attention layers; {mix_note(arch)})" if mix_note(arch) else "")
    )
    if arch.mtp_layers:
        lines.append(f"  + {arch.mtp_layers} multi-token-prediction layer{'s' if arch.mtp_layers > 1 else ''}: "
                     f"{arch.mtp_params / 1e9:.2f} B parameters, not loaded unless a run drafts with them")
    lines.append(
        f"Cluster {c.nodes} × {c.gpus_per_node} {c.gpu.name} = {c.total_gpus} GPUs"
        + (f" in NVLink domains of {c.domain_gpus}" if c.domain_gpus > c.gpus_per_node else "") + "; "
        f"{p.mode}: rollout {s.rollout_gpus} GPUs as {s.rollout_engines} engines of tp {p.rollout.tp}"
        + (f" × pp {p.rollout.pp}" if p.rollout.pp > 1 else "")
        + (" (expert parallel" + (", dp attention)" if p.rollout.dp_attention else ")")
           if p.rollout.expert_parallel else "") + ", "
        f"trainer {s.trainer_gpus} GPUs (dp {s.trainer_dp}, tp {p.trainer.tp}, pp {p.trainer.pp}"
        + (f", sp {p.trainer.sp}" if p.trainer.sp > 1 else "")
        + (f", cp {p.trainer.cp}" if p.trainer.cp > 1 else "")
        + (f", ep {p.trainer.ep}" if p.trainer.ep > 1 else "") + ", "
        f"ZeRO-{p.trainer.zero_stage})"
    )
    roles = [f"{role} {dtype}" for role, dtype in (("rollout weights", s.rollout_dtype), ("KV cache", s.kv_dtype),
                                                   ("trainer GEMMs", s.trainer_dtype)) if dtype != arch.dtype]
    if roles:  # placement.rollout.dtype / kv_dtype, placement.trainer.dtype
        lines.append("Precision: " + ", ".join(roles) + f" (the model's: {arch.dtype})")
    lines.append(f"Step: {a.prompts_per_step} prompts × {a.responses_per_prompt} responses = "
                 f"{a.trajectories_per_step} trajectories")
    lines.append("")
    lines.append("Memory per GPU (GiB)")
    for role, m in report["memory"].items():
        verdict = "fits" if m["fits"] else "DOES NOT FIT"
        of = "engine budget (gpu_memory_utilization)" if role == "rollout" else "device memory"
        lines.append(f"  {role:8s} {m['used_gib']:8.1f} of {m['capacity_gib']:6.1f} {of}: {verdict}")
        for item, gib in m["items_gib"].items():
            lines.append(f"      {item:40s} {gib:8.2f}")
        if "trainer_resident_gib" in m:
            lines.append(f"      {'(beside it: trainer state not offloaded)':40s} {m['trainer_resident_gib']:8.2f}")
        if m["problem"]:
            lines.append(f"      ! {m['problem']}")
    est = report.get("estimate")
    if est:
        lines.append("")
        lines.append("Tier-1 estimate: analytic lower bounds per phase (the simulation adds queueing and tails)")
        for phase, sec in est["phases_s"].items():
            lines.append(f"  {phase:16s} {sec:10.2f} s")
        floors = est["generation_floors_s"]
        lines.append(f"  {'':16s} generation floors: longest trajectory alone {floors['tail']:.2f} s, "
                     f"all tokens at full batch {floors['bulk']:.2f} s")
        lines.append(f"  {'step':16s} {est['step_s']:10.2f} s ({p.mode})")
    if resolved:
        lines += ["", "Resolved scenario (every default filled in)", "",
                  yaml.safe_dump(report["scenario"], sort_keys=False, width=100).rstrip()]
    else:
        lines += ["", "(twin check --resolved also prints the whole scenario, every default filled in)"]
    return "\n".join(lines)
