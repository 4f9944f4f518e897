"""Filecoin PoRep / PoSt parameters per sector size, and the registered-proof / porep-id conventions.

Every number here was read (not copied) from public sources; the source of each is named next to it:

* ``FP``: filecoin-project/rust-fil-proofs, ``filecoin-proofs/src/constants.rs`` and
  ``filecoin-proofs/src/parameters.rs`` (snapshot 87348a749d80447d00c595af834a8ed73c09e4d9);
* ``API``: filecoin-project/rust-filecoin-proofs-api, ``src/registry.rs``
  (snapshot 0e64ce8d9cf87d4039075c101de833290096745b);
* ``CORE``: rust-fil-proofs ``storage-proofs-core`` (``drgraph.rs``, ``crypto/mod.rs``,
  ``parameter_cache.rs``) and ``storage-proofs-porep`` (``stacked/vanilla/graph.rs``, ``cache.rs``,
  ``parent_cache.json``), same snapshot as FP.

PoRep challenge counts (FP ``parameters.rs`` ``select_challenges``): challenges per partition =
ceil(minimum challenges / partitions), at most 18 (``MAX_CHALLENGES_PER_PARTITION``). Interactive PoRep:
minimum 2 for the test sizes (1 partition -> 2 challenges), 176 for 32/64 GiB (10 partitions -> 18 each,
180 in all). Non-interactive PoRep (FIP-0092): minimum 26 / 2253 over 13 / 126 partitions -> 2 / 18 per
partition.

Porep id (API ``porep_id``): 32 bytes, the registered seal proof id as u64 little-endian in bytes 0..8,
the proof's nonce (0 for every proof today) as u64 little-endian in bytes 8..16, zeros after. The graph
seeds are derived from it (CORE ``derive_porep_domain_seed``): SHA-256(tag || porep_id) with the tags
``Filecoin_DRSample`` (DRG seed: the first 28 bytes) and ``Filecoin_Feistel`` (4 Feistel keys: the 32
bytes as 4 little-endian u64).

API versions (API ``version``): proof ids 0-4 (``StackedDrg*V1``) use 1.0.0 (legacy graph: predecessor
last, expander parents truncated to u32 before dividing); 5-9 (``*V1_1``) use 1.1.0; the
SyntheticPoRep (10-14) and NonInteractivePoRep (15-19) variants use 1.2.0, whose graph is the same as
1.1.0's (CORE ``drgraph.rs``: V1_1_0 and V1_2_0 share one branch), though with other porep ids, so
other seeds. Only the V1 and V1_1 graphs have published parent-cache digests (PARENT_CACHE_MANIFEST).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

NODE_SIZE = 32  # bytes per node (CORE util.rs NODE_SIZE)
DRG_DEGREE = 6  # CORE drgraph.rs BASE_DEGREE
EXP_DEGREE = 8  # CORE stacked/vanilla/graph.rs EXP_DEGREE
DEGREE = DRG_DEGREE + EXP_DEGREE  # 14 parents per node in the parent cache

WINNING_POST_CHALLENGE_COUNT = 66  # FP constants.rs
WINNING_POST_SECTOR_COUNT = 1  # FP constants.rs
WINDOW_POST_CHALLENGE_COUNT = 10  # FP constants.rs (challenges per sector)
MAX_CHALLENGES_PER_PARTITION = 18  # FP constants.rs
MAX_LEGACY_REGISTERED_SEAL_PROOF_ID = 4  # CORE lib.rs MAX_LEGACY_POREP_REGISTERED_PROOF_ID

DRSAMPLE_DST = b"Filecoin_DRSample"  # CORE crypto/mod.rs
FEISTEL_DST = b"Filecoin_Feistel"  # CORE crypto/mod.rs
PARAMETER_CACHE_VERSION = 28  # CORE parameter_cache.rs VERSION (the "v28-" of cache file names)

API_V1_0_0 = "1.0.0"
API_V1_1_0 = "1.1.0"
API_V1_2_0 = "1.2.0"

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class SectorParams:
    """One sector size's parameters (see the module docstring for the sources)."""

    sector_size: int  # bytes
    layers: int  # FP LAYERS
    porep_partitions: int  # FP POREP_PARTITIONS (interactive PoRep)
    porep_min_challenges: int  # FP get_porep_interactive_minimum_challenges
    ni_porep_partitions: int  # FP get_porep_non_interactive_partitions
    ni_porep_min_challenges: int  # FP get_porep_non_interactive_minimum_challenges
    window_post_sector_count: int  # FP WINDOW_POST_SECTOR_COUNT (sectors per WindowPoSt partition)
    tree_arities: tuple[int, int, int]  # FP SectorShape*: (base, sub, top) arities of tree_c / tree_r_last
    seal_proof_ids: dict  # API REGISTERED_PROOF_IDS: {"V1", "V1_1", "V1_1_Synth", "V1_2_NI"} -> id

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def drg_degree(self) -> int:
        return DRG_DEGREE

    @property
    def exp_degree(self) -> int:
        return EXP_DEGREE

    @property
    def porep_challenges_per_partition(self) -> int:
        c = -(-self.porep_min_challenges // self.porep_partitions)
        assert c <= MAX_CHALLENGES_PER_PARTITION
        return c

    @property
    def porep_challenges(self) -> int:
        return self.porep_challenges_per_partition * self.porep_partitions

    @property
    def ni_porep_challenges_per_partition(self) -> int:
        return -(-self.ni_porep_min_challenges // self.ni_porep_partitions)

    @property
    def window_post_challenge_count(self) -> int:
        return WINDOW_POST_CHALLENGE_COUNT

    @property
    def winning_post_challenge_count(self) -> int:
        return WINNING_POST_CHALLENGE_COUNT

    @property
    def winning_post_sector_count(self) -> int:
        return WINNING_POST_SECTOR_COUNT


def _ids(i: int) -> dict:
    return {"V1": i, "V1_1": 5 + i, "V1_1_Synth": 10 + i, "V1_2_NI": 15 + i}


SECTOR_SIZES = (2 * KIB, 8 * MIB, 512 * MIB, 32 * GIB, 64 * GIB)

PARAMS: dict[int, SectorParams] = {
    2 * KIB: SectorParams(2 * KIB, 2, 1, 2, 13, 26, 2, (8, 0, 0), _ids(0)),
    8 * MIB: SectorParams(8 * MIB, 2, 1, 2, 13, 26, 2, (8, 0, 0), _ids(1)),
    512 * MIB: SectorParams(512 * MIB, 2, 1, 2, 13, 26, 2, (8, 0, 0), _ids(2)),
    32 * GIB: SectorParams(32 * GIB, 11, 10, 176, 126, 2253, 2349, (8, 8, 0), _ids(3)),
    64 * GIB: SectorParams(64 * GIB, 11, 10, 176, 126, 2253, 2300, (8, 8, 2), _ids(4)),
}


def api_version_of(proof_id: int) -> str:
    """The API version a registered seal proof id uses (API ``RegisteredSealProof::version``)."""
    if not 0 <= proof_id <= 19:
        raise ValueError(f"unknown registered seal proof id {proof_id}")
    if proof_id <= MAX_LEGACY_REGISTERED_SEAL_PROOF_ID:
        return API_V1_0_0
    return API_V1_1_0 if proof_id <= 9 else API_V1_2_0


def sector_size_of(proof_id: int) -> int:
    """The sector size of a registered seal proof id (ids go 2K, 8M, 512M, 32G, 64G in each group of 5)."""
    if not 0 <= proof_id <= 19:
        raise ValueError(f"unknown registered seal proof id {proof_id}")
    return SECTOR_SIZES[proof_id % 5]


def porep_id(proof_id: int, nonce: int = 0) -> bytes:
    """The 32-byte porep id of a registered seal proof (API ``RegisteredSealProof::porep_id``)."""
    return struct.pack("<QQ", proof_id, nonce) + bytes(16)


def derive_porep_domain_seed(tag: bytes, porep: bytes) -> bytes:
    """SHA-256(tag || porep_id) (CORE ``crypto::derive_porep_domain_seed``)."""
    if len(porep) != 32:
        raise ValueError("porep_id must be 32 bytes")
    return hashlib.sha256(tag + porep).digest()


def drg_seed(porep: bytes) -> bytes:
    """The 28-byte BucketGraph seed (CORE ``drgraph::derive_drg_seed``)."""
    return derive_porep_domain_seed(DRSAMPLE_DST, porep)[:28]


def feistel_keys(porep: bytes) -> tuple[int, int, int, int]:
    """The 4 Feistel keys of the expander graph (CORE ``graph::derive_feistel_keys``)."""
    return struct.unpack("<4Q", derive_porep_domain_seed(FEISTEL_DST, porep))


# rust-fil-proofs storage-proofs-porep/parent_cache.json (snapshot 87348a7): SHA-256 of each published
# parent cache file, by cache id. The ids map onto porep ids (checked by graph.parent_cache_id): each
# size has one entry for its V1 proof (ids 0-4) and one for its V1_1 proof (ids 5-9).
PARENT_CACHE_MANIFEST: dict[str, tuple[int, str]] = {
    "v28-sdr-parent-3f0eef38bb48af1f48ad65e14eb85b4ebfc167cec18cd81764f6d998836c9899": (
        2 * KIB,
        "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d",
    ),
    "v28-sdr-parent-494d91dc80f2df5272c4b9e129bc7ade9405225993af9fe34e6542a39a47554b": (
        2 * KIB,
        "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97",
    ),
    "v28-sdr-parent-dcdabb0fbe4364bf0ac28b6a18c66de246409fa1a9020a00f33fb3e3053da6dc": (
        8 * MIB,
        "a76604f2f59f2744c7151653bbb1d8596b6b57d295e6fa6c1f0c41d725b502ce",
    ),
    "v28-sdr-parent-5eed212119fd91aa6220a27f31a8966444a9381842bceb3a1ea61525bd47a5b5": (
        8 * MIB,
        "03cd13565ded97c240a5f52e54295ad127bd0461b57904cb3a4d79b097bbecab",
    ),
    "v28-sdr-parent-2aa9c77c3e58259481351cc4be2079cc71e1c9af39700866545c043bfa30fb42": (
        512 * MIB,
        "3adcc092423aa76d6a7184016893406da44dd974b219a89cd3ece25e4e3018f5",
    ),
    "v28-sdr-parent-7ba215a1d2345774ab90b8cb1158d296e409d6068819d7b8c7baf0b25d63dc34": (
        512 * MIB,
        "b5877d1963793efebc261fd8fde4dd6bc59e6b5c7abf52617a4ee023b8dc173a",
    ),
    "v28-sdr-parent-e1fa5d5b811ddbd118be3412c4a8c329156b8b8acc72632bca459455b5a05a13": (
        32 * GIB,
        "3c4f9841fcc75aed8c695800e58d08480629f25af3a2aefd81904181d75cc0b6",
    ),
    "v28-sdr-parent-21981246c370f9d76c7a77ab273d94bde0ceb4e938292334960bce05585dc117": (
        32 * GIB,
        "93deeac5e3052b6927467d4b2641bb782f05491de18d510147c93eeedd8672da",
    ),
    "v28-sdr-parent-8a99e8d6b6be7ab87a56b632e6739ff201c23ea14e99737c74690f0e265574d6": (
        64 * GIB,
        "2778a732ad46a7dc18e0564dfdf59fd321dcde74ab476fd6d3c4e6735d7cd89c",
    ),
    "v28-sdr-parent-4905486b7af19558ac3649bc6261411858b6add534438878c4ee3b29d8b9de0b": (
        64 * GIB,
        "2698b74eb2606b55b98d8b095e18b6320b47f46e00075956d48640ccd1641b03",
    ),
}


def uvarint(n: int) -> bytes:
    """An unsigned LEB128 varint (multiformats' and Go's ``binary.PutUvarint``)."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def prover_id(miner_id: int) -> bytes:
    """A miner's prover id as rust-fil-proofs takes it: the actor id (the N of f0N / t0N) as an unsigned
    varint, left-aligned in 32 zero bytes (lotus ``address.NewIDAddress(N).Payload()``)."""
    if not 0 <= miner_id < 1 << 63:
        raise ValueError(f"miner id {miner_id}: not an actor id")
    return uvarint(miner_id).ljust(32, b"\0")
