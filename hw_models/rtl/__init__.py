"""RTL of the NIC scheduler: stimulus, model-vs-RTL regression, cocotb drivers, synthesis.

* :mod:`hw_models.rtl.stimulus` — the one reactive stimulus generator (episodes, tables);
* :mod:`hw_models.rtl.lockstep` — model stepper, comparator, mismatch reports;
* :mod:`hw_models.rtl.cocotb_regress` — the cocotb test module the simulator runs;
* :mod:`hw_models.rtl.regress` — builds and launches (tests, CLI, bench share it);
* :mod:`hw_models.rtl.synth` — Yosys cost sweep.

See docs/rtl.md.
"""
