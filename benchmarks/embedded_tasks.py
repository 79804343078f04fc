"""The embedded default on everyday data questions, each checked against the true value.

The questions come from ``benchmarks/taskgen`` (about 80: every kind of a first afternoon with a new
data set, three or more of each, a third of them multi-part, some in a stated answer format, CSV,
TSV, Excel, Parquet and JSON-lines files of up to 50,000 rows, one or two files at once), with the
truth computed by pandas, scipy and scikit-learn. Each question runs on a new thread of one
``DeerFlow()`` on the embedded model (small profile); the files it asks for are fetched with
``thread.artifact``. An answer is right only when it states the asked values (see
``taskgen/checks.py``); a run that ends in ``RunError`` is *flagged* (honest failure), and a wrong
answer from a run that succeeded is a *confident wrong answer*.

Printed: correct / total and per kind, confident wrong answers, flagged runs, median and p90
seconds per question, the first visible event (progress, a tool call) and the first answer text
per question, and, each in a fresh process, the first run's first event on a cold start (the
prompt snapshot is built) and a warm one (restored).

Run: ``python benchmarks/embedded_tasks.py [--seed 0] [--only count,join-2] [--limit N] [--hog]
[--tasks MODULE.py] [--json out.json] [--no-starts]`` (``--hog`` keeps another core busy;
``--tasks`` runs another generator with the same interface, e.g. a held-out set).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
UP = "/mnt/user-data/uploads"


def load_generator(path: Path | None) -> ModuleType:
    """The task generator: ``benchmarks/taskgen/tasks.py`` or the module at ``path``."""
    if path is None:
        sys.path.insert(0, str(HERE))
        from taskgen import tasks

        return tasks
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def first_start(snapshot_dir: str, data: Path) -> dict[str, Any]:
    """(Child process) one question on a fresh process; times from the process start and from the call."""
    started = float(os.environ["BENCH_T0"])
    import deerflow_nb as df
    from deerflow_nb.models.embedded import EmbeddedChatModel

    model = EmbeddedChatModel(snapshot_dir=snapshot_dir)
    model.ensure_started()
    ready = time.time()
    with df.DeerFlow(model=model) as agent:
        thread = agent.thread()
        thread.upload(str(data))
        call = time.time()
        first = text = None
        for event in thread.stream(f"How many rows does {UP}/{data.name} have?"):
            if first is None and event.type in ("progress", "messages-tuple", "custom"):
                first = time.time()
            if text is None and event.type == "messages-tuple" and _ai_text(event.data):
                text = time.time()
        server = model._server
        status = server.snapshots.last_restore if server is not None and server.snapshots else None
    end = time.time()
    return {"ready_s": ready - started, "first_event_s": (first or end) - call, "first_text_s": (text or end) - call,
            "snapshot": status}


def run_first_start(snapshot_dir: str, data: Path) -> dict[str, Any]:
    env = {**os.environ, "BENCH_T0": repr(time.time())}
    out = subprocess.run([sys.executable, __file__, "--child", snapshot_dir, str(data)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ai_text(data: Any) -> str:
    """The AI text of a ``messages-tuple`` event's data (``[chunk, metadata]``)."""
    chunk = data[0] if isinstance(data, list | tuple) and data else data
    if isinstance(chunk, dict) and chunk.get("type") in ("ai", "AIMessageChunk"):
        content = chunk.get("content")
        return content if isinstance(content, str) else ""
    return ""


def hog(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10000))


def ask(agent: Any, task: Any) -> dict[str, Any]:
    """Run one task on a new thread; returns what happened (answer, status, timings, outputs)."""
    import deerflow_nb as df

    thread = agent.thread()
    for path in task.files:
        thread.upload(str(path))
    start = time.time()
    first = text = None
    run = thread.start(task.question)
    timeline: list[tuple[float, str]] = []  # when each kind of message began to stream: model turns, tool results
    for event in run.events():
        if event.type == "messages-tuple":
            chunk = event.data[0] if isinstance(event.data, list | tuple) and event.data else event.data
            kind = str(chunk.get("type")) if isinstance(chunk, dict) else "?"
            kind = "tool" if kind == "tool" else "ai"
            if not timeline or timeline[-1][1] != kind:
                timeline.append((round(time.time() - start, 2), kind))
        if first is None and event.type in ("progress", "messages-tuple", "custom"):
            first = time.time()
        if text is None and event.type == "messages-tuple" and _ai_text(event.data).strip():
            text = time.time()
    try:
        answer, status, reason = run.wait(), "success", None
    except df.RunError as exc:
        answer, status, reason = "", "error", f"{exc.stop_reason}: {exc.cause}"
    took = time.time() - start
    outputs: dict[str, bytes | None] = {}
    for path in task.outputs_expected:
        try:
            outputs[path] = thread.artifact(path)[0]
        except df.DeerFlowError:
            outputs[path] = None
    messages = thread.messages
    programs = [c["args"].get("code", "") for m in messages if m.type == "ai" for c in m.tool_calls]
    # each program's role (the question's own, a check, the report writer) and what it printed, for analysis
    roles = {c.get("id"): ("check" if m.additional_kwargs.get("deerflow_check") else
                           "report" if m.additional_kwargs.get("deerflow_report") else "program")
             for m in messages if m.type == "ai" for c in m.tool_calls}
    runs = [{"role": roles.get(m.tool_call_id, "program"), "status": m.status,
             "stdout": str((m.additional_kwargs.get("deerflow_program") or {}).get("stdout", ""))[:2000]}
            for m in messages if m.type == "tool"]
    return {"answer": answer, "status": status, "reason": reason, "took": took,
            "first_event": (first or time.time()) - start, "first_text": (text or time.time()) - start,
            "outputs": outputs, "programs": programs, "runs": runs, "timeline": timeline,
            "presented": list(thread.state.get("artifacts") or [])}


def bench(args: argparse.Namespace) -> int:
    home = tempfile.mkdtemp(prefix="deerflow-bench-")
    os.environ["DEER_FLOW_HOME"] = home
    folder = Path(home) / "data"
    folder.mkdir()
    generator = load_generator(Path(args.tasks) if args.tasks else None)
    tasks = generator.generate(folder, seed=args.seed)
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t.id in wanted or t.kind in wanted]
    if args.limit:
        tasks = tasks[:args.limit]
    snapshots = tempfile.mkdtemp(prefix="deerflow-snap-")
    if not args.no_starts:
        sample = next(t.files[0] for t in tasks if t.files)
        for name, r in (("cold start (snapshot built)", run_first_start(snapshots, sample)),
                        ("warm start (snapshot restored)", run_first_start(snapshots, sample))):
            print(f"{name:31}: model ready {r['ready_s']:4.1f} s after process start; first visible event "
                  f"{r['first_event_s']:4.1f} s after the call, first answer text {r['first_text_s']:4.1f} s; "
                  f"snapshot: {r['snapshot']}", flush=True)

    import deerflow_nb as df
    from deerflow_nb.models.embedded import EmbeddedChatModel

    model = EmbeddedChatModel(snapshot_dir=snapshots)
    model.ensure_started()
    results = []
    with df.DeerFlow(model=model) as agent:
        for task in tasks:
            r = ask(agent, task)
            ok, why = task.check(r["answer"], r["outputs"]) if r["status"] == "success" else (False, r["reason"])
            r.update(id=task.id, kind=task.kind, multipart=task.multipart, ok=bool(ok), why=why,
                     question=task.question, expected=task.expected)
            results.append(r)
            mark = "OK  " if ok else ("FLAG" if r["status"] != "success" else "WRONG")
            print(f"{mark:5} {task.id:18} {r['took']:5.1f} s  {task.question[:110]!r}", flush=True)
            if not ok:
                print(f"      expected: {task.expected[:200]}\n      answer:   {r['answer'][:300]!r}\n"
                      f"      why:      {str(why)[:200]}", flush=True)
    report(results)
    if args.json:
        for r in results:
            r["outputs"] = {k: (len(v) if v is not None else None) for k, v in r["outputs"].items()}
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


def report(results: list[dict[str, Any]]) -> None:
    """Print the summary lines."""
    n = len(results)
    right = sum(r["ok"] for r in results)
    flagged = sum(1 for r in results if r["status"] != "success")
    wrong = sum(1 for r in results if r["status"] == "success" and not r["ok"])
    times = sorted(r["took"] for r in results)
    p90 = times[min(n - 1, int(round(0.9 * (n - 1))))]
    kinds: dict[str, list[bool]] = {}
    for r in results:
        kinds.setdefault(r["kind"], []).append(r["ok"])
    multi = [r["ok"] for r in results if r["multipart"]]
    print("\nper kind: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in kinds.items()))
    if multi:
        print(f"multi-part questions: {sum(multi)}/{len(multi)}")
    print(f"correct: {right}/{n} ({100 * right / n:.0f}%); confident wrong answers: {wrong}; flagged (RunError): "
          f"{flagged}")
    print(f"seconds per question: median {statistics.median(times):.1f}, p90 {p90:.1f}, total {sum(times):.0f}; "
          f"first visible event: median {statistics.median(r['first_event'] for r in results):.1f} s; first "
          f"answer text: median {statistics.median(r['first_text'] for r in results):.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", help="a generator module with the taskgen interface (default: benchmarks/taskgen)")
    parser.add_argument("--only", help="comma-separated task ids or kinds")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--hog", action="store_true", help="keep another core busy meanwhile")
    parser.add_argument("--no-starts", action="store_true", help="skip the cold/warm start measurement")
    parser.add_argument("--json", help="also write every result to this file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(first_start(args.child[0], Path(args.child[1]))))
        return 0
    stop = multiprocessing.Event()
    hogger = multiprocessing.Process(target=hog, args=(stop,), daemon=True) if args.hog else None
    if hogger:
        hogger.start()
    try:
        return bench(args)
    finally:
        stop.set()


if __name__ == "__main__":
    sys.exit(main())
