"""Training-communication systems that users compare co-designed all-reduce against:
gradient compression with error feedback, the parameter server, SSD-SGD, the EASGD family
and SPD-KFAC. Each has a timing model on the iteration simulator
(:mod:`hw_models.training.timeline` over the ``nic``/``noc`` networks) and, where it changes
the mathematics of training, a convergence check on small CPU tasks
(:mod:`hw_models.training.systems.tasks`). docs/training_systems.md describes them."""

SYSTEMS = {
    "compression": "gradient compression with error feedback",
    "ps": "the parameter server",
    "ssd": "SSD-SGD",
    "easgd": "the EASGD family",
    "kfac": "SPD-KFAC",
}
"""The training-system registry: name (``hw-models train-system SYSTEM``, the ``train_system``
sweep kind's ``system``) -> what it is. Light to import: the commands' help reads it."""

__all__ = ["SYSTEMS"]
