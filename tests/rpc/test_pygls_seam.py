"""The parts of pygls's JsonRPCProtocol the daemon overrides or reaches into are still there.

Checked against pygls 2.1.1 (see pi_daemon/rpc/protocol.py). An upgrade that renames or
re-signs one of them fails here, by name, instead of breaking replies at run time.
"""

import importlib.metadata
import inspect

import cattrs
from pygls.protocol.json_rpc import JsonRPCProtocol
from pygls.server import JsonRPCServer

from pi_daemon.rpc.protocol import DaemonProtocol

OVERRIDDEN = {
    "_send_data": ["self", "data"],  # serialisation: our framing and writer
    "_handle_notification": ["self", "method_name", "params"],  # $/cancelRequest with plain-dict params
    "_handle_response": ["self", "msg_id", "result", "error"],  # a late reply to a cancelled request
}
USED = {
    "handle_message": ["self", "message"],
    "send_request": ["self", "method", "params", "callback", "msg_id"],
    "notify": ["self", "method", "params"],
}


def test_the_overridden_and_used_protocol_methods_keep_their_signatures():
    for name, parameters in {**OVERRIDDEN, **USED}.items():
        assert list(inspect.signature(getattr(JsonRPCProtocol, name)).parameters) == parameters, name
    for name in OVERRIDDEN:
        assert getattr(DaemonProtocol, name) is not getattr(JsonRPCProtocol, name), name


def test_pending_requests_are_still_a_dict_of_futures_by_id():
    protocol = JsonRPCServer(DaemonProtocol, cattrs.Converter).protocol
    assert isinstance(protocol._request_futures, dict)
    future = protocol.send_request("x/y", {}, msg_id="probe")
    assert protocol._request_futures["probe"] is future


def test_the_pin_is_the_version_checked():
    assert importlib.metadata.version("pygls") == "2.1.1"
