"""The power simulation against what the t test guarantees exactly under its assumptions."""

import pytest

from es_lightning.report.power import resolution


@pytest.mark.parametrize("seeds", [2, 3, 5])
def test_no_effect_is_called_either_way_at_the_nominal_rate(seeds):
    r = resolution(effect=0.0, sd=1.0, seeds=seeds, simulations=40000)
    assert r["reproduced"] == pytest.approx(0.05, abs=0.005)
    assert r["not reproduced"] == pytest.approx(0.05, abs=0.005)
    assert sum(r.values()) == pytest.approx(1.0)


def test_a_margin_resolves_a_null_effect_and_a_large_effect_is_found():
    null = resolution(effect=0.0, sd=0.008, seeds=3, refute_below=0.03)
    assert null["not reproduced"] > 0.9 and null["reproduced"] < 0.06
    large = resolution(effect=0.05, sd=0.008, seeds=3, refute_below=0.03)
    assert large["reproduced"] > 0.99
    with pytest.raises(ValueError, match="at least 2 seeds"):
        resolution(0.0, 1.0, seeds=1)
