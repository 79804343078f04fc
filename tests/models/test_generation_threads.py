"""How many threads the embedded model generates with: every core on an idle machine, one less on a busy one."""

from __future__ import annotations

import os
from collections import namedtuple

import pytest

from deerflow_nb.models import embedded_server as es

Times = namedtuple("Times", "user system children_user children_system elapsed")


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(es, "_cpu_threads", lambda: 2)
    monkeypatch.setattr(es, "_cpu_threads_online", lambda: 2)
    monkeypatch.setattr(es.time, "sleep", lambda _s: None)
    monkeypatch.delenv(es.GENERATION_THREADS_ENV, raising=False)


def _machine(monkeypatch, busy_delta: float, own_delta: float) -> None:
    """A machine whose CPUs were busy ``busy_delta`` seconds of 1.0 (two cores, 0.5 s), ``own_delta`` of them ours."""
    ticks = iter([(100.0, 1000.0), (100.0 + busy_delta, 1001.0)])
    monkeypatch.setattr(es, "_cpu_ticks", lambda: next(ticks))
    own = iter([Times(5.0, 1.0, 0, 0, 0), Times(5.0 + own_delta, 1.0, 0, 0, 0)])
    monkeypatch.setattr(os, "times", lambda: next(own))


def test_an_idle_machine_gets_every_core(two_cores, monkeypatch):
    _machine(monkeypatch, busy_delta=0.05, own_delta=0.0)
    assert es.generation_threads() == 2


def test_another_busy_process_leaves_it_one_core(two_cores, monkeypatch):
    _machine(monkeypatch, busy_delta=0.5, own_delta=0.0)  # half of two cores: one core busy elsewhere
    assert es.busy_cores() == pytest.approx(1.0)
    _machine(monkeypatch, busy_delta=0.5, own_delta=0.0)
    assert es.generation_threads() == 1


def test_its_own_work_is_not_the_machine_being_busy(two_cores, monkeypatch):
    _machine(monkeypatch, busy_delta=0.5, own_delta=0.45)  # the busy core was this process
    assert es.generation_threads() == 2


def test_without_proc_stat_the_load_average_decides(two_cores, monkeypatch):
    monkeypatch.setattr(es, "_cpu_ticks", lambda: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 1.0, 1.0))
    assert es.generation_threads() == 1


def test_the_environment_variable_wins(two_cores, monkeypatch):
    monkeypatch.setenv(es.GENERATION_THREADS_ENV, "3")
    assert es.generation_threads() == 3
    monkeypatch.setenv(es.GENERATION_THREADS_ENV, "many")
    with pytest.raises(es.EmbeddedModelError, match="whole number"):
        es.generation_threads()


def test_the_real_machine_reads_a_plausible_load():
    assert 0.0 <= es.busy_cores(0.05) <= (os.cpu_count() or 1) + 0.5
