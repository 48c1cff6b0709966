"""``twin fit --learning``: S_min and N_noise recovered from runs' reward curves.

Each log gives reward (or accuracy) per step — verl's console or JSONL (``critic/score/mean``),
TRL's ``trainer_state.json`` (``reward``), a W&B CSV (``train/reward``) — and the rollouts per
step N, from the log where it logs ``rollouts_per_step`` (a run whose batch changes mid-run says
so there), else from the argument ``LOG:N``.

The law (:mod:`twin.analysis.learning`): a step at N rollouts moves the run 1/(1 + N_noise/N) of
an infinite batch's step. So each run's steps map to "infinite-batch steps"
τ(k) = Σ_{j≤k} 1/(1 + N_noise/N_j), and at the right N_noise every run reaches each reward level
at the same τ, which is S_min of that level. :func:`fit_runs` aligns the runs level by level:
it finds, for each run and each of a dozen reward levels all runs reach, the (interpolated) step
where its smoothed curve first crosses the level, and picks the N_noise that makes the runs' τ at
each crossing agree (least squares on log τ). A single run whose batch changes mid-run has no
second curve to align with: there the curve in τ must not kink where the batch changes, and
N_noise follows from the reward's slopes on either side of the change (:func:`_fit_switch`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twin.config.io import load_json
from twin.errors import InputError
from twin.importers.logs import trl_console
from twin.importers.logs.readers import _STEP, _lines, _number, detect

REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean", "reward", "rewards/mean", "accuracy", "acc")
BATCH_KEYS = ("rollouts_per_step", "batch/rollouts")
LEVELS = 12               # reward levels aligned
LEVEL_SPAN = (0.15, 0.85)  # of the reward range every run covers: the ends are noise and plateau
SMOOTH_FRACTION = 20      # a run's moving-average window: its length over this
SWITCH_WINDOW = 0.3        # of each segment, next to a batch change, whose slope is read


@dataclass
class RewardRun:
    """One run's reward per step, and its rollouts per step at each logged step."""

    name: str
    steps: np.ndarray      # logged step numbers, ascending
    reward: np.ndarray
    rollouts: np.ndarray   # N at each logged step (constant since the previous record)
    rollouts_from: str     # "the log (rollouts_per_step)" or "the argument :N"


def _canonical(key: str) -> str:
    key = key.strip()
    return key.removeprefix("train/")


def _pick(values: dict, keys: tuple[str, ...], reward_key: str | None) -> tuple[str, object] | None:
    canon = {_canonical(k): v for k, v in values.items() if v not in (None, "")}
    for k in ((reward_key,) if reward_key else keys):
        if k in canon:
            return k, canon[k]
    return None


def _records(path: Path, fmt: str) -> list[tuple[object, dict, str]]:
    """(step, values, where) of each record of the log."""
    out = []
    if fmt == "trl":
        try:
            state = load_json("".join(line for _, line in _lines(path)))
        except ValueError as exc:
            raise InputError(f"malformed JSON: {str(exc).splitlines()[0]}", file=path,
                             allowed="TRL's trainer_state.json") from None
        history = state.get("log_history") if isinstance(state, dict) else None
        if not isinstance(history, list):
            raise InputError("no log_history list", file=path, field="log_history", allowed="TRL's trainer_state.json")
        return [(e.get("step"), e, f"log_history[{i}]") for i, e in enumerate(history) if isinstance(e, dict)]
    if fmt == "trl-console":  # printed dicts carry no step: numbered as printed (one per logging_steps)
        for number, line in _lines(path):
            values = trl_console.parse(line, path, number) if "{'" in line else None
            if values:
                out.append((len(out) + 1, values, f"line {number}"))
        return out
    if fmt == "wandb-csv":
        import csv
        rows = csv.reader(line for _, line in _lines(path))
        header = [h.strip().lstrip("\ufeff") for h in next(rows, [])]
        names = [h.split(" - ", 1)[1] if " - " in h else h for h in header]
        col = next((i for i, n in enumerate(names) if n in ("Step", "_step", "step", "train/global_step")), None)
        if col is None:
            raise InputError("no step column", file=path, field="line 1 (the header)", allowed="a 'Step' column")
        for i, row in enumerate(rows, start=2):
            out.append((row[col] if col < len(row) else None, dict(zip(names, row)), f"line {i}"))
        return out
    for number, line in _lines(path):
        text = line.strip()
        if not text:
            continue
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                raise InputError("not a JSON object", file=path, field=f"line {number}") from None
            values = obj.get("data") if isinstance(obj.get("data"), dict) else obj
            out.append((obj.get("step", values.get("step")), values, f"line {number}"))
            continue
        m = _STEP.search(text)
        if m:
            values = {}
            for part in m.group(2).split(" - "):
                key, sep, value = part.partition(":")
                if sep:
                    values[key.strip()] = value.strip()
            out.append((m.group(1), values, f"line {number}"))
    return out


_ARG = re.compile(r"^(.*):(\d+)$")


def parse_run_arg(arg: str) -> tuple[Path, int | None]:
    """``path`` or ``path:N`` (N: rollouts per step). A path that exists as given wins."""
    m = _ARG.match(arg)
    if m and not Path(arg).exists():
        n = int(m.group(2))
        if n < 1:
            raise InputError("rollouts per step must be at least 1", field=arg, value=n)
        return Path(m.group(1)), n
    return Path(arg), None


def read_reward_run(arg: str, fmt: str | None = None, reward_key: str | None = None) -> RewardRun:
    """One run's reward curve (``arg``: ``LOG`` or ``LOG:N``); :class:`InputError` naming the file."""
    path, n_arg = parse_run_arg(arg)
    if not path.is_file():
        raise InputError("log file not found", file=path)
    fmt = fmt or detect(path)[0]
    by_step: dict[int, tuple[float, float | None]] = {}
    for step, values, where in _records(path, fmt):
        got = _pick(values, REWARD_KEYS, reward_key)
        if got is None or step is None:
            continue
        k = _number(step, path, where, "step")
        batch = _pick(values, BATCH_KEYS, None)
        n = _number(batch[1], path, where, batch[0]) if batch else None
        by_step[int(k)] = (_number(got[1], path, where, got[0]), n)
    if len(by_step) < 5:
        raise InputError(f"{len(by_step)} steps hold a reward (read as {fmt}): too few to fit", file=path,
                         allowed="per-step " + (reward_key or " or ".join(REWARD_KEYS)) + ", at least 5 steps")
    steps = sorted(by_step)
    logged = [by_step[k][1] for k in steps]
    if all(n is None for n in logged):
        if n_arg is None:
            raise InputError("the log does not say its rollouts per step", file=path,
                             allowed=f"{path}:N (N = prompts × responses per step), or a per-step "
                             + " or ".join(BATCH_KEYS))
        rollouts, where = [float(n_arg)] * len(steps), f"the argument :{n_arg}"
    else:
        last = next(n for n in logged if n is not None)
        rollouts = []
        for n in logged:  # a record without it keeps the last logged N
            last = n if n is not None else last
            rollouts.append(float(last))
        where = f"the log ({' or '.join(BATCH_KEYS)})"
    return RewardRun(str(path), np.array(steps, float), np.array([by_step[k][0] for k in steps]),
                     np.array(rollouts, float), where)


# ----------------------------------------------------------------------------- the fit
def _envelope(reward: np.ndarray) -> np.ndarray:
    """A centered moving average (window: the run's length over SMOOTH_FRACTION, so that runs of
    any length are smoothed alike in their own progress) made non-decreasing."""
    w = max(1, len(reward) // SMOOTH_FRACTION) | 1
    pad = w // 2
    padded = np.concatenate([np.full(pad, reward[:pad + 1].mean()), reward, np.full(pad, reward[-pad - 1:].mean())])
    smooth = np.convolve(padded, np.ones(w) / w, mode="valid")
    return np.maximum.accumulate(smooth)


def _crossing(steps: np.ndarray, env: np.ndarray, level: float) -> float:
    """The (interpolated) step where the envelope first reaches ``level``."""
    i = int(np.argmax(env >= level))
    if i == 0:
        return float(steps[0])
    a, b = env[i - 1], env[i]
    w = (level - a) / (b - a) if b > a else 1.0
    return float(steps[i - 1] + w * (steps[i] - steps[i - 1]))


def _tau(run: RewardRun, noise: float, at: np.ndarray) -> np.ndarray:
    """Infinite-batch steps τ at the (fractional) steps ``at``: each step counts 1/(1 + N_noise/N)."""
    gaps = np.diff(np.concatenate([[0.0], run.steps]))
    cum = np.concatenate([[0.0], np.cumsum(gaps / (1.0 + noise / run.rollouts))])
    return np.interp(at, np.concatenate([[0.0], run.steps]), cum)


def _levels(runs: list[RewardRun]) -> tuple[np.ndarray, list[np.ndarray]]:
    envs = [_envelope(r.reward) for r in runs]
    lo, hi = max(e[0] for e in envs), min(e[-1] for e in envs)
    if not hi > lo:
        raise InputError("the runs share no range of reward to align", field="LOG",
                         value=[f"{r.name}: {e[0]:.3g}..{e[-1]:.3g}" for r, e in zip(runs, envs)],
                         allowed="runs that rise through a common range of reward")
    levels = lo + (hi - lo) * np.linspace(*LEVEL_SPAN, LEVELS)
    crossings = [np.array([_crossing(r.steps, e, L) for L in levels]) for r, e in zip(runs, envs)]
    return levels, crossings


def _search(loss, lo: float, hi: float) -> float:
    """The minimum of ``loss`` over log N_noise in [lo, hi]: a grid, then golden-section refinement."""
    grid = np.linspace(math.log(lo), math.log(hi), 241)
    values = [loss(math.exp(x)) for x in grid]
    i = int(np.argmin(values))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        c, d = b - g * (b - a), a + g * (b - a)
        if loss(math.exp(c)) < loss(math.exp(d)):
            b = d
        else:
            a = c
    return math.exp((a + b) / 2)


def _fit_aligned(runs: list[RewardRun]) -> dict:
    levels, crossings = _levels(runs)
    ns = np.concatenate([r.rollouts for r in runs])

    def logtaus(noise: float) -> np.ndarray:
        return np.log(np.array([_tau(r, noise, c) for r, c in zip(runs, crossings)]))

    def loss(noise: float) -> float:
        lt = logtaus(noise)
        return float(((lt - lt.mean(axis=0)) ** 2).sum())

    noise = _search(loss, ns.min() / 1000, ns.max() * 1000)
    lt = logtaus(noise)
    s_min = np.exp(lt.mean(axis=0))
    spread = float(np.sqrt(((lt - lt.mean(axis=0)) ** 2).mean()))
    return {"method": f"aligned {len(runs)} runs at {LEVELS} reward levels", "noise_scale": noise,
            "levels": [{"reward": float(L), "s_min": float(s), "noise_scale": noise} for L, s in zip(levels, s_min)],
            "misalignment": spread}


def _fit_switch(run: RewardRun) -> dict:
    """One run whose batch changes from N1 to N2: its curve in τ has no kink at the change, so the
    slopes on either side (a quadratic in steps over the 30% of each segment next to the change)
    stand in the ratio q = (1 + N_noise/N1)/(1 + N_noise/N2), solved for N_noise. Weaker than
    aligning two runs (docs/time-to-target.md gives the measured error)."""
    c = int(np.argmax(run.rollouts != run.rollouts[0]))
    n1, n2, at = run.rollouts[0], run.rollouts[c], run.steps[c - 1]
    w1, w2 = max(4, int(c * SWITCH_WINDOW)), max(4, int((len(run.steps) - c) * SWITCH_WINDOW))
    if c < 4 or len(run.steps) - c < 4:
        raise InputError("too few steps on one side of the batch change to read its slope", file=run.name,
                         value=f"step {int(run.steps[c])}", allowed="at least 4 logged steps on each side")

    def slope(k: np.ndarray, y: np.ndarray) -> float:
        return float(np.polyval(np.polyder(np.polyfit(k - at, y, 2)), 0.0))

    before = slope(run.steps[c - w1:c], run.reward[c - w1:c])
    after = slope(run.steps[c - 1:c - 1 + w2], run.reward[c - 1:c - 1 + w2])
    q = after / before if before > 0 else math.nan
    noise = (1 - q) / (q / n2 - 1 / n1) if math.isfinite(q) and q / n2 != 1 / n1 else math.nan
    if not (math.isfinite(noise) and noise > 0):
        raise InputError("the reward's slope across the batch change does not fit the noise-scale law", file=run.name,
                         value=f"slope ratio {q:.3g} from N {n1:g} to {n2:g}",
                         allowed=f"a ratio between 1 and {n2 / n1:.3g} (a rising reward); or two runs to align")
    levels, crossings = _levels([run])
    s_min = _tau(run, noise, crossings[0])
    return {"method": f"one run, its batch changed at step {int(run.steps[c])} ({n1:g} -> {n2:g} rollouts): the "
                      "reward's slope on either side", "noise_scale": noise,
            "levels": [{"reward": float(L), "s_min": float(s), "noise_scale": noise} for L, s in zip(levels, s_min)],
            "misalignment": None}


def fit_runs(runs: list[RewardRun]) -> dict:
    """S_min per reward level and N_noise from ``runs`` (module docstring); :class:`InputError`
    where the runs cannot tell N_noise (one batch size throughout)."""
    sizes = {float(n) for r in runs for n in r.rollouts}
    if len(sizes) < 2:
        raise InputError("every run is at one batch size: N_noise cannot be told apart from S_min", field="LOG",
                         value=sorted(sizes), allowed="two runs at different N (LOG1:N1 LOG2:N2), or one run "
                         "whose log shows its batch change")
    if len(runs) == 1:
        return _fit_switch(runs[0])
    return _fit_aligned(runs)
