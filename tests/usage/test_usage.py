import datetime as dt
import time

import pytest
import yaml

import deerflow_nb as df
from deerflow_nb.config import AppConfig, ModelPricing
from deerflow_nb.errors import UsageError
from deerflow_nb.usage import (
    RunUsageRecord,
    TokenCounts,
    UsageStore,
    UsageSummary,
    compute_cost,
    parse_since,
    summarize,
)

PRICING = {"input_per_million": 2.0, "output_per_million": 8.0, "input_cache_hit_per_million": 0.5}


def test_cost_arithmetic():
    usage = {"input_tokens": 1_000_000, "output_tokens": 500_000, "cache_read_tokens": 200_000}
    assert compute_cost(usage, ModelPricing(**PRICING)) == pytest.approx(1.6 + 0.1 + 4.0)
    # without a cache-hit price, cache hits are billed as normal input
    no_hit = ModelPricing(input_per_million=2.0, output_per_million=8.0)
    assert compute_cost(usage, no_hit) == pytest.approx(2.0 + 4.0)
    assert compute_cost(usage, None) is None
    assert compute_cost({"input_tokens": 3, "output_tokens": 0}, no_hit) == pytest.approx(6e-6)


def test_summary_prices_known_models_only():
    config = AppConfig.model_validate({"models": [
        {"name": "priced", "use": "deerflow_nb.testing:ScriptedChatModel", "pricing": PRICING},
        {"name": "free", "use": "deerflow_nb.testing:ScriptedChatModel"}]})
    records = [
        RunUsageRecord(run_id="r1", user_id="u", status="success", finished_at=1.0, models={
            "priced": TokenCounts(input_tokens=1000, output_tokens=100, total_tokens=1100, cache_read_tokens=400),
            "free": TokenCounts(input_tokens=5, output_tokens=5, total_tokens=10)}),
        RunUsageRecord(run_id="r2", user_id="u", status="success", finished_at=2.0, models={
            "priced": TokenCounts(input_tokens=1000, output_tokens=100, total_tokens=1100)}),
    ]
    summary = summarize(records, config)
    UsageSummary.model_validate(summary)
    expected = (1600 * 2.0 + 400 * 0.5 + 200 * 8.0) / 1_000_000
    assert summary["by_model"]["priced"]["cost"] == pytest.approx(expected)
    assert summary["by_model"]["priced"]["runs"] == 2
    assert summary["by_model"]["free"]["cost"] is None
    assert summary["cost"] == pytest.approx(expected) and summary["unpriced_models"] == ["free"]
    assert summary["runs"] == 2 and summary["total_tokens"] == 2210 and summary["cache_read_tokens"] == 400
    assert summarize([], config)["cost"] is None


def test_parse_since():
    assert parse_since(None) is None
    assert parse_since(12.5) == 12.5
    day = dt.date(2025, 1, 31)
    assert parse_since("2025-01-31") == parse_since(day) == dt.datetime(2025, 1, 31).timestamp()
    assert parse_since(dt.datetime(2025, 1, 31, tzinfo=dt.UTC)) == dt.datetime(2025, 1, 31, tzinfo=dt.UTC).timestamp()
    with pytest.raises(UsageError, match="since='yesterday'"):
        parse_since("yesterday")


def test_store_skips_torn_lines(tmp_path):
    from deerflow_nb.config import Paths

    store = UsageStore(Paths(tmp_path))
    store.append(RunUsageRecord(run_id="a", thread_id="t1", user_id="u", status="success", finished_at=10))
    with open(store.file("u"), "a") as handle:
        handle.write('{"run_id": "torn"')
    store.append(RunUsageRecord(run_id="b", thread_id="t2", user_id="u", status="error", finished_at=20))
    assert [r.run_id for r in store.records("u")] == ["a", "b"]
    assert [r.run_id for r in store.records("u", thread_id="t2")] == ["b"]
    assert [r.run_id for r in store.records("u", since=15)] == ["b"]
    assert store.records("nobody") == []


def test_runs_record_usage_and_cost(home, tmp_path):
    usage = {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100,
             "input_token_details": {"cache_read": 400}}
    config = {"memory": {"enabled": False}, "models": [{
        "name": "priced", "use": "deerflow_nb.testing:ScriptedChatModel", "pricing": PRICING,
        "responses": [{"content": "hello", "usage_metadata": usage}]}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with df.DeerFlow(path, persistence="memory") as agent:
        thread = agent.thread()
        events = list(thread.stream("hi"))
        assert events[-1].data["usage_by_model"]["priced"] == {
            "input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100, "cache_read_tokens": 400}
        summary = thread.usage()
        UsageSummary.model_validate(summary)
        expected = (600 * 2.0 + 400 * 0.5 + 100 * 8.0) / 1_000_000
        assert summary["runs"] == 1 and summary["thread_id"] == thread.id
        assert summary["by_model"]["priced"]["cache_read_tokens"] == 400
        assert summary["cost"] == pytest.approx(expected)

        agent.thread().chat("again")  # a second thread, same user
        assert agent.usage()["runs"] == 2
        assert thread.usage()["runs"] == 1
        assert agent.usage(since=time.time() + 3600)["runs"] == 0
        assert (home / "users/default/usage.jsonl").is_file()
