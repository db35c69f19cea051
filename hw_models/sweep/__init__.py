"""Design-space sweeps: a sweep file, its points validated all at once, run in local worker
processes or on a Dask cluster, each point's result in a durable SQLite store.

* :mod:`hw_models.sweep.spec` — the sweep file (kind, ``[base]``, axes, zips, sampling);
* :mod:`hw_models.sweep.kinds` — the experiment kinds and the interface a new one fills;
* :mod:`hw_models.sweep.execute` — validation of every point, then the run (local pool,
  Dask, or this process);
* :mod:`hw_models.sweep.store` — the SQLite results store (one row per point, resumable);
* :mod:`hw_models.sweep.export` — CSV and Parquet;
* :mod:`hw_models.sweep.jsonl` — the JSONL result stores of older commands, imported.

The command is ``hw-models sweep`` (docs/sweeps.md).
"""
