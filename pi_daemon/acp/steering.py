"""The steering parts of an ACP permission answer, which ACP v1 has no fields for.

A client may put the user's reason for a refusal, or the arguments the user edited
before allowing a call, in the selected outcome's ``_meta.pi`` (``reason``,
``editedArgs``); they mean what the native ``permission/request`` answer's fields mean.
A ``_meta`` of another shape is ignored (the plain outcome stands), as ACP lets a
receiver ignore what it does not know.
"""

from __future__ import annotations

import logging
from typing import Any

from ..guard.permissions import Answer

log = logging.getLogger(__name__)


def steered(option_id: str, meta: Any) -> Answer:
    """The answer for the chosen option, with the reason or edit ``meta`` carries."""
    pi = meta.get("pi") if isinstance(meta, dict) else None
    if not isinstance(pi, dict):
        return Answer(option_id)
    reason, edited = pi.get("reason"), pi.get("editedArgs")
    if not isinstance(reason, (str, type(None))) or not isinstance(edited, (dict, type(None))):
        log.warning("session/request_permission: _meta.pi.reason is not text or editedArgs not an object: ignored")
        return Answer(option_id)
    return Answer(option_id, reason=reason, edited_args=edited)
