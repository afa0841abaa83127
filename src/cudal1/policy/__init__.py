"""Policy: prompts, answer parsing and the LLM clients that write candidates."""

from cudal1.policy.clients import (
    Completion,
    LocalPolicy,
    OpenAIPolicy,
    Policy,
    PolicyExhausted,
    ReplayPolicy,
    Usage,
    make_policy,
)
from cudal1.policy.parse import ParsedAnswer, parse_answer
from cudal1.policy.prompts import (
    Prompt,
    chat_text,
    contrastive_prompt,
    feedback,
    load_templates,
)

__all__ = [
    "Completion",
    "LocalPolicy",
    "OpenAIPolicy",
    "ParsedAnswer",
    "Policy",
    "PolicyExhausted",
    "Prompt",
    "ReplayPolicy",
    "Usage",
    "chat_text",
    "contrastive_prompt",
    "feedback",
    "load_templates",
    "make_policy",
    "parse_answer",
]
