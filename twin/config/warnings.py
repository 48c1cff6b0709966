"""Settings that validate but change nothing in the simulation: one warning sentence each.

:func:`warnings` reads a resolved :class:`~twin.config.plan.Plan` and names each field
that the simulator ignores in this combination, why, and what to set instead. Impossible
settings are not here: validation refuses them. Each check follows what the simulator does
(``twin.sim.loop``, ``twin.sim.producer``, the cost models), not what a framework might do, and
is conservative: a setting that changes a result, even a little, is not reported.

Settings whose default does nothing on its own (``weight_sync.expert_transfer``) are reported only
when they differ from the default, so a scenario re-validated from its own dump (every field
then counts as set) warns the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from twin.config.plan import Plan
from twin.config.scenario import DynamicSampling, WeightSync
from twin.cost.weight_sync import sync_method


def _default(model, field: str):
    return model.model_fields[field].default


Rule = Callable[[Plan], Iterator[str]]


def _model(s: Plan) -> Iterator[str]:
    if s.model.assumed:  # a hub id read as a catalog entry it is a variant or fine-tune of
        yield f"model: {s.model.assumed}."
    if s.model.unpriced:  # a multimodal model's encoder towers (twin.config.model._unpriced_towers)
        yield f"model: {s.model.unpriced}."


def _mode(s: Plan) -> Iterator[str]:
    """Deployment mode, staleness and partial rollout (twin.sim.loop: streaming admission only in
    async mode; the producer interrupts generation only when streaming and partial)."""
    p, a = s.placement, s.algorithm
    if s.mode.streaming and a.staleness == 0:
        yield ("placement.mode: async with algorithm.staleness: 0 overlaps nothing: each step's "
               "rollout waits for the previous step's weights, as in disaggregated mode; set "
               "algorithm.staleness to 1 or more to let rollout run ahead of training.")
    if a.partial_rollout and not s.mode.streaming:
        yield (f"algorithm.partial_rollout: true does nothing in {p.mode} mode: only async mode "
               "interrupts generation for new weights; set placement.mode: async with "
               "algorithm.staleness of 1 or more, or leave it out.")
    elif a.partial_rollout and a.staleness == 0:
        yield ("algorithm.partial_rollout: true does nothing with algorithm.staleness: 0: a step's "
               "rollouts are finished before its new weights arrive, so there is no generation to "
               "interrupt; set algorithm.staleness to 1 or more.")


def _idle_ranks(s: Plan) -> Iterator[str]:
    """Trainer data parallelism against the mini-batch (twin.cost.learner: a balanced split of
    each mini-batch's sequences over Plan.trainer_dp ranks)."""
    a = s.algorithm
    fewest = a.trajectories_per_step // a.minibatches  # mini-batches differ by one at most
    most = -(-a.trajectories_per_step // a.minibatches)
    if s.trainer_dp > fewest:
        sizes = f"{fewest}" if fewest == most else f"{fewest} to {most}"
        yield (f"placement.trainer: {s.trainer_dp} data-parallel ranks but only {sizes} sequence"
               f"{'' if most == 1 else 's'} per mini-batch (algorithm.prompts_per_step × "
               f"responses_per_prompt / minibatches), so up to {s.trainer_dp - fewest} ranks sit idle "
               "in each update; use fewer trainer GPUs (or more tp/pp/sp), fewer minibatches or a "
               "larger batch.")


def _offload(s: Plan) -> Iterator[str]:
    """On GPUs of its own the trainer offloads around each pass: time, and no memory at the
    pass's peak (twin.cost.phases.pass_offload_time)."""
    if s.mode.shares_gpus:
        return
    for flag in ("offload_params", "offload_optimizer"):
        if getattr(s.placement.trainer, flag):
            yield (f"placement.trainer.{flag}: true in {s.placement.mode} mode moves the state to the host and "
                   "back around every learner pass (time over the host link) and saves no memory at a "
                   "pass's peak; set it to false unless your stack does this (verl's param/optimizer "
                   "offload does).")


def _reward(s: Plan) -> Iterator[str]:
    """Reward resources that nothing uses."""
    p, kind = s.placement, s.reward.kind
    if p.reward_model_gpus and not s.reward.needs_gpus:
        yield (f"placement.reward_model_gpus: {p.reward_model_gpus} GPUs are set aside for a reward "
               f"model, but reward.kind is {kind}: they sit idle and are taken from rollout and "
               "training; set it to 0, or use reward.kind reward_model or judge.")
    if s.cluster.host_cpu_cores is not None and kind != "rule":
        yield (f"cluster.host_cpu_cores does nothing with reward.kind {kind}: the twin spends host "
               "cores only on rule rewards"
               + ("; sandboxes are sized by reward.workers." if kind == "sandbox" else "; leave it out."))
    elif s.cluster.host_cpu_cores is not None and s.reward.cpu_seconds.upper_bound() == 0:
        yield ("cluster.host_cpu_cores does nothing while reward.cpu_seconds is 0: the rule reward "
               "takes no host time; set reward.cpu_seconds to your verifier's cost per sample.")


def _evaluation(s: Plan) -> Iterator[str]:
    """Evaluation needs both a period and prompts (twin.sim.loop._trainer)."""
    ev = s.evaluation
    if ev.every_steps and not ev.prompts:
        yield (f"evaluation.every_steps: {ev.every_steps} does nothing with evaluation.prompts: 0; "
               "set evaluation.prompts to the size of the evaluation set.")
    if ev.prompts and not ev.every_steps:
        yield (f"evaluation.prompts: {ev.prompts} does nothing with evaluation.every_steps: 0 "
               "(evaluation off); set evaluation.every_steps to evaluate every that many steps.")


def _dynamic_sampling(s: Plan) -> Iterator[str]:
    """DAPO's dynamic sampling (twin.config.workload: groups are filtered only when it is enabled;
    the producer regenerates until the batch is full, with no round limit)."""
    ds = s.algorithm.dynamic_sampling
    if not ds.enabled and ds.zero_variance_fraction > 0:
        yield (f"algorithm.dynamic_sampling.zero_variance_fraction: {ds.zero_variance_fraction:g} does "
               "nothing while dynamic_sampling.enabled is false; set enabled: true to filter and "
               "regenerate those groups.")
    if ds.max_rounds != _default(DynamicSampling, "max_rounds"):
        yield (f"algorithm.dynamic_sampling.max_rounds: {ds.max_rounds} is not modelled: the twin "
               "regenerates filtered groups until the batch is full; leave it out.")


def _weight_sync(s: Plan) -> Iterator[str]:
    """Weight sync rates that the chosen method does not use (twin.cost.weight_sync)."""
    ws, method = s.weight_sync, sync_method(s)
    if ws.expert_transfer != _default(WeightSync, "expert_transfer") and method not in ("nixl", "checkpoint_engine",
                                                                                       "p2p"):
        yield (f"weight_sync.expert_transfer does nothing with method {method}: only nixl, p2p and "
               "checkpoint_engine choose between local and full experts.")
    if ws.quantise_on != _default(WeightSync, "quantise_on") and s.rollout_dtype == s.model.dtype:
        yield ("weight_sync.quantise_on does nothing: the engines keep the model's dtype "
               "(set placement.rollout.dtype).")
    if ws.storage_bytes_per_s != _default(WeightSync, "storage_bytes_per_s") and method != "checkpoint":
        yield (f"weight_sync.storage_bytes_per_s does nothing with method {method}: only method "
               "checkpoint goes through storage.")
    if ws.gather_convert_bytes_per_s is not None and method in ("reshard", "nccl_reshard", "p2p"):
        yield (f"weight_sync.gather_convert_bytes_per_s does nothing with method {method}, which has "
               "no gather/convert stage; it applies to nccl_broadcast and checkpoint.")
    if ws.senders == "per_stage" and s.placement.trainer.pp == 1:
        yield "weight_sync.senders: per_stage does nothing with one pipeline stage (placement.trainer.pp 1)."


# In the order they print: what the model's name assumed first.
RULES: tuple[Rule, ...] = (_model, _mode, _idle_ranks, _offload, _reward, _evaluation, _dynamic_sampling,
                           _weight_sync)


def warnings(plan: Plan) -> list[str]:
    """One short sentence per setting that does nothing here (and, first, what resolving the model's
    name assumed); empty when there is none."""
    return [text for rule in RULES for text in rule(plan)]
