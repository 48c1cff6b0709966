"""The GRPO learner: old-logprob and reference passes, then one clipped-surrogate update.

Sequences (prompt + response) are right-padded to the longest of the batch, as HF-style
trainers without sequence packing do (to a multiple of 8 positions): every pass computes
rows × ``computed_positions`` positions, in micro-batches of ``micro_rows`` rows (all rows at
once when 0); the update accumulates the gradients of its micro-batches and takes one
optimizer step. The loss is GRPO's: group-normalised advantages, the
PPO-clipped ratio against the old log-probs, and a k3 KL estimate against the reference.
"""

from __future__ import annotations

import copy

import torch

from calibrate.probe.model import Decoder

PAD_MULTIPLE = 8  # positions per sequence rounded up to this, as HF collators' pad_to_multiple_of=8


def computed_positions(prompt_len: int, longest_response: int) -> int:
    """Positions a pass computes per sequence: prompt + longest response − 1 (the last token
    is only a target), rounded up to a multiple of ``PAD_MULTIPLE``. Trainers pad so for
    tensor cores; here it also keeps attention off odd lengths, where this CPU's SDPA ran
    ~30% slower per FLOP than at the even lengths around them (s = 95, 127, 223)."""
    return -(-(prompt_len + longest_response - 1) // PAD_MULTIPLE) * PAD_MULTIPLE


def pack(prompts: torch.Tensor, responses: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token matrix (rows, computed positions + 1: prompt, response, padding) and the mask of
    response targets, on the prompts' device (built on the host, copied once)."""
    rows, p = prompts.shape
    positions = computed_positions(p, max(len(r) for r in responses))
    tokens = torch.zeros(rows, positions + 1, dtype=torch.long)
    mask = torch.zeros(rows, positions)
    tokens[:, :p] = prompts.cpu()
    for i, r in enumerate(responses):
        tokens[i, p: p + len(r)] = torch.tensor(r)
        mask[i, p - 1: p - 1 + len(r)] = 1.0
    return tokens.to(prompts.device), mask.to(prompts.device)


def group_advantages(rewards: list[float], group: int) -> torch.Tensor:
    r = torch.tensor(rewards).view(-1, group)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, unbiased=False) + 1e-6)).view(-1)


def token_logprobs(model: Decoder, tokens: torch.Tensor) -> torch.Tensor:
    logits = model(tokens[:, :-1])
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, tokens[:, 1:, None])[..., 0]


class Learner:
    """Policy, frozen reference copy, AdamW."""

    def __init__(self, model: Decoder, lr: float = 1e-5, clip: float = 0.2, kl_coef: float = 0.01,
                 micro_rows: int = 0) -> None:
        self.model, self.clip, self.kl_coef, self.micro_rows = model, clip, kl_coef, micro_rows
        self.reference = copy.deepcopy(model).requires_grad_(False)
        try:  # one pass over the state per step where torch has a fused kernel for it
            self.opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)
        except (RuntimeError, TypeError):
            self.opt = torch.optim.AdamW(model.parameters(), lr=lr)

    def _chunks(self, rows: int) -> list[slice]:
        step = self.micro_rows or rows
        return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]

    def _score(self, model: Decoder, tokens: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([token_logprobs(model, tokens[c]) for c in self._chunks(len(tokens))])

    def old_logprobs(self, tokens: torch.Tensor) -> torch.Tensor:
        return self._score(self.model, tokens)

    def ref_logprobs(self, tokens: torch.Tensor) -> torch.Tensor:
        return self._score(self.reference, tokens)

    def update(self, tokens, mask, advantages, old, ref) -> float:
        """Forward and backward per micro-batch (gradients accumulate), one optimizer step; the
        loss (token mean over the whole batch)."""
        advantages = advantages.to(tokens.device)
        total = mask.sum()
        loss_sum = torch.zeros((), device=tokens.device)
        for c in self._chunks(len(tokens)):
            lp = token_logprobs(self.model, tokens[c])
            ratio = torch.exp(lp - old[c])
            adv = advantages[c, None]
            surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - self.clip, 1 + self.clip) * adv)
            log_r = ref[c] - lp
            kl = torch.exp(log_r) - log_r - 1
            loss = -((surrogate - self.kl_coef * kl) * mask[c]).sum() / total
            loss.backward()
            loss_sum += loss.detach()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return float(loss_sum)
