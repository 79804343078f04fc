"""The extension moves the server's start-up heap out of the garbage collector's way (``gc_freeze``).

Full collections in a busy server scanned the whole Jupyter + LangChain heap: about a fifth of the
server's CPU with 50 concurrent runs (benchmarks/concurrency.py ``--gc``).
"""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(params=[None, False], ids=["default", "off"])
def gc_freeze(request):
    return request.param


@pytest.fixture
def jp_server_config(deerflow_config, home, gc_freeze):
    extension = {"config_path": str(deerflow_config), "home": str(home)}
    if gc_freeze is not None:
        extension["gc_freeze"] = gc_freeze
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}, "DeerFlowExtension": extension}


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()  # the rest of the session collects as usual


async def test_the_server_freezes_what_start_up_loaded_unless_told_not_to(unfrozen, gc_freeze, jp_serverapp):
    if gc_freeze is None:  # the default: the server, LangChain and the runtime are tens of thousands of objects
        assert gc.get_freeze_count() > 10_000
    else:
        assert gc.get_freeze_count() == 0
