"""The quick acceptance check never accepts what jsonschema rejects, and it does accept the
common valid arguments of the built-in tools (else it would not save anything)."""

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_daemon.tools.builtin import TOOL_CLASSES
from pi_daemon.tools.plain_schema import accepts, is_plain

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


def test_builtin_schemas_are_plain():
    assert all(is_plain(s) for s in SCHEMAS)


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(SCHEMAS), arguments)
def test_never_accepts_what_jsonschema_rejects(schema, value):
    if accepts(schema, value):
        assert not list(jsonschema.Draft202012Validator(schema).iter_errors(value))


def test_common_arguments_are_accepted():
    read = next(cls.parameters for cls in TOOL_CLASSES if cls.name == "read")
    edit = next(cls.parameters for cls in TOOL_CLASSES if cls.name == "edit")
    assert accepts(read, {"path": "a.txt", "offset": 3, "limit": 10})
    assert accepts(edit, {"path": "a", "edits": [{"oldText": "x", "newText": ""}]})
    assert not accepts(read, {"path": "a.txt", "offset": 0})
    assert not accepts(read, {"path": "a.txt", "extra": 1})
    assert not accepts(edit, {"path": "a", "edits": []})


def test_keywords_outside_the_subset_go_to_jsonschema():
    assert not is_plain({"type": "object", "properties": {"mode": {"enum": ["a", "b"]}}})
    assert not is_plain({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})
    assert not is_plain({"type": "object", "patternProperties": {"^x": {"type": "string"}}})
    assert not is_plain({"type": "array", "items": [{"type": "string"}]})
