"""Running a sweep's points: validated first, all of them, then run where they are not
finished yet — in this process, in a pool of local worker processes, or on an existing Dask
cluster — each point's row written to the store as it finishes.

* :func:`resolve_points` validates every point (the kind's ``validate``) and returns the
  points, their keys and one message per invalid point: a sweep with an invalid point runs
  nothing.
* :func:`unfinished` leaves out the points the store holds finished (or as imported records).
* :func:`execute` runs the rest. A backend runs :func:`run_points` (the kind's ``run`` on a
  batch of points, each point's error caught) on a worker: :class:`LocalPool` (worker
  processes forked once, each importing the kind — its Numba kernels load once per worker,
  not per point), :class:`DaskCluster` (a ``distributed.Client`` of an existing scheduler;
  the same function runs on its workers) or :class:`InProcess`. Points go out in batches
  sized to take a fraction of a second, a few batches per worker in flight; before a point
  is handed out the store is asked again, so two sweeps writing one store share the work.
  A point that fails records its error and the sweep goes on. A worker process that dies
  takes the points in flight with it: they run again one at a time, alone, so the point
  that kills its worker is found and recorded as failed and the others finish.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import queue
import signal
import subprocess
import threading
import time
import traceback
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hw_models.sweep.kinds import Kind, get_kind
from hw_models.sweep.spec import SweepSpec, describe, expand, point_config
from hw_models.sweep.store import PointRecord, SweepStore, canonical_json, point_key, worker_name
from noc.errors import ConfigError, HwModelsError


@dataclass(frozen=True)
class Point:
    index: int  # 1-based, in the sweep's order
    values: dict  # the axis values that made it
    config: dict  # resolved by the kind
    key: str


@dataclass(frozen=True)
class Outcome:
    status: str  # done | failed
    metrics: dict | None
    error: str | None
    wall_s: float
    worker: str


@dataclass
class Summary:
    points: int = 0  # distinct points of the sweep
    duplicates: int = 0  # points that resolved to one already listed
    finished_before: int = 0  # found finished in the store at the start
    adopted: int = 0  # found as imported records (by legacy key)
    finished_elsewhere: int = 0  # finished by another process while this sweep ran
    done: int = 0  # run and finished here
    failed: int = 0  # run here and failed
    failures: list[tuple[Point, str]] = field(default_factory=list)
    wall_s: float = 0.0


# --- validation --------------------------------------------------------------------------------

def resolve_points(spec: SweepSpec, kind: Kind | None = None) -> tuple[list[Point], list[str], int]:
    """(valid points, one message per invalid point, duplicates dropped): every point of
    ``spec`` validated by its kind. Points that resolve to the same config are one point."""
    kind = kind or get_kind(spec.kind)
    versions = kind.model_versions()
    points: list[Point] = []
    errors: list[str] = []
    seen: set[str] = set()
    duplicates = 0
    values_list = expand(spec)
    n = len(values_list)
    for i, values in enumerate(values_list, 1):
        source = f"{spec.path}: point {i} of {n}"
        try:
            resolved = kind.validate(point_config(spec.base, values), source)
            canonical_json(resolved)  # plain JSON data, or the kind is wrong
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # HwModelsError; the others are a kind's bug
            msg = " ".join(str(exc).split()) if isinstance(exc, HwModelsError) else \
                f"the kind's validation raised {error_line(exc)}"
            if not msg.startswith(source):
                msg = f"{source}: {msg}"
            errors.append(msg + (f" [axes: {describe(values)}]" if values else ""))
            continue
        key = point_key(kind.name, resolved, versions)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        points.append(Point(i, values, resolved, key))
    return points, errors, duplicates


# --- what runs on a worker ---------------------------------------------------------------------

def run_point(kind_name: str, config: dict) -> Outcome:
    """Run one point of kind ``kind_name`` (on a worker): its metrics, or its error as one
    line (the exception's type and message, and where it was raised unless it is an error
    of the input, :class:`noc.errors.HwModelsError`)."""
    t0 = time.perf_counter()
    try:
        metrics = get_kind(kind_name).run(config)
        if not isinstance(metrics, dict):
            raise TypeError(f"kind {kind_name} returned {type(metrics).__name__} metrics, not a dict")
        json.dumps(metrics)  # plain JSON data (a TypeError otherwise; NaN is allowed)
        return Outcome("done", metrics, None, time.perf_counter() - t0, worker_name())
    except Exception as exc:  # noqa: BLE001 - a failing point is recorded; the sweep goes on
        return Outcome("failed", None, error_line(exc), time.perf_counter() - t0, worker_name())


def run_points(kind_name: str, configs: list[dict]) -> list[Outcome]:
    """Run a batch of points on one worker, one after the other (:func:`run_point` each)."""
    return [run_point(kind_name, c) for c in configs]


def error_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    line = f"{type(exc).__name__}: {text}"
    if not isinstance(exc, HwModelsError):
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            line += f" [at {Path(tb[-1].filename).name}:{tb[-1].lineno}]"
    return line


def _init_worker(kind_name: str, parent_pid: int) -> None:
    """A local worker: Ctrl-C is the parent's to handle; the worker ends when the parent is
    gone (killed, even by SIGKILL); the kind's modules are imported once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()
    get_kind(kind_name)


# --- backends ----------------------------------------------------------------------------------
# A backend runs batches of points: submit(configs) -> a future of their Outcomes; wait(futures)
# -> those finished; outcome(future) -> the Outcomes; close(cancel). ``window``: batches in
# flight at most; ``task_s``: the seconds a batch should take (points are batched so that the
# cost of handing one out stays small against the work).

class InProcess:
    """Runs each point in this process as it is handed out (``--workers 0``)."""

    window = 1
    task_s = 0.0  # one point at a time: the progress bar moves with each

    def __init__(self, kind_name: str) -> None:
        self.kind_name = kind_name

    def submit(self, configs: list[dict]) -> cf.Future:
        f: cf.Future = cf.Future()
        f.set_result(run_points(self.kind_name, configs))
        return f

    def wait(self, futures: list) -> set:
        return set(futures)

    def outcome(self, future) -> list[Outcome]:
        return future.result()

    def close(self, cancel: bool = False) -> None:
        pass


class LocalPool:
    """A pool of ``workers`` local processes (forked once; each imports the kind once)."""

    task_s = 0.05

    def __init__(self, kind_name: str, workers: int) -> None:
        import multiprocessing

        self.kind_name, self.workers = kind_name, workers
        self.window = 2 * workers
        self._ctx = multiprocessing.get_context("fork")
        self._start()

    def _start(self) -> None:
        self.pool = cf.ProcessPoolExecutor(self.workers, mp_context=self._ctx, initializer=_init_worker,
                                           initargs=(self.kind_name, os.getpid()))
        # the workers fork now, before the caller starts a progress bar's thread
        cf.wait([self.pool.submit(os.getpid) for _ in range(self.workers)])

    def submit(self, configs: list[dict]) -> cf.Future:
        try:
            return self.pool.submit(run_points, self.kind_name, configs)
        except BrokenProcessPool as exc:  # a worker died since the last wait: this batch is lost with the others
            f: cf.Future = cf.Future()
            f.set_exception(exc)
            return f

    def wait(self, futures: list) -> set:
        return cf.wait(futures, return_when=cf.FIRST_COMPLETED)[0]

    def outcome(self, future) -> list[Outcome]:
        return future.result()  # BrokenProcessPool when a worker died

    def restart(self) -> None:
        self.close(cancel=True)
        self._start()

    def close(self, cancel: bool = False) -> None:
        if cancel:  # the points running now are not waited for: their workers are ended
            procs = list((getattr(self.pool, "_processes", None) or {}).values())
            self.pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                p.terminate()
            for p in procs:
                p.join(5)
        else:
            self.pool.shutdown(wait=True)


class DaskCluster:
    """Points run on the workers of an existing Dask distributed cluster (its scheduler's
    address, e.g. ``tcp://host:8786``). The workers need hw-models installed."""

    task_s = 0.25  # a task costs the scheduler about a millisecond: batches of a quarter second

    def __init__(self, kind_name: str, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise HwModelsError(f"--dask {address}: Dask is not installed; pip install 'hw-models[dask]'") from None
        self.kind_name = kind_name
        _check_reachable(address)
        try:
            self.client = Client(address, timeout="20s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise HwModelsError(f"--dask {address}: cannot reach a Dask scheduler there ({exc})") from None
        threads = sum(self.client.nthreads().values())
        if threads == 0:
            self.client.close()
            raise HwModelsError(f"--dask {address}: the cluster has no workers")
        self.window = max(4, 2 * threads)
        self._futures: set = set()
        self._finished: queue.SimpleQueue = queue.SimpleQueue()  # futures, as the client's thread sees them end

    def submit(self, configs: list[dict]):
        f = self.client.submit(run_points, self.kind_name, configs, pure=False)
        self._futures.add(f)
        f.add_done_callback(self._finished.put)
        return f

    def wait(self, futures: list) -> set:
        done = {self._finished.get()}
        while not self._finished.empty():
            done.add(self._finished.get())
        return done

    def outcome(self, future) -> list[Outcome] | Outcome:
        self._futures.discard(future)
        try:
            return future.result()
        except Exception as exc:  # noqa: BLE001 - the worker died (KilledWorker) or the task could not run
            return Outcome("failed", None, f"on the Dask cluster: {error_line(exc)}", 0.0, "dask")

    def close(self, cancel: bool = False) -> None:
        if cancel and self._futures:
            self.client.cancel(list(self._futures))
        self.client.close()


def _check_reachable(address: str) -> None:
    """A TCP scheduler address that refuses connections fails at once (the client would
    retry for its whole timeout)."""
    import socket
    from urllib.parse import urlsplit

    if not address.startswith("tcp://"):
        return
    try:
        u = urlsplit(address)
        host, port = u.hostname, u.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise HwModelsError(f"--dask {address}: not an address; give tcp://HOST:PORT (the scheduler's)")
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise HwModelsError(f"--dask {address}: cannot reach a Dask scheduler there ({exc.strerror or exc})") from None


# --- the run -----------------------------------------------------------------------------------

def code_version() -> str:
    """``hw-models VERSION``, with ``git describe --always --dirty`` of the source tree when
    it is a git checkout."""
    from hw_models import __version__

    root = Path(__file__).resolve().parents[2]
    out = f"hw-models {__version__}"
    if (root / ".git").exists():
        try:
            p = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=root, capture_output=True,
                               text=True, timeout=10)
            if p.returncode == 0 and p.stdout.strip():
                out += f", git {p.stdout.strip()}"
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def unfinished(points: list[Point], kind: Kind, store: SweepStore, *, fresh: bool = False,
               summary: Summary | None = None,
               on_event: Callable[[str, Point, Any], None] | None = None) -> list[Point]:
    """The ``points`` that ``store`` does not hold finished (all of them with ``fresh``). A
    point found as an imported record (by the kind's legacy key) is written under its own
    key, with its full config, and counts as finished (``on_event("adopted", point, None)``)."""
    s = summary if summary is not None else Summary()
    s.points = len(points)
    if fresh:
        return list(points)
    finished = store.done_keys(p.key for p in points)
    s.finished_before = len(finished)
    todo = [p for p in points if p.key not in finished]
    if not todo or kind.legacy_key is None or not store.has_aliases(kind.name):
        return todo
    versions = kind.model_versions()
    aliases = {p.key: kind.legacy_key(p.config) for p in todo}
    found = store.done_by_alias(kind.name, aliases.values())
    rest = []
    for p in todo:
        row = found.get(aliases[p.key])
        if row is None:
            rest.append(p)
            continue
        store.put(PointRecord(p.key, kind.name, "done", p.config, versions, row["metrics"], None, row["wall_s"],
                              row["code_version"], row["origin"], alias=aliases[p.key], worker=row["worker"]))
        s.adopted += 1
        if on_event is not None:
            on_event("adopted", p, None)
    return rest


def execute(points: list[Point], kind: Kind, store: SweepStore, backend, *, origin: str, fresh: bool = False,
            summary: Summary | None = None,
            on_event: Callable[[str, Point, Any], None] | None = None) -> Summary:
    """Run ``points`` of ``kind`` on ``backend`` (closed at the end), each finished or failed
    point written to ``store`` at once; a point another process finished meanwhile is
    skipped unless ``fresh``. Give it the points :func:`unfinished` leaves.
    ``on_event(event, point, outcome)`` follows each: ``done``, ``failed`` or ``elsewhere``
    (another process finished it). Ctrl-C (or any error) ends the backend's workers and
    propagates; every point finished before it is in the store.

    Points go out in batches of one at first, then of as many as take the backend's
    ``task_s`` seconds by the mean time of the points finished so far (at most 64)."""
    s = summary if summary is not None else Summary(points=len(points))
    t0 = time.perf_counter()
    versions = kind.model_versions()
    code = code_version()
    emit = on_event or (lambda *a: None)
    pending = deque(points)
    suspects: deque = deque()  # points in flight when a worker process died: each runs alone
    inflight: dict = {}  # future -> its points
    alone = None  # the future of a suspect running alone
    batch, point_s, finished = 1, 0.0, 0
    try:
        while pending or inflight or suspects:
            if suspects:
                if not inflight:  # alone: if its worker dies, it is the point that killed it
                    p = suspects.popleft()
                    alone = backend.submit([p.config])
                    inflight[alone] = [p]
            else:
                while pending and len(inflight) < backend.window:
                    group = []
                    while pending and len(group) < batch:
                        p = pending.popleft()
                        if not fresh and store.is_done(p.key):  # another sweep on this store finished it
                            s.finished_elsewhere += 1
                            emit("elsewhere", p, None)
                            continue
                        group.append(p)
                    if group:
                        inflight[backend.submit([p.config for p in group])] = group
            if not inflight:
                continue
            for f in backend.wait(list(inflight)):
                group = inflight.pop(f)
                try:
                    outs = backend.outcome(f)
                except BrokenProcessPool:
                    lost = [*group, *(p for g in inflight.values() for p in g)]
                    inflight.clear()
                    backend.restart()
                    if f is alone:
                        outs = [Outcome("failed", None, "the worker process running it died (it ran alone: "
                                        "a crash of the model, e.g. out of memory)", 0.0, "")]
                    else:
                        suspects.extend(lost)
                        break
                if isinstance(outs, Outcome):  # the whole task failed (e.g. its Dask worker died)
                    if len(group) > 1:  # its points run alone: only the one that fails so is recorded
                        suspects.extend(group)
                        continue
                    outs = [outs]
                for p, out in zip(group, outs):
                    _record(p, out, s, store, kind, versions, code, origin, fresh, emit)
                    point_s, finished = point_s + out.wall_s, finished + 1
                if backend.task_s > 0 and point_s > 0:
                    batch = max(1, min(64, int(backend.task_s / (point_s / finished))))
    except BaseException:
        backend.close(cancel=True)
        s.wall_s += time.perf_counter() - t0
        raise
    backend.close()
    s.wall_s += time.perf_counter() - t0
    return s


def _record(p: Point, out: Outcome, s: Summary, store: SweepStore, kind: Kind, versions: dict, code: str,
            origin: str, fresh: bool, emit) -> None:
    store.put(PointRecord(p.key, kind.name, out.status, p.config, versions, out.metrics, out.error, out.wall_s,
                          code, origin, worker=out.worker), replace_done=fresh)
    if out.status == "done":
        s.done += 1
    else:
        s.failed += 1
        s.failures.append((p, out.error or ""))
    emit(out.status, p, out)


MAX_LOCAL_WORKERS = 1024


def check_backend(workers: int | None, dask: str | None) -> None:
    """A :class:`ConfigError` unless ``--workers`` / ``--dask`` make sense together."""
    if dask is not None and workers is not None:
        raise ConfigError(f"--workers {workers} and --dask {dask}: give one (the cluster has its own workers)")
    if dask is not None and not dask.strip():
        raise ConfigError("--dask is empty; give the scheduler's address, e.g. tcp://host:8786")
    if workers is not None and not 0 <= workers <= MAX_LOCAL_WORKERS:
        raise ConfigError(f"--workers {workers}: must be 0 (run in this process) .. {MAX_LOCAL_WORKERS}")


def make_backend(kind_name: str, workers: int | None = None, dask: str | None = None):
    """The backend ``--workers`` / ``--dask`` ask for: a Dask cluster, this process (0
    workers) or a local pool (default: one worker per core)."""
    check_backend(workers, dask)
    if dask is not None:
        return DaskCluster(kind_name, dask)
    if workers is None:  # the cores this process may run on
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return InProcess(kind_name) if workers == 0 else LocalPool(kind_name, workers)
