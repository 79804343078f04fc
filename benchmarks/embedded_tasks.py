"""Small data tasks on the embedded model, each checked against pandas ground truth.

Ten generated CSV files (different column names and sizes), ten questions: a row count, means,
a maximum and a minimum, grouped totals and means, top-k, an expression total, the best group
and a report file. Each task runs on a new thread of one ``DeerFlow()`` (the embedded default,
small profile); an answer is correct when every true number (within 0.01) or name appears in it.

Also measured, each in a fresh process: the first visible event (progress excluded: a token, a
tool call) of the first run on a cold start (no prefix snapshot yet: it is built) and on a warm
start (restored), from the call and from the process start.

Run: ``python benchmarks/embedded_tasks.py [--tasks 10] [--hog]`` (``--hog`` keeps another core busy).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

UP = "/mnt/user-data/uploads"


def datasets(folder: Path) -> list[dict]:
    """The tasks: (file, question, truth) with the truth computed by pandas."""
    rng = np.random.default_rng(7)
    tasks: list[dict] = []

    def save(name: str, df: pd.DataFrame) -> Path:
        path = folder / name
        df.to_csv(path, index=False)
        return path

    trips = pd.DataFrame({"trip_id": range(1, 58), "city": rng.choice(["Oslo", "Rome", "Lima", "Pune"], 57),
                          "fare": rng.uniform(5, 60, 57).round(2), "km": rng.integers(1, 40, 57)})
    p = save("trips.csv", trips)
    tasks.append({"file": p, "q": f"How many rows does {UP}/trips.csv have?", "numbers": [len(trips)]})
    tasks.append({"file": p, "q": f"What is the mean fare in {UP}/trips.csv?", "numbers": [trips.fare.mean()]})
    shop = pd.DataFrame({"store": rng.choice(["A1", "B2", "C3"], 40), "qty": rng.integers(1, 9, 40),
                         "price": rng.uniform(1, 20, 40).round(2)})
    p = save("shop.csv", shop)
    totals = (shop.qty * shop.price).groupby(shop.store).sum()
    tasks.append({"file": p, "q": f"What is the total revenue (qty * price) per store in {UP}/shop.csv?",
                  "numbers": list(totals.values)})
    orders = pd.DataFrame({"order": range(80), "city": rng.choice(["Paris", "Berlin", "Madrid", "Vienna", "Prague"],
                                                                  80, p=[.35, .25, .2, .12, .08]),
                           "amount": rng.uniform(10, 100, 80).round(2)})
    p = save("orders.csv", orders)
    top = orders.city.value_counts().head(3)
    tasks.append({"file": p, "q": f"Which 3 cities have the most orders in {UP}/orders.csv?",
                  "names": list(top.index)})
    temps = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=31).strftime("%Y-%m-%d"),
                          "station": rng.choice(["north", "south"], 31), "temp_c": rng.normal(4, 6, 31).round(1)})
    p = save("weather.csv", temps)
    tasks.append({"file": p, "q": f"What was the highest temp_c in {UP}/weather.csv?",
                  "numbers": [temps.temp_c.max()]})
    staff = pd.DataFrame({"name": [f"p{i}" for i in range(25)], "dept": rng.choice(["ops", "sales", "it"], 25),
                          "salary": rng.integers(30000, 90000, 25)})
    p = save("staff.csv", staff)
    tasks.append({"file": p, "q": f"What is the average salary per dept in {UP}/staff.csv?",
                  "numbers": list(staff.groupby("dept").salary.mean().values)})
    lines = pd.DataFrame({"sku": rng.choice(["x1", "x2", "x3", "x4"], 30), "units": rng.integers(1, 20, 30),
                          "unit_cost": rng.uniform(0.5, 9, 30).round(2)})
    p = save("lines.csv", lines)
    tasks.append({"file": p, "q": f"What is the total cost (units * unit_cost) of all rows in {UP}/lines.csv?",
                  "numbers": [(lines.units * lines.unit_cost).sum()]})
    visits = pd.DataFrame({"page": rng.choice(["home", "docs", "blog", "pricing"], 60),
                           "seconds": rng.integers(5, 400, 60)})
    p = save("visits.csv", visits)
    best = visits.groupby("page").seconds.sum().idxmax()
    tasks.append({"file": p, "q": f"Which page has the highest total seconds in {UP}/visits.csv?", "names": [best]})
    stock = pd.DataFrame({"item": [f"i{i}" for i in range(20)], "qty_on_hand": rng.integers(0, 500, 20)})
    p = save("stock.csv", stock)
    tasks.append({"file": p, "q": f"What is the smallest qty_on_hand in {UP}/stock.csv?",
                  "numbers": [stock.qty_on_hand.min()]})
    sales = pd.DataFrame({"region": rng.choice(["east", "west", "central"], 36), "units": rng.integers(1, 30, 36),
                          "price": rng.choice([9.5, 12.0, 15.25], 36)})
    p = save("regions.csv", sales)
    rev = (sales.units * sales.price).groupby(sales.region).sum()
    tasks.append({"file": p, "q": f"Write a report on {UP}/regions.csv with the revenue (units * price) per region to "
                               "/mnt/user-data/outputs/regions_report.md, then tell me the total revenue.",
                  "numbers": [rev.sum()], "report": "/mnt/user-data/outputs/regions_report.md",
                  "report_numbers": list(rev.values)})
    return tasks


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


def _has(values: list[float], target: float) -> bool:
    return any(abs(v - float(target)) <= 0.011 + 1e-4 * abs(float(target)) for v in values)


def check(task: dict, answer: str, report: str | None) -> bool:
    found = _numbers(answer)
    ok = all(_has(found, n) for n in task.get("numbers", []))
    ok = ok and all(name.lower() in answer.lower() for name in task.get("names", []))
    if "report" in task:
        ok = ok and report is not None and all(_has(_numbers(report), n) for n in task["report_numbers"])
    return ok


def first_start(snapshot_dir: str, data: Path) -> dict:
    """(Child process) one task on a fresh process; times from the process start and from the call."""
    started = float(os.environ["BENCH_T0"])
    import deerflow_nb as df
    from deerflow_nb.models.embedded import EmbeddedChatModel

    model = EmbeddedChatModel(snapshot_dir=snapshot_dir)
    model.ensure_started()
    ready = time.time()
    agent = df.DeerFlow(model=model)
    thread = agent.thread()
    thread.upload(str(data))
    call = time.time()
    first = token = None
    for event in thread.stream(f"How many rows does {UP}/{data.name} have?"):
        if token is None and event.type == "progress" and event.data.get("phase") == "generating":
            token = time.time()
        if first is None and event.type == "messages-tuple":
            first = time.time()
    server = model._server
    status = server.snapshots.last_restore if server is not None and server.snapshots else None
    ai = [m for m in thread.messages if m.type == "ai"]
    prompt = (ai[0].usage_metadata or {}).get("input_tokens") if ai else None
    cached = ((ai[0].usage_metadata or {}).get("input_token_details") or {}).get("cache_read") if ai else None
    agent.close()
    return {"ready_s": ready - started, "token_from_call_s": (token or time.time()) - call,
            "first_from_call_s": (first or time.time()) - call,
            "first_from_start_s": (first or time.time()) - started, "snapshot": status,
            "prompt_tokens": prompt, "cached_tokens": cached}


def run_first_start(snapshot_dir: str, data: Path) -> dict:
    env = {**os.environ, "BENCH_T0": repr(time.time())}
    out = subprocess.run([sys.executable, __file__, "--child", snapshot_dir, str(data)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def hog(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10000))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--tool-mode", default="grammar", choices=["grammar", "tolerant", "native"],
                        help="how the embedded model makes tool calls (the start timings always use the default)")
    parser.add_argument("--only", help="comma-separated task numbers (1-based) to run, without the start timings")
    parser.add_argument("--hog", action="store_true", help="keep another core busy meanwhile")
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
        return bench(args.tasks, [int(i) for i in args.only.split(",")] if args.only else None, args.tool_mode)
    finally:
        stop.set()


def bench(count: int, only: list[int] | None = None, tool_mode: str = "grammar") -> int:
    home = tempfile.mkdtemp(prefix="deerflow-bench-")
    os.environ["DEER_FLOW_HOME"] = home
    folder = Path(home) / "data"
    folder.mkdir()
    tasks = datasets(folder)[:count]
    snapshots = tempfile.mkdtemp(prefix="deerflow-snap-")
    starts = []
    if only:
        tasks = [tasks[i - 1] for i in only]
    else:  # the warm start asks about another file than the cold one: only the fixed prefix is shared
        starts = [("cold start (snapshot built)", run_first_start(snapshots, tasks[0]["file"])),
                  ("warm start (snapshot restored)", run_first_start(snapshots, tasks[2]["file"]))]
    for name, r in starts:
        print(f"{name:31}: model ready {r['ready_s']:4.1f} s after process start; first token "
              f"{r['token_from_call_s']:4.1f} s after the call; first message (the tool call) "
              f"{r['first_from_call_s']:4.1f} s after the call ({r['first_from_start_s']:4.1f} s after process "
              f"start); snapshot: {r['snapshot']}; first request {r['prompt_tokens']} prompt tokens "
              f"({r['cached_tokens']} from cache)", flush=True)

    import deerflow_nb as df
    from deerflow_nb.models.embedded import EmbeddedChatModel

    model = EmbeddedChatModel(snapshot_dir=snapshots, tool_mode=tool_mode)
    model.ensure_started()
    agent = df.DeerFlow(model=model)
    print(f"tool mode: {tool_mode}")
    correct = 0
    times = []
    for i, task in enumerate(tasks, 1):
        thread = agent.thread()
        thread.upload(str(task["file"]))
        start = time.time()
        try:
            answer = thread.chat(task["q"])
        except Exception as exc:
            answer = f"(run failed: {type(exc).__name__}: {exc})"
        took = time.time() - start
        times.append(took)
        report = None
        if "report" in task:
            try:
                report = thread.artifact(task["report"])[0].decode()
            except Exception:
                report = None
        ok = check(task, answer, report)
        correct += ok
        tools = [c["name"] for m in thread.messages if m.type == "ai" for c in m.tool_calls]
        print(f"task {i:2} {'OK  ' if ok else 'FAIL'} {took:5.1f} s  tools={tools}  q={task['q'][:60]!r}\n"
              f"        answer: {answer[:160]!r}", flush=True)
    agent.close()
    median = sorted(times)[len(times) // 2]
    print(f"success: {correct}/{len(tasks)} tasks correct; time per task: median {median:.1f} s, "
          f"max {max(times):.1f} s, total {sum(times):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
