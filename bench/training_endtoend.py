"""Training iterations end to end on the MultiTree paper's set-up: prints the Markdown tables of
docs/training.md.

    .venv/bin/python bench/training_endtoend.py            # about a minute once Numba's cache is built

Three parts, every run steady state (iterations 1 and 2 of 3), 16 samples per worker on the
``multitree-node`` device (closed form), message-level all-reduces:

1. ``hw-models train --preset isca2021 --workloads all -a ring,dbtree,ring2d,ring2d_4dir,multitree
   --policy wfbp``: the command's own path (config, flags and experiment checked by
   :func:`hw_models.experiment.resolve_experiment`), one NIC (the preset's co-designed NIC,
   whole-chunk transfers on 4 NIs: MultiTree-delta's) for every algorithm.
2. The paper's runs as :mod:`hw_models.paper` sets them up (ring and double binary tree on 1 NI
   and 2D ring on 4 NIs with the baseline NIC and 256 B packets; MultiTree with the
   co-designed NIC as alpha, beta, gamma and delta). The paper's packet runs use virtual
   cut-through routers, which the message model does not represent: here they run on the
   preset's wormhole routers.
3. Every policy on ResNet-50 and Transformer: on the preset (ring and MultiTree, as in 1), and
   on a set-up of the kind the scheduling papers evaluate (a V100 in fp32 as an ideal roofline,
   16 workers, the alpha-beta ring over 10 Gb/s, 20 us per step).
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.config import experiment_data  # noqa: E402
from hw_models.experiment import config_with_flags, resolve_experiment  # noqa: E402
from hw_models.paper import paper_setup  # noqa: E402
from hw_models.training import endtoend as e2e  # noqa: E402
from hw_models.training.comm import AlphaBeta, NicComm, describe  # noqa: E402
from hw_models.training.compute import get_device  # noqa: E402
from hw_models.training.policies import DeAR, MGWFBP, PriorityPartition, Prophet, Sequential, TensorFusion  # noqa: E402
from hw_models.training.policies import WaitFreeBackprop  # noqa: E402
from hw_models.training.workloads import WORKLOADS  # noqa: E402

BATCH = 16
DEVICE = "multitree-node"
ALGORITHMS = ["ring", "dbtree", "ring2d", "ring2d_4dir", "multitree"]
PAPER_RUNS = {"ring": "ring", "dbtree": "dtree", "ring2d (4 dir)": "ring2d", "multitree-alpha": "alpha",
              "multitree-beta": "beta", "multitree-gamma": "gamma", "multitree-delta": "delta"}
POLICY_WORKLOADS = ("resnet50", "transformer")


def version() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return commit + (" with uncommitted changes" if dirty else "")


def preset_comms(algorithms) -> tuple[dict, object]:
    """NicComm per algorithm as ``hw-models train --preset isca2021 -a ...`` builds them."""
    data, source = experiment_data(None, "isca2021")
    cfg = config_with_flags(data, source, {}, {"allreduce.algorithms": "--algorithms"})
    exp = resolve_experiment(cfg, source, designs=[cfg.nic.design], algorithms=list(algorithms))
    return e2e.nic_comms(exp, cfg.nic.design), exp


def paper_comms() -> dict:
    out = {}
    for label, run in PAPER_RUNS.items():
        t, s, nic, router = paper_setup("torus4x4", run)
        if router.flow_control == "vct":  # the message model represents wormhole routers only
            router = router.model_copy(update={"flow_control": "wormhole"})
        out[label] = NicComm(t, s, nic, router, seed=1)
    return out


class Scaled:
    """A communication model whose every collective takes ``factor`` times another's (a what-if)."""

    def __init__(self, comm, factor: float):
        self.comm, self.factor, self.num_workers = comm, factor, comm.num_workers

    def allreduce_s(self, nbytes):
        return self.factor * self.comm.allreduce_s(nbytes)

    def reduce_scatter_s(self, nbytes):
        return self.factor * self.comm.reduce_scatter_s(nbytes)

    def all_gather_s(self, nbytes):
        return self.factor * self.comm.all_gather_s(nbytes)

    def describe(self):
        return f"{self.factor:g} x ({describe(self.comm)})"


def all_policies():
    return [Sequential(), WaitFreeBackprop(), TensorFusion(), TensorFusion(8 << 20), MGWFBP(), PriorityPartition(),
            Prophet(), Prophet(strict=True), DeAR(), DeAR(0)]


def summary(runs, policy: str, algorithm: str, prior: list[str]) -> str:
    mine = [r for r in runs if r.policy == policy and (r.algorithm == algorithm or r.algorithm in prior)]
    ring, best = e2e.best_reductions(mine, algorithm, policy)
    return (f"{algorithm}: largest reduction against ring {ring.percent:+.1f} % ({ring.workload}); against the "
            f"fastest of {', '.join(prior)} {best.percent:+.1f} % ({best.workload})")


def policy_summary(runs, workload: str, algorithm: str) -> str:
    at = {r.policy: r.iteration_s for r in runs if r.workload == workload and r.algorithm == algorithm}
    best_other = min(t for p, t in at.items() if not p.startswith("dear"))
    dear = min(t for p, t in at.items() if p.startswith("dear"))
    best_prophet = min(t for p, t in at.items() if p.startswith("prophet"))
    def vs(t, base):  # shorter iteration, and speed-up (iterations per second), in per cent
        return f"{e2e.reduction_percent(t, base):+.1f} % shorter ({100 * (base / t - 1):+.1f} % faster)"

    return (f"prophet against p3 (1 MiB slices) {vs(at['prophet'], at['p3 (1 MiB slices)'])}; the faster DeAR "
            f"against wfbp {vs(dear, at['wfbp'])}, against the fastest other policy {vs(dear, best_other)}; the "
            f"faster Prophet against wfbp {vs(best_prophet, at['wfbp'])}")


def main() -> None:
    t0 = time.time()
    dev = get_device(DEVICE)
    costs = e2e.workload_costs(list(WORKLOADS.values()), BATCH, dev)
    print(f"Generated by `bench/training_endtoend.py` at {version()}, "
          f"{datetime.date.today().isoformat()}; {BATCH} samples per worker on `{DEVICE}`.\n")

    print("### 1. The command on the preset: one NIC for every algorithm\n")
    comms, exp = preset_comms(ALGORITHMS)
    nic = exp.nics[exp.config.nic.design]
    print(f"`hw-models train --preset isca2021 --workloads all -a {','.join(ALGORITHMS)} --policy wfbp`: "
          f"{exp.topology.name}, {nic.design} NIC ({'whole-chunk transfers' if nic.bulk else 'packets'}), WFBP. "
          "Iteration time in ms, and in brackets the reduction against ring (positive: shorter).\n")
    wfbp = WaitFreeBackprop()
    runs, _ = e2e.run_matrix(costs, comms, [wfbp])
    print(e2e.algorithm_markdown(runs, wfbp.label))
    print()
    print("* " + summary(runs, wfbp.label, "multitree", ["ring", "dbtree", "ring2d", "ring2d_4dir"]))
    print("* " + summary(runs, wfbp.label, "ring2d_4dir", ["ring", "dbtree", "ring2d", "multitree"]))
    print()

    print("### 2. The paper's runs: each algorithm with the paper's NIC\n")
    pcomms = paper_comms()
    print("Ring and double binary tree on 1 NI, 2D ring (four directions) on 4 NIs, all three with the baseline NIC "
          "and "
          "256 B packets; MultiTree with the co-designed NIC, alpha (1 NI, packets), beta (4 NIs, packets), gamma "
          "(1 NI, whole chunks), delta (4 NIs, whole chunks). WFBP.\n")
    pruns, _ = e2e.run_matrix(costs, pcomms, [wfbp])
    print(e2e.algorithm_markdown(pruns, wfbp.label))
    print()
    prior = ["ring", "dbtree", "ring2d (4 dir)"]
    for v in ("alpha", "beta", "gamma", "delta"):
        print("* " + summary(pruns, wfbp.label, f"multitree-{v}", prior))
    print()
    # what if the 2D ring took as long as the paper's simulator reports it: one phase of its
    # four-direction chains, doubled, about 1 / 0.625 of ring2d_4dir at large sizes on a 4x4 grid
    factor = 1 / 0.625
    wcomms = {"ring": pcomms["ring"], "dbtree": pcomms["dbtree"],
              "ring2d (as reported)": Scaled(pcomms["ring2d (4 dir)"], factor),
              "multitree-delta": pcomms["multitree-delta"]}
    wruns, _ = e2e.run_matrix(costs, wcomms, [wfbp])
    print(f"What if the 2D ring took {factor:g} times as long (the paper's simulator reports twice one phase of the "
          "four-direction chains, which on a 4x4 grid is about 1 / 0.625 of the all-reduce `ring2d_4dir` at large "
          "sizes; docs/allreduce.md):\n")
    print("* " + summary(wruns, wfbp.label, "multitree-delta", ["ring", "dbtree", "ring2d (as reported)"]))
    print()

    print("### 3. Scheduling policies\n")
    pols = all_policies()
    sub = {w: costs[w] for w in POLICY_WORKLOADS}
    cruns, _ = e2e.run_matrix(sub, {a: comms[a] for a in ("ring", "multitree")}, pols)
    for w in POLICY_WORKLOADS:
        for a in ("ring", "multitree"):
            print(f"**{w}, {a}** on the preset ({describe(comms[a])}):\n")
            print(e2e.policy_markdown(cruns, w, a, compare_with=("wfbp", "p3 (1 MiB slices)")))
            print()
            print(policy_summary(cruns, w, a) + "\n")
    v100 = get_device("v100-fp32")
    slow = AlphaBeta(20e-6, 10e9 / 8, 16)
    vcosts = e2e.workload_costs([WORKLOADS[w] for w in POLICY_WORKLOADS], 32, v100)
    vruns, _ = e2e.run_matrix(vcosts, {"ring": slow}, pols)
    for w in POLICY_WORKLOADS:
        print(f"**{w}, 32 samples per worker on `v100-fp32`**, {describe(slow)} (10 Gb/s):\n")
        print(e2e.policy_markdown(vruns, w, "ring", compare_with=("wfbp", "p3 (1 MiB slices)")))
        print()
        print(policy_summary(vruns, w, "ring") + "\n")
    sims = {label: c.cache_info() for label, c in {**comms, **{f"paper {k}": v for k, v in pcomms.items()}}.items()}
    n = sum(sum(i.values()) for i in sims.values())
    print(f"({n} distinct collective sizes simulated at message level; {time.time() - t0:.0f} s on this machine.)")


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help; no options
    main()
