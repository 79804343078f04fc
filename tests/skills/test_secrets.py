"""Request-scoped secrets: bound only for a slash-activated skill that declares them, never stored."""

from __future__ import annotations

import hashlib
from pathlib import Path

from langchain_core.messages import ToolMessage

from deerflow_nb.skills.activation import SecretVault

from .conftest import ToolRecordingModel, write_skill

SECRET = "s3cr3t-erp-value-7f1d"
COMMAND = 'echo "token=$ERP_TOKEN"; printf %s "$ERP_TOKEN" | sha256sum; echo "other=[$OTHER_TOKEN]"'


def _bash(command: str) -> dict:
    return {"content": "", "tool_calls": [{"name": "bash", "args": {"description": "run", "command": command}}]}


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink())


def test_secret_reaches_the_command_but_not_output_state_events_or_records(skills_agent, public_root, home):
    write_skill(public_root, "erp", description="ERP export.",
                extra="allowed-tools: bash\nrequired-secrets:\n  - ERP_TOKEN\n")
    model = ToolRecordingModel(responses=[_bash(COMMAND), "exported"])
    agent = skills_agent(model=model)
    thread = agent.thread()
    events = list(thread.stream("/erp export the orders", secrets={"ERP_TOKEN": SECRET, "OTHER_TOKEN": "nope-42"}))
    assert events[-1].type == "end"
    output = [m for m in thread.messages if isinstance(m, ToolMessage)][0].text
    # it reached the command: the hash of the value is in the output, the value itself is masked
    assert hashlib.sha256(SECRET.encode()).hexdigest() in output
    assert "token=***" in output
    # a secret the skill does not declare is not injected at all
    assert "other=[]" in output
    # nowhere: not in events, the model's input, state, the checkpoint DB or any other file
    assert SECRET not in repr([e.data for e in events])
    assert SECRET not in repr(model.calls) and SECRET not in repr(thread.state)
    assert SECRET not in repr(thread.history())
    agent.close()  # flush SQLite (WAL) to disk before scanning the files
    assert SECRET.encode() not in _all_bytes(home)
    assert (home / "deerflow.db").exists()


def test_without_activation_no_secret_is_injected(skills_agent, public_root):
    write_skill(public_root, "erp", description="ERP export.", extra="required-secrets: [ERP_TOKEN]\n")
    model = ToolRecordingModel(responses=[_bash(COMMAND), "done"])
    thread = skills_agent(model=model).thread()
    thread.chat("export the orders", secrets={"ERP_TOKEN": SECRET})
    output = [m for m in thread.messages if isinstance(m, ToolMessage)][0].text
    assert "token=\n" in output and hashlib.sha256(SECRET.encode()).hexdigest() not in output


def test_vault_never_shows_values():
    vault = SecretVault({"A": "value-a"})
    assert "value-a" not in repr(vault) and "A" in repr(vault)
