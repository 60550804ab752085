"""run_analyze end to end on tiny checkpoints (no evaluation): OUT.json, the summary, bad input."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from es_lightning.analysis.command import BF16_NOT_MODELLED, run_analyze
from es_lightning.analysis.walk_inputs import WalkOptions
from es_lightning.errors import ConfigError
from es_lightning.weight_files import master_files, served_files, weight_files
from tests.analysis.conftest import ES, GRPO, sparse_noise, tiny_offset, write_checkpoint, write_run
from tests.analysis.reference import bf16_round, load, reference

TAUS = [1e-4, 5e-4, 1e-3, 1.5e-3, 5e-3]
FIELDS = {"rel_l2", "rel_l2_by_kind", "nonzero", "sparsity", "top_k", "top_k_by_kind"}


def _views_reference(base_files, ckpt_files, k):
    base, ckpt = load(base_files), load(ckpt_files)
    stored = reference(base, ckpt, TAUS, k)
    bf16 = reference(
        {n: bf16_round(v) for n, v in base.items()}, {n: bf16_round(v) for n, v in ckpt.items()}, TAUS, k
    )
    return stored, bf16


def _check(got, ref):
    assert FIELDS <= set(got)
    assert got["rel_l2"] == pytest.approx(ref["rel_l2"], rel=1e-10)
    assert got["rel_l2_by_kind"] == pytest.approx(ref["rel_l2_by_kind"], rel=1e-10)
    assert got["nonzero"] == ref["nonzero"]
    assert got["sparsity"] == pytest.approx(ref["sparsity"], rel=1e-12)
    assert [(e["name"], e["index"], e["abs_delta"]) for e in got["top_k"]] == ref["top"]
    assert {k: v for k, v in got["top_k_by_kind"].items() if v} == ref["top_k_by_kind"]


def test_out_json_with_compare(checkpoints, tmp_path, capsys):
    out = tmp_path / "new" / "folder" / "es.json"
    result = run_analyze(
        str(checkpoints["base"]),
        str(checkpoints["es"]),
        out,
        compare=str(checkpoints["grpo"]),
        top_k=20,
        progress=False,
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    base_files = weight_files(checkpoints["base"])
    es_stored, es_bf16 = _views_reference(base_files, master_files(checkpoints["es"]), 20)
    grpo_stored, grpo_bf16 = _views_reference(base_files, master_files(checkpoints["grpo"]), 20)
    _check(result, es_stored)
    _check(result["bf16"], es_bf16)
    _check(result["compare"], grpo_stored)
    _check(result["compare"]["bf16"], grpo_bf16)
    assert list(result["sparsity"]) == ["0.0001", "0.0005", "0.001", "0.0015", "0.005"]
    assert (
        result["top_k"][0]["layer"] in (None, 0, 1) and result["top_k"][0]["kind"] in result["top_k_by_kind"]
    )
    assert result["rel_l2_ratio"] == pytest.approx(es_stored["rel_l2"] / grpo_stored["rel_l2"], rel=1e-10)
    assert result["bf16"]["rel_l2_ratio"] == pytest.approx(es_bf16["rel_l2"] / grpo_bf16["rel_l2"], rel=1e-10)
    assert 30 < result["rel_l2_ratio"] < 50  # 2e-3 against 5e-5 noise
    assert result["stored_as"] == "fp32 master" and result["base_stored_as"] == "float32 model.safetensors"
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    row = next(line for line in lines if line.startswith("checkpoint  stored (fp32 master)"))
    assert f"{result['rel_l2']:.4g}" in row and f"{result['nonzero']:,}" in row
    assert any(line.startswith("compare     bf16") for line in lines)
    assert f"rel_l2 ratio checkpoint/compare: {result['rel_l2_ratio']:.1f}x (stored)" in printed
    assert printed.rstrip().endswith(f"written: {out}")


def test_the_stored_view_reads_the_fp32_master(checkpoints, tmp_path):
    """master = θ_0 + 1e-6, below bf16 resolution: the served bf16 file barely differs from the base
    rounded to bf16, the master differs everywhere."""
    fine = checkpoints["fine"]
    result = run_analyze(str(checkpoints["base"]), str(fine), tmp_path / "fine.json", top_k=3, progress=False)
    base = load(weight_files(checkpoints["base"]))
    master, served = load(master_files(fine)), load(served_files(fine))
    assert master.keys() == served.keys() and any((master[n] != served[n]).any() for n in master)
    stored_ref = reference(base, master, TAUS, 3)
    _check(result, stored_ref)
    assert result["nonzero"] == stored_ref["numel"] and result["sparsity"]["0.0001"] == 1.0
    assert result["rel_l2"] != pytest.approx(reference(base, served, TAUS, 3)["rel_l2"], rel=1e-3)
    rounded = {n: bf16_round(v) for n, v in base.items()}
    _check(result["bf16"], reference(rounded, {n: bf16_round(v) for n, v in master.items()}, TAUS, 3))
    assert result["bf16"]["nonzero"] < result["nonzero"] / 10  # 1e-6 rarely crosses a bf16 step
    # a plain HF folder (no master): its served file is what is stored
    plain = run_analyze(
        str(checkpoints["base"]), str(checkpoints["plain"]), tmp_path / "p.json", progress=False
    )
    assert plain["stored_as"] == "float32 model.safetensors"
    _check(plain, reference(base, load(served_files(checkpoints["plain"])), TAUS, 100))


def test_exports_without_evaluation(checkpoints, tmp_path):
    out = tmp_path / "a" / "es.json"
    result = run_analyze(
        str(checkpoints["base"]),
        str(checkpoints["es"]),
        out,
        taus="1e-3",
        export_thresholded="1e-3,5e-3",
        progress=True,  # the tqdm bars run (on stderr)
    )
    assert [e["tau"] for e in result["thresholded"]] == [1e-3, 5e-3]
    assert result["thresholded"][0]["s_tau"] == pytest.approx(result["sparsity"]["0.001"], rel=1e-12)
    assert (tmp_path / "a" / "es_thresholded" / "thresholded-0.005" / "model.safetensors").is_file()
    assert (
        "sparsity_curve" not in result and json.loads(out.read_text())["thresholded"] == result["thresholded"]
    )


def _broken(tmp_path: Path, checkpoints, edit) -> Path:
    folder = write_checkpoint(checkpoints["base"], tmp_path / "broken", tiny_offset, seed=0)
    weights = dict(load(master_files(folder)))
    edit(weights)
    save_file({k: torch.from_numpy(v) for k, v in weights.items()}, master_files(folder)[0])
    return folder


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda w: w.update({"lm_head.weight": w["model.embed_tokens.weight"].copy()}),
            r"1 tensors of --checkpoint .* are not in --base .*\['lm_head.weight'\]",
        ),
        (
            lambda w: w.pop("model.layers.1.mlp.up_proj.weight"),
            r"1 tensors of --base .* are not in --checkpoint .*up_proj",
        ),
        (
            lambda w: w.update({"model.norm.weight": w["model.norm.weight"][:5]}),
            r"model.norm.weight: shape \[5\] in --checkpoint",
        ),
    ],
)
def test_mismatched_checkpoints_fail_before_reading(checkpoints, tmp_path, edit, match):
    out = tmp_path / "out" / "x.json"
    with pytest.raises(ValueError, match=match):
        run_analyze(str(checkpoints["base"]), str(_broken(tmp_path, checkpoints, edit)), out, progress=False)
    assert not out.parent.exists()


def test_bad_input(checkpoints, tmp_path):
    base, es, out = str(checkpoints["base"]), str(checkpoints["es"]), tmp_path / "out.json"
    (tmp_path / "empty").mkdir()
    (tmp_path / "noweights").mkdir()
    (tmp_path / "noweights" / "config.json").write_text("{}")
    cases = [
        (dict(base=str(tmp_path / "empty")), r"--base .*empty: not a model folder \(no config.json\)"),
        (dict(base=str(tmp_path / "noweights")), r"no \*.safetensors weights"),
        (
            dict(checkpoint=str(tmp_path / "missing")),
            r"--checkpoint .*missing: not a model folder \(no such folder\)",
        ),
        (dict(checkpoint=str(checkpoints["es"] / "config.json")), r"not a model folder \(a file\)"),
        (
            dict(compare="nobody/no-such-model-xyz"),
            r"--compare nobody/no-such-model-xyz: neither a model folder",
        ),
        (dict(taus="1e-3,0"), r"--taus: τ must be a finite number > 0, got '0'"),
        (dict(taus="1e-3,-1e-4"), r"--taus: τ must be"),
        (dict(top_k=0), r"--top_k must be >= 1, got 0"),
        (dict(export_thresholded="0"), r"--export_thresholded: τ must be"),
        (
            dict(evaluate="arithmetic"),
            r"--evaluate scores the thresholded exports: give --export_thresholded",
        ),
        (
            dict(evaluate="no_such_task", export_thresholded="1e-3"),
            r"--evaluate: unknown task 'no_such_task'",
        ),
        (dict(keep_exports=False, export_thresholded="1e-3"), r"--keep_exports false .* give --evaluate"),
        (dict(threshold_view="fp8"), r"--threshold_view must be one of"),
        (dict(device="gpu0"), r"--device 'gpu0'"),
    ]
    for overrides, match in cases:
        kwargs = dict(base=base, checkpoint=es, output=out, progress=False) | overrides
        with pytest.raises(ValueError, match=match):
            run_analyze(**kwargs)
    assert not out.exists()


def test_the_signature_is_a_documented_cli(checkpoints):
    from jsonargparse import ArgumentParser

    documented = inspect.getdoc(run_analyze).split("Args:")[1].split("Returns:")[0]
    for name in inspect.signature(run_analyze).parameters:
        assert f"\n{name}: " in "\n" + inspect.cleandoc(documented).replace("\n    ", " "), name
    parser = ArgumentParser()
    parser.add_function_arguments(run_analyze, fail_untyped=False)
    argv = ["--base", "es-lightning/tiny-arithmetic", "--checkpoint", str(checkpoints["es"])]
    argv += ["--taus", "0.0001,0.0005,0.001,0.0015,0.005", "--top_k", "100"]  # as the report passes them
    argv += ["--export_thresholded", "0.001", "--evaluate", "arithmetic", "--output", "x.json"]
    cfg = parser.parse_args(argv + ["--evaluation.limit", "5", "--device", "cpu"])
    assert cfg.taus == "0.0001,0.0005,0.001,0.0015,0.005" and cfg.export_thresholded == "0.001"
    assert cfg.evaluation.limit == 5 and cfg.top_k == 100 and cfg.threshold_view == "stored"
    assert parser.parse_args(argv + ["--taus", "[0.001, 0.002]"]).taus == [0.001, 0.002]
    assert "thresholds τ of s_τ" in parser.format_help()


def test_null_beside_each_statistic(tiny_model_path, tmp_path, capsys):
    """An ES checkpoint whose update is itself a draw from the null (Δθ ~ N(0, v) everywhere) lies
    on its null; a GRPO checkpoint compared with it has none; the bf16 view's null is not modelled."""
    applied = 3  # 4 updates, update 2 skipped
    sd = math.sqrt(applied * ES["learning_rate"] ** 2 / ES["population_size"])

    def walk(name, theta0, generator):
        return theta0 + torch.randn(theta0.shape, generator=generator) * sd

    es = write_run(tmp_path / "es", tiny_model_path, 4, ES, skipped=[2], perturb=walk)
    grpo = write_run(tmp_path / "grpo", tiny_model_path, 4, GRPO, perturb=sparse_noise(5e-5))
    out = tmp_path / "es.json"
    result = run_analyze(str(tiny_model_path), str(es), out, compare=str(grpo), taus=TAUS, progress=False)
    null = result["null"]
    assert null["modelled"] and null["variance"] == pytest.approx(sd**2, rel=1e-12)
    assert null["inputs"]["walks"][0]["applied_updates"] == applied
    assert abs(null["measured_over_null"]["rel_l2"] - 1) < 0.01  # 308,736 coordinates
    for tau, value in null["sparsity"].items():
        assert abs(result["sparsity"][tau] - value) < 0.005, tau
        assert null["measured_over_null"]["sparsity"][tau] == pytest.approx(result["sparsity"][tau] / value)
    assert sum(null["top_k_by_kind"].values()) == pytest.approx(len(result["top_k"]))
    assert result["bf16"]["null"] == {"modelled": False, "reason": BF16_NOT_MODELLED}
    assert result["compare"]["null"] == {"modelled": False, "reason": "n/a: not an ES run"}
    assert json.loads(out.read_text())["null"]["rel_l2"] == pytest.approx(null["rel_l2"])
    printed = capsys.readouterr().out
    assert "checkpoint against the random-walk null: v = " in printed
    row = next(line for line in printed.splitlines() if line.startswith("rel_l2    "))
    assert f"{result['rel_l2']:.4g}" in row and f"{null['rel_l2']:.4g}" in row
    assert "compare against the random-walk null: n/a: not an ES run" in printed


def test_null_of_a_bare_folder_from_the_command_line(checkpoints, tmp_path):
    from jsonargparse import ArgumentParser

    parser = ArgumentParser()
    parser.add_function_arguments(run_analyze, fail_untyped=False)
    argv = [
        "--base",
        str(checkpoints["base"]),
        "--checkpoint",
        str(checkpoints["plain"]),
        "--output",
        "x.json",
    ]
    argv += ["--random_walk.learning_rate", "2e-3", "--random_walk.population_size", "32"]
    cfg = parser.instantiate(parser.parse_args([*argv, "--random_walk.applied_updates", "27"]))
    result = run_analyze(**{**cfg, "output": tmp_path / "plain.json", "progress": False})
    assert result["null"]["variance"] == pytest.approx(27 * 4e-6 / 32)
    assert result["null"]["inputs"]["sources"][0].startswith("--random_walk options")
    bare = run_analyze(
        str(checkpoints["base"]), str(checkpoints["plain"]), tmp_path / "p.json", progress=False
    )
    assert bare["null"]["reason"].startswith("n/a: not a training checkpoint")
    with pytest.raises(ConfigError, match="random_walk.applied_updates"):
        run_analyze(**{**cfg, "random_walk": WalkOptions(2e-3, 32), "output": tmp_path / "q.json"})
    assert not (tmp_path / "q.json").exists()  # refused before any tensor was read


@pytest.mark.integration
def test_the_command_writes_what_run_analyze_returns(checkpoints, tmp_path):
    """``es-lightning analyze`` end to end as a child process: its OUT.json is ``run_analyze``'s."""
    import subprocess

    from tests.helpers import CLI, subprocess_env

    base, es = str(checkpoints["base"]), str(checkpoints["es"])
    out = tmp_path / "cli" / "es.json"
    argv = [*CLI, "analyze", "--base", base, "--checkpoint", es, "--output", str(out), "--top_k", "20"]
    proc = subprocess.run(argv, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    here = run_analyze(base, es, tmp_path / "here.json", top_k=20, progress=False)
    assert json.loads(out.read_text()) == json.loads(json.dumps(here))
    assert "rel_l2" in proc.stdout  # the summary it prints
