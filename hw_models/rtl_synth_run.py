"""``hw-models rtl synth``'s syntheses of the scheduler as points of sweep kind
``rtl_synth`` (:mod:`hw_models.sweep.kinds.rtl_synth`): run into a sweep store, the rows
read back from it. Above :mod:`hw_models.rtl` and :mod:`hw_models.sweep`, which the kind
joins the other way."""

from __future__ import annotations

from pathlib import Path

from noc.base.errors import ConfigError


def synth_rows(console, depths, nis, delay, xilinx: bool, top: str, rev: str | None, store: Path,
               workers: int | None = None, dask: str | None = None) -> list:
    """Synthesise ``top`` over DEPTH x NIS (rtl/ as of git revision ``rev``, or the working
    tree): each configuration a point of sweep kind ``rtl_synth`` run into the sweep store at
    ``store`` (one stored before is reused), its row read back from the stored metrics."""
    import tempfile

    from hw_models.rtl.synth import SynthRow, sources_at
    from hw_models.job import backend
    from hw_models.sweep.plan import Plan, run_plan

    if rev:  # checked here first, naming the flag
        with tempfile.TemporaryDirectory(prefix="hwm-synth-rev-") as tmp:
            if not any(s.name == f"{top}.v" for s in sources_at(rev, Path(tmp))):
                raise ConfigError(f"--rev {rev}: rtl/{top}.v does not exist at that revision (drop --axil)")
    own = {**({"top": top} if top != "nic_scheduler" else {}), **({"xilinx": True} if xilinx else {}),
           **({"rev": rev} if rev else {})}
    plan = Plan("rtl_synth", [{"depth": d, "nis": n, **own} for n in nis for d in depths], "rtl synth",
                "hw-models rtl synth")
    with console.status("synthesising...") as status:
        ran = run_plan(plan, store, **backend(workers, dask), on_event=lambda event, p, outcome: status.update(
            f"synthesised DEPTH={p.config['depth']} NIS={p.config['nis']}"))
    return [SynthRow(depth=c["depth"], nis=c["nis"], **{**m, "fmax_mhz_est": delay.fmax_mhz(m["lut_levels"])})
            for c, m in zip(plan.configs, ran.metrics)]
