"""Running a sweep's points: validated first, all of them, then run where they are not
finished yet — in this process, in a pool of local worker processes, or on an existing Dask
cluster — each point's row written to the store as it finishes.

* :func:`resolve_points` validates every point (the kind's ``validate``) and returns the
  points, their keys and one message per invalid point: a sweep with an invalid point runs
  nothing.
* :func:`unfinished` leaves out the points the store holds finished.
* :func:`execute` runs the rest. A backend runs :func:`run_points` (the kind's ``run`` on a
  batch of points, each point's error caught) on a worker: :class:`LocalPool` (worker
  processes forked once, each importing the kind — its Numba kernels load once per worker,
  not per point), :class:`DaskCluster` (a ``distributed.Client`` of an existing scheduler;
  the same function runs on its workers) or :class:`InProcess`. Points go out in batches
  sized to take a fraction of a second, a few batches per worker in flight; a local worker
  sends each point back as soon as it has run and the parent writes it at once (a Dask
  task returns its batch whole). Before a batch is handed out its points are claimed in the
  store (:meth:`SweepStore.claim`): one finished or claimed by another live process is not
  run here, so two sweeps writing one store compute each point once; when only the
  others' points are left, the run waits for them (or takes over the claims of a process
  that ended). A point that fails records its error and
  the sweep goes on. A worker process that dies takes the points it had not sent back
  with it: they run again one at a time, alone, so the point that kills its worker is
  found and recorded as failed and the others finish.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from hw_models.provenance import code_version
from hw_models.sweep.kinds import Kind, get_kind
from hw_models.sweep.spec import SweepSpec, describe, iter_values, point_config, point_count
from hw_models.sweep.store import PointRecord, SweepStore, canonical_json, point_key_of_json, worker_name
from noc.base.errors import ConfigError, HwModelsError


@dataclass(frozen=True)
class Point:
    index: int  # 1-based, in the sweep's order
    values: dict  # the axis values that made it
    config: dict  # resolved by the kind
    key: str
    config_json: str | None = None  # canonical_json(config), made once when it is validated


@dataclass(frozen=True)
class Outcome:
    status: str  # done | failed
    metrics_json: str | None  # the metrics as JSON text (sorted keys), as the store keeps them
    error: str | None
    wall_s: float
    worker: str


@dataclass
class Summary:
    points: int = 0  # distinct points of the sweep
    duplicates: int = 0  # points that resolved to one already listed
    finished_before: int = 0  # found finished in the store at the start
    finished_elsewhere: int = 0  # finished by another process while this sweep ran
    done: int = 0  # run and finished here
    failed: int = 0  # run here and failed
    failures: list[tuple[Point, str]] = field(default_factory=list)
    wall_s: float = 0.0


# --- validation --------------------------------------------------------------------------------

def resolve_points(spec: SweepSpec, kind: Kind | None = None, errors=None) -> tuple[list[Point], Any, int]:
    """(valid points, one message per invalid point, duplicates dropped): every point of
    ``spec`` validated by its kind. Points that resolve to the same config are one point.
    ``errors``: where the messages go (anything with ``append``, e.g.
    :class:`hw_models.sweep.invalid.InvalidPoints`; default a new list)."""
    errors = [] if errors is None else errors
    tally = Tally()
    points = list(iter_points(spec, kind, errors, tally))
    return points, errors, tally.duplicates


@dataclass
class Tally:
    """What :func:`iter_points` has seen so far."""

    checked: int = 0  # points validated (valid or not)
    duplicates: int = 0  # valid points dropped as another's duplicate


def iter_points(spec: SweepSpec, kind: Kind | None, errors, tally: Tally,
                on_progress: Callable[[int], None] | None = None, every: int = 1000) -> Iterator[Point]:
    """:func:`resolve_points`' valid points one at a time, in order, duplicates left out
    (counted in ``tally``), the message of each invalid one appended to ``errors``;
    ``on_progress(points checked)`` after every ``every`` points and at the end."""
    kind = kind or get_kind(spec.kind)
    versions_json = canonical_json(kind.model_versions())
    seen: set[str] = set()
    n = point_count(spec)
    for i, values in enumerate(iter_values(spec), 1):
        tally.checked = i
        if on_progress is not None and i % every == 0:
            on_progress(i)
        source = f"{spec.path}: point {i} of {n}"
        try:
            resolved = kind.validate(point_config(spec.base, values), source)
            config_json = canonical_json(resolved)  # plain JSON data, or the kind is wrong
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # HwModelsError; the others are a kind's bug
            msg = " ".join(str(exc).split()) if isinstance(exc, HwModelsError) else \
                f"the kind's validation raised {error_line(exc)}"
            if not msg.startswith(source):
                msg = f"{source}: {msg}"
            errors.append(msg + (f" [axes: {describe(values)}]" if values else ""))
            continue
        key = point_key_of_json(kind.name, config_json, versions_json)
        if key in seen:
            tally.duplicates += 1
            continue
        seen.add(key)
        yield Point(i, values, resolved, key, config_json)
    if on_progress is not None:
        on_progress(tally.checked)


# --- what runs on a worker ---------------------------------------------------------------------

def run_point(kind_name: str, config: dict, raising: bool = False) -> Outcome:
    """Run one point of kind ``kind_name`` (on a worker): its metrics, or its error as one
    line (the exception's type and message, and where it was raised unless it is an error
    of the input, :class:`noc.base.errors.HwModelsError`); with ``raising`` the exception
    propagates instead."""
    t0 = time.perf_counter()
    try:
        metrics = get_kind(kind_name).run(config)
        if not isinstance(metrics, dict):
            raise TypeError(f"kind {kind_name} returned {type(metrics).__name__} metrics, not a dict")
        text = json.dumps(metrics, sort_keys=True)  # plain JSON data (a TypeError otherwise; NaN is allowed)
        return Outcome("done", text, None, time.perf_counter() - t0, worker_name())
    except Exception as exc:  # noqa: BLE001 - a failing point is recorded; the sweep goes on
        if raising:
            raise
        return Outcome("failed", None, error_line(exc), time.perf_counter() - t0, worker_name())


def run_points(kind_name: str, configs: list[dict], raising: bool = False) -> list[Outcome]:
    """Run a batch of points on one worker, one after the other (:func:`run_point` each)."""
    return [run_point(kind_name, c, raising) for c in configs]


def error_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    line = f"{type(exc).__name__}: {text}"
    if not isinstance(exc, HwModelsError):
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            line += f" [at {Path(tb[-1].filename).name}:{tb[-1].lineno}]"
    return line


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process the moment its parent ends (``PR_SET_PDEATHSIG``):
    a worker busy in a kernel that holds the GIL cannot run the watching thread below."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the watching thread alone
        pass


def restore_sigint() -> None:
    """Ctrl-C (SIGINT) stops a sweep however it was started: a background job of a
    non-interactive shell starts with SIGINT ignored, so Python's handler is put back."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _init_worker(kind_name: str, parent_pid: int) -> None:
    """A local worker: Ctrl-C is the parent's to handle; the worker ends when the parent is
    gone (killed, even by SIGKILL: at once on Linux, else within half a second of a point
    ending); the kind's modules are imported once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the request
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()
    get_kind(kind_name)


def _worker_main(conn, close: list, kind_name: str, parent_pid: int) -> None:
    """A local worker process: runs the batches its parent sends on ``conn`` one after the
    other and sends back each point's :class:`Outcome` as soon as it has run, so the parent
    stores it at once. A thread reads the batches as they come (the parent never waits to
    send one); ``None`` or the parent's end closing ends the worker."""
    for c in close:  # the parent's ends of its pipes (this one's and its siblings')
        c.close()
    _init_worker(kind_name, parent_pid)
    batches: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                msg = None
            batches.put(msg)
            if msg is None:
                return

    threading.Thread(target=read, name="read-batches", daemon=True).start()
    while (configs := batches.get()) is not None:
        for config in configs:
            conn.send(run_point(kind_name, config))


# --- backends ----------------------------------------------------------------------------------
# A backend runs batches of points: submit(configs) -> a handle; wait(handles) -> a list of
# (handle, what came): the Outcomes of the handle's next points, in order (a local worker
# sends each as soon as it has run; the others the whole batch), LOST (the worker process
# running it died: its points not returned yet are lost), or one Outcome (the whole task
# failed, e.g. its Dask worker died); close(cancel). ``window``: batches in flight at most;
# ``task_s``: the seconds a batch should take (points are batched so that the cost of
# handing one out stays small against the work).

LOST = "lost"


class InProcess:
    """Runs each point in this process as it is handed out (``--workers 0``); with
    ``raising``, a point's exception (an input error, Ctrl-C, a bug) propagates instead of
    being recorded, after the points before it are stored (a command's run)."""

    window = 1
    task_s = 0.0  # one point at a time: the progress bar moves with each

    def __init__(self, kind_name: str, raising: bool = False) -> None:
        self.kind_name, self.raising = kind_name, raising
        self._done: list = []

    def submit(self, configs: list[dict]) -> object:
        handle = object()
        self._done.append((handle, run_points(self.kind_name, configs, self.raising)))
        return handle

    def wait(self, handles: list) -> list:
        out, self._done = self._done, []
        return out

    def close(self, cancel: bool = False) -> None:
        pass


@dataclass
class _Worker:
    proc: Any  # multiprocessing.Process
    conn: Any  # the parent's end of its pipe
    batches: deque = field(default_factory=deque)  # [handle, points not returned yet], in the order sent


class LocalPool:
    """``workers`` local processes, forked once (each imports the kind once and keeps its
    Numba kernels for the whole sweep); a process that dies is replaced. Each runs the
    batches sent to it in order and sends back every point as soon as it has run. The
    parent waits on the pipes themselves (no threads of its own)."""

    task_s = 0.05

    def __init__(self, kind_name: str, workers: int) -> None:
        import multiprocessing

        self.kind_name, self.workers = kind_name, workers
        self.window = 2 * workers  # at most 2 batches a worker: one running, one waiting
        self._ctx = multiprocessing.get_context("fork")
        self._procs: list[_Worker] = []
        self._lost: list = []  # (handle, LOST) of batches found lost while sending
        self._poll = select.poll()  # the workers' pipes (made once, not at every wait)
        self._by_fd: dict[int, _Worker] = {}
        for _ in range(workers):  # the workers fork now, before the caller starts a progress bar's thread
            self._spawn()

    def _spawn(self) -> None:
        mine, theirs = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, name="hw-models sweep worker", daemon=True,
                                 args=(theirs, [mine, *(w.conn for w in self._procs)], self.kind_name, os.getpid()))
        proc.start()
        theirs.close()  # the worker's end is the worker's alone: its death closes it (EOF here)
        w = _Worker(proc, mine)
        self._procs.append(w)
        self._by_fd[mine.fileno()] = w
        self._poll.register(mine.fileno(), select.POLLIN)

    def submit(self, configs: list[dict]) -> object:
        handle = object()
        while True:
            w = min(self._procs, key=lambda w: len(w.batches))
            try:
                w.conn.send(configs)
            except OSError:  # it died since it was last heard from: its batches are lost; send to its successor
                self._lost.extend((h, LOST) for h, _ in w.batches)
                self._replace(w)
                continue
            w.batches.append([handle, len(configs)])
            return handle

    def wait(self, handles: list) -> list:
        if self._lost:
            out, self._lost = self._lost, []
            return out
        out: list = []
        for fd, _ in self._poll.poll():  # a point came back, or a worker died (its pipe closed)
            w = self._by_fd[fd]
            conn = w.conn
            try:
                while True:
                    outcome = conn.recv()
                    current = w.batches[0]
                    if out and out[-1][0] is current[0]:
                        out[-1][1].append(outcome)
                    else:
                        out.append((current[0], [outcome]))
                    current[1] -= 1
                    if current[1] == 0:
                        w.batches.popleft()
                    if not conn.poll():
                        break
            except (EOFError, OSError):  # the worker died: what it had not sent back is lost
                out.extend((h, LOST) for h, _ in w.batches)
                self._replace(w)
        return out

    def _replace(self, w: _Worker) -> None:
        self._poll.unregister(w.conn.fileno())
        del self._by_fd[w.conn.fileno()]
        w.conn.close()
        w.proc.join(5)
        if w.proc.is_alive():  # pragma: no cover - its pipe closed but it runs on
            w.proc.kill()
            w.proc.join(5)
        self._procs.remove(w)
        self._spawn()

    def close(self, cancel: bool = False) -> None:
        """End the workers: at once with ``cancel`` (the points they run are not waited
        for), else when they have run what they were sent."""
        for w in self._procs:
            if cancel:
                w.proc.terminate()
            else:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
        for w in self._procs:
            w.proc.join(5)
            if w.proc.is_alive():  # pragma: no cover - it ignores SIGTERM
                w.proc.kill()
                w.proc.join(5)
            w.conn.close()
        self._procs = []


class DaskCluster:
    """Points run on the workers of an existing Dask distributed cluster (its scheduler's
    address, e.g. ``tcp://host:8786``). The workers need hw-models installed."""

    task_s = 0.25  # a task costs the scheduler about a millisecond: batches of a quarter second

    def __init__(self, kind_name: str, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise HwModelsError(f"--dask {address}: Dask is not installed; pip install 'hw-models[dask]'") from None
        self.kind_name, self.address = kind_name, address
        _check_reachable(address)
        self._quiet = _quiet_dask_logs()  # a lost scheduler is our one error line, not Dask's logged tracebacks
        try:
            self.client = Client(address, timeout="20s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            self._restore_logs()
            raise HwModelsError(f"--dask {address}: cannot reach a Dask scheduler there ({exc})") from None
        threads = sum(self.client.nthreads().values())
        if threads == 0:
            self.close()
            raise HwModelsError(f"--dask {address}: the cluster has no workers")
        self.window = max(4, 2 * threads)
        self._futures: set = set()
        self._finished: queue.SimpleQueue = queue.SimpleQueue()  # futures, as the client's thread sees them end

    def submit(self, configs: list[dict]):
        f = self.client.submit(run_points, self.kind_name, configs, pure=False)
        self._futures.add(f)
        f.add_done_callback(self._finished.put)
        return f

    def wait(self, handles: list) -> list:
        idle_since = None
        while True:  # a cluster left without workers would hold the tasks for ever: give up after a while
            try:
                done = [self._finished.get(timeout=DASK_POLL_S)]
                break
            except queue.Empty:
                pass
            try:
                threads = sum(self.client.nthreads().values())
            except Exception:  # noqa: BLE001 - the scheduler is going away; its futures end cancelled
                continue
            now = time.monotonic()
            idle_since = None if threads else idle_since or now
            if idle_since is not None and now - idle_since >= DASK_NO_WORKERS_S:
                raise HwModelsError(f"--dask {self.address}: the cluster has had no workers for "
                                    f"{DASK_NO_WORKERS_S:g} s; the points finished before are in the store: start "
                                    f"workers and run the same command again to resume")
        while not self._finished.empty():
            done.append(self._finished.get())
        out = []
        for f in done:
            if f not in self._futures:  # reported before
                continue
            self._futures.discard(f)
            if f.cancelled():  # this run cancels only in close(): the client lost the scheduler and gave up
                raise HwModelsError(f"--dask {self.address}: lost the Dask scheduler (the client could not reconnect); "
                                    f"the points finished before are in the store: run the same command again to "
                                    f"resume")
            try:
                out.append((f, f.result()))
            except Exception as exc:  # noqa: BLE001 - the worker died (KilledWorker) or the task could not run
                out.append((f, Outcome("failed", None, f"on the Dask cluster: {error_line(exc)}", 0.0, "dask")))
        return out

    def close(self, cancel: bool = False) -> None:
        if cancel and getattr(self, "_futures", None) and self.client.status == "running":
            self.client.cancel(list(self._futures))
        self.client.close()
        self._restore_logs()

    def _restore_logs(self) -> None:
        for logger, level in self._quiet:
            logger.setLevel(level)


def _quiet_dask_logs() -> list:
    """Set the client side's ``distributed`` loggers to CRITICAL; the (logger, old level) pairs."""
    import logging

    names = ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    out = []
    for n in names:
        lg = logging.getLogger(n)
        out.append((lg, lg.level))
        lg.setLevel(logging.CRITICAL)
    return out


def _check_reachable(address: str) -> None:
    """A TCP scheduler address that refuses connections fails at once (the client would
    retry for its whole timeout)."""
    import socket
    from urllib.parse import urlsplit

    if "://" not in address:  # Dask's default protocol
        address = f"tcp://{address}"
    scheme, rest = address.split("://", 1)
    if scheme == "inproc":  # a cluster started in this Python process (processes=False), as tests do
        from distributed.comm.inproc import global_manager

        try:
            found = global_manager.get_listener_for(rest) is not None
        except ValueError:
            found = False
        if not found:
            raise HwModelsError(f"--dask {address}: no Dask scheduler in this process there (inproc:// reaches only a "
                                f"cluster started in the same Python process); give tcp://HOST:PORT")
        return
    if scheme != "tcp":  # ucx, tls, ws need set-up (security, libraries) the command does not take
        raise HwModelsError(f"--dask {address}: protocol {scheme!r} is not supported; give tcp://HOST:PORT "
                            f"(the scheduler's)")
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
    _check_is_scheduler(address)


DASK_PROBE_S = 10.0  # seconds a reachable address has to answer as a Dask scheduler
DASK_POLL_S = 5.0  # how often a run waiting for its tasks asks the scheduler for its workers
DASK_NO_WORKERS_S = 60.0  # a cluster without workers this long ends the run


def _check_is_scheduler(address: str) -> None:
    """An address that accepts connections but is no Dask scheduler (or does not answer)
    fails in :data:`DASK_PROBE_S` seconds; a half-made client would retry, then hang at exit."""
    import asyncio

    from distributed.core import rpc

    async def identity():
        async with rpc(address, timeout=DASK_PROBE_S) as r:
            return await r.identity()

    from distributed.comm.core import CommClosedError

    try:
        info = asyncio.run(asyncio.wait_for(identity(), DASK_PROBE_S))
    except (TimeoutError, asyncio.TimeoutError):
        raise HwModelsError(f"--dask {address}: no Dask scheduler answers there (no reply in {DASK_PROBE_S:g} s)") \
            from None
    except (CommClosedError, OSError) as exc:
        raise HwModelsError(f"--dask {address}: no Dask scheduler answers there ({error_line(exc).split(' [at ')[0]})") \
            from None
    except Exception:  # noqa: BLE001 - its reply did not decode (an HTTP server, say: its first bytes read as a length)
        raise HwModelsError(f"--dask {address}: it answers, but not as a Dask scheduler (its reply is not Dask's "
                            f"protocol)") from None
    if not isinstance(info, dict) or info.get("type") != "Scheduler":
        raise HwModelsError(f"--dask {address}: it answers, but not as a Dask scheduler")


# --- the run -----------------------------------------------------------------------------------

def unfinished(points: list[Point], kind: Kind, store: SweepStore, *, fresh: bool = False,
               summary: Summary | None = None) -> list[Point]:
    """The ``points`` that ``store`` does not hold finished (all of them with ``fresh``)."""
    s = summary if summary is not None else Summary()
    s.points = len(points)
    if fresh:
        return list(points)
    finished = store.done_keys(p.key for p in points)
    s.finished_before = len(finished)
    return [p for p in points if p.key not in finished]


def execute(points: list[Point], kind: Kind, store: SweepStore, backend, *, origin: str, fresh: bool = False,
            summary: Summary | None = None,
            on_event: Callable[[str, Point, Any], None] | None = None) -> Summary:
    """Run ``points`` of ``kind`` on ``backend`` (closed at the end), each finished or failed
    point written to ``store`` as soon as it comes back (the points that come back together
    in one transaction); a point another process finished meanwhile is skipped unless
    ``fresh``. Give it the points :func:`unfinished` leaves. ``on_event(event, point,
    outcome)`` follows each: ``done``, ``failed`` or ``elsewhere`` (another process finished
    it). Ctrl-C (or any error) ends the backend's workers and propagates; every point
    finished before it is in the store.

    Points go out in batches of one at first, then of as many as take the backend's
    ``task_s`` seconds by the mean time of the points finished so far (at most 64)."""
    s = summary if summary is not None else Summary(points=len(points))
    restore_sigint()
    t0 = time.perf_counter()
    versions = kind.model_versions()
    rec = _Recorder(s, store, kind, versions, code_version(), origin, fresh, on_event or (lambda *a: None))
    pending = deque(points)
    suspects: deque = deque()  # points in flight when a worker process died: each runs alone
    inflight: dict = {}  # handle -> its points not returned yet, in order
    alone = None  # the handle of a suspect running alone
    waiting: deque = deque()  # points another live process has claimed: finished there, or taken over here
    batch, point_s, finished = 1, 0.0, 0
    try:
        while pending or inflight or suspects or waiting:
            if suspects:
                if not inflight:  # alone: if its worker dies, it is the point that killed it
                    p = suspects.popleft()
                    alone = backend.submit([p.config])
                    inflight[alone] = deque([p])
            else:
                while pending and len(inflight) < backend.window:
                    group = [pending.popleft() for _ in range(min(batch, len(pending)))]
                    group = rec.take(group, waiting)  # not finished, not another's: claimed for this run
                    if group:
                        inflight[backend.submit([p.config for p in group])] = deque(group)
            if not inflight:
                if waiting and not pending and not suspects:  # the others' points: wait for them, or take them
                    time.sleep(CLAIM_POLL_S)
                    again, waiting = list(waiting), deque()
                    pending.extend(rec.take(again, waiting))
                continue
            results: list[tuple[Point, Outcome]] = []
            for handle, got in backend.wait(list(inflight)):
                group = inflight[handle]
                if got is LOST:
                    del inflight[handle]
                    if handle is alone:
                        results.append((group[0], Outcome("failed", None, "the worker process running it died (it ran "
                                                          "alone: a crash of the model, e.g. out of memory)", 0.0, "")))
                    else:
                        suspects.extend(group)
                    continue
                if isinstance(got, Outcome):  # the whole task failed (e.g. its Dask worker died)
                    if len(group) > 1:  # its points run alone: only the one that fails so is recorded
                        del inflight[handle]
                        suspects.extend(group)
                        continue
                    got = [got]
                for out in got:
                    results.append((group.popleft(), out))
                    point_s, finished = point_s + out.wall_s, finished + 1
                if not group:
                    del inflight[handle]
            rec.record(results)
            if backend.task_s > 0 and point_s > 0:
                batch = max(1, min(64, int(backend.task_s / (point_s / finished))))
    except BaseException:
        backend.close(cancel=True)
        store.release_claims()
        s.wall_s += time.perf_counter() - t0
        raise
    backend.close()
    store.release_claims()
    s.wall_s += time.perf_counter() - t0
    return s


@dataclass
class _Recorder:
    """Writes the points that come back to the store and counts them."""

    s: Summary
    store: SweepStore
    kind: Kind
    versions: dict
    code: str
    origin: str
    fresh: bool
    emit: Callable

    def __post_init__(self) -> None:
        self.versions_json = canonical_json(self.versions)

    def take(self, group: list[Point], waiting: deque) -> list[Point]:
        """Those of ``group`` this run claims (one transaction): not finished (unless
        ``fresh``) and not claimed by another live process; the finished ones count as
        finished elsewhere, the others' go to ``waiting``."""
        mine, done, busy = self.store.claim([p.key for p in group], fresh=self.fresh)
        for p in group:
            if p.key in done:
                self.s.finished_elsewhere += 1
                self.emit("elsewhere", p, None)
            elif p.key in busy:
                waiting.append(p)
        mine = set(mine)
        return [p for p in group if p.key in mine]

    def record(self, results: list[tuple[Point, Outcome]]) -> None:
        if not results:
            return
        self.store.put_many([PointRecord(p.key, self.kind.name, out.status, p.config, self.versions, None, out.error,
                                         out.wall_s, self.code, self.origin, worker=out.worker,
                                         config_json=p.config_json, metrics_json=out.metrics_json,
                                         versions_json=self.versions_json) for p, out in results],
                            replace_done=self.fresh)
        for p, out in results:
            if out.status == "done":
                self.s.done += 1
            else:
                self.s.failed += 1
                self.s.failures.append((p, out.error or ""))
            self.emit(out.status, p, out)


MAX_LOCAL_WORKERS = 1024
CLAIM_POLL_S = 0.2  # how often a run whose other points are all claimed elsewhere looks again


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
