import pytest

from deerflow_nb.widgets._throttle import Throttle


class Scheduler:
    """A fake clock with timers that fire when the clock passes them."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pending: list[list] = []

    def clock(self) -> float:
        return self.now

    def call_later(self, delay, callback):
        entry = [self.now + delay, callback, False]
        self.pending.append(entry)

        class Handle:
            def cancel(self_inner):
                entry[2] = True

        return Handle()

    def advance(self, dt: float) -> None:
        self.now += dt
        for entry in list(self.pending):
            if entry[0] <= self.now and not entry[2]:
                self.pending.remove(entry)
                entry[1]()


def test_at_most_rate_flushes_per_second_and_last_state_is_flushed():
    sched = Scheduler()
    flushed: list[int] = []
    state = {"n": 0}
    throttle = Throttle(lambda: flushed.append(state["n"]), rate=20, clock=sched.clock,
                        call_later=sched.call_later)
    # 2000 tokens over 2 seconds of fake time (one per millisecond)
    for _ in range(2000):
        state["n"] += 1
        throttle.touch()
        sched.advance(0.001)
    throttle.close()
    assert len(flushed) <= 2 * 20 + 2
    assert len(flushed) >= 2 * 20 - 2  # it does keep the front end updated while streaming
    assert flushed[-1] == 2000  # the final state always reaches the front end
    # no two flushes closer than the interval (except the final close)
    times = []
    sched2 = Scheduler()
    t2 = Throttle(lambda: times.append(sched2.now), rate=20, clock=sched2.clock, call_later=sched2.call_later)
    for _ in range(500):
        t2.touch()
        sched2.advance(0.001)
    assert all(b - a >= 0.05 - 1e-9 for a, b in zip(times, times[1:], strict=False))


def test_timer_flushes_a_trailing_change_without_more_touches():
    sched = Scheduler()
    flushed: list[float] = []
    throttle = Throttle(lambda: flushed.append(sched.now), rate=20, clock=sched.clock,
                        call_later=sched.call_later)
    throttle.touch()  # immediate
    sched.advance(0.01)
    throttle.touch()  # deferred to the timer
    assert len(flushed) == 1 and throttle.dirty
    sched.advance(0.05)
    assert len(flushed) == 2 and not throttle.dirty
    throttle.close()
    assert len(flushed) == 2  # nothing pending: close does not send again


def test_without_timer_close_still_flushes():
    flushed = []
    throttle = Throttle(lambda: flushed.append(1), rate=20, clock=lambda: 0.0)
    throttle.touch()
    throttle.touch()
    throttle.touch()
    assert flushed == [1]
    throttle.close()
    assert flushed == [1, 1]


def test_rate_must_be_positive():
    with pytest.raises(ValueError, match="rate"):
        Throttle(lambda: None, rate=0)
