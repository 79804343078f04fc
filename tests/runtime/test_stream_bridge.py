import asyncio

import pytest

from deerflow_nb.runtime import HEARTBEAT, BridgeEvent, StreamBridge, StreamEvent, StreamGap


def ev(i: int) -> StreamEvent:
    return StreamEvent("custom", {"i": i})


async def collect(bridge: StreamBridge, run_id: str, last: str | None = None) -> list:
    return [item async for item in bridge.subscribe(run_id, last)]


@pytest.mark.asyncio
async def test_fan_out_ids_and_end_marker():
    bridge = StreamBridge(16)
    bridge.open("r")
    consumers = [asyncio.create_task(collect(bridge, "r")) for _ in range(3)]
    await asyncio.sleep(0)
    for i in range(5):
        bridge.publish("r", ev(i))
    await asyncio.sleep(0)
    assert not any(c.done() for c in consumers)  # nobody finishes before END
    bridge.publish_end("r")
    results = await asyncio.gather(*consumers)
    for items in results:
        assert [i.id for i in items] == ["1", "2", "3", "4", "5"]
        assert [i.event.data["i"] for i in items] == [0, 1, 2, 3, 4]


@pytest.mark.asyncio
async def test_last_event_id_replays_exactly_the_rest():
    bridge = StreamBridge(16)
    for i in range(6):
        bridge.publish("r", ev(i))
    bridge.publish_end("r")
    items = await collect(bridge, "r", "3")
    assert [i.id for i in items] == ["4", "5", "6"]
    assert await collect(bridge, "r", "6") == []
    # a malformed cursor, or one beyond the newest event, replays what is retained (here: the whole run)
    assert len(await collect(bridge, "r", "garbage")) == 6
    assert len(await collect(bridge, "r", "99")) == 6


@pytest.mark.asyncio
async def test_unknown_cursor_with_a_trimmed_head_gets_a_gap_first():
    bridge = StreamBridge(4)
    for i in range(10):
        bridge.publish("r", ev(i))
    bridge.publish_end("r")
    for cursor in ("garbage", "99", "-3"):
        items = await collect(bridge, "r", cursor)
        assert items[0] == StreamGap(cursor, "7")
        assert [i.id for i in items[1:]] == ["7", "8", "9", "10"]


@pytest.mark.asyncio
async def test_cursor_older_than_retention_yields_gap_then_continues():
    bridge = StreamBridge(4)
    for i in range(10):
        bridge.publish("r", ev(i))
    sub = bridge.subscribe("r", "2")
    first = await sub.__anext__()
    assert isinstance(first, StreamGap) and first.resumed_at == "7"
    assert first.to_dict()["type"] == "stream_replay_gap"
    nxt = await sub.__anext__()
    assert isinstance(nxt, BridgeEvent) and nxt.id == "7"
    bridge.publish("r", ev(10))  # the run keeps going after a gap
    bridge.publish_end("r")
    rest = [i async for i in sub]
    assert [i.id for i in rest] == ["8", "9", "10", "11"]


@pytest.mark.asyncio
async def test_slow_live_subscriber_loses_nothing():
    bridge = StreamBridge(4)
    bridge.open("r")
    sub = bridge.subscribe("r")
    bridge.publish("r", ev(0))
    assert (await sub.__anext__()).id == "1"
    for i in range(1, 50):  # far past queue_maxsize while the subscriber is not reading
        bridge.publish("r", ev(i))
    bridge.publish_end("r")
    rest = [i async for i in sub]
    assert [i.event.data["i"] for i in rest] == list(range(1, 50))
    # with no live subscriber left, only queue_maxsize events stay retained for replay
    bridge.publish("r", ev(99))
    assert len(await collect(bridge, "r")) == 4


@pytest.mark.asyncio
async def test_stalled_reader_is_bounded_and_gets_a_gap_with_the_ids_it_missed():
    bridge = StreamBridge(4, reader_queue_maxsize=8)
    bridge.open("r")
    slow = bridge.subscribe("r", max_lag=bridge.reader_queue_maxsize)
    fast_items: list = []

    async def fast() -> None:
        async for item in bridge.subscribe("r", max_lag=bridge.reader_queue_maxsize):
            fast_items.append(item)

    fast_task = asyncio.create_task(fast())
    bridge.publish("r", ev(0))
    assert (await slow.__anext__()).id == "1"
    for i in range(1, 50):  # the slow reader stops reading while the run emits 49 more events
        bridge.publish("r", ev(i))
        await asyncio.sleep(0)  # the fast reader keeps up
        assert len(bridge._channels["r"].events) <= 8  # the channel never holds more than one reader's bound
    bridge.publish("r", ev(50))
    bridge.publish_end("r")
    rest = [i async for i in slow]
    assert rest[0] == StreamGap("1", "44")  # it had event 1; events 2..43 are gone; it resumes at 44
    assert [i.id for i in rest[1:]] == [str(n) for n in range(44, 52)]
    assert [i.event.data["i"] for i in rest[1:]] == list(range(43, 51))
    await fast_task
    assert [i.id for i in fast_items] == [str(n) for n in range(1, 52)]  # a reader that keeps up loses nothing


@pytest.mark.asyncio
async def test_heartbeats_while_idle_and_unknown_runs():
    bridge = StreamBridge(4, heartbeat_seconds=0.01)
    bridge.open("r")
    sub = bridge.subscribe("r", heartbeat=True)
    assert await sub.__anext__() is HEARTBEAT
    bridge.publish_end("r")
    assert [i async for i in sub] == []
    with pytest.raises(KeyError):
        await bridge.subscribe("missing").__anext__()
    assert bridge.ended("missing") and bridge.latest_id("r") is None


@pytest.mark.asyncio
async def test_finished_channels_are_cleaned_up():
    bridge = StreamBridge(4, cleanup_delay=0.01)
    bridge.publish("r", ev(1))
    bridge.publish_end("r")
    assert bridge.has("r")
    await asyncio.sleep(0.05)
    assert not bridge.has("r")
    assert bridge.final_id("r") == "1"  # a late resume can still tell whether it missed anything
    assert bridge.final_id("never") is None
