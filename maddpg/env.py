"""The real MPE environments (``mpe2``, PettingZoo parallel API) behind one small interface.

``make_env(name, n_agents, seed, max_cycles)`` returns an :class:`MpeEnv` whose
``reset`` / ``step`` speak lists indexed by agent (the order of ``agent_names``), which is
what the MADDPG trainer consumes::

    env = make_env("simple_spread", 3, seed=0)
    obs = env.reset(seed=7)                 # list of float32 [obs_dims[i]]
    obs, rewards, done = env.step(actions)  # actions: list of float32 [act_dims[i]]

Action mapping (the "discrete action as a vector" of openai/maddpg)
------------------------------------------------------------------
openai/maddpg's actors emit a Gumbel-softmax sample over the five moves and the original
multiagent-particle-envs feed that *vector* (not its argmax) to the physics:
``u = sensitivity * (a[1] - a[2], a[3] - a[4])``. mpe2 with ``continuous_actions=True``
does the same linear map, ``u = sensitivity * (a[2] - a[1], a[4] - a[3])``, with the same
sensitivity (5, or the agent's ``accel``). We therefore run mpe2 in continuous mode and pass
the vector as given. The only difference to openai is the *label* of each index: mpe2 keeps
its documented order ``[no_action, move_left, move_right, move_down, move_up]`` in both its
discrete and continuous modes, openai's index 1 pushes +x. That is a relabelling of the
action indices (and the scenarios' initial states are symmetric under x -> -x, y -> -y), so
learning is unaffected; a one-hot vector means exactly mpe2's discrete action of that index.
mpe2 clips each component to [0, 1] (its Box action space); probability vectors are
already inside it.

Agent counts: simple_spread has ``n_agents`` agents and as many landmarks; simple has
exactly 1 agent; simple_adversary has 1 adversary and ``n_agents - 1`` good agents (mpe2's
``N = n_agents - 1``); simple_tag has 1 good agent (the prey) and ``n_agents - 1``
adversaries with mpe2's 2 obstacles (openai/maddpg's default is 3 adversaries + 1 prey);
simple_speaker_listener (mpe2's ``_v4``), simple_reference and simple_push (keep-away: an
adversary, then the good agent) have exactly 2 agents.

Agents may differ in sizes: simple_speaker_listener's speaker observes 3 values and emits a
3-value utterance (its continuous action), the listener observes 11 and moves (5);
simple_reference's agents both observe 21 values and act with 15 (5 move + 10 utterance).
``obs_dims`` / ``act_dims`` list them per agent; the trainer sizes each actor from its own
agent's and each critic from their sums.
Rewards are mpe2's (simple_spread: ``local_ratio = 0.5`` mix of the shared landmark
reward and the agent's own collision penalty).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from noc.base.errors import ConfigError

__all__ = ["EnvError", "MpeEnv", "SCENARIOS", "make_env", "scenario_name"]


class EnvError(ConfigError):
    """An unknown MPE scenario, an agent count it cannot have, or malformed actions."""


# scenario -> (mpe2 module, smallest n_agents, largest n_agents or None, kwargs builder)
def _spread_kwargs(n: int) -> dict[str, Any]:
    return {"N": n}


def _simple_kwargs(n: int) -> dict[str, Any]:
    return {}


def _adversary_kwargs(n: int) -> dict[str, Any]:
    return {"N": n - 1}


def _tag_kwargs(n: int) -> dict[str, Any]:
    return {"num_good": 1, "num_adversaries": n - 1}


def _two_kwargs(n: int) -> dict[str, Any]:  # simple_speaker_listener, simple_reference, simple_push: mpe2's defaults
    return {}


SCENARIOS: dict[str, tuple[str, int, int | None, Any]] = {
    "simple_spread": ("mpe2.simple_spread_v3", 1, None, _spread_kwargs),
    "simple_adversary": ("mpe2.simple_adversary_v3", 2, None, _adversary_kwargs),
    "simple_tag": ("mpe2.simple_tag_v3", 2, None, _tag_kwargs),
    "simple": ("mpe2.simple_v3", 1, 1, _simple_kwargs),
    "simple_speaker_listener": ("mpe2.simple_speaker_listener_v4", 2, 2, _two_kwargs),
    "simple_reference": ("mpe2.simple_reference_v3", 2, 2, _two_kwargs),
    "simple_push": ("mpe2.simple_push_v3", 2, 2, _two_kwargs),
}


def _version(base: str) -> str:
    """mpe2's version suffix of a scenario (``_v3``; simple_speaker_listener's is ``_v4``)."""
    return SCENARIOS[base][0].rpartition(".")[2][len(base):]


def scenario_name(name: Any) -> str | None:
    """The scenario ``name`` means, without mpe2's version suffix (which is optional but must be
    the scenario's own: ``simple_speaker_listener_v4``, ``simple_spread_v3``), or None."""
    if not isinstance(name, str):
        return None
    if name in SCENARIOS:
        return name
    base, sep, _ = name.rpartition("_v")
    return base if sep and base in SCENARIOS and name == base + _version(base) else None


def _canonical_name(name: str) -> str:
    base = scenario_name(name)
    if base is None:
        allowed = ", ".join(f"{k} (or {k}{_version(k)})" for k in SCENARIOS)
        raise EnvError(f"env: unknown MPE scenario {name!r}; allowed: {allowed}")
    return base


def _check_agents(name: str, n_agents: Any) -> int:
    _, lo, hi, _ = SCENARIOS[name]
    allowed = f"exactly {lo}" if hi == lo else (f"{lo}..{hi}" if hi is not None else f"an integer >= {lo}")
    if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)):
        raise EnvError(f"n_agents: {n_agents!r} is not an integer; {name} allows {allowed}")
    n = int(n_agents)
    if n < lo or (hi is not None and n > hi):
        raise EnvError(f"n_agents: {n} agents is impossible for {name}; allowed: {allowed}")
    return n


class MpeEnv:
    """One mpe2 scenario through the PettingZoo parallel API, lists in ``agent_names`` order."""

    def __init__(self, name: str, n_agents: int, seed: int, max_cycles: int = 25) -> None:
        self.name = _canonical_name(name)
        n = _check_agents(self.name, n_agents)
        if isinstance(max_cycles, bool) or not isinstance(max_cycles, (int, np.integer)) or max_cycles < 1:
            raise EnvError(f"max_cycles: {max_cycles!r} is not allowed; allowed: an integer >= 1")
        module, _, _, kwargs = SCENARIOS[self.name]
        self.max_cycles = int(max_cycles)
        self._env = importlib.import_module(module).parallel_env(
            max_cycles=self.max_cycles, continuous_actions=True, **kwargs(n)
        )
        self.agent_names: list[str] = list(self._env.possible_agents)
        assert len(self.agent_names) == n, (self.agent_names, n)
        self.n_agents = n
        self.obs_dims: list[int] = [int(self._env.observation_space(a).shape[0]) for a in self.agent_names]
        self.act_dims: list[int] = [int(self._env.action_space(a).shape[0]) for a in self.agent_names]
        self._next_seed: int | None = int(seed)
        self._steps = 0
        self._done = True

    @property
    def world(self) -> Any:
        """mpe2's ``World`` (agents, landmarks, physics constants); for tests and ports."""
        return self._env.unwrapped.world

    def reset(self, seed: int | None = None) -> list[np.ndarray]:
        """Start an episode. ``seed=None`` continues the env's stream (the first reset uses the
        ``make_env`` seed); the same seed always gives the same initial observations."""
        if seed is None:
            seed = self._next_seed
        self._next_seed = None
        obs, _ = self._env.reset(seed=None if seed is None else int(seed))
        self._steps = 0
        self._done = False
        return [np.asarray(obs[a], dtype=np.float32) for a in self.agent_names]

    def step(self, actions: list[np.ndarray]) -> tuple[list[np.ndarray], list[float], bool]:
        """Apply one action vector per agent; ``done`` once ``max_cycles`` steps were taken."""
        if self._done:
            raise EnvError("step: the episode is over (or was never started); call reset() first")
        if len(actions) != self.n_agents:
            raise EnvError(f"actions: got {len(actions)} action vectors; allowed: exactly {self.n_agents}")
        act: dict[str, np.ndarray] = {}
        for i, (a, name) in enumerate(zip(actions, self.agent_names)):
            v = np.array(a, dtype=np.float32).reshape(-1)
            if v.shape[0] != self.act_dims[i]:
                raise EnvError(
                    f"actions[{i}]: length {v.shape[0]}; allowed: a vector of length {self.act_dims[i]}"
                )
            act[name] = np.clip(v, 0.0, 1.0)  # mpe2's own wrapper would clip too, with a warning
        obs, rew, term, trunc, _ = self._env.step(act)
        self._steps += 1
        done = self._steps >= self.max_cycles or any(term.values()) or any(trunc.values())
        self._done = done
        return (
            [np.asarray(obs[a], dtype=np.float32) for a in self.agent_names],
            [float(rew[a]) for a in self.agent_names],
            bool(done),
        )

    def close(self) -> None:
        self._env.close()


def make_env(name: str, n_agents: int, seed: int, max_cycles: int = 25) -> MpeEnv:
    """An mpe2 scenario (simple_spread, simple_adversary, simple_tag, simple, simple_speaker_listener,
    simple_reference, simple_push; mpe2's version suffix optional)."""
    return MpeEnv(name, n_agents, seed, max_cycles)
