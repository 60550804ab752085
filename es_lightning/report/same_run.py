"""Whether a run made earlier is the run asked for now, up to the strategy keys that change nothing
computed and settings added since, so a report or tune that outlasts a release reuses its runs."""

from __future__ import annotations

from typing import Any


def computed_settings(settings: str) -> Any:
    """A recorded configuration (YAML) less the strategy keys that change nothing computed."""
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
    """``now`` without the keys ``record`` lacks, at any depth."""
    if isinstance(now, dict) and isinstance(record, dict):
        return {k: known(v, record[k]) for k, v in now.items() if k in record}
    if isinstance(now, list) and isinstance(record, list) and len(now) == len(record):
        return [known(v, r) for v, r in zip(now, record)]
    return now


def same_settings(recorded: str, now: str) -> bool:
    """Whether the run recorded with ``recorded`` is the one ``now`` asks for (see the module)."""
    old, new = computed_settings(recorded), computed_settings(now)
    return old == known(new, old)
