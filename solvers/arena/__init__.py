"""Static memory planning (offline dynamic storage allocation): give every buffer a byte
offset so that buffers live at the same instant never share an address, in an arena as
small as possible or within a given capacity.

* :mod:`.buffers`  the instance type and its preprocessing (sections, conflicts, components)
* :mod:`.greedy`   fast greedy placements (best fit by decreasing size and others)
* :mod:`.bounds`   lower bounds on the arena size (proofs in docs/arena.md)
* :mod:`.exact`    the exact anytime search (canonical branch and bound, CP-SAT backstop)
* :mod:`.check`    an independent placement checker
"""
from .buffers import ArenaInputError, Buffer
from .check import PlacementError, check_placement
from .exact import ArenaResult, solve_arena

__all__ = ["ArenaInputError", "Buffer", "PlacementError", "check_placement", "ArenaResult", "solve_arena"]
