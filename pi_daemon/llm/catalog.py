"""Built-in models of the hosted providers: limits, abilities and USD per million tokens.

``models.json`` can change any of these (``modelOverrides``), point a provider elsewhere
(``baseUrl``) or add providers and models of its own.
"""

from __future__ import annotations

from .model import Model, ModelCost

# provider -> (api, base URL, environment variable holding the key)
PROVIDERS: dict[str, tuple[str, str, str]] = {
    "anthropic": ("anthropic-messages", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openai": ("openai-responses", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openrouter": ("openai-completions", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "google": ("google-generative-ai", "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY"),
}

TEXT_IMAGE = ["text", "image"]

# provider, id, name, context window, max output, reasoning, input, cost (in, out, cache read, cache write)
_MODELS = [
    ("anthropic", "claude-opus-4-5", "Claude Opus 4.5", 200_000, 64_000, True, TEXT_IMAGE, (5, 25, 0.5, 6.25)),
    ("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5", 200_000, 64_000, True, TEXT_IMAGE, (3, 15, 0.3, 3.75)),
    ("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5", 200_000, 64_000, True, TEXT_IMAGE, (1, 5, 0.1, 1.25)),
    ("anthropic", "claude-opus-4-1", "Claude Opus 4.1", 200_000, 32_000, True, TEXT_IMAGE, (15, 75, 1.5, 18.75)),
    ("anthropic", "claude-sonnet-4-0", "Claude Sonnet 4", 200_000, 64_000, True, TEXT_IMAGE, (3, 15, 0.3, 3.75)),
    # Prices below 272,000 input tokens; OpenAI charges more for a longer request to the 272K models.
    ("openai", "gpt-6.2-sol", "GPT-6.2 Sol", 272_000, 128_000, True, TEXT_IMAGE, (2, 10, 0.1, 2.5)),
    ("openai", "gpt-6.2-astra", "GPT-6.2 Astra", 272_000, 128_000, True, TEXT_IMAGE, (8, 40, 0.4, 10)),
    ("openai", "gpt-6.1-sol", "GPT-6.1 Sol", 272_000, 128_000, True, TEXT_IMAGE, (2, 10, 0.1, 2.5)),
    ("openai", "gpt-6.1-terra", "GPT-6.1 Terra", 272_000, 128_000, True, TEXT_IMAGE, (1, 5, 0.05, 1.25)),
    ("openai", "gpt-5.5", "GPT-5.5", 272_000, 128_000, True, TEXT_IMAGE, (5, 30, 0.5, 0)),
    ("openai", "gpt-5.4-mini", "GPT-5.4 mini", 400_000, 128_000, True, TEXT_IMAGE, (0.75, 4.5, 0.075, 0)),
    ("openai", "gpt-5.4-nano", "GPT-5.4 nano", 400_000, 128_000, True, TEXT_IMAGE, (0.2, 1.25, 0.02, 0)),
    ("openai", "gpt-5.3-codex", "GPT-5.3 Codex", 400_000, 128_000, True, TEXT_IMAGE, (1.75, 14, 0.175, 0)),
    ("openai", "gpt-5", "GPT-5", 400_000, 128_000, True, TEXT_IMAGE, (1.25, 10, 0.125, 0)),
    ("openai", "gpt-5-mini", "GPT-5 mini", 400_000, 128_000, True, TEXT_IMAGE, (0.25, 2, 0.025, 0)),
    ("openai", "gpt-5-nano", "GPT-5 nano", 400_000, 128_000, True, TEXT_IMAGE, (0.05, 0.4, 0.005, 0)),
    ("openai", "gpt-4.1", "GPT-4.1", 1_047_576, 32_768, False, TEXT_IMAGE, (2, 8, 0.5, 0)),
    ("openai", "gpt-4.1-mini", "GPT-4.1 mini", 1_047_576, 32_768, False, TEXT_IMAGE, (0.4, 1.6, 0.1, 0)),
    ("openai", "gpt-4o", "GPT-4o", 128_000, 16_384, False, TEXT_IMAGE, (2.5, 10, 1.25, 0)),
    ("openai", "o4-mini", "o4-mini", 200_000, 100_000, True, TEXT_IMAGE, (1.1, 4.4, 0.275, 0)),
    # Prices up to 200,000 input tokens; Google charges more for a longer request to the Pro models.
    ("google", "gemini-4-neon", "Gemini 4 Neon", 1_048_576, 65_536, True, TEXT_IMAGE, (3, 15, 0.15, 0)),
    ("google", "gemini-4-hydrogen", "Gemini 4 Hydrogen", 1_048_576, 65_536, True, TEXT_IMAGE, (1.5, 7.5, 0.075, 0)),
    ("google", "gemini-3.8-flash", "Gemini 3.8 Flash", 1_048_576, 65_536, True, TEXT_IMAGE, (0.75, 3.75, 0.075, 0)),
    ("google", "gemini-3.5-flash-lite", "Gemini 3.5 Flash-Lite", 1_048_576, 65_536, True, TEXT_IMAGE,
     (0.3, 2.5, 0.03, 0)),
    ("google", "gemini-3.1-pro-preview", "Gemini 3.1 Pro Preview", 1_048_576, 65_536, True, TEXT_IMAGE,
     (2, 12, 0.2, 0)),
    ("google", "gemini-2.5-pro", "Gemini 2.5 Pro", 1_048_576, 65_536, True, TEXT_IMAGE, (1.25, 10, 0.125, 0)),
    ("google", "gemini-2.5-flash", "Gemini 2.5 Flash", 1_048_576, 65_536, True, TEXT_IMAGE, (0.3, 2.5, 0.03, 0)),
    ("google", "gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", 1_048_576, 65_536, True, TEXT_IMAGE,
     (0.1, 0.4, 0.01, 0)),
    ("openrouter", "anthropic/claude-sonnet-4.5", "Claude Sonnet 4.5 (OpenRouter)", 1_000_000, 64_000, True,
     TEXT_IMAGE, (3, 15, 0.3, 3.75)),
    ("openrouter", "openai/gpt-5", "GPT-5 (OpenRouter)", 400_000, 128_000, True, TEXT_IMAGE, (1.25, 10, 0.125, 0)),
    ("openrouter", "qwen/qwen3-coder", "Qwen3 Coder (OpenRouter)", 262_144, 65_536, False, ["text"],
     (0.22, 0.95, 0, 0)),
]


def builtin_models() -> list[Model]:
    models = []
    for provider, model_id, name, window, max_out, reasoning, inputs, cost in _MODELS:
        api, base_url, _ = PROVIDERS[provider]
        models.append(Model(
            id=model_id, provider=provider, api=api, name=name, base_url=base_url, reasoning=reasoning,
            input=list(inputs), cost=ModelCost(*cost), context_window=window, max_tokens=max_out,
        ))
    return models
