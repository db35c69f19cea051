"""Exceptions a user can act on.

Every package of ours raises subclasses of :class:`HwModelsError` for bad input; the CLI
prints the message on one line and exits with status 2. ``noc`` is the floor of the import
graph, so the base class lives here and ``nic``, ``maddpg`` and ``hw_models`` import it.
"""


class HwModelsError(ValueError):
    """Base class for errors caused by the user's input (configs, specs, flags, files)."""


class SpecError(HwModelsError):
    """A topology (or other) spec string that does not parse or has impossible values."""


class ConfigError(HwModelsError):
    """A configuration file or value that is missing, unknown or out of range."""


class DeadlockError(HwModelsError):
    """A simulation stopped because nothing moved while work was in flight."""


class HwModelsWarning(UserWarning):
    """Something a user should know about a run that still goes on; the CLI prints it on one
    line as ``warning: ...``."""


class DeadlockRiskWarning(HwModelsWarning):
    """The routing's channel dependencies on a run's own paths close a cycle: the network
    can deadlock (the flit level then stops with :class:`DeadlockError`; the message model
    has no such mechanism and times the run as if it could not)."""
