"""The links of the RL loop, declared once: their names, what people call them, the step phases
that put each on the critical path, and the resource whose busy share stands for its load.

The simulation attributes each phase of a step to a link (:data:`PHASE_LINK`); analysis, the
verdict, the CLI and the TUI read the names and titles here. Adding a link is one more
:class:`Link` in :data:`LINKS`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    name: str
    title: str                 # as people read it
    phases: tuple[str, ...]    # the step phases that put it on the critical path
    role: str | None = None    # the resource whose busy share is its load when nothing better is known
    in_loop: bool = True       # on the loop itself (evaluation sits beside it, on the rollout GPUs)


LINKS: dict[str, Link] = {link.name: link for link in (
    Link("rollout", "rollout", ("generation",), "rollout"),
    Link("tools", "tools", ("tools",)),
    Link("reward", "reward", ("reward",), "reward"),
    Link("optimization", "optimization", ("old_logprob", "reference", "critic", "update_actor"), "trainer"),
    Link("switch", "switch", ("switch",)),  # only where rollout and trainer time-share GPUs
    Link("weight_sync", "weight sync", ("weight_sync",), "link"),
    Link("evaluation", "evaluation", ("evaluation",), in_loop=False),
)}

# Phases of a step -> the link they put on the critical path.
PHASE_LINK: dict[str, str] = {phase: link.name for link in LINKS.values() for phase in link.phases}

# The loop in the order experience flows.
LOOP: tuple[str, ...] = tuple(name for name, link in LINKS.items() if link.in_loop)


def title(name: str) -> str:
    """A link's name as people read it (a name not in the registry as it is)."""
    link = LINKS.get(name)
    return link.title if link else name
