"""The shipped real-model corpus (instances/shipped/corpus/): every file listed by
instances.extract_models.CORPUS is present (shipped files never skip), loads, is a
training step (parameter gradients among the required outputs), carries its provenance,
and evaluates; compressed graph files round-trip and a broken one is a clear error."""
from __future__ import annotations

import gzip

import pytest

from memsched.formulations import order_peak
from memsched.instances import load_graph
from memsched.instances.extract_models import CORPUS, CORPUS_DIR, CORPUS_PINS, corpus_path, main
from memsched.instances.formats import InputError, save_graph
from memsched.instances.generators import random_multi_output

ENTRIES = [(name, b, s) for name, (_, _, sizes) in CORPUS.items() for b, s in sizes]


@pytest.mark.parametrize("name,batch,seq", ENTRIES, ids=[corpus_path(*e).name for e in ENTRIES])
def test_shipped_corpus_graph(name, batch, seq):
    path = corpus_path(name, batch, seq)
    assert path.exists(), f"{path} is listed in CORPUS but not shipped"
    g = load_graph(path)
    m = g.meta
    assert m["model"] == name and m["batch"] == batch and (m["seq"] or 0) == seq
    assert m["versions"]["torch"] == CORPUS_PINS["torch"]
    if name.startswith(("gpt2", "bert", "vit", "llama")):
        assert m["versions"]["transformers"] == CORPUS_PINS["transformers"]
    assert "random" in m["weights"]
    assert g.n_ops >= 300
    assert len(g.pinned) > 10 and len(g.outputs) > 10  # parameters in, loss and their gradients out
    assert order_peak(g, g.given_order()) > g.always_resident()


def test_corpus_dir_holds_only_listed_files():
    listed = {corpus_path(*e).name for e in ENTRIES}
    shipped = {p.name for p in CORPUS_DIR.glob("*.json.gz")}
    assert shipped == listed


def test_corpus_is_small():
    total = sum(p.stat().st_size for p in CORPUS_DIR.glob("*.json.gz"))
    assert total < 30 * 2 ** 20


def test_gzip_round_trip_and_bad_file(tmp_path):
    g = random_multi_output(20, 3)
    p = tmp_path / "g.json.gz"
    save_graph(g, p)
    assert p.read_bytes()[:2] == b"\x1f\x8b"
    h = load_graph(p)
    assert h.order == g.order and h.size == g.size and h.pinned == g.pinned and h.outputs == g.outputs
    bad = tmp_path / "bad.json.gz"
    bad.write_text("{not gzip")
    with pytest.raises(InputError, match="bad.json.gz: not a readable gzip file"):
        load_graph(bad)
    trunc = tmp_path / "trunc.json.gz"
    trunc.write_bytes(gzip.compress(b'{"format": "memsched-graph"')[:-6])
    with pytest.raises(InputError, match="trunc.json.gz"):
        load_graph(trunc)


def test_unknown_corpus_model_exits_2(capsys):
    assert main(["--corpus", "nonesuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nonesuch" in err
