"""Model access: model descriptions, the provider seam, and the providers behind it."""

import sys

# httpx's package imports its command-line client (``httpx._main``) when click is installed,
# which it is here (through mcp): click and parts of rich, about 10 ms at every start, for a CLI
# the daemon never runs. A ``None`` entry makes that import fail at once, and httpx then
# leaves its ``main`` as a stub that explains what is missing.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
