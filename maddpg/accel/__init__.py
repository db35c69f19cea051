"""The CPU-FPGA MADDPG accelerator as a cycle-approximate model (docs/maddpg_accel.md).

The CPU steps the environments and keeps the replay; the FPGA holds one training engine per
agent (actor and critic: forward, backward, Adam, target networks) and the engines exchange
what the centralised critics need over an on-chip agent interconnect (a ``noc`` topology).

One job per module:

* :mod:`~maddpg.accel.parts` — FPGA parts and their resources;
* :mod:`~maddpg.accel.config` — the design and every modelling assumption, as config keys;
* :mod:`~maddpg.accel.engine` — cycles of the kernels' :class:`~maddpg.kernels.LoopNest` on a
  MAC array, passes with layer pipelining over minibatch tiles, an engine's work per phase;
* :mod:`~maddpg.accel.resources` — on-chip buffers and DSP/BRAM/URAM/LUT/FF per design, fit check;
* :mod:`~maddpg.accel.interconnect` — the per-update exchange over a ``noc`` topology, timed at
  message level (max-min fair flows) or flit level (``noc.flit``), and its bandwidth bound;
* :mod:`~maddpg.accel.host` — PCIe link and the CPU's measured environment/sampling/update times;
* :mod:`~maddpg.accel.model` — one update's timeline by phase and end-to-end throughput;
* :mod:`~maddpg.accel.search` — design-space search and Pareto front;
* :mod:`~maddpg.accel.functional` — the engines' functional path on the trainer's own kernels.

Imports ``noc`` (never ``nic``).
"""

INTERCONNECTS = ("ring", "mesh", "crossbar")  # or any noc topology spec (torus:2x2, fattree:k2:l2, full:4, ...)
"""The named agent interconnects (:func:`maddpg.accel.interconnect.build_topology`); here, light
to import, for the command's help."""
