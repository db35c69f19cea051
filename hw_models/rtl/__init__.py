"""RTL of the NIC: stimulus, model-vs-RTL regression, cocotb drivers, lint, proofs, synthesis.

* :mod:`hw_models.rtl.stimulus` — the one reactive stimulus generator (episodes, tables);
* :mod:`hw_models.rtl.lockstep` — model stepper, comparator, mismatch reports;
* :mod:`hw_models.rtl.cocotb_regress` — the cocotb test module the simulator runs;
* :mod:`hw_models.rtl.cocotb_run` — the one cocotb build-and-run wrapper every bench uses;
* :mod:`hw_models.rtl.regress` — builds and launches the regression (tests, CLI, bench share it);
* :mod:`hw_models.rtl.lint` — the one Verilator lint;
* :mod:`hw_models.rtl.formal` — stream rules proved with Yosys's SAT engine;
* :mod:`hw_models.rtl.synth` — Yosys cost sweep and the LUT-level Fmax proxy;
* :mod:`hw_models.rtl.pnr` — nextpnr place and route on ECP5: post-route Fmax;
* :mod:`hw_models.rtl.baseline` — stored synthesis baselines and their check.

See docs/rtl.md.
"""
