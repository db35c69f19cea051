"""One update's timeline and the end-to-end throughput."""

from __future__ import annotations

import pytest

from maddpg.accel import host as H
from maddpg.accel.config import AccelConfig, spread_workload
from maddpg.accel.model import PHASES, simulate_update, throughput
from maddpg.accel.parts import get_part


def _cpu(n: int, update_s: float = 0.05) -> H.CpuProfile:
    return H.CpuProfile("simple_spread", n, 256, 2e-4, 1e-3, update_s, 1, "test", "now", 0, 1)


@pytest.mark.parametrize("semantics", ["parallel", "sequential"])
@pytest.mark.parametrize("overlap", [True, False])
def test_phases_add_up_to_the_update(semantics, overlap):
    w = spread_workload(4, batch=256)
    r = simulate_update(w, AccelConfig(semantics=semantics, overlap_host=overlap, pe=2, lanes=16), get_part("u55c"))
    assert set(r.phase_cycles) == set(PHASES)
    assert sum(r.phase_cycles.values()) == pytest.approx(r.update_cycles)
    if not overlap:
        assert r.update_cycles == pytest.approx(r.fpga_cycles + r.transfer_cycles)
        assert r.phase_cycles["transfer"] == pytest.approx(r.transfer_cycles)


def test_sequential_agents_take_longer_than_parallel_engines():
    w = spread_workload(4, batch=256)
    par = simulate_update(w, AccelConfig(), get_part("u250"))
    seq = simulate_update(w, AccelConfig(semantics="sequential"), get_part("u250"))
    assert seq.fpga_cycles > 2 * par.fpga_cycles


def test_update_is_at_least_the_busiest_resource():
    w = spread_workload(3, batch=512)
    r = simulate_update(w, AccelConfig(pe=2, lanes=8), get_part("u250"))
    assert r.fpga_cycles >= r.busy_cycles["interconnect"]
    assert r.fpga_cycles >= max(r.busy_cycles[p] for p in ("critic", "actor", "targets"))
    assert r.exchange["inputs"] >= r.exchange["inputs_bound"]


def test_pcie_payload_rate():
    cfg = AccelConfig(pcie_gen=3, pcie_lanes=16, pcie_efficiency=0.85)
    assert H.pcie_bytes_per_s(cfg) == pytest.approx(16 * 8e9 * 128 / 130 / 8 * 0.85)
    g2 = AccelConfig(pcie_gen=2, pcie_lanes=8, pcie_efficiency=1.0)
    assert H.pcie_bytes_per_s(g2) == pytest.approx(8 * 5e9 * 0.8 / 8)
    w = spread_workload(3, batch=100)
    assert H.h2d_bytes(w, cfg) == 3 * 100 * (2 * 3 * 18 + 15) * 4 + 3 * 100 * 2 * 4


def test_throughput_formulas():
    w = spread_workload(3, batch=256)
    r = simulate_update(w, AccelConfig(pe=2, lanes=16), get_part("u250"))
    cpu = _cpu(3)
    t = throughput(w, r, cpu)
    env = 100 * cpu.env_step_s
    assert t.cpu_env_steps_per_s == pytest.approx(100 / (env + cpu.update_s))
    assert t.serial_env_steps_per_s == pytest.approx(100 / (env + cpu.sample_s + r.update_s))
    assert t.overlapped_env_steps_per_s == pytest.approx(100 / max(env + cpu.sample_s, r.update_s))
    assert t.training_speedup == pytest.approx(cpu.update_s / r.update_s)
    assert r.samples_per_s(256) == pytest.approx(3 * 256 / r.update_s)


def test_profile_round_trip(tmp_path):
    p = _cpu(3)
    f = tmp_path / "p.json"
    f.write_text(p.to_json())
    assert H.load_profile(f) == p
    f.write_text("{}")
    with pytest.raises(Exception, match="not a profile"):
        H.load_profile(f)


def test_every_config_key_is_in_the_assumptions_table():
    from pathlib import Path

    from maddpg.accel.config import AccelConfig

    doc = (Path(__file__).resolve().parents[2] / "docs" / "maddpg_accel.md").read_text()
    table = doc.split("## Assumptions (config keys)")[1].split("\n## ")[0]
    missing = [k for k in AccelConfig.model_fields if f"`{k}`" not in table]
    assert not missing, f"docs/maddpg_accel.md's assumptions table lacks {missing}"


def test_streamed_minibatch_is_held_to_card_memory_bandwidth():
    import dataclasses

    from maddpg.accel.model import card_memory_cycles

    w = spread_workload(3, batch=1024)
    slow = dataclasses.replace(get_part("u250"), card_memory_gb_per_s=0.05)
    cfg = AccelConfig(minibatch_buffer="tiles", pe=8, lanes=16)
    r = simulate_update(w, cfg, slow)
    assert r.resources.minibatch_buffer == "tiles"
    # every engine reads its columns of all minibatches and its critic inputs 3 times, writes them once
    nbytes = 3 * (3 * 1024 * (2 * 18 + 5) + 5 * 1024 * 69) * 4
    assert card_memory_cycles(w, cfg, slow) == pytest.approx(nbytes / 0.05e9 * 250e6)
    assert r.fpga_cycles == pytest.approx(card_memory_cycles(w, cfg, slow))
    assert simulate_update(w, cfg.model_copy(update={"minibatch_buffer": "whole"}), slow).fpga_cycles < r.fpga_cycles


def test_auto_minibatch_streams_when_the_whole_one_does_not_fit():
    from maddpg.accel.resources import estimate

    w = spread_workload(12)
    part = get_part("u250")
    cfg = AccelConfig(fixed_point_bits=16, fixed_point_frac_bits=10, pe=1, lanes=1)
    assert estimate(cfg.model_copy(update={"minibatch_buffer": "whole"}), w, part).uram > 1024  # over the limit
    assert estimate(cfg, w, part).minibatch_buffer == "tiles"
    assert estimate(cfg, spread_workload(3), part).minibatch_buffer == "whole"
