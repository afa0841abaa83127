"""The evaluator: the trusted judge of candidates, and the reward every other box learns from."""
