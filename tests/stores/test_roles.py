"""The state store's roles: `StateStore` is exactly their union, and both backends fill each."""

from __future__ import annotations

import inspect

import pytest

from crcr.stores import roles
from crcr.stores.redis.state import RedisStateStore
from crcr.stores.sqlite.state import SqliteStateStore
from crcr.stores.state import StateStore

ROLES = [getattr(roles, name) for name in roles.__all__]


def _members(protocol: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(protocol, inspect.isfunction)} - set(dir(object))


def test_the_store_is_the_union_of_the_roles_and_no_method_has_two_roles() -> None:
    owners: dict[str, list[str]] = {}
    for role in ROLES:
        for name in _members(role):
            owners.setdefault(name, []).append(role.__name__)
    assert {name: found for name, found in owners.items() if len(found) > 1} == {}
    assert set(owners) == _members(StateStore)
    assert set(StateStore.__mro__) >= set(ROLES)


def test_every_role_is_a_protocol_of_its_own_module() -> None:
    for role in ROLES:
        assert getattr(role, "_is_protocol", False), role
        assert role.__module__.startswith("crcr.stores.roles."), role


@pytest.mark.parametrize("backend", [RedisStateStore, SqliteStateStore])
def test_each_backend_declares_every_role_and_implements_it_itself(backend: type) -> None:
    assert [role for role in ROLES if role not in backend.__mro__] == []
    # A role's stub coming first in the method order would shadow the real method.
    stubs = sorted(
        name
        for name in _members(StateStore)
        if getattr(backend, name).__module__.startswith("crcr.stores.roles")
    )
    assert stubs == []
