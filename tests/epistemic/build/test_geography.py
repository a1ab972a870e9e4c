"""Geography builder on a tiny real slice (three countries); never the 1M-triple scale here."""

from __future__ import annotations

from omegaconf import OmegaConf

from audit.epistemic.build.geography import GEO, Scale, cache_path, ensure_graph, place, write_graph
from audit.epistemic.graph import RDF_TYPE, KnowledgeGraph
from audit.epistemic.licensing import Licenser
from audit.epistemic.shapes import load_shapes, validate
from audit.epistemic.domain import DATA_DIR

TINY = Scale(15000, ("population",), capital_min_population=15000, countries=frozenset({"FR", "DE", "CH"}))


def test_tiny_build_has_real_capitals_and_validates(tmp_path):
    g = KnowledgeGraph.load(write_graph(TINY, tmp_path / "geo.nt"))
    countries = {g.label(c): c for c in g.subjects(GEO + "hasCapital")}
    assert set(countries) == {"France", "Germany", "Switzerland"}
    assert g.label(g.objects(countries["France"], GEO + "hasCapital")[0]) == "Paris"
    assert g.label(g.objects(countries["Germany"], GEO + "hasCapital")[0]) == "Berlin"
    assert countries["Germany"] in g.objects(countries["France"], GEO + "hasNeighbour")
    cities = g.subjects(GEO + "locatedInCountry")
    assert len(cities) > 300 and all(GEO + "City" in g.types(c) for c in cities)
    shapes = load_shapes(DATA_DIR / "geography" / "shapes.ttl")
    assert validate(g, shapes) == []
    lic = Licenser(g, shapes)
    paris, berlin = (g.objects(countries[n], GEO + "hasCapital")[0] for n in ("France", "Germany"))
    assert lic.judge(countries["France"], GEO + "hasCapital", paris).label == "E"
    assert lic.judge(countries["France"], GEO + "hasCapital", berlin).label == "C"
    assert lic.judge(paris, GEO + "hasCapital", berlin).reason.startswith("sh:class Country")
    verdict = lic.judge(countries["France"], GEO + "locatedInCountry", countries["Germany"])
    assert verdict.label == "C" and "sh:disjoint" in verdict.reason
    assert lic.judge(countries["France"], GEO + "locatedInCountry", countries["Switzerland"]).label == "C"
    assert lic.judge(countries["Germany"], GEO + "locatedInCountry", countries["Switzerland"]).label == "C"
    assert RDF_TYPE in dict(g.outgoing(place(2988507)))  # Paris by its GeoNames id


def test_build_is_deterministic(tmp_path):
    assert write_graph(TINY, tmp_path / "a.nt").read_bytes() == write_graph(TINY, tmp_path / "b.nt").read_bytes()


def test_ensure_graph_uses_the_cache(tmp_path):
    cfg = OmegaConf.create({"scale": "small", "cache_dir": str(tmp_path)})
    target = cache_path(tmp_path, "small")
    target.write_text("<http://a> <http://b> <http://c> .\n")  # a pre-existing cache file is reused as is
    assert ensure_graph(cfg) == target
    assert target.read_text().startswith("<http://a>")


def test_unknown_scale_lists_scales(tmp_path):
    import pytest

    from audit.errors import UserError

    with pytest.raises(UserError, match=r"Unknown scale 'huge'.*Available: large, small"):
        ensure_graph(OmegaConf.create({"scale": "huge", "cache_dir": str(tmp_path)}))
