"""Running in process: the interpreter's lock is released while a command simulates, calls
from several threads run one at a time and give the same results, repeated calls leave nothing
behind, and the same inputs give the same results."""
import threading
import time

import slicesim
from conftest import no_wall

# A replay long enough (a second or so) to watch another thread during it: 80 requests/s for
# 300 s on two replicas, every invariant checked after every event.
LONG = dict(set={"tenant.default.synthetic": "rate=80 duration=300 prompt=fixed:400 "
                                              "output=fixed:60",
                 "tenant.default.trace": ""},
            replicas=2, check=True)


def long_replay():
    return slicesim.replay(**LONG)


def test_lock_released_during_replay(work):
    stamps, stop = [], threading.Event()

    def count():  # pure Python work: it needs the interpreter's lock to make progress
        n = 0
        while not stop.is_set():
            n += 1
            if n % 2000 == 0:
                stamps.append(time.monotonic())

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    t0 = time.monotonic()
    r = long_replay()
    t1 = time.monotonic()
    stop.set()
    t.join()
    assert r["requests"] > 20000
    assert t1 - t0 > 0.2, f"the replay took {t1 - t0:.3f} s: too short to watch"
    # a thread that cannot get the lock while C runs leaves no stamp in the middle of the call
    middle = [s for s in stamps if t0 + 0.25 * (t1 - t0) < s < t0 + 0.75 * (t1 - t0)]
    assert len(middle) > 10, f"{len(middle)} stamps in the middle of a {t1 - t0:.2f} s replay"


def test_threads_run_one_at_a_time_with_the_same_results(work):
    out = [None] * 3

    def one(i):
        out[i] = slicesim.replay("tiny.ini", seed=4).data

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out[0] is not None
    assert no_wall(out[0]) == no_wall(out[1]) == no_wall(out[2])


def test_repeated_calls_leave_nothing_behind(work):
    base = slicesim._core.live_bytes()
    seen = []
    for _ in range(3):
        r = slicesim.replay("tiny.ini", db="r.db")
        seen.append((slicesim._core.live_bytes(), no_wall(r.data)))
        slicesim.compare("tiny.ini", policies=["container", "slice"])
        seen.append((slicesim._core.live_bytes(), None))
    assert [b for b, _ in seen] == [base] * 6
    assert seen[0][1] == seen[2][1] == seen[4][1]  # same inputs, same results, every time
    with slicesim.open("r.db") as db:
        assert db.run_ids_after(0) == [1, 2, 3]


def test_failed_calls_leave_nothing_behind(work):
    base = slicesim._core.live_bytes()
    for _ in range(3):
        try:
            slicesim.replay("tiny.ini", set=["tenant.chat.replicas=0"])
        except slicesim.Error:
            pass
        else:
            raise AssertionError("replicas=0 was accepted")
    assert slicesim._core.live_bytes() == base
    assert slicesim.replay("tiny.ini")["requests"] > 0  # and the next call works


def test_same_inputs_same_results(work):
    a = slicesim.replay(trace="t.csv", seed=9, routing="random", replicas=2)
    b = slicesim.replay(trace="t.csv", seed=9, routing="random", replicas=2)
    assert no_wall(a.data) == no_wall(b.data)
