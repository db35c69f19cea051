"""The trainer's log rows (:meth:`maddpg.trainer.MADDPG.log_row`) as TensorBoard scalars.

One event per log row, at global step = environment steps (all envs counted), so curves of
runs with different ``--envs`` line up per environment step. Tags::

    reward/mean, reward/agent<i>                  mean episode return in the interval
    loss/critic_agent<i>, loss/actor_agent<i>     mean over the interval's updates
    q/mean_agent<i>, q/std_agent<i>, q/min_agent<i>, q/max_agent<i>   Q(x, a) on the minibatches
    train/updates, train/updates_in_interval, train/episode, train/env_steps_per_s

NaN values (no update in the interval) are left out. Events are written with TensorBoard's
own writer (``pip install 'hw-models[tensorboard]'``); nothing else is needed. A resumed run
starts its event file with a "session start" marker at its first step, which tells
TensorBoard to drop what an interrupted run had logged past its last checkpoint.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from noc.base.errors import HwModelsError

__all__ = ["TensorBoardLog", "TensorBoardUnavailable", "tag_of"]


class TensorBoardUnavailable(HwModelsError):
    """The ``tensorboard`` package is not installed."""


def tag_of(key: str) -> str | None:
    """The TensorBoard tag of a log-row key (None: not a scalar to plot)."""
    if key == "env_steps":
        return None
    if key == "reward_mean":
        return "reward/mean"
    for prefix, group in (("reward_", "reward/"), ("critic_loss_", "loss/critic_"), ("actor_loss_", "loss/actor_"),
                          ("q_", "q/")):
        if key.startswith(prefix):
            return group + key[len(prefix):]
    return "train/" + key


class TensorBoardLog:
    def __init__(self, logdir: str | Path, resume_step: int | None = None) -> None:
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError as exc:
            raise TensorBoardUnavailable(f"TensorBoard event files need the tensorboard package ({exc}); install it "
                                         "with pip install 'hw-models[tensorboard]', or pass --no-tensorboard") from None
        self._event, self._summary = event_pb2, summary_pb2
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self._w = EventFileWriter(str(self.logdir))
        if resume_step is not None:
            start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
            self._w.add_event(event_pb2.Event(wall_time=time.time(), step=int(resume_step), session_log=start))

    def write(self, row: dict[str, float]) -> None:
        values = []
        for key, v in row.items():
            tag = tag_of(key)
            if tag is None or v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            values.append(self._summary.Summary.Value(tag=tag, simple_value=float(v)))
        ev = self._event.Event(wall_time=time.time(), step=int(row["env_steps"]),
                               summary=self._summary.Summary(value=values))
        self._w.add_event(ev)
        self._w.flush()

    def close(self) -> None:
        self._w.flush()
        self._w.close()
