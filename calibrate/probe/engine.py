"""Generation with a KV cache: static batching and a simple continuous batching.

Both follow :mod:`calibrate.probe.schedule` and record the iterations they ran. Sampling
is multinomial from the softmax (random weights give no EOS worth waiting for), so each
sequence stops at its target length, drawn by the loop. Every iteration reads the sampled
tokens back to the host, as a real engine does to check stop conditions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from calibrate.probe.model import Decoder
from calibrate.probe.schedule import Iteration, decode, prefill


@dataclass
class Generation:
    """Responses (token lists, in request order) and the iterations that produced them."""

    responses: list[list[int]]
    iterations: list[Iteration] = field(default_factory=list)


def sample(logits: torch.Tensor, gen: torch.Generator) -> list[int]:
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=gen)[:, 0].tolist()


class StaticEngine:
    """Plain ``generate``: all rows run until the longest is done."""

    def __init__(self, model: Decoder, prompts: torch.Tensor, targets: list[int], gen: torch.Generator):
        self.model, self.targets, self.gen = model, list(targets), gen
        self.rows, self.prompt = prompts.shape
        self.cache = model.new_cache(self.rows, self.prompt + max(self.targets))
        self.prompts = prompts
        self.out: list[list[int]] = [[] for _ in range(self.rows)]
        self.iterations: list[Iteration] = []
        self.device = prompts.device

    def start(self) -> None:
        toks = sample(self.model.prefill(self.prompts, self.cache, slice(0, self.rows)), self.gen)
        self._take(toks)
        self.iterations.append(prefill(self.rows, self.prompt))

    def step(self) -> None:
        """One decode iteration over all rows."""
        n = len(self.out[0])
        start = torch.full((self.rows,), self.prompt + n - 1, dtype=torch.long, device=self.device)
        last = torch.tensor([o[-1] for o in self.out], device=self.device)
        logits = self.model.decode(last, self.cache, slice(0, self.rows), start, self.prompt + n, None)
        self._take(sample(logits, self.gen))
        self.iterations.append(decode(self.rows, self.prompt + n))

    def _take(self, toks: list[int]) -> None:
        for o, t in zip(self.out, toks):
            o.append(t)

    def run(self) -> Generation:
        with torch.no_grad():
            self.start()
            while len(self.out[0]) < max(self.targets):
                self.step()
        return Generation([o[:t] for o, t in zip(self.out, self.targets)], self.iterations)


def generate_static(model: Decoder, prompts: torch.Tensor, targets: list[int], gen: torch.Generator) -> Generation:
    return StaticEngine(model, prompts, targets, gen).run()


def generate_continuous(model: Decoder, prompts: torch.Tensor, targets: list[int], slots: int,
                        gen: torch.Generator) -> Generation:
    """Iteration-level scheduling over ``slots`` rows (schedule.continuous_schedule)."""
    n, prompt = prompts.shape
    device = prompts.device
    cache = model.new_cache(slots, prompt + max(targets))
    responses: list[list[int]] = [[] for _ in range(n)]
    rows: list[int] = []  # request id of each packed row
    iterations: list[Iteration] = []
    waiting = 0
    with torch.no_grad():
        while waiting < n or rows:
            admit = min(slots - len(rows), n - waiting)
            if admit:
                ids = list(range(waiting, waiting + admit))
                waiting += admit
                logits = model.prefill(prompts[ids[0]: ids[-1] + 1], cache, slice(len(rows), len(rows) + admit))
                iterations.append(prefill(admit, prompt))
                for rid, tok in zip(ids, sample(logits, gen)):
                    responses[rid].append(tok)
                rows += ids
                rows = _evict(rows, responses, targets, cache)
            if not rows:
                continue
            lengths = [len(responses[r]) for r in rows]
            end = prompt + max(lengths)
            start = torch.tensor([prompt + g - 1 for g in lengths], device=device)
            mask = None
            if min(lengths) != max(lengths):
                mask = (torch.arange(end, device=device)[None] <= start[:, None])[:, None, None]
            last = torch.tensor([responses[r][-1] for r in rows], device=device)
            logits = model.decode(last, cache, slice(0, len(rows)), start, end, mask)
            iterations.append(decode(len(rows), end))
            for r, tok in zip(rows, sample(logits, gen)):
                responses[r].append(tok)
            rows = _evict(rows, responses, targets, cache)
    return Generation(responses, iterations)


def _evict(rows: list[int], responses, targets, cache) -> list[int]:
    """Remove finished rows, moving the last packed row into each hole (one row's cache copy)."""
    i = len(rows) - 1
    while i >= 0:
        r = rows[i]
        if len(responses[r]) >= targets[r]:
            last = len(rows) - 1
            if i != last:
                for k, v in cache:
                    k[i] = k[last]
                    v[i] = v[last]
                rows[i] = rows[last]
            rows.pop()
        i -= 1
    return rows
