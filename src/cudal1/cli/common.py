"""Small helpers shared by CLI commands."""

from __future__ import annotations

import torch
import typer

from cudal1.errors import Cudal1Error

DEVICES = ("auto", "cpu", "cuda")


def no_sandbox_option() -> bool:
    return typer.Option(
        False,
        "--no-sandbox",
        help="Run candidate processes without the OS sandbox (read-only file system, no "
        "network, own pid namespace); every result is then flagged no_sandbox.",
    )


def resolve_device(device: str) -> str:
    """'auto' picks CUDA when present; asking for CUDA without a GPU is a clear error."""
    if device not in DEVICES:
        raise Cudal1Error(f"unknown device {device!r}: choose one of {', '.join(DEVICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise Cudal1Error("--device cuda, but no CUDA device is visible: use --device cpu")
    return device
