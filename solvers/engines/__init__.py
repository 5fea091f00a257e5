"""Runners of external solver engines, shared by every problem family: CP-SAT (:mod:`.cpsat`)."""
