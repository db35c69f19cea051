"""A Dask run that loses its cluster ends on one line: a whole task failing alone is recorded
as that point's failure (it raised KeyError), a cancelled future (the client gave up
reconnecting to a scheduler that died) and a cluster left without workers (the tasks would
wait for ever) are errors naming the address; what finished before is in the store."""

from __future__ import annotations

import queue

import pytest

import hw_models.sweep.execute as ex
from hw_models.sweep.execute import DaskCluster, Outcome, Point, execute
from hw_models.sweep.kinds import Kind
from hw_models.sweep.store import SweepStore, point_key
from noc.base.errors import HwModelsError

KIND = Kind(name="toy", summary="toy", validate=lambda p, source="point": dict(p), run=lambda r: {"y": r["x"]},
            model_versions=lambda: {})


def _points(n):
    return [Point(i + 1, {"x": i}, {"x": i}, point_key("toy", {"x": i}, {})) for i in range(n)]


class _EveryTaskFails:
    """A backend whose every task fails as a whole (its Dask worker died, say)."""

    window, task_s, workers = 4, 0.0, 1

    def __init__(self):
        self.n, self.open = 0, []

    def submit(self, configs):
        self.n += 1
        self.open.append((self.n, len(configs)))
        return self.n

    def wait(self, handles):
        out, self.open = [(h, Outcome("failed", None, "on the Dask cluster: KilledWorker", 0.0, "dask"))
                          for h, _ in self.open], []
        return out

    def close(self, cancel=False):
        pass


def test_a_task_of_one_point_that_fails_whole_is_that_points_failure(tmp_path):
    with SweepStore(tmp_path / "s.sqlite") as st:
        s = execute(_points(3), KIND, st, _EveryTaskFails(), origin="test")
        assert (s.done, s.failed) == (0, 3)
        assert [e for _, e in s.failures] == ["on the Dask cluster: KilledWorker"] * 3
        assert st.db.execute("SELECT COUNT(*) FROM points WHERE status = 'failed'").fetchone()[0] == 3


class _Future:
    def __init__(self, cancelled):
        self._cancelled = cancelled

    def cancelled(self):
        return self._cancelled

    def result(self):
        return [Outcome("done", '{"y": 0}', None, 0.0, "w")]


class _Client:
    def __init__(self, threads):
        self.threads, self.status, self.asked = threads, "running", 0

    def nthreads(self):
        self.asked += 1
        return {f"w{i}": 1 for i in range(self.threads)}

    def close(self):
        self.status = "closed"


def _cluster(threads):
    c = DaskCluster.__new__(DaskCluster)  # no scheduler: a stand-in client
    c.kind_name, c.address, c.client, c._quiet = "toy", "tcp://h:1", _Client(threads), []
    c._futures, c._finished = set(), queue.SimpleQueue()
    return c


def test_a_cancelled_future_means_the_scheduler_is_lost():
    c = _cluster(1)
    f = _Future(cancelled=True)
    c._futures.add(f)
    c._finished.put(f)
    with pytest.raises(HwModelsError, match=r"^--dask tcp://h:1: lost the Dask scheduler .* run the same command "
                                            r"again to resume$"):
        c.wait([f])


def test_a_future_reported_twice_is_taken_once():
    c = _cluster(1)
    f = _Future(cancelled=False)
    c._futures.add(f)
    c._finished.put(f)
    c._finished.put(f)
    assert [h for h, _ in c.wait([f])] == [f]


def test_a_cluster_without_workers_ends_the_run(monkeypatch):
    monkeypatch.setattr(ex, "DASK_POLL_S", 0.01)
    monkeypatch.setattr(ex, "DASK_NO_WORKERS_S", 0.05)
    c = _cluster(0)
    with pytest.raises(HwModelsError, match=r"^--dask tcp://h:1: the cluster has had no workers for 0.05 s"):
        c.wait([])
    assert c.client.asked >= 2


def test_workers_present_keep_it_waiting(monkeypatch):
    monkeypatch.setattr(ex, "DASK_POLL_S", 0.01)
    monkeypatch.setattr(ex, "DASK_NO_WORKERS_S", 0.02)
    c = _cluster(2)
    f = _Future(cancelled=False)
    c._futures.add(f)

    class _Slow:  # nothing for ten polls, then the result
        calls = 0

        def get(self, timeout=None):
            self.calls += 1
            if self.calls < 10:
                raise queue.Empty
            return f

        def empty(self):
            return True

    c._finished = _Slow()
    assert [h for h, _ in c.wait([f])] == [f] and c.client.asked == 9
