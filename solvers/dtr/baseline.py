"""simrd's baseline of a trace: the memory and compute of a run that never evicts."""
from __future__ import annotations

from memsched.instances.dtr_trace import COMPUTE, GET, RELEASE, DTRTrace

__all__ = ["baseline"]


def baseline(trace: DTRTrace) -> dict:
    """simrd's baseline: RuntimeV1 with an infinite budget (nothing evicted; a storage is
    banished when its external refs reach 0, pinned constants included).

    Returns baseline_memory (peak of memory usage sampled after each allocation),
    baseline_compute (sum of op costs), const_memory, bottleneck_memory (max over ops of
    output bytes plus the own bytes of every argument, as simrd computes it)."""
    n = trace.n_tensors
    t_storage = [-1] * n
    st_size = [0] * n
    st_rext = [0] * n
    st_mat = [False] * n
    mem = peak = comp = const = bottleneck = 0
    ops = trace.ops
    for kind, x in trace.schedule:
        if kind == COMPUTE:
            op = ops[x]
            for i, t in enumerate(op.results):
                a = op.aliases[i]
                s = t if a == -1 else t_storage[op.args[a]]
                t_storage[t] = s
                st_size[t] = op.sizes[i]
                st_rext[s] += 1
                st_mat[s] = True
            total = sum(op.sizes)
            mem += total
            if mem > peak:
                peak = mem
            comp += op.cost
            if op.is_constant:
                const += total
            b = total
            for p in op.args:
                b += st_size[p]
            if b > bottleneck:
                bottleneck = b
            for p in op.args:
                s = t_storage[p]
                if st_rext[s] == 0 and st_mat[s]:
                    st_mat[s] = False
                    mem -= st_size[s]
        elif kind == GET:
            st_rext[t_storage[x]] += 1
        elif kind == RELEASE:
            s = t_storage[x]
            st_rext[s] -= 1
            if st_rext[s] == 0 and st_mat[s]:
                st_mat[s] = False
                mem -= st_size[s]
    return {"baseline_memory": peak, "baseline_compute": comp, "const_memory": const,
            "bottleneck_memory": bottleneck}
