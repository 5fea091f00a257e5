"""Builders of DTR prototype log lines (one JSON object per line, scalars as strings) for
hand-made and random test traces."""
import json


def J(**kw) -> str:
    return json.dumps(kw)


def call(name, args, results, time, mems, aliases=None) -> list[str]:
    """A CALL of ``name`` on ``args`` with several results, their MEMORY and ALIAS lines."""
    aliases = aliases or [-1] * len(results)
    out = [J(INSTRUCTION="CALL", NAME=name, ARGS=args, RESULT=results, TIME=str(time))]
    for r, m, a in zip(results, mems, aliases):
        out.append(J(INSTRUCTION="MEMORY", NAME=r, MEMORY=str(m)))
        out.append(J(INSTRUCTION="ALIAS", NAME=r, ALIAS=str(a)))
    return out


def call1(name, args, res, time, mem) -> list[str]:
    """A CALL with one unaliased result."""
    return call(name, args, [res], time, [mem])


def const(name, m) -> list[str]:
    return [J(INSTRUCTION="CONSTANT", NAME=name), J(INSTRUCTION="MEMORY", NAME=name, MEMORY=str(m))]


def release(name) -> list[str]:
    return [J(INSTRUCTION="RELEASE", NAME=name)]
