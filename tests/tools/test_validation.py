import pytest

from pi_daemon.tools import ToolArgumentError, validate_arguments

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "literal": {"type": "boolean"},
        "paths": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_sensible_coercion():
    args = {"path": 7, "limit": "5", "ratio": "0.5", "literal": "TRUE", "paths": '["a", "b"]'}
    assert validate_arguments(SCHEMA, args) == {
        "path": "7", "limit": 5, "ratio": 0.5, "literal": True, "paths": ["a", "b"]
    }
    assert args["limit"] == "5"  # the model's arguments are not modified


def test_every_problem_is_reported_with_its_field():
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments(SCHEMA, {"limit": "many", "extra": 1})
    text = str(info.value)
    assert "'path' is a required property" in text
    assert "limit: 'many' is not of type 'integer'" in text
    assert "'extra' was unexpected" in text


def test_non_object_arguments():
    with pytest.raises(ToolArgumentError, match="must be a JSON object"):
        validate_arguments(SCHEMA, ["a"])
