from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest


def skill_md(name: str, description: str = "Does a thing.", extra: str = "", body: str = "Do it.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n"


def write_skill(root: Path, name: str, **kwargs: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_md(name, **kwargs))
    return folder


def make_zip(entries: dict[str, bytes | str], *, symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100755 if name.endswith(".sh") else 0o100644) << 16
            zf.writestr(info, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16
            zf.writestr(info, target)
    return buffer.getvalue()


@pytest.fixture
def public_root(tmp_path: Path) -> Path:
    root = tmp_path / "public-skills"
    write_skill(root, "alpha", description="Alpha skill.")
    write_skill(root, "beta", description="Beta skill.", extra="allowed-tools: [read_file, bash]\n")
    return root


@pytest.fixture
def archive(tmp_path: Path) -> Callable[..., Path]:
    def _archive(entries: dict[str, bytes | str], name: str = "x.skill", **kwargs: dict[str, str]) -> Path:
        path = tmp_path / "archives" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(make_zip(entries, **kwargs))
        return path

    return _archive


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


from collections.abc import AsyncIterator, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import yaml  # noqa: E402
from pydantic import Field  # noqa: E402

import deerflow_nb as df  # noqa: E402
from deerflow_nb.testing import ScriptedChatModel  # noqa: E402


class ToolRecordingModel(ScriptedChatModel):
    """A scripted model that also records the tool names offered on each call."""

    offered: list[list[str]] = Field(default_factory=list)

    def _record(self, kwargs: dict[str, Any]) -> None:
        self.offered.append(sorted(t["function"]["name"] for t in kwargs.get("tools") or []))

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self._record(kwargs)
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[override]
        self._record(kwargs)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[Any]:  # type: ignore[override]
        self._record(kwargs)
        yield from super()._stream(messages, stop, run_manager, **kwargs)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs) -> AsyncIterator[Any]:  # type: ignore[override]
        self._record(kwargs)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


@pytest.fixture
def skills_agent(tmp_path: Path, public_root: Path) -> Iterator[Callable[..., df.DeerFlow]]:
    """``skills_agent(responses, **config_overrides)``: a DeerFlow on ``public_root``, memory off."""
    agents: list[df.DeerFlow] = []

    def _make(responses: list | None = None, *, model: ScriptedChatModel | None = None,
              skills: dict[str, Any] | None = None) -> df.DeerFlow:
        config = {"config_version": 1, "skills": {"path": str(public_root), **(skills or {})},
                  "memory": {"enabled": False}}
        path = tmp_path / f"config-{len(agents)}.yaml"
        path.write_text(yaml.safe_dump(config))
        agent = df.DeerFlow(config_path=path, model=model or ToolRecordingModel(responses=responses or []))
        agents.append(agent)
        return agent

    yield _make
    for agent in agents:
        agent.close()
