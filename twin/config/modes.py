"""Deployment modes: what differs between colocated, disaggregated and async, declared once.

Every layer that behaves differently by mode asks the :class:`Mode` a question (does the
rollout share the trainer's GPUs? do groups stream to the trainer?) instead of comparing the
mode's name. Adding a mode is one more :class:`Mode` here, and its tests.

=============  ===========  ==========  ====================================================
mode           staleness    admission   weight update reaches the engines
=============  ===========  ==========  ====================================================
colocated      0            batchwise   after the step, with the engine's sleep/wake switch
disaggregated  0 … k        batchwise   between batches (sync at 0; k-step-off above)
async          0 … η        streaming   interrupting generation (partial rollout) or
                                        once the engines drain
=============  ===========  ==========  ====================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.errors import InputError, choices


@dataclass(frozen=True)
class Mode:
    name: str
    description: str
    # Rollout engines and trainer time-share one pool of GPUs: each step pays the engine's
    # sleep/wake switch, both roles' memory must fit on one GPU, and samples cannot be stale.
    shares_gpus: bool
    # Groups reach the trainer as they finish and an update may interrupt generation
    # (partial rollout); otherwise the engines take a whole batch at a time.
    streaming: bool
    # What weight_sync.method "auto" means here.
    auto_weight_sync: str

    @property
    def allows_staleness(self) -> bool:
        return not self.shares_gpus

    def pools(self, free: int, rollout: int | None, trainer: int | None, held: str = "") -> tuple[int, int]:
        """GPUs for (rollout, trainer) out of ``free`` ones, from what the user asked for
        (None: not given; ``held`` says where the others went). Raises :class:`InputError`
        when they do not fit."""
        if self.shares_gpus:
            rollout, trainer = rollout or free, trainer or free
            if rollout > free or trainer > free:
                role = "rollout" if rollout > free else "trainer"
                raise InputError(f"{self.name} pools share the cluster's GPUs and cannot exceed them",
                                 field=f"placement.{role}.gpus", value=rollout if role == "rollout" else trainer,
                                 allowed=f"1..{free}{held}")
            return rollout, trainer
        rollout = rollout or (free - trainer if trainer else free // 2)
        trainer = trainer or free - rollout
        if rollout < 1 or trainer < 1 or rollout + trainer > free:
            raise InputError(f"{self.name} pools need their own GPUs", field="placement.rollout.gpus",
                             value=rollout, allowed=f"rollout + trainer <= {free} (trainer asks {trainer})")
        return rollout, trainer

    def gpus_by_role(self, rollout: int, trainer: int) -> dict[str, int]:
        """The GPUs each role holds, as the report lists them (a shared pool counted once)."""
        return {"shared": rollout} if self.shares_gpus else {"rollout": rollout, "trainer": trainer}

    def serial(self, staleness: int) -> bool:
        """Whether rollout and training follow each other within a step (no overlap)."""
        return self.shares_gpus or (staleness == 0 and not self.streaming)


COLOCATED = Mode("colocated", "rollout and trainer time-share every GPU (hybrid engine)",
                 shares_gpus=True, streaming=False, auto_weight_sync="reshard")
DISAGGREGATED = Mode("disaggregated", "separate rollout and trainer pools; batches, k steps off with staleness",
                     shares_gpus=False, streaming=False, auto_weight_sync="nccl_broadcast")
ASYNC = Mode("async", "separate pools; groups stream to the trainer within the staleness bound",
             shares_gpus=False, streaming=True, auto_weight_sync="nccl_broadcast")

MODES: dict[str, Mode] = {m.name: m for m in (COLOCATED, DISAGGREGATED, ASYNC)}


def mode(name: str) -> Mode:
    """The mode called ``name``; an unknown name is an error, never a fallback."""
    try:
        return MODES[name]
    except KeyError:
        raise InputError("unknown deployment mode", field="placement.mode", value=name,
                         allowed=choices(MODES, name)) from None
