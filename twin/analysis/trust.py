"""How far to trust a report: the validation sources nearest to its scenario, and the twin's
error there.

Every report carries ``trust``: up to two of the built-in validation sources (scenarios/
validation/, docs/validation.md) whose cases most resemble the scenario — the same MoE-ness
and model family, framework profile, deployment mode, GPU — with the twin's error on their
published figures, e.g. "resembles validation F (…): the twin was -56% there". The errors are
read from ``twin/validation/record.json``, which :mod:`twin.validation.record` derives from the
twin's own reports of those cases (the golden files), never typed in.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

RECORD = Path(__file__).resolve().parent.parent / "validation" / "record.json"
SHOWN = 2  # sources named on a report


def traits(scenario: dict[str, Any]) -> dict[str, Any]:
    """What a resolved scenario (a report's ``scenario``) is compared on."""
    model = scenario["model"]["name"]
    return {"model": model, "family": re.match(r"[a-z]*", model.lower()).group(0) or model.lower(),
            "moe": bool(scenario["model"].get("moe")), "framework": scenario.get("framework"),
            "mode": scenario["placement"]["mode"], "gpu": scenario["cluster"]["gpu"].split(" ")[0]}


@lru_cache(maxsize=1)
def _record() -> list[dict[str, Any]]:
    return json.loads(RECORD.read_text())["cases"] if RECORD.exists() else []


def _shared(mine: dict[str, Any], case: dict[str, Any]) -> tuple[int, list[str]]:
    """(score, what is shared): MoE with MoE counts most, then family, framework, mode, GPU."""
    score, words = 0, []
    if mine["moe"] == case["moe"]:
        score += 2 if mine["moe"] else 1
        words.append("MoE" if mine["moe"] else "dense")
    for key, word in (("family", "model family"), ("framework", "framework"), ("mode", "mode"), ("gpu", "GPU")):
        if mine[key] is not None and mine[key] == case[key]:
            score += 1
            words.append(word)
    return score, words


def _pct(x: float) -> str:
    rounded = round(x * 100)
    return f"{rounded:+d}%".replace("-", "−") if rounded else "0%"


def nearest(scenario: dict[str, Any], record: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The validation sources nearest to ``scenario`` (a report's resolved scenario), nearest
    first: for each, its best-matching cases, what they share with the scenario, and the twin's
    error on their published figures (fitted figures left out: they match by construction)."""
    mine = traits(scenario)
    by_source: dict[str, tuple[int, list[str], list[dict[str, Any]]]] = {}
    for case in _record() if record is None else record:
        score, words = _shared(mine, case)
        best = by_source.get(case["source"])
        if best is None or score > best[0]:
            by_source[case["source"]] = (score, words, [case])
        elif score == best[0]:
            best[2].append(case)
    ranked = sorted(by_source.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [_entry(tag, words, cases) for tag, (score, words, cases) in ranked[:SHOWN]
            if any(not f["fitted"] for c in cases for f in c["figures"])]


def _entry(tag: str, words: list[str], cases: list[dict[str, Any]]) -> dict[str, Any]:
    figures = [f for c in cases for f in c["figures"] if not f["fitted"]]
    errors = [f["error"] for f in figures]
    tolerance = cases[0]["tolerance"]
    within = sum(abs(e) <= tolerance for e in errors)
    first = cases[0]
    what = (f"{first['framework'] or 'no framework profile'}, {'MoE' if first['moe'] else 'dense'} "
            f"{first['model']}{' and others' if len({c['model'] for c in cases}) > 1 else ''}, "
            f"{first['mode']} on {first['gpu']}")
    lo, hi = min(errors), max(errors)
    err = (f"the twin was {_pct(lo)} there" if len(errors) == 1 or _pct(lo) == _pct(hi)
           else f"the twin was {_pct(lo)} … {_pct(hi)} there")
    text = (f"resembles validation {tag} ({what}; shares {', '.join(words) or 'little'}): {err} "
            f"({within} of {len(errors)} published figure{'s' if len(errors) != 1 else ''} within ±{tolerance * 100:.0f}%; docs/validation.md)")
    return {"source": tag, "file": first["file"], "cases": sorted({c["case"] for c in cases}), "shares": words,
            "error_min": lo, "error_max": hi, "figures": len(errors), "within_tolerance": within,
            "tolerance": tolerance, "text": text}
