"""The names ``initialize`` lists are generated into :mod:`pi_daemon.rpc.initialize_names` (so
the answer does not import every handler and event class); they must stay the real ones."""

import attrs

from pi_daemon.events import AGENT_EVENT_TYPES
from pi_daemon.llm.model import THINKING_LEVELS
from pi_daemon.rpc import initialize as init
from pi_daemon.rpc import methods
from pi_daemon.rpc.registry import METHODS

methods.load_all()


def test_listed_methods_are_the_registered_ones():
    assert list(init.REQUEST_NAMES) == sorted(m for m, spec in METHODS.items() if spec.is_request)
    assert list(init.NOTIFICATION_NAMES) == sorted(
        [m for m, spec in METHODS.items() if not spec.is_request] + ["$/cancelRequest"])


def test_listed_events_and_thinking_levels_are_the_real_ones():
    assert list(init.EVENT_NAMES) == [attrs.fields(cls).type.default for cls in AGENT_EVENT_TYPES]
    assert init.THINKING_LEVEL_NAMES == THINKING_LEVELS


def test_initialize_answered_first_and_later_say_the_same(spawn):
    """The answer to a leading initialize (sent while the daemon starts) and to one that comes
    after another request list the same capabilities."""
    fast = spawn().request("initialize", {"protocolVersion": 1})["result"]
    second = spawn()
    second.request("getState")
    served = second.request("initialize", {"protocolVersion": 1})["result"]
    assert fast.pop("server")["pid"] != served.pop("server")["pid"]  # two processes, each its own
    assert fast == served
    assert fast["capabilities"]["methods"] == list(init.REQUEST_NAMES)
    assert fast["capabilities"]["events"] == list(init.EVENT_NAMES)
