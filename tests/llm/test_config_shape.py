"""models.json's shape check: the fast structural check never accepts what jsonschema
refuses, accepts the usual files (so jsonschema is not imported for them), and the
errors are still jsonschema's."""

import math

import jsonschema
from hypothesis import HealthCheck, given, settings, strategies as st

from pi_daemon.llm.config_shape import MODEL_FIELDS, PROVIDER_SCHEMA, SCHEMA, shape_errors
from pi_daemon.schema_fits import fits

SCHEMAS = {"file": SCHEMA, "provider": PROVIDER_SCHEMA, "model": MODEL_FIELDS}
KEYS = ["id", "name", "api", "baseUrl", "apiKey", "reasoning", "input", "cost", "contextWindow", "maxTokens",
        "headers", "compat", "authHeader", "connectTimeoutMs", "readTimeoutMs", "models", "modelOverrides",
        "providers", "cacheRead", "cacheWrite", "output", "x-other", ""]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, -1.5, 1e300, 2.0**53]),
    st.sampled_from(["", "text", "image", "x", "openai-completions", "Text", "$KEY", "é"]), st.text(max_size=4),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)), max_leaves=30)


def _near(schema):
    """Documents close to ``schema``'s shape, so that both accepted and refused ones are common."""
    kind = schema.get("type")
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), values)
    if kind == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        fields = {k: _near(v) for k, v in props.items()}
        keys = st.sampled_from(sorted(props) + ["x-other"]) if props else st.sampled_from(KEYS)
        return st.one_of(
            st.fixed_dictionaries({}, optional=fields).flatmap(
                lambda d: st.dictionaries(keys, _near(extra) if extra else values, max_size=2).map(
                    lambda more: {**more, **d})),
            values)
    if kind == "array":
        return st.one_of(st.lists(_near(schema["items"]), max_size=4), values)
    return values


def _valid(schema, data):
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(data))


def _check(schema, data):
    if fits(schema, data):
        assert _valid(schema, data), data


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_fast_check_never_accepts_what_jsonschema_refuses(data):
    for name, schema in SCHEMAS.items():
        _check(schema, data.draw(_near(schema), label=name))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(values)
def test_the_fast_check_never_accepts_an_arbitrary_value_jsonschema_refuses(value):
    for schema in (*SCHEMAS.values(), {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
                   {"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "integer", "minimum": 1},
                   {"type": "number", "exclusiveMinimum": 0},
                   {"enum": ["text", "image"]}, {"type": "string", "minLength": 1}, {"required": ["id"]}):
        _check(schema, value)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_fast_check_accepts_most_documents_that_fit(data):
    """It is certain about the usual documents (else it would save nothing)."""
    document = data.draw(st.fixed_dictionaries({"id": st.text(min_size=1, max_size=5)}, optional={
        "name": st.text(max_size=5), "reasoning": st.booleans(), "input": st.lists(st.sampled_from(["text", "image"])),
        "contextWindow": st.integers(1), "maxTokens": st.integers(1), "headers": st.dictionaries(st.text(), st.text()),
        "compat": st.dictionaries(st.text(), values), "cost": st.fixed_dictionaries({}, optional={
            k: st.floats(0, 1e6) | st.integers(0) for k in ("input", "output", "cacheRead", "cacheWrite")})}))
    provider = {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "models": [document],
                "modelOverrides": {"m": {k: v for k, v in document.items() if k != "id"}}}
    assert fits(PROVIDER_SCHEMA, provider) and _valid(PROVIDER_SCHEMA, provider)


def test_what_it_cannot_tell_goes_to_jsonschema():
    assert fits(MODEL_FIELDS, {"id": "m", "contextWindow": 8192})
    assert not fits(MODEL_FIELDS, {"id": "m", "contextWindow": 8192.0})  # an integer for jsonschema: not certain
    assert shape_errors(MODEL_FIELDS, {"id": "m", "contextWindow": 8192.0}) == []
    assert not fits(MODEL_FIELDS, {"id": "m", "cost": {"input": math.nan}})
    assert not fits({"type": "string", "pattern": "x"}, "x")  # a keyword it does not know
    assert shape_errors(MODEL_FIELDS, {"id": "", "maxTokens": True}) == [
        "id: '' should be non-empty", "maxTokens: True is not of type 'integer'"]
    assert shape_errors(SCHEMA, []) == ["(top level): [] is not of type 'object'"]

