"""The one exception type the CLI turns into a single clear line (what, where, what to do)."""


class Cudal1Error(Exception):
    """Bad input or an unmet precondition; the message is meant for the user as it is."""
