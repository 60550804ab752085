"""ESWeights: the fp32 centre behind a writer; SGD = plain ES, Adam on the ES direction, state round trip."""

from __future__ import annotations

import pytest
import torch

from es_lightning.es.update import apply_es_update, assign_es_grad_
from es_lightning.es.weights import ESWeights


def _centre():
    g = torch.Generator().manual_seed(0)
    return {"a.weight": torch.randn(4, 3, generator=g), "b.bias": torch.randn(5, generator=g)}


def _served(dtype=torch.float32):
    served = {n: t.to(dtype).clone() for n, t in _centre().items()}

    def write(named):
        for n, t in named:
            served[n].copy_(t)

    return served, write


def test_sgd_update_is_plain_es_and_serves_the_cast_centre():
    served, write = _served(torch.bfloat16)
    es = ESWeights(_centre(), write, torch.bfloat16)
    coeffs = {11: 0.5, 12: -1.0}
    norm = es.update(coeffs, lr=0.1, population_size=2)
    ref = _centre()
    ref_norm = apply_es_update(ref, coeffs, 0.1, 2)
    assert norm == pytest.approx(ref_norm)
    for n in ref:
        assert torch.equal(es.master[n], ref[n])
        assert torch.equal(served[n], ref[n].to(torch.bfloat16))


def test_adam_update_matches_torch_adam_and_resumes_exactly():
    coeffs = [{1: 1.0, 2: -0.5}, {3: 0.25, 4: 0.75}, {5: -1.0, 6: 1.0}]
    served, write = _served()
    es = ESWeights(_centre(), write, torch.float32, optimizer="adam")
    for c in coeffs[:2]:
        es.update(c, lr=0.01, population_size=2)
    state = es.state_dict()
    saved_master = {n: m.detach().clone() for n, m in es.master.items()}
    es.update(coeffs[2], lr=0.01, population_size=2)

    # reference: torch Adam fed -Δ/α
    ref = {n: torch.nn.Parameter(t) for n, t in _centre().items()}
    opt = torch.optim.Adam(list(ref.values()), lr=0.01)
    for c in coeffs:
        assign_es_grad_(ref, c, 2)
        opt.step()
    for n in ref:
        assert torch.equal(es.master[n].detach(), ref[n].detach())

    # resume from the state after two updates: the third update is bit-identical
    served2, write2 = _served()
    resumed = ESWeights(saved_master, write2, torch.float32, optimizer="adam")
    resumed.load_state_dict(state)
    resumed.update(coeffs[2], lr=0.01, population_size=2)
    for n in ref:
        assert torch.equal(resumed.master[n].detach(), es.master[n].detach())
        assert torch.equal(served2[n], served[n])


def test_adam_state_refused_by_sgd_and_unknown_optimizer_named():
    served, write = _served()
    adam = ESWeights(_centre(), write, torch.float32, optimizer="adam")
    adam.update({1: 1.0}, lr=0.01, population_size=1)
    sgd = ESWeights(_centre(), write, torch.float32)
    with pytest.raises(ValueError, match="Adam"):
        sgd.load_state_dict(adam.state_dict())
    with pytest.raises(ValueError, match="rmsprop"):
        ESWeights(_centre(), write, torch.float32, optimizer="rmsprop")


def test_restore_is_deferred_to_the_next_read_and_writes_are_counted():
    """restore() writes nothing; serve_centre() writes the centre once, only while a restore is
    pending; a perturbation or an update overwrites every served tensor, so it ends the pending
    restore. ``writes`` counts the writer's calls."""
    served, write = _served(torch.bfloat16)
    calls: list[int] = []
    es = ESWeights(_centre(), lambda named: (calls.append(1), write(named)), torch.bfloat16)
    centre = {n: t.clone() for n, t in served.items()}
    es.perturb(3, 1.0, 0.1)
    member = {n: t.clone() for n, t in served.items()}
    es.restore()
    assert es.restore_pending and all(torch.equal(served[n], member[n]) for n in served)
    es.perturb(4, -1.0, 0.1)  # the next member: no write of the centre in between
    es.restore()
    es.serve_centre()
    assert all(torch.equal(served[n], centre[n]) for n in served)
    es.serve_centre()  # nothing pending: no write
    es.perturb(5, 1.0, 0.1)
    es.restore()
    es.update({5: 1.0}, lr=0.01, population_size=1)
    assert not es.restore_pending
    assert es.writes == len(calls) == 5  # three members, one centre, one update
    assert all(torch.equal(served[n], es.master[n].to(torch.bfloat16)) for n in served)
