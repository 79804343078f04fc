"""Per-command round trip of each sandbox provider next to a bare ``subprocess.run``.

    .venv/bin/python benchmarks/sandbox_exec.py [--runs 60] [--providers local,bubblewrap,docker]

Measures, in one run and interleaved (so machine noise hits every row alike), the
median wall time of ``execute_command`` for a trivial command (``true``) and a typical
one (``python3 -c 'print(1)'``), against ``subprocess.run(["bash", "-c", cmd])``.
The docker row is a *warm* container: the first command (container start) is excluded.
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
    config = SandboxConfig(use=name)
    if name == "local":
        return LocalSandboxProvider(config, paths=Paths(home))
    if name == "bubblewrap":
        from deerflow_nb.sandbox.bubblewrap import BubblewrapSandboxProvider

        return BubblewrapSandboxProvider(config, paths=Paths(home))
    from deerflow_nb.sandbox.docker import DockerSandboxProvider

    return DockerSandboxProvider(config, paths=Paths(home))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--providers", default="local,bubblewrap,docker")
    args = parser.parse_args()

    # Every row must start the same interpreter: resolve python3 to this Python's own
    # installation (bubblewrap exposes it; version-manager shims would add ~100 ms).
    os.environ["PATH"] = f"{Path(sys.base_prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    home = Path(tempfile.mkdtemp(prefix="deerflow-bench-"))
    runners: dict[str, Callable[[str], object]] = {
        "bare subprocess.run": lambda cmd: subprocess.run(["bash", "-c", cmd], capture_output=True, check=False)
    }
    providers: list[SandboxProvider] = []
    for name in args.providers.split(","):
        try:
            provider = make_provider(name.strip(), home)
        except SandboxError as exc:
            print(f"[skip] {name}: {exc}")
            continue
        providers.append(provider)
        sandbox = provider.acquire("bench")
        sandbox.execute_command("true")  # container start / first-use costs are not per-command
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
    print("\ntargets: bubblewrap <= 3x bare; warm docker <= 50 ms median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
