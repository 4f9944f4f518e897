"""Shared test helpers: the committed fixture directory, the curves tests run on, a scratch-file helper and
the session's development circuits (a small synthetic circuit with development keys, made once per curve).

Test modules import the constants (``from conftest import FIXTURES, CURVES, fixture_dir``) instead of
computing paths of their own; the fixtures ``fixtures``, ``tmp`` and ``dev_circuit`` are injected by pytest,
and the session's PoRep partition on a sealed 2 KiB sector (``porep_openings``, ``porep_recorded``), shared by
the PoRep and split-witness tests because its recordings take tens of seconds each.
"""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cuzk import curves
from cuzk.curves import Curve

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = FIXTURES.parents[1]
SNARKJS = ROOT / "node_modules" / ".bin" / "snarkjs"
CIRCOM = ROOT / "node_modules" / ".bin" / "circom2"


def load_script(name: str):
    """A module of scripts/ (not a package) imported by name, scripts/ on the path as when it runs, so
    that scripts importing each other (sass_counts imports check_sass) load the same way."""
    folder = str(ROOT / "scripts")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


CURVES = curves.all_curves()
BLS = curves.get("bls12_381")
BN254 = curves.get("bn254")
# a test parametrized over every curve: `@on_curves def test_x(C): ...`
on_curves = pytest.mark.parametrize("C", CURVES, ids=lambda c: c.name)


def fixture_dir(curve: Curve | str, circuit: str = "example") -> Path:
    """The circom fixture folder of a circuit ("example", "other") on a curve: tests/fixtures/<circuit> for
    BLS12-381 (where they always were), tests/fixtures/bn254/<circuit> for BN254 (tests/fixtures/README.md)."""
    c = curves.get(curve)
    return FIXTURES / circuit if c.name == "bls12_381" else FIXTURES / c.name / circuit


@pytest.fixture
def fixtures() -> Path:
    """tests/fixtures (example/ and other/ circuits, bn254/ for BN254; see tests/fixtures/README.md)."""
    return FIXTURES


@pytest.fixture
def tmp(tmp_path):
    """tmp(name, data) writes bytes (or str) to a file under tmp_path and returns its path."""

    def write(name: str, data: bytes | str) -> Path:
        p = tmp_path / name
        if isinstance(data, str):
            p.write_text(data)
        else:
            p.write_bytes(data)
        return p

    return write


# ---------------------------------------------------------------------------------------------
# development circuits

DEV_SHAPE = "hash"
DEV_LOG_N = 7  # 2^7 domain: big enough for every code path, small enough to set up in well under a second


@dataclass
class DevCircuit:
    """A synthetic hash-shaped circuit on one curve with development keys, and its files in ``folder``:
    ``circuit.r1cs``, ``circuit.zkey`` (the snarkjs-style key), ``witness.wtns``, ``verification_key.json``.
    Shared by the whole session: tests must not modify it (copy what they corrupt)."""

    curve: Curve
    circuit: object  # cuzk.r1cs.synthetic.Circuit
    pk: object  # snarkjs-style ProvingKey
    folder: Path
    _bellperson: object = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def pce(self):
        return self.circuit.pce

    @property
    def witness(self):
        return self.circuit.witness

    @property
    def r1cs(self) -> Path:
        return self.folder / "circuit.r1cs"

    @property
    def zkey(self) -> Path:
        return self.folder / "circuit.zkey"

    @property
    def wtns(self) -> Path:
        return self.folder / "witness.wtns"

    @property
    def vk_json(self) -> Path:
        return self.folder / "verification_key.json"

    def bellperson(self):
        """A bellperson-style key for the same circuit (BLS12-381 only), made on first use."""
        from cuzk.groth16 import setup

        with self._lock:
            if self._bellperson is None:
                self._bellperson = setup.setup(self.pce, style="bellperson", quiet=True)
            return self._bellperson


def make_dev(curve: Curve, folder: Path) -> DevCircuit:
    from cuzk.groth16 import formats, setup, zkey
    from cuzk.r1cs import r1cs, synthetic, wtns

    c = synthetic.make(DEV_SHAPE, synthetic.fit_domain(DEV_SHAPE, DEV_LOG_N), seed=11, curve=curve)
    folder.mkdir(parents=True, exist_ok=True)
    r1cs.write_r1cs(folder / "circuit.r1cs", c.pce, c.n_pub_out, c.n_pub_in, c.n_prv_in)
    wtns.write_wtns(folder / "witness.wtns", c.witness, curve)
    pk = setup.setup(c.pce, quiet=True)
    zkey.write_zkey(folder / "circuit.zkey", pk)
    formats.write_vk_json(folder / "verification_key.json", pk.vk)
    return DevCircuit(curve, c, pk, folder)


@pytest.fixture(scope="session")
def dev_circuit(tmp_path_factory):
    """dev_circuit(curve) -> the session's :class:`DevCircuit` on that curve (made on first use)."""
    made: dict[str, DevCircuit] = {}
    lock = threading.Lock()

    def get(curve: Curve | str = "bls12_381") -> DevCircuit:
        c = curves.get(curve)
        with lock:
            if c.name not in made:
                made[c.name] = make_dev(c, tmp_path_factory.mktemp(f"dev_{c.name}"))
            return made[c.name]

    return get


# ---------------------------------------------------------------------------------------------
# Filecoin's PoRep circuit on a sealed 2 KiB sector (shared by test_filecoin_porep and test_split_witness)

PROOF_2KIB_V1_1 = 5  # StackedDrg2KiBV1_1: 64 nodes, 2 layers
POREP_CHALLENGES = [5, 41, 17]  # the partition's challenged nodes (3: the split tests need 3 parts)


@pytest.fixture(scope="session")
def porep_sealed():
    """A 2 KiB sector of random data sealed (cuzk.filecoin.seal.seal)."""
    import numpy as np

    from cuzk.filecoin.seal import seal

    d = np.random.default_rng(7).integers(0, 256, (64, 32), dtype=np.uint8)
    d[:, 31] &= 0x3F
    return seal(d, PROOF_2KIB_V1_1, bytes(range(32)), 9, bytes(range(50, 82)))


@pytest.fixture(scope="session")
def porep_openings(porep_sealed) -> dict:
    """The openings (JSON view of a vanilla proof) of :data:`POREP_CHALLENGES` on :func:`porep_sealed`.
    Shared by the whole session: tests must not modify it (deep-copy what they tamper with)."""
    from cuzk.filecoin import porep

    return porep.challenge_openings(porep_sealed, POREP_CHALLENGES)


@pytest.fixture(scope="session")
def porep_cache(tmp_path_factory) -> Path:
    """The session's recordings folder for the PoRep circuits, <CUZK_CACHE_DIR>/circuits (worker processes
    read the layout there)."""
    return tmp_path_factory.mktemp("porep_cache") / "circuits"


@pytest.fixture(scope="session")
def porep_recorded(porep_openings, porep_cache):
    """porep_recorded(shape) -> (circuit, recording, witness) of the 3-challenge partition in that shape
    ("filecoin" or "compact"): recorded into :func:`porep_cache` and its single-process witness of
    :func:`porep_openings` computed once per session (each takes tens of seconds on a small machine)."""
    from cuzk.circuit.circuit import record, witness
    from cuzk.filecoin import porep

    made: dict[str, tuple] = {}
    lock = threading.Lock()

    def get(shape: str = "filecoin") -> tuple:
        with lock:
            if shape not in made:
                c = porep.PoRep(PROOF_2KIB_V1_1, challenges=len(POREP_CHALLENGES), shape=shape)
                rec = record(c, cache=porep_cache)
                made[shape] = (c, rec, witness(c, porep_openings, rec.layout))
            return made[shape]

    return get


# ---------------------------------------------------------------------------------------------
# a real PostgreSQL (issue 23: the cluster journal), see tests/pg.py


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL (:class:`pg.PgServer`), started on first use; skipped where none can run."""
    import pg

    why = pg.why_unavailable()
    if why:
        pytest.skip(why)
    srv = pg.PgServer()
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def pg_url(pg_server):
    """The URL of a fresh, empty database of the session's PostgreSQL (dropped after the test)."""
    url = pg_server.create_db()
    yield url
    pg_server.drop_db(url)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    """``store()`` opens a journal of the parametrized kind (the same one each call: reopen = restart), its
    schema made (``cuzk journal migrate`` for PostgreSQL); ``store.kind``, ``store.url`` ("" for SQLite)."""
    from cuzk.engine.journal import SqliteJournal

    kind = request.param
    url = ""
    if kind == "postgres":
        from cuzk.engine.journal.postgres import migrate

        url = request.getfixturevalue("pg_url")
        migrate(url)
    opened = []

    def open_store(**kw):
        if kind == "sqlite":
            j = SqliteJournal(tmp_path / "journal.sqlite", **kw)
        else:
            from cuzk.engine.journal.postgres import PostgresJournal

            j = PostgresJournal(url, spill_dir=tmp_path / "journal.payloads", **kw)
        opened.append(j)
        return j

    open_store.kind = kind
    open_store.url = url
    open_store.path = tmp_path
    yield open_store
    for j in opened:
        try:
            j.close()
        except Exception:
            pass
