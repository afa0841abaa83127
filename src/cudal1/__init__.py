"""cudal1: turn a language model into a CUDA optimizer (CUDA-L1, re-implemented).

The flow, one package per box (lower boxes never import higher ones):
tasks -> evaluate (with client, its remote form) -> exemplars -> policy -> optimize -> train
-> serve -> report -> cli.
"""

__version__ = "0.1.0"
