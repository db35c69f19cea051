"""``StrictModel.key_fields``: one "later fields" rule for every config section whose
values go into the keys of stored results (the NIC's and the routers')."""

from __future__ import annotations

from typing import ClassVar

import pytest

from noc.base.config import StrictModel


class Section(StrictModel):
    later_fields: ClassVar[frozenset[str]] = frozenset({"added", "flag"})

    size: int = 4
    added: float = 1.5
    flag: bool | None = None


def test_later_fields_are_left_out_at_their_defaults_and_kept_otherwise():
    assert Section().key_fields() == {"size": 4}
    assert Section(size=4, added=1.5).key_fields() == {"size": 4}  # set, but to the default
    assert Section(added=2.0).key_fields() == {"size": 4, "added": 2.0}
    assert Section(flag=False).key_fields() == {"size": 4, "flag": False}


def test_a_section_without_later_fields_keys_every_field():
    class Plain(StrictModel):
        a: int = 1
        b: str = "x"

    assert Plain().key_fields() == {"a": 1, "b": "x"}


def test_a_later_field_that_is_no_field_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="later_fields names no field of it: typo"):
        class Broken(StrictModel):  # noqa: F841
            later_fields: ClassVar[frozenset[str]] = frozenset({"typo"})
            a: int = 1


def test_the_nic_and_router_configs_use_the_base_class_rule():
    from nic.nic_config import NicConfig
    from noc.flit import FlitNetworkConfig

    for cls in (NicConfig, FlitNetworkConfig):
        assert "key_fields" not in cls.__dict__, cls  # no second copy of the rule
        assert cls.later_fields
    assert set(NicConfig().key_fields()) == set(NicConfig.model_fields) - NicConfig.later_fields
    assert set(FlitNetworkConfig().key_fields()) == set(FlitNetworkConfig.model_fields) - FlitNetworkConfig.later_fields
