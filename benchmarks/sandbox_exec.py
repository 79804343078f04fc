"""Per-command round trip of each sandbox provider next to a bare ``subprocess.run``.

    .venv/bin/python benchmarks/sandbox_exec.py [--runs 60] \
        [--providers local,bubblewrap,bubblewrap-oneshot,docker]

Measures, in one run and interleaved (so machine noise hits every row alike), the
median wall time of ``execute_command`` for a trivial command (``true``) and a typical
one (``python3 -c 'print(1)'``), against ``subprocess.run(["bash", "-c", cmd])``.
The docker and bubblewrap rows are *warm*: the first command, which starts the
container or the long-lived bwrap instance, is excluded and shown on its own.
``bubblewrap-oneshot`` is ``sandbox.bwrap_persistent: false`` (a fresh bwrap per command).
Targets: bubblewrap <= 3x bare; warm docker <= 50 ms median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from deerflow_nb.config.paths import Paths
from deerflow_nb.config.schema import SandboxConfig
from deerflow_nb.errors import SandboxError
from deerflow_nb.sandbox.base import SandboxProvider
from deerflow_nb.sandbox.local import LocalSandboxProvider

COMMANDS = {"true": "true", "python": "python3 -c 'print(1)'"}


def make_provider(name: str, home: Path) -> SandboxProvider:
    """The provider behind a row name (``bubblewrap-oneshot``: one bwrap per command)."""
    if name == "local":
        return LocalSandboxProvider(SandboxConfig(use=name), paths=Paths(home))
    if name.startswith("bubblewrap"):
        from deerflow_nb.sandbox.bubblewrap import BubblewrapSandboxProvider

        config = SandboxConfig.model_validate({"use": "bubblewrap", "bwrap_persistent": name == "bubblewrap"})
        return BubblewrapSandboxProvider(config, paths=Paths(home))
    config = SandboxConfig(use=name)
    from deerflow_nb.sandbox.docker import DockerSandboxProvider

    return DockerSandboxProvider(config, paths=Paths(home))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--providers", default="local,bubblewrap,bubblewrap-oneshot,docker")
    args = parser.parse_args()

    # Every row must start the same interpreter: resolve python3 to this Python's own
    # installation (bubblewrap exposes it; version-manager shims would add ~100 ms).
    os.environ["PATH"] = f"{Path(sys.base_prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    home = Path(tempfile.mkdtemp(prefix="deerflow-bench-"))
    runners: dict[str, Callable[[str], object]] = {
        "bare subprocess.run": lambda cmd: subprocess.run(["bash", "-c", cmd], capture_output=True, check=False)
    }
    providers: list[SandboxProvider] = []
    first: dict[str, float] = {}
    for name in args.providers.split(","):
        try:
            provider = make_provider(name.strip(), home)
        except SandboxError as exc:
            print(f"[skip] {name}: {exc}")
            continue
        providers.append(provider)
        sandbox = provider.acquire("bench")
        started = time.perf_counter()
        sandbox.execute_command("true")  # container / instance start: once per sandbox, not per command
        first[name.strip()] = time.perf_counter() - started
        runners[name.strip()] = sandbox.execute_command

    timings: dict[tuple[str, str], list[float]] = {(r, c): [] for r in runners for c in COMMANDS}
    try:
        for _ in range(args.runs):
            for label, cmd in COMMANDS.items():
                for runner_name, run in runners.items():
                    started = time.perf_counter()
                    run(cmd)
                    timings[(runner_name, label)].append(time.perf_counter() - started)
    finally:
        for provider in providers:
            provider.shutdown()

    print(f"\nmedian per-command round trip, {args.runs} runs each (python {sys.version.split()[0]})")
    header = f"{'runner':<22}" + "".join(f"{label + ' (ms)':>15}{'x bare':>9}" for label in COMMANDS)
    print(header)
    print("-" * len(header))
    bare = {label: statistics.median(timings[("bare subprocess.run", label)]) for label in COMMANDS}
    for runner_name in runners:
        row = f"{runner_name:<22}"
        for label in COMMANDS:
            median = statistics.median(timings[(runner_name, label)])
            row += f"{median * 1000:>15.2f}{median / bare[label]:>8.1f}x"
        print(row)
    if first:
        startup = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in first.items())
        print(f"\nfirst command of a sandbox (starts its container / instance): {startup}")
    print("\ntargets: bubblewrap <= 3x bare; warm docker <= 50 ms median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
