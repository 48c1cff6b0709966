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
from twin.config.io import MAX_FILE_BYTES

NonNeg = Annotated[float, Field(ge=0)]


class _Bounded(Strict):
    min: NonNeg = Field(default=0.0, description="Lower clip for samples.")
    max: NonNeg | None = Field(default=None, description="Upper clip for samples (e.g. max length).")
    scale: float = Field(
        default=1.0, gt=0, le=1e6,
        description="Multiplies every sample before clipping: 'my responses run 20% longer "
        "than this shape' is scale 1.2 (the one free parameter a validation source may fit).",
    )

    def _clip(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # a sample beyond a float's range is inf, then clipped
            return np.clip(x * self.scale, self.min, self.max if self.max is not None else np.inf)

    @model_validator(mode="after")
    def _order(self):
        if self.max is not None and self.max < self.min:
            raise ValueError("max must be >= min")
        return self

    def clipped_mean(self, rng_seed: int = 12345, n: int = 200_000) -> float:
        """Mean after clipping, by a fixed-seed Monte-Carlo estimate (exact for fixed)."""
        return float(self.sample(np.random.default_rng(rng_seed), n).mean())

    def _support(self) -> tuple[float, float]:
        """The unclipped, unscaled range of the shape (may be infinite)."""
        return 0.0, np.inf

    def upper_bound(self) -> float:
        """The largest value a sample can take (inf when unbounded)."""
        low, high = self._support()
        return float(self._clip(np.array([high]))[0]) if np.isfinite(high) or self.max is not None else np.inf

    def lower_bound(self) -> float:
        low, high = self._support()
        return float(self._clip(np.array([low]))[0])


class Fixed(_Bounded):
    kind: Literal["fixed"]
    value: NonNeg

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(np.full(n, self.value, dtype=np.float64))

    def _support(self) -> tuple[float, float]:
        return self.value, self.value

    def clipped_mean(self, rng_seed: int = 0, n: int = 0) -> float:
        return float(self._clip(np.array([float(self.value)]))[0])


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

    def _support(self) -> tuple[float, float]:
        return self.low, self.high


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


class Mixture(_Bounded):  # Gaussian tails: support is unbounded below and above
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
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"histogram file {path} is larger than {MAX_FILE_BYTES // 2**20} MiB")
        try:
            data = np.loadtxt(path, delimiter=",", ndmin=2, comments="#")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"histogram file {path} is not CSV rows of value,weight: {exc}") from None
        if data.shape[1] != 2 or len(data) == 0 or (data[:, 1] < 0).any() or data[:, 1].sum() <= 0:
            raise ValueError(f"histogram file {path} must hold value,weight rows with weights >= 0")
        if not np.isfinite(data).all() or not np.isfinite(data[:, 1].sum()):
            raise ValueError(f"histogram file {path} holds a value or weight that is not a finite number")
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

    def _support(self) -> tuple[float, float]:
        v, _ = self.table()
        return float(v.min()), float(v.max())


Distribution = Annotated[
    Union[Fixed, Uniform, LogNormal, Mixture, Empirical], Field(discriminator="kind")
]
