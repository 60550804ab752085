"""Orchestration: the run layout, reuse of finished runs, failures recorded while the others go on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from es_lightning.report import Ablation, DriftSettings, run_report
from es_lightning.report.command import build_plan
from es_lightning.report.runs import LOG_NAME, RunSpec, command_line, plan_runs, run_all
from tests.report.synthetic import TASK, summary, training_metrics, write_single

# A stand-in for `es-lightning fit`: writes a final evaluation, or fails when the recipe says so.
FAKE_FIT = """
import json, pathlib, sys
run_dir, recipe = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
if "fail" in recipe.read_text():
    print("boom: the recipe asked to fail"); sys.exit(3)
(run_dir / "eval").mkdir(parents=True, exist_ok=True)
(run_dir / "eval" / "after.json").write_text(json.dumps({"t": {"pass@1": 0.5}}))
with open(run_dir.parent.parent / "launches.txt", "a") as f:
    f.write(str(run_dir) + "\\n")
"""


def fake_command(spec: RunSpec) -> list[str]:
    return [sys.executable, "-c", FAKE_FIT, str(spec.run_dir), spec.recipe]


def _recipes(tmp_path: Path) -> dict[str, str]:
    ok, bad = tmp_path / "ok.yaml", tmp_path / "bad.yaml"
    ok.write_text("ok: true\n")
    bad.write_text("fail: true\n")
    return {"good": str(ok), "bad": str(bad)}


def test_layout_and_commands(tmp_path):
    plan = build_plan(
        {"es": "es.yaml", "grpo": "grpo.yaml"},
        tmp_path,
        seeds=2,
        overrides=["--trainer.accelerator cpu"],
        ablations={
            "population_size": Ablation(
                recipe="es.yaml", parameter="strategy.init_args.population_size", values=[8, 16]
            )
        },
        base="eval.yaml",
    )
    specs = plan_runs(plan)
    names = [s.name for s in specs]
    assert names == [
        "base/seed0",
        "es/seed0",
        "grpo/seed0",
        "es/seed1",
        "grpo/seed1",
        "population_size/8/seed0",
        "population_size/8/seed1",
        "population_size/16/seed0",
        "population_size/16/seed1",
    ]
    by_name = {s.name: s for s in specs}
    assert by_name["es/seed1"].run_dir == tmp_path / "runs" / "es" / "seed1"
    assert (
        by_name["population_size/16/seed0"].run_dir == tmp_path / "runs" / "population_size" / "16" / "seed0"
    )
    argv = command_line(by_name["population_size/16/seed1"])
    assert argv[1:6] == ["-m", "es_lightning", "fit", "--config", "es.yaml"]
    assert argv[6:] == [
        "--trainer.output_dir",
        str(tmp_path / "runs" / "population_size" / "16" / "seed1"),
        "--trainer.seed",
        "1",
        "--trainer.accelerator",
        "cpu",
        "--strategy.init_args.population_size",
        "16",
    ]
    base = command_line(by_name["base/seed0"])
    assert base[3:] == [
        "evaluate",
        "--config",
        "eval.yaml",
        "--output",
        str(tmp_path / "runs/base/seed0/eval/after.json"),
    ]


def test_quick_mode_uses_one_seed_quick_overrides_and_quick_values(tmp_path):
    ablation = Ablation(
        recipe="es.yaml",
        parameter="strategy.init_args.population_size",
        values=[8, 16, 32, 64],
        quick_values=[8, 32],
        seeds=3,
    )
    plan = build_plan(
        {"es": "es.yaml"},
        tmp_path,
        quick=True,
        quick_overrides=["--trainer.max_steps 6 --evaluation.limit 50"],
        ablations={"n": ablation},
    )
    assert plan.seeds == [0]
    specs = plan_runs(plan)
    assert [s.name for s in specs] == ["es/seed0", "n/8/seed0", "n/32/seed0"]
    assert specs[0].overrides == ("--trainer.max_steps", "6", "--evaluation.limit", "50")
    full = build_plan(
        {"es": "es.yaml"}, tmp_path, quick_overrides=["--trainer.max_steps 6"], ablations={"n": ablation}
    )
    assert full.seeds == [0, 1, 2] and full.overrides == []
    assert len(plan_runs(full)) == 3 + 4 * 3


def test_the_quick_sizes_come_after_a_methods_own_overrides_and_before_an_ablations(tmp_path):
    from es_lightning.report.config import ForgettingSettings

    plan = build_plan(
        {"es": "es.yaml"},
        tmp_path,
        quick=True,
        overrides=["--a 1"],
        quick_overrides=["--callbacks []"],
        method_overrides={"es": ["--callbacks [x]"]},
        ablations={
            "n": Ablation(recipe="es.yaml", values=[8], parameter="p", overrides=["--trainer.max_steps 30"])
        },
        forgetting=ForgettingSettings(methods={"es": "f.yaml"}, overrides=["--callbacks [y]"]),
    )
    by_name = {s.name: s.overrides for s in plan_runs(plan)}
    assert by_name["es/seed0"] == ("--a", "1", "--callbacks", "[x]", "--callbacks", "[]")
    assert by_name["forgetting/es/seed0"] == ("--a", "1", "--callbacks", "[y]", "--callbacks", "[]")
    assert by_name["n/8/seed0"] == ("--a", "1", "--callbacks", "[]", "--trainer.max_steps", "30", "--p", "8")


@pytest.mark.integration
def test_finished_runs_are_reused_and_failures_recorded(tmp_path):
    recipes = _recipes(tmp_path)
    runs = tmp_path / "runs"
    specs = [
        RunSpec("good", None, 0, recipes["good"], (), runs / "good" / "seed0"),
        RunSpec("bad", None, 0, recipes["bad"], (), runs / "bad" / "seed0"),
        RunSpec("good", None, 1, recipes["good"], (), runs / "good" / "seed1"),
        RunSpec("gone", None, 0, str(tmp_path / "nowhere.yaml"), (), runs / "gone" / "seed0"),
    ]
    first = run_all(specs, command=fake_command)
    assert [o.status for o in first] == ["finished", "failed", "finished", "failed"]
    assert first[1].returncode == 3 and "boom" in first[1].error
    assert (runs / "bad" / "seed0" / LOG_NAME).read_text().endswith("boom: the recipe asked to fail\n")
    assert "not found" in first[3].error
    launches = (runs / "launches.txt").read_text().splitlines()
    assert len(launches) == 2

    second = run_all(specs, command=fake_command)
    assert [o.status for o in second] == ["reused", "failed", "reused", "failed"]
    assert (runs / "launches.txt").read_text().splitlines() == launches  # nothing finished was rerun


@pytest.mark.integration
def test_unfinished_attempt_is_cleared_and_rerun(tmp_path):
    recipes = _recipes(tmp_path)
    run_dir = tmp_path / "runs" / "good" / "seed0"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text('{"step": 1, "train/reward_mean": 0.1}\n')
    [outcome] = run_all([RunSpec("good", None, 0, recipes["good"], (), run_dir)], command=fake_command)
    assert outcome.status == "finished"
    assert not (run_dir / "metrics.jsonl").exists()


@pytest.mark.integration
def test_timeout_is_a_failure(tmp_path):
    recipes = _recipes(tmp_path)
    spec = RunSpec("slow", None, 0, recipes["good"], (), tmp_path / "runs" / "slow" / "seed0")
    [outcome] = run_all(
        [spec], timeout_s=0.5, command=lambda s: [sys.executable, "-c", "import time; time.sleep(30)"]
    )
    assert outcome.status == "failed" and outcome.error.startswith("timed out")


def test_report_records_a_failed_method_and_keeps_the_others(tmp_path):
    rng = np.random.default_rng(0)
    before = summary(0.4, rng)
    afters = {}
    for seed in (0, 1):
        afters[seed] = summary(0.6 + 0.01 * seed, rng)
        write_single(
            tmp_path / "runs" / "es" / f"seed{seed}", before, afters[seed], training_metrics(rng, 3, 0.0)
        )
    report = run_report(
        methods={"es": "es.yaml", "grpo": str(tmp_path / "missing_grpo.yaml")},
        output_dir=tmp_path,
        seeds=2,
        drift=DriftSettings(enabled=False),
    )
    assert [f["name"] for f in report["failures"]] == ["grpo/seed0", "grpo/seed1"]
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["failures"][0]["status"] == "failed" and "not found" in saved["failures"][0]["error"]
    assert saved["evaluations"]["pass_at_k"]["es"]["1"]["values"] == [
        afters[0]["pass@1"],
        afters[1]["pass@1"],
    ]
    assert "grpo" not in saved["evaluations"]["pass_at_k"]
    text = (tmp_path / "REPORT.md").read_text()
    assert "| grpo/seed0 | failed |" in text and "### Failures" in text
    assert "- `grpo/seed1` failed: recipe" in text
    grpo_claim = next(c for c in saved["claims"] if c["claim"] == "GRPO raises Pass@1")
    assert grpo_claim["verdict"].startswith("insufficient data")
    assert TASK in text


@pytest.mark.integration
def test_runs_with_the_same_resolved_config_run_once(tmp_path):
    """An ablation value equal to the recipe's own (zscore in coverage_cpu_es.yaml) is the method's
    run: the ablation's folder links to it instead of training again."""
    from tests.helpers import REPO

    recipe = str(REPO / "recipes" / "coverage_cpu_es.yaml")
    method = RunSpec("es", None, 0, recipe, (), tmp_path / "runs" / "es" / "seed0")

    def normalization(value: str) -> RunSpec:
        folder = tmp_path / "runs" / "normalization" / value / "seed0"
        return RunSpec(
            "normalization", value, 0, recipe, ("--strategy.init_args.normalization", value), folder
        )

    same, other = normalization("zscore"), normalization("none")
    outcomes = run_all([method, same, other], command=fake_command)
    assert [o.status for o in outcomes] == ["finished", "reused", "finished"]
    assert same.run_dir.is_symlink() and same.run_dir.resolve() == method.run_dir.resolve()
    launches = (tmp_path / "runs" / "launches.txt").read_text().split()
    assert launches == [str(method.run_dir)]  # the `none` run wrote into its own group's folder


@pytest.mark.integration
def test_a_run_made_with_other_settings_is_run_again(tmp_path):
    from tests.helpers import REPO

    recipe = str(REPO / "recipes" / "coverage_cpu_es.yaml")
    run_dir = tmp_path / "runs" / "es" / "seed0"
    first = RunSpec("es", None, 0, recipe, ("--trainer.max_steps", "6"), run_dir)
    assert [o.status for o in run_all([first], command=fake_command)] == ["finished"]
    assert [o.status for o in run_all([first], command=fake_command)] == ["reused"]
    changed = RunSpec("es", None, 0, recipe, ("--trainer.max_steps", "7"), run_dir)
    assert [o.status for o in run_all([changed], command=fake_command)] == ["finished"]
    assert "max_steps: 7" in (run_dir / "report_run_config.yaml").read_text()


@pytest.mark.integration
def test_an_interrupted_run_continues_from_its_checkpoint_bit_for_bit(tmp_path, monkeypatch):
    """A run stopped after its step-2 checkpoint (here: an attempt of 2 of its 4 updates, no final
    evaluation) continues from that checkpoint when the report runs again; its final weights are
    the uninterrupted run's, its log and measured compute hold both attempts."""
    from safetensors.torch import load_file

    from es_lightning.report.runs import ATTEMPT_NAME, MEASURE_NAME, measured_command
    from tests.helpers import DISTRIBUTED_VARS, TINY_ES_RECIPE, assert_bit_identical, subprocess_env

    for name in DISTRIBUTED_VARS:  # the runs are their own processes, as in a report
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(
        TINY_ES_RECIPE.replace(
            "evaluation: null", "evaluation: {num_samples: 2, temperature: 0.6, max_tokens: 6, ks: [1]}"
        )
    )
    overrides = ("--trainer.max_steps", "4", "--trainer.checkpoint_every", "2")
    straight = RunSpec("es", None, 0, str(recipe), overrides, tmp_path / "straight" / "seed0")
    cut = RunSpec("es", None, 0, str(recipe), overrides, tmp_path / "cut" / "seed0")
    assert [o.status for o in run_all([straight])] == ["finished"]

    def stopped_early(spec: RunSpec) -> list[str]:
        return [*measured_command(spec), "--trainer.max_steps", "2", "--trainer.eval_after", "false"]

    [first] = run_all([cut], command=stopped_early)
    assert first.status == "failed" and (cut.run_dir / "checkpoints" / "step-000002").is_dir()
    assert (cut.run_dir / ATTEMPT_NAME).is_file()
    [second] = run_all([cut])
    assert second.status == "finished"

    def master(run: RunSpec) -> dict:
        return load_file(run.run_dir / "checkpoints" / "step-000004" / "es_state" / "master.safetensors")

    assert_bit_identical(master(straight), master(cut))
    log = (cut.run_dir / LOG_NAME).read_text()
    assert log.count("$ ") == 2 and "--trainer.resume auto" in log
    steps = [json.loads(line)["step"] for line in (cut.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [s for s in steps if s] == sorted(s for s in steps if s) and max(steps) == 4
    measure = json.loads((cut.run_dir / MEASURE_NAME).read_text())
    assert len(measure["segments"]) == 2 and measure["returncode"] == 0
    assert measure["wall_seconds"] == pytest.approx(
        sum(s["wall_seconds"] for s in measure["segments"]), abs=1e-2
    )


def test_an_attempt_made_with_other_settings_is_not_continued(tmp_path):
    """An unfinished attempt whose recorded configuration is not the run's is cleared and run
    again, checkpoint or not."""
    from es_lightning.report.runs import ATTEMPT_NAME, can_resume

    recipes = _recipes(tmp_path)
    run_dir = tmp_path / "runs" / "good" / "seed0"
    step = run_dir / "checkpoints" / "step-000002"
    step.mkdir(parents=True)
    (step / "trainer_state.json").write_text('{"step": 2}')
    (run_dir / ATTEMPT_NAME).write_text("another: configuration\n")
    spec = RunSpec("good", None, 0, recipes["good"], (), run_dir)
    assert not can_resume(spec, "this: configuration\n")
    (run_dir / ATTEMPT_NAME).write_text("this: configuration\n")
    assert can_resume(spec, "this: configuration\n")
    assert not can_resume(
        RunSpec("good", None, 0, recipes["good"], (), run_dir, "evaluate"), "this: configuration\n"
    )


def test_settings_added_since_a_run_do_not_make_it_another_run(tmp_path):
    """A finished run or an unfinished attempt recorded before a setting existed is the run asked
    for now (the new setting's default keeps the old behaviour); a changed value is not."""
    from es_lightning.report.runs import ATTEMPT_NAME, can_resume
    from es_lightning.report.same_run import same_settings

    before = "trainer: {seed: 0}\nevaluation: {num_samples: 4}\n"
    now = "trainer: {seed: 0}\nevaluation: {num_samples: 4, top_k: 0}\n"
    assert same_settings(before, now) and not same_settings(now, before)
    assert not same_settings(before, "trainer: {seed: 1}\nevaluation: {num_samples: 4, top_k: 0}\n")
    # a pipeline's stages: a setting added to a stage's strategy, a free key, a changed value
    stage = "{strategy: {init_args: {sigma: 0.001%s}}}"
    old = f"stages: [{stage % ''}, {stage % ''}]\n"
    assert same_settings(old, f"stages: [{stage % ', lowrank_targets: matrices'}, {stage % ''}]\n")
    assert same_settings(old, f"stages: [{stage % ', update: redraw'}, {stage % ''}]\n")
    assert not same_settings(old, f"stages: [{stage % ''}]\n")
    assert not same_settings(old, f"stages: [{stage % ''}, {stage.replace('0.001', '0.002') % ''}]\n")
    run_dir = tmp_path / "runs" / "good" / "seed0"
    step = run_dir / "checkpoints" / "step-000002"
    step.mkdir(parents=True)
    (step / "trainer_state.json").write_text('{"step": 2}')
    (run_dir / ATTEMPT_NAME).write_text(before)
    spec = RunSpec("good", None, 0, str(tmp_path / "r.yaml"), (), run_dir)
    assert can_resume(spec, now)


@pytest.mark.integration
def test_after_each_follows_every_finished_or_reused_run_before_the_next_starts(tmp_path):
    recipes = _recipes(tmp_path)
    runs = tmp_path / "runs"
    specs = [
        RunSpec("good", None, 0, recipes["good"], (), runs / "good" / "seed0"),
        RunSpec("bad", None, 0, recipes["bad"], (), runs / "bad" / "seed0"),
        RunSpec("good", None, 1, recipes["good"], (), runs / "good" / "seed1"),
    ]
    seen: list[tuple[list[str], int]] = []

    def after_each(outcomes):
        launched = (runs / "launches.txt").read_text().splitlines()
        seen.append(([o.status for o in outcomes], len(launched)))

    run_all(specs, command=fake_command, after_each=after_each)
    # called after good/seed0 (1 launch so far) and good/seed1 (2), never after the failure
    assert seen == [(["finished"], 1), (["finished", "failed", "finished"], 2)]
    seen.clear()
    run_all(specs[:1], command=fake_command, after_each=after_each)
    assert seen == [(["reused"], 2)]


def test_the_report_keeps_summaries_of_each_finished_run_as_it_goes(tmp_path):
    rng = np.random.default_rng(0)
    write_single(tmp_path / "out" / "runs" / "es" / "seed0", summary(0.4, rng), summary(0.6, rng),
                 training_metrics(rng, 3, 0.0))  # fmt: skip
    run_report(
        methods={"es": "es.yaml", "grpo": str(tmp_path / "missing_grpo.yaml")},
        output_dir=tmp_path / "out",
        seeds=1,
        drift=DriftSettings(enabled=False),
        summaries_dir=tmp_path / "kept",
    )
    kept = tmp_path / "kept" / "runs"
    assert (kept / "es" / "seed0" / "eval" / "after.json").is_file()
    assert not (kept / "grpo").exists()  # failed: nothing of it is kept


# A stand-in for a run that stops the way `es-lightning fit` does: on SIGTERM it finishes its work,
# saves, and exits 143; a second SIGTERM would make it stop unsaved.
STOPPABLE = """
import signal, sys, time, pathlib
out = pathlib.Path(sys.argv[1])
def stop(signum, frame):
    with out.open("a") as f:
        f.write("term\\n")
    signal.signal(signal.SIGTERM, lambda *a: (out.open("a").write("second\\n"), sys.exit(1)))
    time.sleep(1.0)  # the update in progress, then its checkpoint
    out.open("a").write("saved\\n")
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
out.open("a").write("started\\n")
time.sleep(60)
"""

DRIVER = """
import signal, sys
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background job inherits it ignored)
from es_lightning.report.runs import run_logged
from es_lightning.training.signals import RunInterrupted
child = [sys.executable, "-m", "es_lightning.report.measure", sys.argv[2], "--", sys.executable, "-c", sys.argv[3], sys.argv[1]]
try:
    run_logged(child, Path(sys.argv[1] + ".log"))
except RunInterrupted as stopped:
    sys.exit(stopped.exit_code)
"""


@pytest.mark.integration
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_stopping_the_report_stops_its_run_the_runs_own_way_before_it_exits(tmp_path, signum):
    import signal
    import subprocess
    import time

    marks, measure = tmp_path / "marks.txt", tmp_path / "measure.json"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(marks), str(measure), STOPPABLE])
    for _ in range(200):
        if marks.is_file() and "started" in marks.read_text():
            break
        time.sleep(0.05)
    driver.send_signal(getattr(signal, signum))
    code = driver.wait(timeout=60)
    assert marks.read_text().splitlines() == ["started", "term", "saved"]  # one TERM, saved before the exit
    assert code == (143 if signum == "SIGTERM" else -signal.SIGINT)  # Ctrl-C: Python's own exit
    assert json.loads(measure.read_text())["returncode"] == 143  # the measure waited and recorded it


def test_a_pipeline_stage_setting_is_part_of_the_runs_resolved_configuration(tmp_path):
    from es_lightning.report.runs import resolved_key
    from tests.helpers import REPO

    recipe = str(REPO / "recipes" / "coverage_cpu_grpo_then_es.yaml")
    alpha = ("--stages.es.strategy.init_args.learning_rate", "3.0e-3")
    keys = [
        yaml.safe_load(resolved_key(RunSpec("grpo_then_es", None, 0, recipe, extra, tmp_path / "run")))
        for extra in ((), alpha)
    ]
    rates = [[s["strategy"]["init_args"]["learning_rate"] for s in key["stages"]] for key in keys]
    assert rates == [[1e-4, 1e-3], [1e-4, 3e-3]]


SLOW_FIT = FAKE_FIT.replace("import json,", "import time; time.sleep(0.5)\nimport json,")


@pytest.mark.integration
def test_a_run_another_report_process_holds_is_skipped_then_run_once_released(tmp_path):
    from es_lightning.report.runs import BUSY, claimed

    recipes = _recipes(tmp_path)
    runs = tmp_path / "runs"
    specs = [
        RunSpec("good", None, seed, recipes["good"], (), runs / "good" / f"seed{seed}") for seed in (0, 1)
    ]
    with claimed(specs[0].run_dir) as mine:
        assert mine
        with claimed(specs[0].run_dir) as again:
            assert not again  # a second holder, even in this process, is refused
        first = run_all(specs, command=fake_command)
    assert [o.status for o in first] == ["busy", "finished"] and first[0].error == BUSY
    assert (runs / "launches.txt").read_text().splitlines() == [str(specs[1].run_dir)]
    second = run_all(specs, command=fake_command)
    assert [o.status for o in second] == ["finished", "reused"]


@pytest.mark.integration
def test_two_report_processes_on_one_output_share_its_runs_each_run_launched_once(tmp_path):
    import threading

    recipes = _recipes(tmp_path)
    runs = tmp_path / "runs"
    specs = [
        RunSpec("good", None, seed, recipes["good"], (), runs / "good" / f"seed{seed}") for seed in range(4)
    ]

    def slow(spec: RunSpec) -> list[str]:
        return [sys.executable, "-c", SLOW_FIT, str(spec.run_dir), spec.recipe]

    results: dict[str, list] = {}
    workers = [
        threading.Thread(target=lambda k=k: results.setdefault(k, run_all(specs, command=slow))) for k in "ab"
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    launches = (runs / "launches.txt").read_text().splitlines()
    assert sorted(launches) == sorted(str(s.run_dir) for s in specs)  # each once, none twice
    ran = {k: [o.spec.name for o in v if o.status == "finished"] for k, v in results.items()}
    assert ran["a"] and ran["b"] and not set(ran["a"]) & set(ran["b"])  # both worked, never on the same run
    assert all(o.status in ("finished", "busy", "reused") for v in results.values() for o in v)


@pytest.mark.integration
def test_an_evaluation_another_report_process_runs_is_busy_not_repeated(tmp_path):
    from es_lightning.report.runs import BUSY, claimed, logged_record

    out, log = tmp_path / "point.json", tmp_path / "point.log"
    argv = [sys.executable, "-c", f"open({str(out)!r}, 'w').write('{{}}')"]
    with claimed(log):
        record = logged_record("p", argv, log, out.exists)
    assert record["status"] == "busy" and record["error"] == BUSY and not out.exists()
    assert logged_record("p", argv, log, out.exists)["status"] == "finished" and out.exists()


def test_runs_resolved_in_threads_leave_the_working_folder_alone(tmp_path):
    """jsonargparse reads a recipe from inside the recipe's folder; parses in two threads at once
    (two report workers in one process) must not leave the process there."""
    import os
    import shutil
    import threading

    from es_lightning.report.runs import resolved_key
    from tests.helpers import REPO

    shutil.copy(REPO / "recipes" / "coverage_cpu_es.yaml", tmp_path / "es.yaml")
    specs = [
        RunSpec("es", None, s, str(tmp_path / "es.yaml"), (), tmp_path / "runs" / f"seed{s}")
        for s in range(8)
    ]
    keys: dict[int, str | None] = {}
    threads = [threading.Thread(target=lambda s=s: keys.setdefault(s.seed, resolved_key(s))) for s in specs]
    before = os.getcwd()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert os.getcwd() == before
    assert all(keys[s] is not None and "RUN_DIR" in keys[s] for s in range(8))


def test_a_run_does_not_inherit_the_launching_process_rendezvous(tmp_path, monkeypatch):
    """An in-process Fabric run leaves MASTER_PORT behind: a run given it would listen on a port
    this process may hold, and fail at its process group."""
    from es_lightning.report.runs import RENDEZVOUS, run_logged

    for key in RENDEZVOUS:
        monkeypatch.setenv(key, "29731")
    monkeypatch.setenv("ES_KEPT", "kept")
    log = tmp_path / "run.log"
    show = "import os, sys; print(sorted(k for k in os.environ if k in sys.argv[1:]))"
    assert run_logged([sys.executable, "-c", show, "ES_KEPT", *RENDEZVOUS], log) == 0
    assert log.read_text().splitlines()[-1] == "['ES_KEPT']"
