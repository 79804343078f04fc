import os

import pytest

from deerflow_nb.errors import NotFoundError, SandboxPathError, UsageError
from deerflow_nb.uploads import guess_mime_type


def user_data(home, thread):
    return home / "users/default/threads" / thread.id / "user-data"


def test_artifact_returns_bytes_and_mime(make_agent, home):
    agent = make_agent()
    thread = agent.thread()
    outputs = user_data(home, thread) / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "report.md").write_text("# Hi")
    (outputs / "chart.png").write_bytes(b"\x89PNG")
    assert thread.artifact("/mnt/user-data/outputs/report.md") == (b"# Hi", "text/markdown")
    assert thread.artifact("/mnt/user-data/outputs/chart.png") == (b"\x89PNG", "image/png")
    assert agent.get_artifact(thread.id, "/mnt/user-data/outputs/report.md")[0] == b"# Hi"
    assert guess_mime_type("x.unknownext") == "application/octet-stream"


def test_artifact_path_escapes_are_refused(make_agent, home, tmp_path):
    agent = make_agent()
    thread, other = agent.thread(), agent.thread()
    outputs = user_data(home, thread) / "outputs"
    outputs.mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, outputs / "link.txt")
    other_out = user_data(home, other) / "outputs"
    other_out.mkdir(parents=True)
    (other_out / "theirs.txt").write_text("not yours")

    with pytest.raises(SandboxPathError):
        thread.artifact("/mnt/user-data/../../../../secret.txt")
    with pytest.raises(SandboxPathError):
        thread.artifact("/mnt/user-data/outputs/../../" + other.id + "/user-data/outputs/theirs.txt")
    with pytest.raises(SandboxPathError):
        thread.artifact("/mnt/user-data/outputs/link.txt")  # symlink out of the thread
    with pytest.raises(UsageError, match="must start with /mnt/user-data/"):
        thread.artifact(str(secret))
    with pytest.raises(NotFoundError):
        thread.artifact("/mnt/user-data/outputs/theirs.txt")  # another thread's file is not here
    with pytest.raises(NotFoundError):
        thread.artifact("/mnt/user-data/outputs")  # a folder is not an artifact
