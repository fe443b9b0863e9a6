"""The one lazy import of litellm, shared by the judges and the generators.

Importing litellm takes seconds and, unless told to use the copy it ships, it
fetches a model price map from the internet (unreachable on clusters), so it is
imported here on first use only, configured once."""

from __future__ import annotations

import os
import threading
from typing import Any

_lock = threading.Lock()
_litellm: Any = None


def litellm_module() -> Any:
    global _litellm
    with _lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.telemetry = False
            litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on each error
            _litellm = litellm
    return _litellm
