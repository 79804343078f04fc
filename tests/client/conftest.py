from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

import deerflow_nb as df


@contextlib.contextmanager
def two_backend_client(kind: str, root: Path, config: dict[str, Any]) -> Iterator[df.DeerFlow]:
    """The parity suites' client on ``config`` (written to ``root/config.yaml``).

    ``kind`` ``"embedded"``: ``DeerFlow(config)`` in this process; ``"server"``: a real
    ``jupyter server`` with the extension on the same config, through ``DeerFlow.connect()``.
    Use it from a fixture parametrised ``["embedded", "server"]``.
    """
    from tests.server.e2e import JupyterServer

    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    if kind == "embedded":
        client = df.DeerFlow(path, home=root / "home")
        try:
            yield client
        finally:
            client.close()
        return
    server = JupyterServer(root, path).start()
    try:
        client = df.DeerFlow.connect(url=server.api, token=server.token)
        try:
            yield client
        finally:
            client.close()
    finally:
        server.stop()


def write_and_present(text: str = "hello world") -> list:
    return [
        {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "write", "path": "/mnt/user-data/outputs/hello.txt", "content": text}}]},
        {"content": "", "tool_calls": [{"name": "present_files", "args": {
            "filepaths": ["/mnt/user-data/outputs/hello.txt"]}}]},
        "I wrote **hello.txt** and presented it.",
    ]

