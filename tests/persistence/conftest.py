from __future__ import annotations

from collections.abc import Iterator

import pytest

from deerflow_nb.persistence import DatabaseTarget

from .backends import BACKENDS, database_target


@pytest.fixture(params=BACKENDS)
def target(request, tmp_path) -> Iterator[DatabaseTarget]:
    with database_target(request.param, tmp_path) as value:
        yield value
