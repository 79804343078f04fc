"""Memory search and injection cost at 100, 1,000 and 10,000 facts.

For each size the script writes that many fact files, loads them (building the
FTS5 index), then times, over the same queries (first messages: frame words such as
"the user works on" around a few topic words; facts mix frame words with topic words
drawn from a 5,000-word Zipf-like vocabulary, as real text does):

* ``fts5``      - ``MemoryStorage.search`` (SQLite FTS5, BM25 ranking, top 10);
* ``substring`` - a plain scan of every fact for the query words (the fallback);
* ``inject``    - building the ``<memory>`` block for a new thread (search + top facts + budget).

Run: ``python benchmarks/memory_search.py [--sizes 100 1000 10000] [--queries 200]``.
Target: at 10,000 facts an FTS5 search under 5 ms (median).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from deerflow_nb.config import AppConfig, Paths
from deerflow_nb.memory.facts import Fact, fact_to_markdown
from deerflow_nb.memory.index import substring_search
from deerflow_nb.memory.service import MemoryService
from deerflow_nb.memory.storage import MemoryStorage

FRAME = ("the user prefers works on likes uses for with and of in a to their data team always never "
         "project reports").split()
SEEDS = ("polars pandas duckdb sql churn revenue forecast sales csv parquet excel chart matplotlib seaborn report "
         "cfo quarterly model regression cluster python notebook jupyter spark airflow dbt finance marketing "
         "retention cohort funnel dashboard latency gpu embeddings llm prompt vector warehouse snowflake").split()
#: Topic words: the seeds plus synthetic ones, drawn with a Zipf-like law as in real text.
TOPICS = SEEDS + [f"{SEEDS[i % len(SEEDS)]}{i}" for i in range(5000)]
WEIGHTS = [1 / (rank + 1) ** 1.1 for rank in range(len(TOPICS))]


def topic_words(rng: random.Random, count: int) -> list[str]:
    """``count`` topic words, common ones more often."""
    return rng.choices(TOPICS, WEIGHTS, k=count)


def make_facts(root: Path, count: int, rng: random.Random) -> None:
    """Write ``count`` fact files directly (no fsync per file: this is set-up, not the measured part)."""
    storage = MemoryStorage(root)
    for i in range(count):
        words = " ".join(rng.choices(FRAME, k=5) + topic_words(rng, 5))
        fact = Fact(id=f"fact_{i:08d}", content=f"The user {words}", category=rng.choice(
            ["preference", "knowledge", "context", "goal"]), confidence=round(rng.uniform(0.7, 1.0), 2))
        path = storage._fact_path(fact.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fact_to_markdown(fact), encoding="utf-8")


def timed(func, queries: list[str]) -> float:
    """Median milliseconds of ``func(query)`` over ``queries``."""
    samples = []
    for query in queries:
        start = time.perf_counter()
        func(query)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    # A first message: a few frame words around one to four topic words.
    queries = [" ".join(["please", *rng.choices(FRAME, k=3), *topic_words(rng, rng.randint(1, 4))])
               for _ in range(args.queries)]
    print(f"{'facts':>7} {'load ms':>9} {'fts5 ms':>9} {'substring ms':>13} {'ratio':>6} {'inject ms':>10} "
          f"{'fallback inject ms':>19}")
    for size in args.sizes:
        print(measure(size, rng, queries))


def measure(size: int, rng: random.Random, queries: list[str]) -> str:
    """One table row for ``size`` facts."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        make_facts(home / "users" / "bench", size, rng)
        config = AppConfig()
        service = MemoryService(Paths(home), lambda: config, resolve_model=lambda name: None,  # type: ignore
                                read_state=None)  # type: ignore[arg-type]
        storage = service.storage("bench")
        start = time.perf_counter()
        storage.load()
        load_ms = (time.perf_counter() - start) * 1000
        facts = list(storage._facts.values())
        for query in queries[:5]:  # warm caches
            storage.search(query)
        fts = timed(lambda q: storage.search(q, 10), queries)
        scan = timed(lambda q: substring_search(facts, q, 10), queries)
        inject = timed(lambda q: service.injection_for("bench", q), queries)
        storage.index.available = False  # what a SQLite without FTS5 would do
        fallback = timed(lambda q: service.injection_for("bench", q), queries)
        storage.index.close()
    return (f"{size:>7} {load_ms:>9.1f} {fts:>9.3f} {scan:>13.3f} {scan / fts:>5.1f}x {inject:>10.3f} "
            f"{fallback:>19.3f}")


if __name__ == "__main__":
    main()
