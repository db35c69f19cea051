"""Communication-scheduling policies compared on synthetic models: prints markdown tables.

    .venv/bin/python bench/training_policies.py [--nic] [--trace DIR]

Two synthetic models (layer lists made up here, not measured):

* ``uniform``: 32 alike layers, forward 0.5 ms, backward 1 ms, 2 MiB of gradient each;
* ``cnn``: 16 layers whose compute shrinks and whose gradients grow towards the back, as in
  a convolutional network with big fully connected layers at the end: layer i has
  forward 2 ms x 0.85^i, backward twice that, gradient 64 KiB x 1.6^i (rounded to 4 bytes).

Networks: the alpha-beta ring model on 16 workers (``AlphaBeta``), and with ``--nic`` the
project's NIC model (``NicComm``: MultiTree on ``torus:4x4``, co-designed NIC, message level,
1 GHz, 16-byte links): ``cnn`` as it is, and with three times the gradient bytes and a
fixed 50 us per collective (a software launch cost). Steady-state figures (iterations 1 and 2 of 3; they are equal). ``--trace
DIR`` also writes each run's Perfetto trace and Gantt PNG there (new files only).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.training.comm import AlphaBeta, NicComm, describe  # noqa: E402
from hw_models.training.costs import LayerCost  # noqa: E402
from hw_models.training.policies import (DeAR, MGWFBP, PriorityPartition, Prophet, Sequential,  # noqa: E402
                                         TensorFusion, WaitFreeBackprop)
from hw_models.training.timeline import simulate  # noqa: E402

MIB, KIB = 1 << 20, 1 << 10


def uniform() -> list[LayerCost]:
    return [LayerCost(f"l{i}", 0.5e-3, 1e-3, 2 * MIB) for i in range(32)]


def cnn(scale: float = 1.0) -> list[LayerCost]:
    return [LayerCost(f"l{i}", 2e-3 * 0.85 ** i, 4e-3 * 0.85 ** i, int(64 * KIB * 1.6 ** i * scale) // 4 * 4)
            for i in range(16)]


def policies():
    return [Sequential(), WaitFreeBackprop(), TensorFusion(), TensorFusion(8 * MIB), MGWFBP(),
            PriorityPartition(256 * KIB), PriorityPartition(), Prophet(), Prophet(strict=True), DeAR(0), DeAR()]


def table(title: str, layers, comm, trace_dir: Path | None = None) -> None:
    compute = sum(x.fwd_s + x.bwd_s for x in layers)
    total = sum(x.grad_bytes for x in layers)
    print(f"### {title}\n")
    print(f"{len(layers)} layers, compute {compute * 1e3:.2f} ms, gradients {total / MIB:.1f} MiB; "
          f"{describe(comm)}; one all-reduce of everything {comm.allreduce_s(total) * 1e3:.2f} ms\n")
    print("| policy | iteration (ms) | compute (ms) | communication (ms) | exposed (ms) | overlap | collectives "
          "| vs sequential |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    base = None
    for p in policies():
        r = simulate(layers, comm, p)
        base = base or r.iteration_s
        print(f"| {r.policy} | {r.iteration_s * 1e3:.2f} | {r.compute_s * 1e3:.2f} | {r.comm_s * 1e3:.2f} | "
              f"{r.exposed_comm_s * 1e3:.2f} | {r.overlap_ratio:.2f} | {r.iterations[-1].collectives} | "
              f"{base / r.iteration_s:.2f}x |")
        if trace_dir is not None:
            from hw_models.report.timeline import plot_gantt, write_trace  # noqa: PLC0415

            stem = f"{title.split(':')[0].replace(' ', '_')}_{p.label}".replace(" ", "_").replace("(", "").replace(
                ")", "").replace(",", "")
            write_trace(r, trace_dir / f"{stem}.json")
            plot_gantt(r, trace_dir / f"{stem}.png")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nic", action="store_true", help="also the NIC-model network (MultiTree on torus:4x4)")
    ap.add_argument("--trace", type=Path, help="write traces and Gantt PNGs into this directory")
    a = ap.parse_args()
    table("uniform: alpha 20 us per step, 3 GB/s", uniform(), AlphaBeta(20e-6, 3e9, 16), a.trace)
    table("cnn: alpha 10 us per step, 10 GB/s", cnn(), AlphaBeta(10e-6, 10e9, 16), a.trace)
    if a.nic:
        from nic.collectives import build  # noqa: PLC0415
        from noc.topology import parse_spec  # noqa: PLC0415

        t = parse_spec("torus:4x4")
        s = build(t, "multitree")
        comm = NicComm(t, s)
        table("cnn on the NIC model", cnn(), comm, a.trace)
        launch = NicComm(t, s, fixed_latency_s=50e-6)
        table("cnn, gradients x 3, on the NIC model with 50 us per collective", cnn(3.0), launch, a.trace)
        print(f"NIC simulations run: {comm.cache_info()} and {launch.cache_info()}")


if __name__ == "__main__":
    main()
