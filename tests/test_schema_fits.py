"""The quick check never accepts what jsonschema rejects, and it does accept the common
valid arguments of the built-in tools (else it would not save anything)."""

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_daemon.schema_fits import fits
from pi_daemon.tools.builtin import TOOL_CLASSES

SCHEMAS = [cls.parameters for cls in TOOL_CLASSES] + [
    {"type": "object", "properties": {"n": {"type": ["integer", "null"], "exclusiveMaximum": 3},
                                      "xs": {"type": "array", "maxItems": 2, "items": {"type": "number"}},
                                      "s": {"maxLength": 2}},
     "additionalProperties": {"type": "boolean"}},
]
KEYS = sorted({k for s in SCHEMAS for k in s.get("properties", {})} | {"n", "xs", "s", "other"})

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 30), st.floats(allow_nan=True),
                    st.sampled_from(["", "x", "ab", "abc", "é"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS + ["oldText", "newText"]), inner, max_size=4)),
    max_leaves=8)
arguments = st.dictionaries(st.sampled_from(KEYS), values, max_size=5)


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(SCHEMAS), arguments)
def test_never_accepts_what_jsonschema_rejects(schema, value):
    if fits(schema, value):
        assert not list(jsonschema.Draft202012Validator(schema).iter_errors(value))


def test_common_arguments_are_accepted():
    read = next(cls.parameters for cls in TOOL_CLASSES if cls.name == "read")
    edit = next(cls.parameters for cls in TOOL_CLASSES if cls.name == "edit")
    assert fits(read, {"path": "a.txt", "offset": 3, "limit": 10})
    assert fits(edit, {"path": "a", "edits": [{"oldText": "x", "newText": ""}]})
    assert not fits(read, {"path": "a.txt", "offset": 0})
    assert not fits(read, {"path": "a.txt", "extra": 1})
    assert not fits(edit, {"path": "a", "edits": []})


def test_keywords_outside_the_subset_go_to_jsonschema():
    assert not fits({"type": "object", "properties": {"mode": {"enum": [1, 2]}}}, {"mode": 1})
    assert not fits({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}, {})
    assert not fits({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, {"xa": "b"})
    assert not fits({"type": "array", "items": [{"type": "string"}]}, ["a"])
