"""Worker pools (local processes with hard kills, Dask) and the append-only JSON-lines result store,
shared by the benchmark harness and the DTR sweeps."""
