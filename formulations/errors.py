"""The base of every user-facing error. The CLI turns a MemschedError into one
line on stderr and exit status 2; anything else is a bug and keeps its traceback."""


class MemschedError(ValueError):
    """Bad user input (file, graph, schedule, option): the message says what and where."""
