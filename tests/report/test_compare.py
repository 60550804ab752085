"""es-lightning compare on run folders as fit writes them (single runs and a pipeline)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from es_lightning.errors import ConfigError
from es_lightning.report.compare import START, run_compare
from tests.helpers import CLI, run_main, subprocess_env
from tests.report.synthetic import TASK, summary, write_pipeline, write_single


@pytest.fixture()
def runs(tmp_path):
    rng = np.random.default_rng(0)
    base, es, grpo, seq = (summary(p, rng) for p in (0.3, 0.35, 0.45, 0.4))
    write_single(tmp_path / "es", base, es, [])  # the writers put each summary under TASK
    write_single(tmp_path / "grpo", base, grpo, [])
    write_pipeline(tmp_path / "es_then_grpo", ["es", "grpo"], [5, 5], base, seq, [[], []])
    return tmp_path, {"base": base, "es": es, "grpo": grpo, "seq": seq}


def test_columns_are_the_start_then_each_run_final_evaluation(runs, tmp_path, capsys):
    root, s = runs
    out = tmp_path / "cmp"
    columns = run_compare([root / "es", root / "grpo", root / "es_then_grpo"], output=out)
    assert list(columns) == [START, "es", "grpo", "es_then_grpo"]
    assert columns == {
        START: {TASK: s["base"]},
        "es": {TASK: s["es"]},
        "grpo": {TASK: s["grpo"]},
        "es_then_grpo": {TASK: s["seq"]},
    }
    printed = capsys.readouterr().out
    line = next(row for row in printed.splitlines() if row.split()[:2] == [TASK, "pass@1"])
    assert line.split()[2:] == ["30.0%", "35.0%", "45.0%", "40.0%"]
    assert json.loads((out / "compare.json").read_text()) == columns
    assert (out / "compare.txt").read_text().strip() == printed.strip()
    assert (out / f"pass_at_k_{TASK}.png").stat().st_size > 0
    assert (out / f"change_{TASK}.png").stat().st_size > 0


def test_task_filter_and_bad_input(runs):
    root, _ = runs
    assert list(run_compare([root / "es"], task=TASK, start=False)) == ["es"]
    with pytest.raises(ConfigError, match="no run evaluated task 'gsm8k'"):
        run_compare([root / "es"], task="gsm8k")
    with pytest.raises(ConfigError, match="does not exist"):
        run_compare([root / "missing"])
    (root / "unfinished").mkdir()
    with pytest.raises(ConfigError, match="no final evaluation"):
        run_compare([root / "unfinished"])


@pytest.mark.integration
def test_cli_takes_run_folders_as_positional_arguments(runs):
    root, _ = runs
    proc = subprocess.run(
        [*CLI, "compare", str(root / "es"), str(root / "grpo"), "--task", TASK],
        env=subprocess_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "start" in proc.stdout and "grpo" in proc.stdout


def _config(run, temperature=0.6, model="es-lightning/tiny-arithmetic", length=4):
    """A resolved config.yaml as fit writes it (class_path/init_args), with the keys compare reads."""
    (run / "config.yaml").write_text(
        "module:\n  class_path: es_lightning.ReasoningModule\n  init_args:\n"
        f"    model: {model}\n    max_prompt_tokens: 2048\n"
        "    task:\n      class_path: es_lightning.tasks.Echo\n"
        f"      init_args:\n        length: {length}\n        n_test: 16\n"
        f"evaluation:\n  num_samples: 32\n  temperature: {temperature}\n  ks: [1, 32]\n  seed: 1234\n"
        "eval_tasks: null\ntrainer:\n  max_steps: 10\n"
    )


def test_runs_evaluated_alike_raise_no_warning_and_show_detail_rows(runs, tmp_path, capsys):
    root, s = runs
    for name in ("es", "grpo"):
        _config(root / name)
    after = json.loads((root / "grpo" / "eval" / "after.json").read_text())
    after[TASK].update(response_len=41.25, truncated_frac=0.125)  # as the evaluation runner writes them
    (root / "grpo" / "eval" / "after.json").write_text(json.dumps(after))
    out = tmp_path / "cmp"
    run_compare([root / "es", root / "grpo"], output=out)
    printed = capsys.readouterr()
    assert "warning" not in printed.err
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in printed.out.splitlines()}
    assert rows[(TASK, "mean_reward")] == [f"{s['base']['mean_reward']:.3f}", "0.350", "0.450"]
    assert rows[(TASK, "response_len")] == ["-", "-", "41.2"]
    assert rows[(TASK, "truncated_frac")] == ["-", "-", "12.5%"]
    record = json.loads((out / "compare_settings.json").read_text())
    assert record["differing"] == {}
    assert record["settings"]["es"]["evaluation.temperature"] == 0.6
    assert record["settings"]["es"]["task.init_args.length"] == 4
    assert record["settings"]["grpo"][f"{TASK}.n_prompts"] == 50.0


def test_runs_evaluated_differently_warn_naming_each_key(runs, tmp_path, capsys):
    root, _ = runs
    _config(root / "es")
    _config(root / "grpo", temperature=1.0, model="other/model", length=6)
    after = json.loads((root / "grpo" / "eval" / "after.json").read_text())
    after[TASK]["n_prompts"] = 20.0  # the evaluation covered fewer problems
    (root / "grpo" / "eval" / "after.json").write_text(json.dumps(after))
    run_compare([root / "es", root / "grpo"], output=tmp_path / "cmp")
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("es-lightning: warning: the runs differ in ")
    for key in ("model", "task.init_args.length", "evaluation.temperature", f"{TASK}.n_prompts"):
        assert key in first
    assert "  evaluation.temperature: es 0.6, grpo 1.0" in err.splitlines()
    differing = json.loads((tmp_path / "cmp" / "compare_settings.json").read_text())["differing"]
    assert differing["model"] == {"es": "es-lightning/tiny-arithmetic", "grpo": "other/model"}
    assert set(differing) == {"model", "task.init_args.length", "evaluation.temperature", f"{TASK}.n_prompts"}


def test_a_setting_one_run_lacks_is_not_a_difference(runs, capsys):
    """A key added after a run ran (absent from its config) keeps its old behaviour: no warning;
    a run with no config.yaml at all is named as unchecked."""
    root, _ = runs
    _config(root / "es")
    _config(root / "grpo")
    config = root / "grpo" / "config.yaml"
    config.write_text(config.read_text().replace("  seed: 1234\n", "  seed: 1234\n  top_k: 0\n"))
    run_compare([root / "es", root / "grpo"])
    assert "warning" not in capsys.readouterr().err
    (root / "es" / "config.yaml").unlink()
    run_compare([root / "es", root / "grpo"])
    err = capsys.readouterr().err
    assert "the runs differ" not in err and "no config.yaml in es:" in err


def test_cli_warns_and_still_exits_0(runs, capsys):
    root, _ = runs
    _config(root / "es")
    _config(root / "grpo", temperature=1.0)
    proc = run_main(capsys, "compare", str(root / "es"), str(root / "grpo"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "es-lightning: warning: the runs differ in evaluation.temperature" in proc.stderr
