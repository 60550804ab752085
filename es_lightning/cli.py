"""The ``es-lightning`` command: ``fit``, ``evaluate``, ``analyze``, ``report``, ``compare`` and ``tune``.

Each command sits beside its subsystem; only the parser of the subcommand named is built, so
``--version`` and ``--help`` import no model library. A ConfigError ends the command with
``es-lightning: error: <message>`` and exit status 2 (``--debug`` shows its traceback).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import yaml

from es_lightning.errors import USER_ERROR_STATUS, ConfigError, find_config_error
from es_lightning.recipe_files import check_recipe_files
from es_lightning.training.stage_args import STAGE_ARG, expand_stage_args

DEBUG_ENV = "ES_LIGHTNING_DEBUG"
"""``ES_LIGHTNING_DEBUG=1`` is ``--debug``: errors in the settings show their traceback."""
ENGINE_ERROR_STATUS = 1
"""Exit status of a run ended by its rollout engine (a call past its timeout, engine processes
that died); a run stopped by SIGTERM/SIGINT exits with 128 + the signal's number."""


def _compare_parser() -> Any:
    from es_lightning.cli_hints import command_parser
    from es_lightning.report.compare import run_compare

    parser = command_parser((run_compare.__doc__ or "").split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (fit's trainer.output_dir)")
    parser.add_function_arguments(run_compare, fail_untyped=False, skip={"runs"})
    return parser


COMMANDS: dict[str, tuple[str, str]] = {
    "fit": ("Post-train a model (ES or GRPO strategy).", "es_lightning.training.command"),
    "evaluate": ("Pass@K / Maj@K of a model or of saved completions.", "es_lightning.evaluation.command"),
    "analyze": (
        "Drift, update sparsity and layer attribution of a checkpoint.",
        "es_lightning.analysis.command",
    ),
    "report": (
        "Run or reuse base/ES/GRPO/sequential runs and write REPORT.md.",
        "es_lightning.report.command",
    ),
    "compare": ("The final evaluations of runs side by side.", "es_lightning.report.compare"),
    "tune": (
        "Each method's grid on the validation split, one budget; writes TUNE.md.",
        "es_lightning.tune.command",
    ),
}
"""``{subcommand: (its line in --help, the module of its parser and runner)}``: the module holds
``{subcommand}_parser`` (``compare``'s is here) and ``run_{subcommand}``. A parser is built only
for the subcommand a command line names, so ``--version`` and ``--help`` import no model library."""


def _command(name: str, what: str) -> Any:
    """Subcommand ``name``'s ``parser`` builder or its ``run`` function, its module imported."""
    if name == "compare" and what == "parser":
        return _compare_parser
    module = importlib.import_module(COMMANDS[name][1])
    return getattr(module, f"{name}_parser" if what == "parser" else f"run_{name}")


def build_parser(commands: Collection[str] = tuple(COMMANDS)) -> Any:
    """The ``es-lightning`` parser, with full parsers for ``commands`` only."""
    from es_lightning.cli_hints import hinting_parser_class

    ArgumentParser = hinting_parser_class()  # noqa: N806  (parse errors name the values that parse)
    parser = ArgumentParser(
        prog="es-lightning", description="Post-train LLMs with Evolution Strategies and GRPO."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="Show the traceback of an error in the settings, paths or data (before the subcommand: "
        f"es-lightning --debug fit ...); {DEBUG_ENV}=1 does the same.",
    )
    subcommands = parser.add_subcommands(dest="subcommand")
    for name, (line, _) in COMMANDS.items():
        sub = (
            _command(name, "parser")()
            if name in commands
            else ArgumentParser(prog=f"es-lightning {name}", description=line)
        )
        subcommands.add_subcommand(name, sub, help=line)
    return parser


def _expand_stage_args(args: list[str]) -> list[str]:
    """The command line with a ``fit`` command's ``--stages.<name>.<key>`` arguments expanded."""
    at = next((i + 1 for i, a in enumerate(args) if a in COMMANDS), None)
    if at is None or args[at - 1] != "fit" or not any(STAGE_ARG.match(a) for a in args):
        return args
    from es_lightning.training.command import fit_parser

    return [*args[:at], *expand_stage_args(fit_parser(), args[at:])]


def package_version() -> str:
    """The installed distribution's version, else ``es_lightning.__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("es-lightning")
    except PackageNotFoundError:
        from es_lightning import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    """Run the command; a ConfigError prints ``es-lightning: error: <message>`` and returns 2."""
    args = list(argv if argv is not None else sys.argv[1:])
    if "" not in sys.path and os.getcwd() not in sys.path:  # recipes may name your own modules
        sys.path.insert(0, os.getcwd())  # (reward functions, tasks, callbacks), as `python -m` would
    debug = debug_requested(args)
    try:
        check_recipe_files(args)  # a file that is no recipe, named with its cause
        args = _expand_stage_args(args)  # --stages.es.<key>: a pipeline stage's setting
    except ConfigError as err:
        if debug:
            raise
        print(f"es-lightning: error: {err}", file=sys.stderr)
        return USER_ERROR_STATUS
    command = next((a for a in args if a in COMMANDS), None)  # the subcommand named
    parser = build_parser([command] if command else [])
    cfg = _parse(parser, args, debug)  # a parse error: one line (usage under --help), status 2
    from es_lightning.ranks import PeerRankError, exit_status
    from es_lightning.rollout.watchdog import EngineError
    from es_lightning.training.signals import RunInterrupted

    try:
        _run(parser, cfg)
    except RunInterrupted as stopped:  # SIGTERM/SIGINT: the trainer saved and said where
        if debug:
            raise
        return stopped.exit_code
    except PeerRankError as peer:  # another rank failed and printed why (es_lightning.ranks)
        return exit_status(peer, peer.status)
    except EngineError as err:  # a stalled or dead engine: the message names it and its device
        if debug:
            return _reraise(err)
        print(f"es-lightning: error: {err}", file=sys.stderr)
        return exit_status(err, ENGINE_ERROR_STATUS)
    except Exception as err:
        user_error = find_config_error(err)
        if user_error is None or debug:
            return _reraise(err)
        print(f"es-lightning: error: {user_error}", file=sys.stderr)
        return exit_status(err, USER_ERROR_STATUS)
    return 0


def _reraise(error: Exception) -> int:
    """Raise ``error`` with its traceback (a Fabric-launched rank after a shared failure exits 0)."""
    from es_lightning.ranks import exit_status

    if exit_status(error, 1) != 0:
        raise error
    traceback.print_exception(error)
    return 0


def _parse(parser: Any, args: list[str], debug: bool) -> Any:
    if not debug:
        return parser.parse_args(args)
    previous = os.environ.get("JSONARGPARSE_DEBUG")
    os.environ["JSONARGPARSE_DEBUG"] = "true"  # --debug: a parse error raises with its traceback
    try:
        return parser.parse_args(args)
    finally:
        if previous is None:
            del os.environ["JSONARGPARSE_DEBUG"]
        else:
            os.environ["JSONARGPARSE_DEBUG"] = previous


def debug_requested(args: Sequence[str]) -> bool:
    """``--debug`` before the subcommand, or ``ES_LIGHTNING_DEBUG`` set to a true value."""
    if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    top_level = next((list(args[:i]) for i, a in enumerate(args) if a in COMMANDS), list(args))
    return "--debug" in top_level


def dump_resolved(parser: Any, cfg: Any) -> str:
    """``cfg`` as YAML with every setting, ``null`` ones included."""
    from jsonargparse import ArgumentParser

    dump = getattr(ArgumentParser, "_unpatched_dump", ArgumentParser.dump)  # Lightning wraps dump
    keyword = "skip_unset" if "skip_unset" in inspect.signature(dump).parameters else "skip_none"
    return parser.dump(cfg, **{keyword: False})


def _check_checkpoints(name: str, kwargs: dict[str, Any]) -> None:
    """The checkpoints a command reads are checked against their manifests before it starts."""
    from es_lightning.checkpoint import check_if_checkpoint

    if name == "analyze":
        for key in ("checkpoint", "base", "compare"):
            check_if_checkpoint(kwargs.get(key), f"analyze --{key}")
    elif name == "evaluate":
        check_if_checkpoint(kwargs.get("model"), "evaluate --model")
    elif name == "compare":
        for run in kwargs.get("runs") or []:
            check_if_checkpoint(run, "compare")


def _run(parser: Any, cfg: Any) -> None:
    name = cfg.subcommand
    init = parser.instantiate(cfg)
    kwargs = {k: v for k, v in init[name].items() if k != "config"}
    _check_checkpoints(name, kwargs)
    if name == "fit":
        _run_fit(parser, cfg, kwargs)
    else:
        _command(name, "run")(**kwargs)


def _run_fit(parser: Any, cfg: Any, kwargs: dict[str, Any]) -> None:
    """``fit``: its folder checked and locked, ``config.yaml`` written, then the run."""
    from es_lightning.training.command import finished_run, prepare_fit, run_fit
    from es_lightning.training.run_dir import release_run_lock

    module, trainer = kwargs["module"], kwargs["trainer"]
    out_dir = prepare_fit(trainer, kwargs.get("stages") is not None, kwargs.get("strategy"), module.task.name)
    try:  # prepare_fit took the folder's lock
        evaluates_after = trainer.eval_after and kwargs.get("evaluation") is not None
        finished = None if kwargs.get("stages") is not None else finished_run(trainer, evaluates_after)
        if finished is not None:  # nothing is written or started
            print(f"es-lightning: {finished}", file=sys.stderr, flush=True)
            return
        sub = parser._subcommands_action._name_parser_map["fit"]
        dumped = dump_resolved(sub, cfg.fit)
        (out_dir / "config.yaml").write_text(dumped)
        run_fit(**kwargs, hparams=yaml.safe_load(dumped))
    finally:
        release_run_lock(out_dir)
