from pathlib import Path

import pytest

from deerflow_nb.config import Paths, resolve_home, validate_id
from deerflow_nb.errors import UsageError


def test_home_priority(tmp_path, monkeypatch):
    assert resolve_home("/ignored") == Path(str(tmp_path / "home")).resolve()  # env set by fixture
    monkeypatch.delenv("DEER_FLOW_HOME")
    assert resolve_home(str(tmp_path / "cfg")) == (tmp_path / "cfg").resolve()
    assert resolve_home(None) == (Path.home() / ".deer-flow").resolve()
    assert resolve_home("x", explicit=tmp_path / "e") == (tmp_path / "e").resolve()


def test_layout(tmp_path):
    paths = Paths(tmp_path)
    base = paths.ensure_thread_dirs("alice", "t1")
    assert base == tmp_path / "users/alice/threads/t1/user-data"
    assert sorted(p.name for p in base.iterdir()) == ["outputs", "uploads", "workspace"]
    assert paths.memory_file("alice") == tmp_path / "users/alice/memory.json"
    assert paths.custom_skills_dir("alice") == tmp_path / "users/alice/skills/custom"
    assert paths.db_path == tmp_path / "deerflow.db"


@pytest.mark.parametrize("bad", ["..", "../x", "a/b", "", ".hidden", "a..b", "x" * 200, "a b"])
def test_invalid_ids_rejected(bad):
    with pytest.raises(UsageError, match="invalid"):
        validate_id(bad)
    with pytest.raises(UsageError):
        Paths(Path("/tmp")).thread_dir("default", bad)
