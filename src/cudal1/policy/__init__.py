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
from cudal1.policy.prompts import Prompt, contrastive_prompt, feedback, load_templates

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
    "contrastive_prompt",
    "feedback",
    "load_templates",
    "make_policy",
    "parse_answer",
]
