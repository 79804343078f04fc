"""Generation threads for the embedded model: 1 vs 2 threads, on an idle and on a loaded machine.

Each configuration starts llama.cpp in a fresh process and times one prompt (about 300 tokens)
and 64 generated tokens; "loaded" runs a busy-looping process on another core meanwhile (a
kernel's pandas cell, a test suite). Prints tokens/s side by side and the ratios.

Run: ``python benchmarks/embedded_threads.py [--tokens 64]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time, urllib.request
from deerflow_nb.models.embedded_server import EmbeddedModelServer
from deerflow_nb.models.weights import ensure_weights
import tempfile
server = EmbeddedModelServer(ensure_weights(), n_threads=int(sys.argv[1]), n_threads_batch=int(sys.argv[2]),
                             snapshot_dir=tempfile.mkdtemp())
url = server.start()
prompt = "Summarise the following list of numbers in one sentence: " + ", ".join(str(i * 7 % 101) for i in range(150))
body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": int(sys.argv[3]), "temperature": 0,
        "ignore_eos": True}
req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req) as r:
    out = json.loads(r.read())
t = out["timings"]
print(json.dumps({"prompt_tps": t["prompt_per_second"], "gen_tps": t["predicted_per_second"],
                  "prompt_n": t["prompt_n"], "gen_n": t["predicted_n"]}))
"""


def hog(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10000))


def measure(threads: int, batch: int, tokens: int, loaded: bool) -> dict:
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=hog, args=(stop,)) if loaded else None
    if proc:
        proc.start()
        time.sleep(1)
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(batch), str(tokens)],
                             capture_output=True, text=True, check=True)
    finally:
        if proc:
            stop.set()
            proc.join()
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    rows = {}
    for loaded in (False, True):
        for threads in (1, 2):
            rows[(loaded, threads)] = r = measure(threads, 2, args.tokens, loaded)
            print(f"{'loaded' if loaded else 'idle  '} gen threads={threads} batch threads=2: "
                  f"generation {r['gen_tps']:6.1f} tok/s, prompt {r['prompt_tps']:6.1f} tok/s", flush=True)
    for loaded in (False, True):
        one, two = rows[(loaded, 1)]["gen_tps"], rows[(loaded, 2)]["gen_tps"]
        print(f"{'loaded' if loaded else 'idle'}: generation 1 thread / 2 threads = {one / two:.2f}x")


if __name__ == "__main__":
    main()
