"""The learner's head: turning the last hidden states into per-token log-probs, in memory and FLOP.

A learner pass computes logits for every token of its micro-batch (the whole sequence is
forwarded; verl, OpenRLHF, NeMo-RL alike), then log-probs (and, for verl's old log-probs, the
entropy). How that is done sets the largest single allocation of a long-context learner, a
[tokens × vocabulary] tensor — 18.7 GB in bf16 for 61,440 tokens of Qwen2.5's 152,064-entry
vocabulary — and whether the head's matmul runs again in the backward.
``placement.trainer.logprob_kernel`` says which of three paths a stack takes:

* ``fp32`` — the head's bf16 logits upcast to fp32 and a log-softmax, whose saved output and
  gradient are fp32 tensors of the same shape (Hugging Face's loss code; the twin's earlier
  and conservative accounting): 2 × 4·V bytes per token, in the update and the scoring passes.
* ``inplace`` — 16-bit logits and flash-attn's Triton ``cross_entropy_loss`` with
  ``inplace_backward=True``: the kernel writes the logits' gradient into the logits' own buffer
  and keeps only a per-row fp32 log-sum-exp, so one 2·V-byte tensor per token is the whole
  cost. verl's ``logprobs_from_logits`` takes this path whenever flash-attn is installed
  (verl/utils/torch_functional.py); its old-log-prob pass also computes the entropy
  (``calculate_entropy=True`` in fsdp_workers.compute_log_prob) with ``entropy_from_logits``
  compiled by ``torch.compile``, which reduces each row without a second [tokens × V] tensor.
* ``fused`` — chunked linear + log-prob (verl ``use_fused_kernels``, its torch backend: chunks
  of 512 tokens, verl/utils/experimental/torch_functional.py; Liger's fused linear
  cross-entropy): no logits tensor, one chunk's fp32 logits and their gradient at a time; the
  backward recomputes each chunk's logits, one more head matmul per training pass.

The vocabulary's element-wise passes (log-softmax, its backward) are priced with the other
element-wise kernels (:func:`twin.cost.transformer.elementwise_work`); only memory and the head's
matmul count differ here.
"""

from __future__ import annotations

from twin.config.model import ModelArch

# verl's fused linear-for-PPO (torch backend) processes the head chunk by chunk, 512 tokens each
FUSED_CHUNK_TOKENS = 512

KERNELS = ("fp32", "inplace", "fused")


def head_flop_factor(kernel: str, kind: str) -> float:
    """Head matmuls per pass, in forwards: a scoring pass runs it once; a training pass once
    forward and twice backward (input and weight gradients) — 3 — and a fused kernel
    recomputes each chunk's logits in the backward (4). Activation checkpointing wraps the
    decoder layers, not the head (Hugging Face gradient checkpointing, Megatron's full
    recompute), so recomputation adds nothing here."""
    if kind == "score":
        return 1.0
    return 4.0 if kernel == "fused" else 3.0


def logits_bytes(arch: ModelArch, tokens: float, kernel: str, kind: str, tp: int = 1) -> tuple[str, float]:
    """(label, bytes) of the head's output a GPU holds at the peak of a pass over ``tokens``
    tokens (the vocabulary split over ``tp``): see the module docstring for each kernel."""
    vocab = arch.vocab_size / tp
    if kernel == "fused":
        chunk = min(tokens, FUSED_CHUNK_TOKENS)
        return "logits (fused chunks)", 2 * 4 * vocab * chunk
    if kernel == "inplace":
        label = "logits (16-bit, grad in place)" if kind == "train" else "logits (16-bit)"
        return label, arch.bytes_per_param * vocab * tokens
    label = "logits and their grad (fp32)" if kind == "train" else "logits, log-softmax (fp32)"
    return label, 2 * 4 * vocab * tokens
