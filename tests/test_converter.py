"""The converter builds the unstructure hook of a class once, and builds it again after a
hook it may hold was replaced."""

import attrs

from pi_daemon.converter import converter, to_wire


@attrs.define
class Inner:
    some_value: int


@attrs.define
class Outer:
    inner: Inner
    label: str | None = None


@attrs.define
class Other:
    inner: Inner


def test_a_hook_registered_later_reaches_the_classes_that_hold_it():
    assert to_wire(Outer(Inner(1))) == {"inner": {"someValue": 1}}
    converter.register_unstructure_hook(Inner, lambda inner: f"inner {inner.some_value}")
    assert to_wire(Outer(Inner(2), "x")) == {"inner": "inner 2", "label": "x"}
    assert to_wire(Other(Inner(3))) == {"inner": "inner 3"}


def test_a_class_is_unstructured_the_same_inside_others_and_alone():
    @attrs.define
    class Leaf:
        camel_name: str
        optional: int | None = None

    @attrs.define
    class A:
        leaf: Leaf

    @attrs.define
    class B:
        leaves: list[Leaf]

    assert to_wire(A(Leaf("a"))) == {"leaf": {"camelName": "a"}}
    assert to_wire(B([Leaf("b", 2)])) == {"leaves": [{"camelName": "b", "optional": 2}]}
    assert to_wire(Leaf("c")) == {"camelName": "c"}
