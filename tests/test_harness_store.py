"""The JSON-lines store: a driver killed at any byte leaves a readable prefix."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from memsched.solvers.pool.store import ResultStore, read_rows

rows_st = st.lists(st.fixed_dictionaries({"key": st.text("abcdef0123456789", min_size=1, max_size=8),
                                          "status": st.sampled_from(["optimal", "feasible", "error"]),
                                          "objective": st.one_of(st.none(), st.integers(0, 10**12)),
                                          "message": st.text(max_size=20)}), max_size=12)


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, cut=st.floats(0, 1))
def test_any_truncation_leaves_the_complete_rows(tmp_path_factory, rows, cut):
    p = tmp_path_factory.mktemp("store") / "r.jsonl"
    s = ResultStore(p)
    s.open(resume=False)
    for r in rows:
        s.append(r)
    s.close()
    data = p.read_bytes()
    n = int(cut * len(data))
    p.write_bytes(data[:n])
    got = read_rows(p)
    complete = data[:n].count(b"\n")
    # every complete line is read back exactly; a torn tail is dropped (or, if it happens
    # to be valid JSON already, read: it is then a whole row)
    assert got[:complete] == rows[:complete]
    assert len(got) in (complete, complete + 1)
    if len(got) == complete + 1:
        assert got[-1] == rows[complete]
    # resuming truncates the torn tail, and appends on a fresh line
    s.open(resume=True)
    s.append({"key": "new", "status": "feasible"})
    s.close()
    again = read_rows(p)
    assert again[:complete] == rows[:complete] and again[-1]["key"] == "new"
    assert len(again) == complete + 1


def test_non_row_lines_are_reported(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"key": "a", "status": "ok"}\n[1, 2]\nnot json\n{"no_key": 1}\n{"key": "b", "status": "ok"}\n')
    errors = []
    got = read_rows(p, errors=errors)
    assert [r["key"] for r in got] == ["a", "b"]
    assert len(errors) == 3 and all(str(p) in e for e in errors)
    assert json.loads(p.read_text().splitlines()[0])["key"] == "a"
