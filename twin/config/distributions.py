"""Length, count and latency distributions for workloads, as a tagged union on ``kind``.

Every distribution samples with a caller-supplied ``numpy.random.Generator`` so that one
scenario seed fixes every draw, and can report its mean (used by analytic estimates).
Samples are clipped to ``[min, max]`` where the distribution has them: a response cannot
exceed the engine's max length, a latency cannot be negative.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from twin.config.hardware import Strict

NonNeg = Annotated[float, Field(ge=0)]


class _Bounded(Strict):
    min: NonNeg = Field(default=0.0, description="Lower clip for samples.")
    max: NonNeg | None = Field(default=None, description="Upper clip for samples (e.g. max length).")

    def _clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, self.min, self.max if self.max is not None else np.inf)

    @model_validator(mode="after")
    def _order(self):
        if self.max is not None and self.max < self.min:
            raise ValueError("max must be >= min")
        return self

    def clipped_mean(self, rng_seed: int = 12345, n: int = 200_000) -> float:
        """Mean after clipping, by a fixed-seed Monte-Carlo estimate (exact for fixed)."""
        return float(self.sample(np.random.default_rng(rng_seed), n).mean())


class Fixed(_Bounded):
    kind: Literal["fixed"]
    value: NonNeg

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(np.full(n, self.value, dtype=np.float64))

    def clipped_mean(self, rng_seed: int = 0, n: int = 0) -> float:
        return float(self._clip(np.array([self.value]))[0])


class Uniform(_Bounded):
    kind: Literal["uniform"]
    low: NonNeg
    high: NonNeg

    @model_validator(mode="after")
    def _low_high(self):
        if self.high < self.low:
            raise ValueError("high must be >= low")
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(rng.uniform(self.low, self.high, n))


class LogNormal(_Bounded):
    """Lognormal given by its median and the sd of log(x); truncated (clipped) at ``max``."""

    kind: Literal["lognormal"]
    median: float = Field(gt=0)
    sigma: float = Field(gt=0, description="Standard deviation of log(x).")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(rng.lognormal(np.log(self.median), self.sigma, n))


class Component(Strict):
    weight: float = Field(gt=0)
    mean: float
    sd: NonNeg


class Mixture(_Bounded):
    """A mixture of Gaussians (weights are normalised), clipped to [min, max]."""

    kind: Literal["mixture"]
    components: list[Component] = Field(min_length=1)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        w = np.array([c.weight for c in self.components])
        which = rng.choice(len(w), size=n, p=w / w.sum())
        mean = np.array([c.mean for c in self.components])[which]
        sd = np.array([c.sd for c in self.components])[which]
        return self._clip(rng.normal(mean, sd))


class Empirical(_Bounded):
    """A histogram: inline ``values``/``weights``, or a ``path`` to a two-column CSV.

    Samples are the listed values drawn with the given weights (a categorical
    distribution), which suits measured lengths and counts such as tool calls per
    trajectory.
    """

    kind: Literal["empirical"]
    values: list[float] | None = None
    weights: list[Annotated[float, Field(ge=0)]] | None = None
    path: Path | None = Field(default=None, description="CSV with columns value,weight.")

    @field_validator("path")
    @classmethod
    def _readable(cls, path: Path | None, info: ValidationInfo) -> Path | None:
        """Resolve against the scenario's folder and check the file once, at load."""
        if path is None:
            return None
        base = (info.context or {}).get("base_dir")
        if not path.is_absolute() and base is not None:
            path = Path(base) / path
        if not path.is_file():
            raise ValueError(f"histogram file not found: {path}")
        try:
            data = np.loadtxt(path, delimiter=",", ndmin=2, comments="#")
        except ValueError as exc:
            raise ValueError(f"histogram file {path} is not CSV rows of value,weight: {exc}") from None
        if data.shape[1] != 2 or len(data) == 0 or (data[:, 1] < 0).any() or data[:, 1].sum() <= 0:
            raise ValueError(f"histogram file {path} must hold value,weight rows with weights >= 0")
        return path

    @model_validator(mode="after")
    def _one_source(self):
        if (self.path is None) == (self.values is None):
            raise ValueError("give either 'path' or 'values' (with optional 'weights')")
        if self.values is not None:
            if not self.values:
                raise ValueError("values must not be empty")
            if self.weights is not None and len(self.weights) != len(self.values):
                raise ValueError("weights must have as many entries as values")
            if self.weights is not None and sum(self.weights) <= 0:
                raise ValueError("weights must not all be zero")
        return self

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        if self.values is not None:
            v = np.asarray(self.values, dtype=np.float64)
            w = np.asarray(self.weights if self.weights is not None else np.ones(len(v)), dtype=np.float64)
        else:
            data = np.loadtxt(self.path, delimiter=",", ndmin=2, comments="#")
            v, w = data[:, 0], data[:, 1]
        return v, w / w.sum()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        v, w = self.table()
        return self._clip(v[rng.choice(len(v), size=n, p=w)])


Distribution = Annotated[
    Union[Fixed, Uniform, LogNormal, Mixture, Empirical], Field(discriminator="kind")
]
