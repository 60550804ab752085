"""Whether a run made earlier is the run asked for now: its recorded resolved configuration
against today's, up to the strategy keys that change nothing computed
(:data:`~es_lightning.training.resume.FREE_STRATEGY_KEYS`) and settings added since (their defaults
keep the old behaviour), so a report or tune that outlasts a release reuses its runs.
"""

from __future__ import annotations

from typing import Any


def computed_settings(settings: str) -> Any:
    """A recorded resolved configuration (YAML text) less the strategy keys that change nothing
    the run computes."""
    import yaml

    from es_lightning.training.resume import FREE_STRATEGY_KEYS

    loaded = yaml.safe_load(settings)
    parts = [loaded, *(loaded.get("stages") or [])] if isinstance(loaded, dict) else []
    for part in parts:  # a pipeline's stages carry their own strategies
        strategy = part.get("strategy") if isinstance(part, dict) else None
        init_args = strategy.get("init_args") if isinstance(strategy, dict) else None
        if isinstance(init_args, dict):
            for key in FREE_STRATEGY_KEYS:
                init_args.pop(key, None)
    return loaded


def known(now: Any, record: Any) -> Any:
    """``now`` without the mapping keys ``record`` lacks (at any depth, lists of the same length
    item by item: a pipeline's stages)."""
    if isinstance(now, dict) and isinstance(record, dict):
        return {k: known(v, record[k]) for k, v in now.items() if k in record}
    if isinstance(now, list) and isinstance(record, list) and len(now) == len(record):
        return [known(v, r) for v, r in zip(now, record)]
    return now


def same_settings(recorded: str, now: str) -> bool:
    """Whether the run recorded with ``recorded`` is the one ``now`` asks for (see the module)."""
    old, new = computed_settings(recorded), computed_settings(now)
    return old == known(new, old)
