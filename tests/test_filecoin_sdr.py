"""Filecoin SDR parent graph and labels against published rust-fil-proofs vectors.

Sources of the expected values (snapshots read with the repository tools):

* rust-fil-proofs = filecoin-project/rust-fil-proofs at 87348a749d80447d00c595af834a8ed73c09e4d9;
* rust-filecoin-proofs-api = filecoin-project/rust-filecoin-proofs-api at
  0e64ce8d9cf87d4039075c101de833290096745b;
* rand_chacha = rust-random/rand ``rand_chacha/src/chacha.rs`` (``test_chacha_true_values_a``, from
  draft-nir-cfrg-chacha20-poly1305-04 vectors 1 and 2); RFC 8439 section 2.3.2 (the ChaCha20 block
  function test vector).
"""

from __future__ import annotations

import hashlib
import os
import struct

import numpy as np
import pytest

from cuzk.filecoin import params as P
from cuzk.filecoin.graph import (
    StackedGraph,
    blake2b_16_first8,
    chacha_block_raw,
    chacha_keystream,
    feistel_precompute,
    parent_cache_digest,
    parents_reference,
)
from cuzk.filecoin.sdr import (
    create_labels,
    label_reference,
    labels_from_bytes,
    labels_to_bytes,
    sha256_compress,
)

# ------------------------------------------------------------------------------------------ primitives


def test_chacha20_rand_chacha_vectors():
    # rand_chacha test_chacha_true_values_a: ChaCha20Rng::from_seed([0; 32]), first two blocks.
    w = chacha_keystream(bytes(32), 2, rounds=20)
    assert list(w[:16]) == [
        0xADE0B876, 0x903DF1A0, 0xE56A5D40, 0x28BD8653, 0xB819D2BD, 0x1AED8DA0, 0xCCEF36A8, 0xC70D778B,
        0x7C5941DA, 0x8D485751, 0x3FE02477, 0x374AD8B8, 0xF4B8436A, 0x1CA11815, 0x69B687C3, 0x8665EEB2,
    ]  # fmt: skip
    assert list(w[16:]) == [
        0xBEE7079F, 0x7A385155, 0x7C97BA98, 0x0D082D73, 0xA0290FCB, 0x6965E348, 0x3E53C612, 0xED7AEE32,
        0x7621B729, 0x434EE69C, 0xB03371D5, 0xD539D874, 0x281FED31, 0x45FB0A51, 0x1F0AE1AC, 0x6F4D794B,
    ]  # fmt: skip


def test_chacha20_rfc8439_block():
    # RFC 8439 2.3.2: key 00..1f, counter 1, nonce 000000090000004a00000000; the output words as the
    # RustCrypto chacha20 crate's RNG tests (test_chacha_nonce) list them: e4e7f110 15593bd1 ... 4e3c50a2.
    key = struct.unpack("<8I", bytes(range(32)))
    nonce = struct.unpack("<3I", bytes.fromhex("000000090000004a00000000"))
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key, 1, *nonce]
    out = chacha_block_raw(state, rounds=20)
    assert list(out) == [
        0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3, 0xC7F4D1C7, 0x0368C033, 0x9AAA2204, 0x4E6CD4C3,
        0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9, 0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2,
    ]  # fmt: skip


def test_blake2b_16_matches_hashlib():
    for _ in range(64):
        d = os.urandom(16)
        assert blake2b_16_first8(d) == hashlib.blake2b(d).digest()[:8]


def test_sha256_compress_matches_hashlib():
    for n in (0, 1, 55, 64, 200):
        msg = os.urandom(n)
        pad = msg + b"\x80" + bytes((55 - n) % 64) + struct.pack(">Q", 8 * n)
        st = list(struct.unpack(">8I", bytes.fromhex("6a09e667bb67ae853c6ef372a54ff53a510e527f9b05688c1f83d9ab5be0cd19")))
        for i in range(0, len(pad), 64):
            st = sha256_compress(st, pad[i : i + 64])
        assert struct.pack(">8I", *st) == hashlib.sha256(msg).digest()


def test_feistel_precompute():
    # storage-proofs-core crypto/feistel.rs precompute: halves of h bits, 4^h >= n, h >= 1
    assert feistel_precompute(4) == (0b10, 0b1, 1)
    assert feistel_precompute(8 * 64) == (0b11111 << 5, 0b11111, 5)
    assert feistel_precompute(8 * (1 << 30)) == (((1 << 17) - 1) << 17, (1 << 17) - 1, 17)


# --------------------------------------------------------------------------------------------- params


def test_params_table():
    # rust-fil-proofs filecoin-proofs/src/constants.rs and parameters.rs (select_challenges)
    p32 = P.PARAMS[32 * P.GIB]
    assert (p32.nodes, p32.layers, p32.porep_partitions, p32.porep_challenges_per_partition) == (1 << 30, 11, 10, 18)
    assert p32.porep_challenges == 180
    assert p32.ni_porep_challenges_per_partition == 18
    assert p32.window_post_sector_count == 2349 and P.PARAMS[64 * P.GIB].window_post_sector_count == 2300
    for size in (2 * P.KIB, 8 * P.MIB, 512 * P.MIB):
        p = P.PARAMS[size]
        assert (p.layers, p.porep_partitions, p.porep_challenges, p.window_post_sector_count) == (2, 1, 2, 2)
        assert p.ni_porep_challenges_per_partition == 2
    assert P.WINNING_POST_CHALLENGE_COUNT == 66 and P.WINDOW_POST_CHALLENGE_COUNT == 10
    # rust-filecoin-proofs-api src/registry.rs: ids and porep_id layout
    assert P.PARAMS[2 * P.KIB].seal_proof_ids == {"V1": 0, "V1_1": 5, "V1_1_Synth": 10, "V1_2_NI": 15}
    assert P.porep_id(8) == bytes([8]) + bytes(31)
    assert [P.api_version_of(i) for i in (4, 5, 9, 10, 19)] == ["1.0.0", "1.1.0", "1.1.0", "1.2.0", "1.2.0"]
    assert P.sector_size_of(18) == 32 * P.GIB


def test_parent_cache_ids_match_manifest():
    # storage-proofs-porep/parent_cache.json: every entry is the cache of a V1 (ids 0-4) or V1_1
    # (ids 5-9) proof of the stated sector size (cache.rs cache_path naming).
    found = {}
    for pid in range(10):
        g = StackedGraph.for_proof(pid)
        cid = g.parent_cache_id()
        assert cid in P.PARENT_CACHE_MANIFEST, pid
        assert P.PARENT_CACHE_MANIFEST[cid][0] == P.sector_size_of(pid)
        found[cid] = pid
    assert len(found) == len(P.PARENT_CACHE_MANIFEST) == 10


# ---------------------------------------------------------------------------------------------- graph


@pytest.mark.parametrize("proof_id", [0, 5])
def test_parent_cache_digest_2kib(proof_id):
    # published digests (parent_cache.json): 2 KiB V1 "3da49221...", V1_1 "84005770..."
    g = StackedGraph.for_proof(proof_id)
    pa = g.parents_all()
    assert pa.shape == (64, 14) and pa.dtype == np.uint32
    assert parent_cache_digest(pa) == g.published_parent_cache_digest()
    assert g.published_parent_cache_digest() in (
        "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d",
        "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97",
    )


@pytest.mark.parametrize("proof_id", [1, 6])
def test_parent_cache_digest_8mib(proof_id):
    # published digests (parent_cache.json): 8 MiB V1 "a76604f2...", V1_1 "03cd1356..."
    g = StackedGraph.for_proof(proof_id)
    assert parent_cache_digest(g.parents_all()) == g.published_parent_cache_digest()


@pytest.mark.parametrize("api", [P.API_V1_0_0, P.API_V1_1_0])
def test_parents_match_reference_and_structure(api):
    # kernel vs the slow pure-Python rule (hashlib BLAKE2b); structural rules of drgraph.rs's tests
    # (graph_bucket_aux): nodes 0 and 1 all-zero, no self reference, predecessor first (V1_1) / last (V1_0)
    for n in (4, 16, 256, 2048):
        g = StackedGraph(n, bytes([5 if api != P.API_V1_0_0 else 0]) + bytes(31), api)
        pa = g.parents_all()
        assert not pa[:2, :6].any()
        for v in range(1, n):
            assert v not in pa[v, :6]
            assert pa[v, 0 if api != P.API_V1_0_0 else 5] == (v - 1 if v > 1 else 0)
        assert pa.max() < n
        for v in sorted({0, 1, 2, 3, n // 2, n - 1}):
            assert list(pa[v]) == parents_reference(g, v)
        assert list(pa[n - 1]) == g.parents(n - 1)


def test_expander_parents_use_high_bits_64gib():
    # graph.rs test_high_parent_bits: with 2^31 nodes (64 GiB) and porep id 5 (u64 LE), one of the
    # first 3 nodes' expander parents is >= 2^29 (no u32 truncation in API 1.1+).
    porep = struct.pack("<Q", 5) + bytes(24)
    g = StackedGraph(1 << 31, porep, P.API_V1_2_0)
    assert any(p >= 1 << 29 for v in range(3) for p in g.expanded_parents(v))


# --------------------------------------------------------------------------------------------- labels

# storage-proofs-porep/src/stacked/vanilla/create_label/multi.rs test_create_labels: replica id [9; 32],
# 11 layers, "sector_size" 2048 / 4096 passed as node counts' byte sizes (64 / 128 nodes); the expected
# value is the last node's label of layer 11, as Fr::from_u64s_le limbs (its to_repr = the label bytes).
LABEL_VECTORS = [
    (64, bytes(32), P.API_V1_0_0, (0xD3FAA96B9A0FBA04, 0xEA81A283D106485E, 0xE3D51B9AFA5AC2B3, 0x0462F4F4F1A68D37)),
    (128, bytes(32), P.API_V1_0_0, (0x7E191E52C4A8DA86, 0x5AE8A1C9E6FAC148, 0xCE239F3B88A894B8, 0x234C00D1DC1D53BE)),
    (64, bytes([123]) * 32, P.API_V1_1_0, (0xABB3F38BB70DEFCF, 0x777A2E4D7769119F, 0x3448959D495490BC, 0x06021188C7A71CB5)),
    (128, bytes([123]) * 32, P.API_V1_1_0, (0x22AB81CF68C4676D, 0x7A77A82FC7C9C189, 0xC6C03D32C1E42D23, 0x0F777C18CC2C55BD)),
]


@pytest.mark.parametrize(("nodes", "porep", "api", "limbs"), LABEL_VECTORS)
def test_create_labels_published_last_label(nodes, porep, api, limbs):
    replica_id = bytes([9]) * 32
    pa = StackedGraph(nodes, porep, api).parents_all()
    layers = create_labels(replica_id, pa, 11)
    assert len(layers) == 11
    last = labels_to_bytes(layers[-1])[-1].tobytes()
    assert last == struct.pack("<4Q", *limbs)
    # every label of layers 1 and 2 against the hashlib reference, and the byte round trip
    b1, b2 = labels_to_bytes(layers[0]), labels_to_bytes(layers[1])
    for v in range(nodes):
        assert label_reference(replica_id, 1, v, pa[v], b1, None) == b1[v].tobytes()
        assert label_reference(replica_id, 2, v, pa[v], b2, b1) == b2[v].tobytes()
    assert np.array_equal(labels_from_bytes(b2), layers[1])
    assert all(int(b[31]) < 0x40 for b in b2)
