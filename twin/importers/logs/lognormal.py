"""A clipped lognormal recovered from the summaries a run logs: mean, max, min, clip ratio.

The response length of one rollout is modelled as ``min(X, cap)`` with ``X`` lognormal
(median ``m``, log-sd ``s``) and ``cap`` the max response length: what the engine cuts a
response to, and what ``workload.response_tokens`` of kind ``lognormal`` with ``max: cap``
samples. Its mean and clipped mass have closed forms (``mu = ln m``, ``Phi`` the normal cdf)::

    P(X >= cap)     = 1 - Phi((ln cap - mu) / s)                          (the clip ratio)
    E[min(X, cap)]  = e^(mu + s^2/2) Phi((ln cap - mu - s^2) / s) + cap P(X >= cap)

With a clip ratio ``r`` in (0, 1) the first pins ``mu = ln cap - s z`` (``z = Phi^-1(1 - r)``),
which leaves the mean a function of ``s`` alone, falling from ``cap`` (s -> 0) to ``r cap``
(s -> inf): bisection finds the ``s`` that matches the logged mean. Without a clip ratio (0 or
not logged), ``s`` comes from the spread of a step's lengths: the max and min of ``n``
draws lie about ``e_n`` standard deviations either side of the median (``e_n`` the expected
largest of ``n`` standard normals, Blom's approximation), so ``s = ln(max/min) / (2 e_n)``; with
the max alone, ``ln(max/mean) = s e_n - s^2/2``. A max at the cap is clipped, not a draw: then
the min alone, ``mu = ln(min) + s e_n``, with ``s`` matching the mean. With none of these,
:data:`DEFAULT_SIGMA`. Then
``mu`` is set so that the clipped mean matches the logged one. docs/fit.md measures how well
this recovers known distributions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

_N = NormalDist()
DEFAULT_SIGMA = 0.6   # a typical spread of reasoning responses (log-sd), used only when nothing else tells
DEFAULT_BATCH = 1024  # responses per step assumed when no scenario says
SIGMA_RANGE = (1e-3, 6.0)


def clipped_mean(mu: float, s: float, cap: float | None) -> float:
    if cap is None:
        return math.exp(mu + s * s / 2)
    lc = math.log(cap)
    above = 1 - _N.cdf((lc - mu) / s)
    return math.exp(mu + s * s / 2) * _N.cdf((lc - mu - s * s) / s) + cap * above


def clip_mass(mu: float, s: float, cap: float | None) -> float:
    return 0.0 if cap is None else 1 - _N.cdf((math.log(cap) - mu) / s)


def quantile(mu: float, s: float, cap: float | None, q: float) -> float:
    x = math.exp(mu + s * _N.inv_cdf(q))
    return min(x, cap) if cap is not None else x


def expected_extreme(n: int) -> float:
    """The expected largest of ``n`` standard normal draws (Blom's approximation)."""
    n = max(int(n), 2)
    return _N.inv_cdf((n - 0.375) / (n + 0.25))


@dataclass
class Fitted:
    median: float
    sigma: float
    cap: float | None
    sigma_from: str       # how sigma was chosen, in words
    note: str = ""        # a target the family could not meet, when there is one

    @property
    def mu(self) -> float:
        return math.log(self.median)

    @property
    def mean(self) -> float:
        return clipped_mean(self.mu, self.sigma, self.cap)

    def quantile(self, q: float) -> float:
        return quantile(self.mu, self.sigma, self.cap, q)

    @property
    def clip_ratio(self) -> float:
        return clip_mass(self.mu, self.sigma, self.cap)

    def distribution(self, digits: int = 1) -> dict:
        out = {"kind": "lognormal", "median": round(self.median, digits), "sigma": round(self.sigma, 4)}
        if self.cap is not None:
            out["max"] = round(self.cap)
        return out


def _bisect(f, lo: float, hi: float, n: int = 100) -> float:
    """The root of a monotone ``f`` on [lo, hi] (its sign at lo and hi differ)."""
    f_lo = f(lo)
    for _ in range(n):
        mid = (lo + hi) / 2
        if (f(mid) > 0) == (f_lo > 0):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _mu_for_mean(mean: float, s: float, cap: float | None) -> tuple[float, str]:
    if cap is None:
        return math.log(mean) - s * s / 2, ""
    if mean >= cap:
        return math.log(cap) + 4 * s, f"the mean {mean:.6g} is at the cap {cap:.6g}: nearly every response clipped"
    lo, hi = math.log(mean) - 10 * s - 10, math.log(cap) + 10 * s + 10
    return _bisect(lambda mu: clipped_mean(mu, s, cap) - mean, lo, hi, 200), ""


def sigma_from_spread(mean: float, max_: float | None, min_: float | None, n: int) -> tuple[float, str] | None:
    e = expected_extreme(n)
    if max_ is not None and min_ is not None and max_ > min_ > 0:
        return ln_clamp(math.log(max_ / min_) / (2 * e)), f"the min/max spread of {n} lengths per step"
    if max_ is not None and max_ > mean > 0:
        a = math.log(max_ / mean)  # s e - s^2/2 = a: the smaller root
        disc = e * e - 2 * a
        s = e - math.sqrt(disc) if disc > 0 else e
        return ln_clamp(s), f"the max against the mean of {n} lengths per step"
    return None


def ln_clamp(s: float) -> float:
    return min(max(s, SIGMA_RANGE[0]), SIGMA_RANGE[1])


def fit(mean: float, cap: float | None, clip_ratio: float | None = None, *, max_: float | None = None,
        min_: float | None = None, batch: int = DEFAULT_BATCH, default_sigma: float = DEFAULT_SIGMA) -> Fitted:
    """The clipped lognormal whose mean is ``mean`` and whose mass at ``cap`` is ``clip_ratio``
    (see the module's notes for the case without a clip ratio)."""
    if mean <= 0:
        raise ValueError("the mean length must be > 0")
    if clip_ratio and cap is not None and 0 < 1 - clip_ratio < 1:  # (a ratio of 1e-300 is 0 here)
        z = _N.inv_cdf(1 - clip_ratio)
        lc = math.log(cap)

        def gap(s: float) -> float:
            return clipped_mean(lc - s * z, s, cap) - mean

        lo, hi = SIGMA_RANGE
        note = ""
        if gap(lo) <= 0:
            s = lo
            note = f"the mean {mean:.6g} is at the cap: sigma at its least"
        elif gap(hi) >= 0:
            s = hi
            note = (f"the mean {mean:.6g} is below clip ratio x cap ({clip_ratio * cap:.6g}): no lognormal "
                    "matches both; sigma at its largest")
        else:
            s = _bisect(gap, lo, hi)
        return Fitted(math.exp(lc - s * z), s, cap, "the clip ratio and the mean", note)
    if clip_ratio is not None and 1 - clip_ratio <= 0:
        s = SIGMA_RANGE[0]
        mu, _ = _mu_for_mean(cap if cap is not None else mean, s, cap)
        return Fitted(math.exp(mu), s, cap, "every response clipped (clip ratio 1)")
    censored = cap is not None and max_ is not None and max_ >= cap - 0.5  # every step's longest at the cap
    if censored and min_ is not None and 0 < min_ < mean < cap:
        # The max is the cap, not a draw: the shortest of n draws lies e_n sds below the median.
        e, lm = expected_extreme(batch), math.log(min_)

        def gap(s: float) -> float:
            return clipped_mean(lm + s * e, s, cap) - mean

        lo, hi = SIGMA_RANGE
        if gap(lo) < 0 < gap(hi):
            s = _bisect(gap, lo, hi)
            return Fitted(math.exp(lm + s * e), s, cap, f"the min against the mean of {batch} lengths per step "
                          "(the max is at the cap: clipped, no clip ratio logged)")
    spread = None if censored else sigma_from_spread(mean, max_, min_, batch)
    if spread is None:
        s, how = default_sigma, f"the default {default_sigma} (" + (
            "no clip ratio or min logged, and the max is at the cap" if censored
            else "no clip ratio, min or max logged") + ")"
    else:
        s, how = spread
    mu, note = _mu_for_mean(mean, s, cap)
    return Fitted(math.exp(mu), s, cap, how, note)
