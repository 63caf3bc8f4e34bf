"""JSON is read as the json module reads it, whichever parser does the reading."""

import json

import pytest

from pi_daemon.json_read import loads


@pytest.mark.parametrize("text", [
    '{"id": 12345678901234567890123}',  # orjson alone would read a float and lose digits
    '[18446744073709551616, -99999999999999999999]',
    '{"text": "\\ud800 alone"}',  # a lone surrogate escape: orjson refuses it
    '[NaN, 1.5, "plain", {"a": null}]',
    '{"n": 9223372036854775807}',
])
def test_the_value_is_what_the_json_module_reads(text):
    for given in (text, text.encode()):
        assert repr(loads(given)) == repr(json.loads(text))


def test_what_is_not_json_is_refused_with_the_json_module_error():
    with pytest.raises(json.JSONDecodeError):
        loads(b'{"a": ')
