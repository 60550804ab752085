import pytest
import torch

from es_lightning.evaluation.metric import PassAtK
from es_lightning.evaluation.pass_at_k import pass_at_k_curve


def _batch(rows):
    return torch.tensor(rows, dtype=torch.bool)


def test_matches_curve_across_updates():
    gen = torch.Generator().manual_seed(0)
    batches = [torch.rand(p, 8, generator=gen) < q for p, q in ((3, 0.2), (5, 0.5), (1, 0.9))]
    metric = PassAtK(ks=[1, 2, 8])
    for b in batches:
        metric.update(b)
    out = metric.compute()
    counts = torch.cat([b.sum(1) for b in batches]).tolist()
    expected = pass_at_k_curve(counts, 8, [1, 2, 8])
    assert list(out) == ["pass@1", "pass@2", "pass@8"]
    for k, v in expected.items():
        assert out[f"pass@{k}"].item() == pytest.approx(v, abs=1e-12)


def test_default_ks_and_hand_worked_values():
    metric = PassAtK()
    metric.update(_batch([[True, False], [False, False]]))
    out = metric.compute()
    assert out["pass@1"].item() == pytest.approx(0.25)
    assert out["pass@2"].item() == pytest.approx(0.5)


def test_reset_forgets_samples_per_prompt():
    metric = PassAtK(ks=[1])
    metric.update(_batch([[True, True, True]]))
    metric.reset()
    metric.update(_batch([[False, True]]))
    assert metric.compute()["pass@1"].item() == pytest.approx(0.5)


def test_inconsistent_m_is_an_error():
    metric = PassAtK()
    metric.update(_batch([[True, False, True]]))
    with pytest.raises(ValueError, match="got 2 samples per prompt but earlier updates had 3"):
        metric.update(_batch([[True, False]]))


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
def test_input_errors():
    metric = PassAtK(ks=[4])
    with pytest.raises(ValueError, match="k=4 exceeds the 2 samples"):
        metric.update(_batch([[True, False]]))
    with pytest.raises(TypeError, match="bool tensor"):
        metric.update(torch.ones(2, 4))
    with pytest.raises(ValueError, match="shape"):
        metric.update(torch.ones(4, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="no prompts"):
        PassAtK().compute()
    with pytest.raises(ValueError, match="k must be >= 1"):
        PassAtK(ks=[0, 1])
