"""Training-communication systems that users compare co-designed all-reduce against:
gradient compression with error feedback, the parameter server, SSD-SGD, the EASGD family
SPD-KFAC and DLion (heterogeneous workers and links). Each has a timing model on the iteration simulator
(:mod:`hw_models.training.timeline` over the ``nic``/``noc`` networks) and, where it changes
the mathematics of training, a convergence check on small CPU tasks
(:mod:`hw_models.training.systems.tasks`). docs/training_systems.md describes them."""

SYSTEMS = {
    "compression": "gradient compression with error feedback",
    "ps": "the parameter server",
    "ssd": "SSD-SGD",
    "easgd": "the EASGD family",
    "kfac": "SPD-KFAC",
    "dlion": "DLion",
}
"""The training-system registry: name (``hw-models train-system SYSTEM``, the ``train_system``
sweep kind's ``system``) -> what it is. Light to import: the commands' help reads it."""

SUMMARIES = {
    "compression": "Gradient compression with error feedback (top-k, random-k, threshold, 1-bit, 8-bit).",
    "ps": "The parameter server: sync, async and stale-synchronous workers, servers placed on the network.",
    "ssd": "SSD-SGD: local steps with delayed global updates (delays k).",
    "easgd": "The EASGD family: sync and async elastic averaging, momentum EASGD, hogwild.",
    "kfac": "SPD-KFAC: Kronecker-factored curvature with its factors' all-reduces and inversions.",
    "dlion": "DLion: weighted batching, prioritised per-link exchange, knowledge transfer on unequal workers and links.",
}
"""Each system's one-line summary: its ``train-system`` subcommand's help."""

__all__ = ["SUMMARIES", "SYSTEMS"]
