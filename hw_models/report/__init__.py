"""Reports of results. Every figure and every Perfetto trace of the project goes through
:mod:`.writer` (one house style, one atomic write); the figures the commands write beside
their CSVs are :mod:`.charts`; the figures of any result rows (``hw-models plot``) and their
presets :mod:`.figures`; the self-contained HTML page :mod:`.html`; Chrome/Perfetto traces
of all-reduce runs :mod:`.trace`. The rows they draw come from a sweep store or a CSV the
commands write (:mod:`.data`)."""
