"""Skills inside real runs: prompt listing, slash activation, tool policy, deferred discovery."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from .conftest import ToolRecordingModel, write_skill


def _system(model: ToolRecordingModel, call: int = 0) -> str:
    first = model.calls[call][0]
    assert isinstance(first, SystemMessage)
    return first.text


def test_enabled_skills_are_listed_with_container_paths_and_disable_rebuilds(skills_agent):
    model = ToolRecordingModel(responses=["one", "two"])
    agent = skills_agent(model=model)
    agent.thread().chat("hello")
    prompt = _system(model)
    assert "alpha: Alpha skill. (/mnt/skills/public/alpha/SKILL.md)" in prompt
    assert "/mnt/skills/public/beta/SKILL.md" in prompt
    agent.skills.disable("beta")
    agent.thread().chat("hello again")
    assert "beta" not in _system(model, 1) and "alpha" in _system(model, 1)


def test_slash_activation_injects_the_body_and_limits_tools(skills_agent, home: Path):
    model = ToolRecordingModel(responses=[
        {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "d", "path": "/mnt/user-data/outputs/x.txt", "content": "x"}}]},
        "done with beta",
        "plain answer",
    ])
    agent = skills_agent(model=model)
    thread = agent.thread()
    assert thread.chat("/beta summarise the data") == "done with beta"
    # tools offered on both model calls of the activated run: only beta's allowed-tools
    assert model.offered[0] == ["bash", "read_file"] and model.offered[1] == ["bash", "read_file"]
    human = next(m for m in model.calls[0] if isinstance(m, HumanMessage))
    assert '<skill name="beta" path="/mnt/skills/public/beta/SKILL.md">' in human.text
    assert "Do it." in human.text and "/beta summarise the data" in human.text
    refused = [m for m in thread.messages if isinstance(m, ToolMessage)][0]
    assert refused.status == "error" and "not allowed while the skill 'beta' is active" in refused.text
    assert not (home / "users/default/threads" / thread.id / "user-data/outputs/x.txt").exists()
    # state keeps the user's text only: the body is never stored
    stored = [m for m in thread.messages if isinstance(m, HumanMessage)][0]
    assert stored.text == "/beta summarise the data" and "<skill" not in str(thread.state)
    # the next turn (no slash) gets every tool back and no skill block
    thread.chat("and now?")
    assert {"write_file", "ls", "present_files"} <= set(model.offered[2])
    assert "<skill" not in model.calls[2][-1].text


def test_reserved_disabled_and_malformed_commands_do_not_activate(skills_agent):
    model = ToolRecordingModel(responses=["a", "b", "c", "d"])
    agent = skills_agent(model=model)
    agent.skills.disable("beta")
    thread = agent.thread()
    for text in ("/help beta", "/beta do it", " /alpha leading space", "/alpha"):
        thread.chat(text)
    assert all("write_file" in offered for offered in model.offered)
    assert not any("<skill" in m.text for call in model.calls for m in call if isinstance(m, HumanMessage))
    assert agent.skills.resolve("/alpha go") is not None and agent.skills.resolve("/help go") is None
    assert agent.skills.resolve("/beta go") is None  # disabled


def test_skill_without_allowed_tools_keeps_every_tool(skills_agent):
    model = ToolRecordingModel(responses=["ok"])
    agent = skills_agent(model=model)
    agent.thread().chat("/alpha go")
    assert "write_file" in model.offered[0]
    assert '<skill name="alpha"' in next(m for m in model.calls[0] if isinstance(m, HumanMessage)).text


def test_deferred_discovery_lists_names_and_describe_skill_answers(skills_agent):
    model = ToolRecordingModel(responses=[
        {"content": "", "tool_calls": [{"name": "describe_skill", "args": {"names": ["beta", "nope"]}}]},
        "described",
    ])
    agent = skills_agent(model=model, skills={"deferred_discovery": True})
    thread = agent.thread()
    thread.chat("what can you do?")
    prompt = _system(model)
    assert "alpha, beta" in prompt and "Alpha skill." not in prompt
    assert "describe_skill" in model.offered[0]
    result = [m for m in thread.messages if isinstance(m, ToolMessage)][0].text
    assert "skill_file: /mnt/skills/public/beta/SKILL.md" in result and "allowed-tools: read_file, bash" in result
    assert "nope: no such enabled skill" in result


def test_custom_skill_edit_on_disk_is_picked_up_next_run(skills_agent, home: Path):
    model = ToolRecordingModel(responses=["1", "2"])
    agent = skills_agent(model=model)
    agent.thread().chat("hi")
    write_skill(home / "users/default/skills/custom", "mine", description="My own skill.")
    agent.thread().chat("hi")
    assert "mine: My own skill. (/mnt/skills/custom/mine/SKILL.md)" in _system(model, 1)


def test_a_skill_that_allows_bash_allows_the_python_tool_too():
    # the small profile's only tool is python, which runs a program in the sandbox just as bash does
    from deerflow_nb.skills.activation import _allowed

    assert "python" in _allowed(("read_file", "bash"))
    assert "python" not in _allowed(("read_file",)) and "bash" not in _allowed(("read_file",))
