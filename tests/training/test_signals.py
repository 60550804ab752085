"""SIGTERM/SIGINT inside a run: deferred during an update, at once elsewhere, at once the second time."""

import os
import signal

import pytest

from es_lightning.training.signals import RunInterrupted, StopSignals


def _send(signum: int) -> None:
    os.kill(os.getpid(), signum)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_between_updates_raises_at_once(signum):
    with pytest.raises(RunInterrupted) as raised, StopSignals():
        _send(signum)
        pytest.fail("the signal did not interrupt")
    assert raised.value.at_boundary and raised.value.exit_code == 128 + signum


def test_a_first_signal_during_an_update_waits_for_it(capsys):
    finished = []
    with StopSignals() as stop:
        with stop.deferred():
            _send(signal.SIGTERM)
            finished.append("update")  # the update runs to its end
        assert stop.requested() == signal.SIGTERM
    assert finished == ["update"]
    assert "SIGTERM received: finishing this update" in capsys.readouterr().err


def test_a_second_signal_stops_at_once_without_a_boundary():
    with pytest.raises(RunInterrupted) as raised, StopSignals() as stop, stop.deferred():
        _send(signal.SIGTERM)
        _send(signal.SIGTERM)
        pytest.fail("the second signal did not interrupt")
    assert not raised.value.at_boundary


def test_handlers_are_restored_after_the_block():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with StopSignals() as stop:
        assert signal.getsignal(signal.SIGTERM) == stop._handle
        assert stop.requested() is None
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
