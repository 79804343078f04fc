"""HTTP parity for the JavaScript client: one ``@langchain/langgraph-sdk`` script against both servers.

``tests/server/parity/js/script.mjs`` (the SDK pinned in its ``package.json``, installed into its
``node_modules`` by ``.ci/js-setup.sh``) runs under node against ``langgraph dev`` and against the
extension, both started by the fixtures of :mod:`tests.server.test_langgraph_parity` with the same
scripted model. Every difference between the two transcripts, field by field (ids and timestamps
aside), must be a known one, listed with its reason in docs/http-api.md. A missing node or SDK is a
failure, never a skip: the suite's setup installs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from .e2e import REPO
from .parity.script import compare
from .test_langgraph_parity import KNOWN_DIFFERENCES, deerflow_server, langgraph_dev  # noqa: F401 (fixtures)

JS_DIR = REPO / "tests" / "server" / "parity" / "js"
SDK = JS_DIR / "node_modules" / "@langchain" / "langgraph-sdk" / "package.json"

#: Differences only the JavaScript script shows (``glob pattern -> reason``; also in docs/http-api.md).
JS_KNOWN_DIFFERENCES: dict[str, str] = {}


def _known(line: str) -> bool:
    patterns = {**KNOWN_DIFFERENCES, **JS_KNOWN_DIFFERENCES}
    return any(re.fullmatch(re.escape(p).replace(r"\*", ".*"), line) for p in patterns)


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the JS parity test needs node 18+ (`bash .ci/js-setup.sh` says so)")
    if not SDK.is_file():
        pytest.fail(f"@langchain/langgraph-sdk is not installed in {JS_DIR}: run `bash .ci/js-setup.sh`")
    return node


def _transcript(url: str, assistant_id: str, headers: dict[str, str] | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH", "LANGCHAIN", "LANGGRAPH"))}
    result = subprocess.run([_node(), "script.mjs", url, assistant_id, json.dumps(headers or {})], cwd=JS_DIR,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"script.mjs failed against {url}:\n{result.stderr[-4000:]}"
    return json.loads(result.stdout)


def test_js_sdk_parity_with_langgraph_dev(langgraph_dev, deerflow_server, tmp_path):  # noqa: F811
    version = json.loads(SDK.read_text())["version"] if SDK.is_file() else None
    reference = _transcript(langgraph_dev, "agent")
    ours = _transcript(deerflow_server.api, "lead_agent", deerflow_server.headers())
    (tmp_path / "transcripts.json").write_text(json.dumps({"langgraph": reference, "deerflow": ours}, indent=1))
    assert set(ours) == set(reference)
    differences = [d for step in reference for d in compare(reference[step], ours.get(step), step)]
    print(f"\n== differences from langgraph dev (@langchain/langgraph-sdk {version}, JavaScript):")
    for line in differences:
        print(("   known  " if _known(line) else "   NEW    ") + line)
    unexplained = [d for d in differences if not _known(d)]
    assert not unexplained, "differences from langgraph dev not listed in docs/http-api.md:\n" + "\n".join(unexplained)
    # the comparison saw real streams: the answer's text arrived token by token on both servers
    for step in ("runs.stream values+messages-tuple+updates", "runs.joinStream", "runs.stream stateless"):
        assert ours[step]["data"].get("messages_text") == reference[step]["data"].get("messages_text")
        assert reference[step]["data"].get("messages_text"), step
