"""Reports of results: figures (:mod:`.figures`), the self-contained HTML page
(:mod:`.html`) and Chrome/Perfetto traces of all-reduce runs (:mod:`.trace`). The rows they
draw come from a sweep store or a CSV the commands write (:mod:`.data`)."""
