"""Filecoin commitments (cuzk.filecoin): fr32 padding, zero-subtree roots, CommP, CommD and their CIDs,
bit-exact with Filecoin's published vectors; and the ``cuzk commp`` / ``cuzk commd`` verbs.

Vector sources (each test names its own):
- go-commp-utils, commit 6119fcb7b0c888488efb77b135fed9f62ad6d21e: ``zerocomm/zerocomm.go`` (the zero-piece
  commitments 128 B .. 2 TiB), ``commp_test.go`` (TestZeroPadding), ``commd_test.go`` (a mainnet 32 GiB sector).
- go-fil-commp-hashhash, commit dd5ec51bbf4394d43358391d5756472951556e60: ``testdata/zero.txt`` and
  ``testdata/0xCC.txt`` (lotus ClientCalcCommP of files of N zero / 0xCC bytes, made by ``testdata/gen.sh``).
- go-fil-commcid, commit dc003f4774d39c1ab74ad32d2749084c980dbdc0: ``commcid_test.go`` (empty 32 GiB / 64 GiB
  piece CIDs).
- rust-fil-proofs, commit 87348a749d80447d00c595af834a8ed73c09e4d9: ``filecoin-proofs/tests/pieces.rs``
  (test_compute_comm_d_empty, test_verify_padded_pieces).
- lotus, ``cmd/lotus-bench/simple.go`` (commit f458606e351f6c3cc8ac7a0a3dae22d1fe2398b4): the empty 2 KiB
  sector's CommD printed by ``lotus-bench simple addpiece --sector-size 2K /dev/zero``; lotus ``itests``
  (a pre-commit's SealedCID literal) for a sealed CID.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from cuzk import CuzkError
from cuzk.filecoin import FilecoinError
from cuzk.filecoin import commitments as C
from cuzk.filecoin.cid import (
    cid_to_commitment,
    commitment_to_cid,
    piece_cid,
    piece_commitment_from_cid,
    sealed_cid,
    sealed_commitment_from_cid,
)
from cuzk.filecoin.fr32 import fr32_pad, fr32_unpad, pad_blocks, padded_size, unpad_blocks, unpadded_size
from cuzk.filecoin.params import uvarint

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# go-commp-utils zerocomm/zerocomm.go PieceComms: entry i is the all-zero piece of 2^(i+7) padded bytes
GO_ZEROCOMM = [
    "3731bb99ac689f66eef5973e4a94da188f4ddcae580724fc6f3fd60dfd488333",
    "642a607ef886b004bf2c1978463ae1d4693ac0f410eb2d1b7a47fe205e5e750f",
    "57a2381a28652bf47f6bef7aca679be4aede5871ab5cf3eb2c08114488cb8526",
    "1f7ac9595510e09ea41c460b176430bb322cd6fb412ec57cb17d989a4310372f",
    "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833",
    "08c47b38ee13bc43f41b915c0eed9911a26086b3ed62401bf9d58b8d19dff624",
    "b2e47bfb11facd941f62af5c750f3ea5cc4df517d5c4f16db2b4d77baec1a32f",
    "f9226160c8f927bfdcc418cdf203493146008eaefb7d02194d5e548189005108",
    "2c1a964bb90b59ebfe0f6da29ad65ae3e417724a8f7c11745a40cac1e5e74011",
    "fee378cef16404b199ede0b13e11b624ff9d784fbbed878d83297e795e024f02",
    "8e9e2403fa884cf6237f60df25f83ee40dca9ed879eb6f6352d15084f5ad0d3f",
    "752d9693fa167524395476e317a98580f00947afb7a30540d625a9291cc12a07",
    "7022f60f7ef6adfa17117a52619e30cea82c68075adf1c667786ec506eef2d19",
    "d99887b973573a96e11393645236c17b1f4c7034d723c7a99f709bb4da61162b",
    "d0b530dbb0b4f25c5d2f2a28dfee808b53412a02931f18c499f5a254086b1326",
    "84c0421ba0685a01bf795a2344064fe424bd52a9d24377b394ff4c4b4568e811",
    "65f29e5d98d246c38b388cfc06db1f6b021303c5a289000bdce832a9c3ec421c",
    "a2247508285850965b7e334b3127b0c042b1d046dc54402137627cd8799ce13a",
    "dafdab6da9364453c26d33726b9fefe343be8f81649ec009aad3faff50617508",
    "d941d5e0d6314a995c33ffbd4fbe69118d73d4e5fd2cd31f0f7c86ebdd14e706",
    "514c435c3d04d349a5365fbd59ffc713629111785991c1a3c53af22079741a2f",
    "ad06853969d37d34ff08e09f56930a4ad19a89def60cbfee7e1d3381c1e71c37",
    "39560e7b13a93b07a243fd2720ffa7cb3e1d2e505ab3629e79f46313512cda06",
    "ccc3c012f5b05e811a2bbfdd0f6833b84275b47bf229c0052a82484f3c1a5b3d",
    "7df29b69773199e8f2b40b77919d048509eed768e2c7297b1f1437034fc3c62c",
    "66ce05a3667552cf45c02bcc4e8392919bdeac35de2ff56271848e9f7b675107",
    "d8610218425ab5e95b1ca6239d29a2e420d706a96f373e2f9c9a91d759d19b01",
    "6d364b1ef846441a5a4a68862314acc0a46f016717e53443e839eedf83c2853c",
    "077e5fde35c50a9303a55009e3498a4ebedff39c42b710b730d8ec7ac7afa63e",
    "e64005a6bfe3777953b8ad6ef93f0fca1049b2041654f2a411f7702799cece02",
    "259d3d6b1f4d876d1185e1123af6f5501af0f67cf15b5216255b7b178d12051d",
    "3f9a4d411da4ef1b36f35ff0a195ae392ab23fee7967b7c41b03d1613fc29239",
    "fe4ef328c61aa39cfdb2484eaa32a151b1fe3dfd1f96dd8c9711fd86d6c58113",
    "f55d68900e2d8381eccb8164cb9976f24b2de0dd61a31b97ce6eb23850d5e819",
    "aaaa8c4cb40aacee1e02dc65424b2a6c8e99f803b72f7929c4101d7fae6bff32",
]

# go-fil-commp-hashhash testdata/*.txt: payload bytes, padded piece size, piece CID (lotus ClientCalcCommP)
HASHHASH_ZERO = """
96,128,baga6ea4seaqdomn3tgwgrh3g532zopskstnbrd2n3sxfqbze7rxt7vqn7veigmy
126,128,baga6ea4seaqdomn3tgwgrh3g532zopskstnbrd2n3sxfqbze7rxt7vqn7veigmy
127,128,baga6ea4seaqdomn3tgwgrh3g532zopskstnbrd2n3sxfqbze7rxt7vqn7veigmy
192,256,baga6ea4seaqgiktap34inmaex4wbs6cghlq5i2j2yd2bb2zndn5ep7ralzphkdy
253,256,baga6ea4seaqgiktap34inmaex4wbs6cghlq5i2j2yd2bb2zndn5ep7ralzphkdy
254,256,baga6ea4seaqgiktap34inmaex4wbs6cghlq5i2j2yd2bb2zndn5ep7ralzphkdy
255,512,baga6ea4seaqfpirydiugkk7up5v666wkm6n6jlw6lby2wxht5mwaqekerdfykjq
256,512,baga6ea4seaqfpirydiugkk7up5v666wkm6n6jlw6lby2wxht5mwaqekerdfykjq
384,512,baga6ea4seaqfpirydiugkk7up5v666wkm6n6jlw6lby2wxht5mwaqekerdfykjq
507,512,baga6ea4seaqfpirydiugkk7up5v666wkm6n6jlw6lby2wxht5mwaqekerdfykjq
508,512,baga6ea4seaqfpirydiugkk7up5v666wkm6n6jlw6lby2wxht5mwaqekerdfykjq
509,1024,baga6ea4seaqb66wjlfkrbye6uqoemcyxmqylwmrm235uclwfpsyx3ge2imidoly
512,1024,baga6ea4seaqb66wjlfkrbye6uqoemcyxmqylwmrm235uclwfpsyx3ge2imidoly
768,1024,baga6ea4seaqb66wjlfkrbye6uqoemcyxmqylwmrm235uclwfpsyx3ge2imidoly
1015,1024,baga6ea4seaqb66wjlfkrbye6uqoemcyxmqylwmrm235uclwfpsyx3ge2imidoly
1016,1024,baga6ea4seaqb66wjlfkrbye6uqoemcyxmqylwmrm235uclwfpsyx3ge2imidoly
1017,2048,baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy
1024,2048,baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy
"""

HASHHASH_0XCC = """
96,128,baga6ea4seaqhwcjhi4krhl3ht6dewnwevkpxbepxy7p7onwgz65t52typbsysby
126,128,baga6ea4seaqapbh46gdnszvb7fcinevsy5bzg3b4higkh7groptswf6zas6jamy
127,128,baga6ea4seaqmfldjtozgne6adk7eve2vdxte7vzlivae7nzsbrawobo546zkijq
192,256,baga6ea4seaqkx7m2s6r4zahtlbwrs5ryvemkclwfp7nijopdd5swpdnxzjf7wkq
253,256,baga6ea4seaql6ldbyafhiecr36xba5tufreyo4km2ts3lfknhl2zogp3aztxijy
254,256,baga6ea4seaqkixbzz75uys2pcjbrbdilgjhmum72qm4xphrwav2iyel5oat4aka
255,512,baga6ea4seaqg7celu5y2iwbi2ra5koygvotxtzr5lj6vzvxi6gfub6mpa6niwpi
256,512,baga6ea4seaqi7c3dnwkqysqh4lpkz5jaxz2d2f5bvo3ttu2hnfmdewhcoji56na
384,512,baga6ea4seaqhexlmnzbarsbdbdahs7e36dkq5vkdwsrttehoakrif5wiqme36lq
507,512,baga6ea4seaqenvh5mcy5cjqwsbubbpczprkk2onwvfjd2743zkqh6ofuzkatwey
508,512,baga6ea4seaqb6ckbupixkhwp7thgb52f4en222boppajkqk7gaomkpof3lh4cei
509,1024,baga6ea4seaqdzbeaexq6gpbqh2tlnbz5mm5neap2kejsketkogzd6x2dx7dzkii
512,1024,baga6ea4seaqojaa522sjqms2wipasjbxnjgytunsgp52tgrfcofj73f7q7ou6hy
768,1024,baga6ea4seaqb6xvxaybzp6vslujjiwvgt23ckrwt7y53eddy5qmc6csnc37lwpi
1015,1024,baga6ea4seaqmgiyjcutwgo6glks2mogixs6mb4sbehto6uzienucfx23wbtkica
1016,1024,baga6ea4seaqjxgfdkdu37aryhg7bqqiwizj5f6ugasftgeocabwnj4cxkgisaoq
1017,2048,baga6ea4seaqf3n5ob5qonkwnxfcbjzftsagbnrjfzualqvzhcylz46b7sgz6wmi
1024,2048,baga6ea4seaqdlpnhgsndrgjeu4p46hahlsr4lybg6du4d56ooppdpxhcofxeuoi
"""


def _vectors(text: str) -> list[tuple[int, int, str]]:
    rows = [ln.split(",") for ln in text.split() if ln.strip()]
    return [(int(a), int(b), c) for a, b, c in rows]


# ------------------------------------------------------------------------------------------- reference


def ref_fr32(data: bytes) -> bytes:
    """Bit-by-bit definition: each 127-byte block is a 1016-bit little-endian integer cut into four
    254-bit nodes, each written as 32 little-endian bytes."""
    out = bytearray()
    for k in range(0, len(data), 127):
        x = int.from_bytes(data[k : k + 127], "little")
        for q in range(4):
            out += ((x >> (254 * q)) & ((1 << 254) - 1)).to_bytes(32, "little")
    return bytes(out)


def h2(a: bytes, b: bytes) -> bytes:
    d = bytearray(hashlib.sha256(a + b).digest())
    d[31] &= 0x3F
    return bytes(d)


def ref_commp(data: bytes, padded: int) -> bytes:
    """Naive CommP: zero-fill to the piece, fr32-pad, hash every level with hashlib."""
    unpadded = padded // 128 * 127
    nodes = ref_fr32(data + bytes(unpadded - len(data)))
    while len(nodes) > 32:
        nodes = b"".join(h2(nodes[i : i + 32], nodes[i + 32 : i + 64]) for i in range(0, len(nodes), 64))
    return nodes


# ------------------------------------------------------------------------------------------------ fr32


def test_fr32_matches_bit_definition_and_round_trips():
    rng = np.random.default_rng(18)
    for blocks in [0, 1, 2, 3, 7, 16, 33]:
        d = rng.integers(0, 256, 127 * blocks, dtype=np.uint8).tobytes()
        p = fr32_pad(d)
        assert p == ref_fr32(d), blocks
        assert len(p) == padded_size(len(d)) and unpadded_size(len(p)) == len(d)
        assert fr32_unpad(p) == d
        # every node is below 2^254
        assert all(b & 0xC0 == 0 for b in p[31::32])
    # a large buffer at once (vectorized path), and the numpy block API with an out= buffer
    big = rng.integers(0, 256, 127 * 20000, dtype=np.uint8)
    out = np.empty((20000, 128), dtype=np.uint8)
    p = pad_blocks(big.reshape(-1, 127), out=out)
    assert p is out
    assert p[:3].tobytes() == ref_fr32(big[: 3 * 127].tobytes())
    assert np.array_equal(unpad_blocks(p).reshape(-1), big)


@pytest.mark.parametrize("bit", [0, 7, 8, 253, 254, 255, 507, 508, 761, 762, 1015])
def test_fr32_known_bit_positions(bit):
    """Input bit b (bit b%8 of byte b//8) lands in node b//254 at bit b%254."""
    d = bytearray(127)
    d[bit // 8] = 1 << (bit % 8)
    p = fr32_pad(bytes(d))
    node, nbit = divmod(bit, 254)
    want = bytearray(128)
    want[32 * node + nbit // 8] = 1 << (nbit % 8)
    assert p == bytes(want)
    assert fr32_unpad(p) == bytes(d)


def test_fr32_sizes_and_errors():
    assert padded_size(127) == 128 and padded_size(127 * 2**28) == 2**35
    assert unpadded_size(32 * GiB) == 32 * GiB // 128 * 127
    for bad in (1, 126, 128, -127):
        with pytest.raises(FilecoinError, match="multiple of 127"):
            padded_size(bad)
    for bad in (1, 127, 129):
        with pytest.raises(FilecoinError, match="multiple of 128"):
            unpadded_size(bad)
    with pytest.raises(FilecoinError, match="not a multiple of 127"):
        fr32_pad(b"x" * 100)
    with pytest.raises(FilecoinError, match="not a multiple of 128"):
        fr32_unpad(b"x" * 100)
    bad = bytearray(128)
    bad[63] = 0x80  # top bit of node 1
    with pytest.raises(FilecoinError, match="top two bits"):
        fr32_unpad(bytes(bad))
    assert fr32_unpad(bytes(bad), strict=False) == bytes(127)


# ----------------------------------------------------------------------------------------- zero comms


def test_zero_comms_every_size_against_go_commp_utils():
    """go-commp-utils zerocomm.PieceComms: all 35 sizes from 128 B to 2 TiB (including 2 KiB, 512 MiB,
    32 GiB and 64 GiB sectors)."""
    assert len(GO_ZEROCOMM) == 35
    for i, want in enumerate(GO_ZEROCOMM):
        padded = 1 << (i + 7)
        assert C.zero_comm(i + 2).hex() == want, padded
        assert C.zero_piece_comm(padded).hex() == want, padded
        # as CIDs: the encoding round-trips and is the unsealed kind
        c = piece_cid(bytes.fromhex(want))
        assert c.startswith("baga6ea4seaq")
        assert cid_to_commitment(c) == ("unsealed", bytes.fromhex(want))
    assert C.zero_comm(0) == bytes(32)
    assert C.zero_comm(1) == h2(bytes(32), bytes(32))
    with pytest.raises(FilecoinError, match="level"):
        C.zero_comm(C.MAX_LEVEL + 1)


def test_zero_piece_cids_published():
    # go-fil-commcid commcid_test.go ("empty32GiB", "empty64GiB")
    assert piece_cid(C.zero_piece_comm(32 * GiB)) == "baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq"
    assert piece_cid(C.zero_piece_comm(64 * GiB)) == "baga6ea4seaqomqafu276g53zko4k23xzh4h4uecjwicbmvhsuqi7o4bhthhm4aq"
    # lotus cmd/lotus-bench/simple.go: `lotus-bench simple addpiece --sector-size 2K /dev/zero` prints this
    assert piece_cid(C.zero_piece_comm(2 * KiB)) == "baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy"
    # go-fil-commp-hashhash testdata/zero.txt: files of zeros up to 1024 bytes
    for n, padded, want in _vectors(HASHHASH_ZERO):
        comm, got_padded, payload = C.comm_p(bytes(n))
        assert (piece_cid(comm), got_padded, payload) == (want, padded, n)
        assert comm == C.zero_piece_comm(padded)


# ----------------------------------------------------------------------------------------------- CommP


def test_commp_published_pieces():
    # go-fil-commp-hashhash testdata/0xCC.txt: files of N bytes 0xCC (gen.sh: dd if=/dev/zero | sed s/\x00/\xCC/g)
    for n, padded, want in _vectors(HASHHASH_0XCC):
        comm, got_padded, _ = C.comm_p(b"\xcc" * n)
        assert (piece_cid(comm), got_padded) == (want, padded), n
    # go-commp-utils commp_test.go TestZeroPadding: a sentence zero-filled to 127 bytes
    data = b"i am the biggest cat, what do you think about that"
    data = data + bytes(127 - len(data))
    comm, padded, _ = C.comm_p(data)
    assert piece_cid(comm) == "baga6ea4seaqozp3abki6vgdf7ztbipcycmxfyt2o64cpuyvdkczsjxsg7bqmioi"
    assert padded == 128
    # ... and the same data in a piece 4x as large equals zero-padding the commitment (ZeroPadPieceCommitment)
    big, padded4, _ = C.comm_p(data, piece_size=512)
    assert padded4 == 512
    assert big == h2(h2(comm, C.zero_comm(2)), C.zero_comm(3))


def test_commp_native_matches_naive_across_chunks(monkeypatch):
    """The streaming, chunked, numba/libcrypto path equals the naive tree: chunk boundaries (a tiny
    chunk size here), partial last chunks, sizes that are not multiples of 127."""
    rng = np.random.default_rng(5)
    monkeypatch.setattr(C, "CHUNK_BLOCKS", 8)
    for n in [1, 127, 128, 1016, 1017, 127 * 8, 127 * 8 + 1, 127 * 24, 127 * 40 + 55, 5000]:
        d = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        comm, padded, payload = C.comm_p(d)
        assert payload == n and padded == C.piece_padded_size(n)
        assert comm == ref_commp(d, padded), n
    monkeypatch.undo()
    # sizes where the native kernels run (> NATIVE_MIN hashes per level), file and bytes input agree
    d = rng.integers(0, 256, 127 * 9000 + 13, dtype=np.uint8).tobytes()
    comm, padded, _ = C.comm_p(d)
    assert padded == 2 * MiB
    assert comm == ref_commp(d, padded)
    assert C.comm_p(io.BytesIO(d))[0] == comm
    assert C.backend() in ("libcrypto", "hashlib")


def test_commp_native_chunks_in_threads(monkeypatch):
    """Several full chunks large enough for the native kernels, hashed by 3 threads, then a partial one."""
    monkeypatch.setattr(C, "CHUNK_BLOCKS", C.NATIVE_MIN // 2)
    monkeypatch.setenv("CUZK_COMMP_THREADS", "3")
    d = np.random.default_rng(11).integers(0, 256, 127 * C.NATIVE_MIN * 2 - 1000, dtype=np.uint8).tobytes()
    comm, padded, _ = C.comm_p(io.BytesIO(d))
    assert comm == ref_commp(d, padded)


def test_commp_native_levels_equal_hashlib():
    rng = np.random.default_rng(9)
    nodes = rng.integers(0, 256, 2 * C.NATIVE_MIN * 32 + 64 * 3, dtype=np.uint8)
    assert np.array_equal(C.hash_level(nodes), C._hash_level_py(nodes, nodes.size // 64))
    zeros = np.zeros(127 * 8192, dtype=np.uint8)  # an all-zero 1 MiB piece through the native leaf kernel
    assert C.comm_p(zeros)[0] == bytes.fromhex(GO_ZEROCOMM[20 - 7])


def test_commp_large_sparse_piece_is_fast(tmp_path):
    """A 32 GiB piece whose data is a small head: zero subtrees cost one hash per level."""
    head = bytes(range(256)) * 4
    small, p_small, _ = C.comm_p(head)
    assert p_small == 2 * KiB
    t = time.perf_counter()
    comm, padded, payload = C.comm_p(head, piece_size=32 * GiB)
    assert time.perf_counter() - t < 0.5
    want = small
    for level in range(6, 30):
        want = h2(want, C.zero_comm(level))
    assert (comm, padded, payload) == (want, 32 * GiB, len(head))
    f = tmp_path / "head.bin"
    f.write_bytes(head)
    assert C.comm_p(str(f), piece_size=32 * GiB)[0] == want
    assert C.comm_p(f)[0] == small


def test_commp_errors(tmp_path):
    with pytest.raises(FilecoinError, match="no such file"):
        C.comm_p(str(tmp_path / "missing"))
    with pytest.raises(FilecoinError, match="directory"):
        C.comm_p(str(tmp_path))
    with pytest.raises(FilecoinError, match="power of two"):
        C.comm_p(b"x", piece_size=1000)
    with pytest.raises(FilecoinError, match="does not fit"):
        C.comm_p(b"x" * 128, piece_size=128)
    assert C.piece_padded_size(0) == 128 and C.piece_padded_size(127) == 128
    assert C.piece_padded_size(128) == 256 and C.piece_padded_size(32 * GiB // 128 * 127) == 32 * GiB


# ----------------------------------------------------------------------------------------------- CommD

# go-commp-utils commd_test.go TestGenerateUnsealedCID: mainnet sector f01392893:139074 (32 GiB), its ten
# deal pieces in order (the test appends 8 GiB and 16 GiB zero pieces; comm_d fills the sector itself)
MAINNET_PIECES = [
    ("baga6ea4seaqknzm22isnhsxt2s4dnw45kfywmhenngqq3nc7jvecakoca6ksyhy", 256 * MiB),
    ("baga6ea4seaqnq6o5wuewdpviyoafno4rdpqnokz6ghvg2iyeyfbqxgcwdlj2egi", 1024 * MiB),
    ("baga6ea4seaqpixk4ifbkzato3huzycj6ty6gllqwanhdpsvxikawyl5bg2h44mq", 512 * MiB),
    ("baga6ea4seaqaxwe5dy6nt3ko5tngtmzvpqxqikw5mdwfjqgaxfwtzenc6bgzajq", 512 * MiB),
    ("baga6ea4seaqpy33nbesa4d6ot2ygeuy43y4t7amc4izt52mlotqenwcmn2kyaai", 1024 * MiB),
    ("baga6ea4seaqphvv4x2s2v7ykgc3ugs2kkltbdeg7icxstklkrgqvv72m2v3i2aa", 256 * MiB),
    ("baga6ea4seaqf5u55znk6jwhdsrhe37emzhmehiyvjxpsww274f6fiy3h4yctady", 512 * MiB),
    ("baga6ea4seaqa3qbabsbmvk5er6rhsjzt74beplzgulthamm22jue4zgqcuszofi", 1024 * MiB),
    ("baga6ea4seaqiekvf623muj6jpxg6vsqaikyw3r4ob5u7363z7zcaixqvfqsc2ji", 256 * MiB),
    ("baga6ea4seaqhsewv65z2d4m5o4vo65vl5o6z4bcegdvgnusvlt7rao44gro36pi", 512 * MiB),
]
MAINNET_COMMD = "baga6ea4seaqiw3gbmstmexb7sqwkc5r23o3i7zcyx5kr76pfobpykes3af62kca"


def test_commd_mainnet_sector():
    assert piece_cid(C.comm_d(MAINNET_PIECES, 32 * GiB)) == MAINNET_COMMD
    explicit = MAINNET_PIECES + [(C.zero_piece_comm(8 * GiB), 8 * GiB), (C.zero_piece_comm(16 * GiB), 16 * GiB)]
    assert piece_cid(C.comm_d(explicit, 32 * GiB)) == MAINNET_COMMD


def test_commd_empty_sectors():
    # rust-fil-proofs tests/pieces.rs test_compute_comm_d_empty: 2048- and 128-byte sectors
    assert list(C.comm_d([], 2048)) == [
        252, 126, 146, 130, 150, 229, 22, 250, 173, 233, 134, 178, 143, 146, 212, 74,
        79, 36, 185, 53, 72, 82, 35, 55, 106, 121, 144, 39, 188, 24, 248, 51,
    ]  # fmt: skip
    assert C.comm_d([], 128).hex() == "3731bb99ac689f66eef5973e4a94da188f4ddcae580724fc6f3fd60dfd488333"
    assert piece_cid(C.comm_d([], 32 * GiB)) == "baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq"
    assert piece_cid(C.comm_d([], 64 * GiB)) == "baga6ea4seaqomqafu276g53zko4k23xzh4h4uecjwicbmvhsuqi7o4bhthhm4aq"
    # a sector holding one full-size piece: CommD = CommP
    assert C.comm_d([(b"\x07" * 32, 2048)], 2048) == b"\x07" * 32


def test_commd_padded_pieces_rust_fil_proofs():
    """rust-fil-proofs tests/pieces.rs test_verify_padded_pieces: pieces A(1) B(4) C(2) D(8) (sizes in
    127-byte units, commitments [1;32] .. [4;32]) in a 32*128-byte sector; the expected tree, with the zero
    pieces P(1) that alignment inserts, written out node by node as in that test."""
    a, b, c, d = (bytes([i]) * 32 for i in (1, 2, 3, 4))
    p = C.zero_comm(2)  # the 128-byte zero piece
    layer1 = [h2(a, p), h2(p, p), b, c, h2(p, p), h2(p, p), h2(p, p), d, h2(p, p), h2(p, p), h2(p, p), h2(p, p)]
    l1 = layer1
    layer2 = [h2(l1[0], l1[1]), l1[2], h2(l1[3], l1[4]), h2(l1[5], l1[6]), l1[7], h2(l1[8], l1[9]), h2(l1[10], l1[11])]
    l2 = layer2
    layer3 = [h2(l2[0], l2[1]), h2(l2[2], l2[3]), l2[4], h2(l2[5], l2[6])]
    want = h2(h2(layer3[0], layer3[1]), h2(layer3[2], layer3[3]))
    pieces = [(a, 128), (b, 4 * 128), (c, 2 * 128), (d, 8 * 128)]
    assert C.comm_d(pieces, 32 * 128) == want
    # test_verify_simple_pieces: four 128-byte pieces fill a 512-byte sector exactly
    e, f = h2(a, b), h2(c, d)
    assert C.comm_d([(a, 128), (b, 128), (c, 128), (d, 128)], 512) == h2(e, f)
    assert C.comm_d([(e, 256), (c, 128), (d, 128)], 512) == h2(e, f)


def test_commd_errors():
    z = C.zero_comm(2)
    with pytest.raises(FilecoinError, match="sector size 3000"):
        C.comm_d([], 3000)
    with pytest.raises(FilecoinError, match="piece 1: size 100: not a power of two >= 128"):
        C.comm_d([(z, 100)], 2048)
    with pytest.raises(FilecoinError, match="piece 2: size 192"):
        C.comm_d([(z, 128), (z, 192)], 2048)
    with pytest.raises(FilecoinError, match=r"piece 1 \(4096 bytes at offset 0\) does not fit the sector of 2048"):
        C.comm_d([(z, 4096)], 2048)
    # 128, then 1024 aligned to offset 1024, then a third 1024 would start at 2048: past the end
    with pytest.raises(FilecoinError, match=r"piece 3 \(1024 bytes at offset 2048\) does not fit"):
        C.comm_d([(z, 128), (z, 1024), (z, 1024)], 2048)
    with pytest.raises(FilecoinError, match="piece 1: commitment is 31 bytes"):
        C.comm_d([(z[:31], 128)], 2048)
    with pytest.raises(FilecoinError, match="sealed-sector"):
        C.comm_d([(sealed_cid(z), 128)], 2048)


# ------------------------------------------------------------------------------------------------- CIDs

# lotus itests: a pre-commit's SealedCID literal (a CommR CID)
LOTUS_SEALED = "bagboea4b5abcatlxechwbp7kjpjguna6r6q7ejrhe6mdp3lf34pmswn27pkkiekz"


def test_cid_round_trips():
    rng = np.random.default_rng(3)
    for _ in range(20):
        comm = rng.integers(0, 256, 32, dtype=np.uint8).tobytes()
        c = piece_cid(comm)
        assert c.startswith("baga6ea4seaq") and len(c) == 64
        assert piece_commitment_from_cid(c) == comm
        assert cid_to_commitment(c.upper()) == ("unsealed", comm)  # multibase base32 upper case, prefix 'B'
        s = sealed_cid(comm)
        assert s.startswith("bagboea4b5abc")
        assert sealed_commitment_from_cid(s) == comm
        assert commitment_to_cid(comm, "sealed") == s
    kind, commr = cid_to_commitment(LOTUS_SEALED)
    assert kind == "sealed" and sealed_cid(commr) == LOTUS_SEALED
    # raw CIDv1 bytes of a piece CID: 01 81e203 922020 <32 bytes> (as Filecoin's PDP contracts embed them)
    import base64

    body = piece_cid(C.zero_comm(6))[1:].upper()
    raw = base64.b32decode(body + "=" * (-len(body) % 8))
    assert raw.hex() == "0181e203922020" + C.zero_comm(6).hex()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "empty"),
        ("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "CIDv0"),
        ("zb2rhe5P4gXftAwvA4eXQ5HJwsER2owDyS9sKaQRRVQPn93bA", "base32"),
        ("b!!!!", "not valid base32"),
        # CIDv1 dag-pb sha2-256 (an IPFS file): wrong codec
        ("bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi", "codec 0x70 is not a Filecoin commitment"),
        # CIDv1 raw sha2-256
        ("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", "codec 0x55"),
        ("baga6ea4sea", "truncated"),
    ],
)
def test_cid_rejections(text, needle):
    with pytest.raises(FilecoinError, match=needle):
        cid_to_commitment(text)


def test_cid_wrong_hash_and_length():

    def raw_cid(codec, mh, digest):
        raw = uvarint(1) + uvarint(codec) + uvarint(mh) + uvarint(len(digest)) + digest
        return "b" + __import__("base64").b32encode(raw).decode().lower().rstrip("=")

    with pytest.raises(FilecoinError, match="multihash 0x12 with codec fil-commitment-unsealed, expected 0x1012"):
        cid_to_commitment(raw_cid(0xF101, 0x12, bytes(32)))
    with pytest.raises(FilecoinError, match="expected 0xb401 poseidon"):
        cid_to_commitment(raw_cid(0xF102, 0x1012, bytes(32)))
    with pytest.raises(FilecoinError, match="digest of 31 bytes"):
        cid_to_commitment(raw_cid(0xF101, 0x1012, bytes(31)))
    with pytest.raises(FilecoinError, match="expected a piece CID"):
        piece_commitment_from_cid(LOTUS_SEALED)
    with pytest.raises(FilecoinError, match="expected a sealed-sector CID"):
        sealed_commitment_from_cid(MAINNET_COMMD)
    with pytest.raises(FilecoinError, match="32"):
        piece_cid(b"short")
    with pytest.raises(FilecoinError, match="kind"):
        commitment_to_cid(bytes(32), "bogus")
    assert issubclass(FilecoinError, CuzkError)


# -------------------------------------------------------------------------------------------------- CLI


def cuzk(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUZK_COMMP_BACKEND=os.environ.get("CUZK_COMMP_BACKEND", ""))
    return subprocess.run([sys.executable, "-m", "cuzk", *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


def assert_one_line_error(out: subprocess.CompletedProcess, *needles: str) -> None:
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("cuzk: error: ")
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_cli_commp(tmp_path):
    f = tmp_path / "cat.txt"
    data = b"i am the biggest cat, what do you think about that"
    f.write_bytes(data + bytes(127 - len(data)))
    out = cuzk("commp", f)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "CID: baga6ea4seaqozp3abki6vgdf7ztbipcycmxfyt2o64cpuyvdkczsjxsg7bqmioi",
        "Piece size: 128 (128 B)",
    ]
    out = cuzk("commp", f, "--json", "--piece-size", "32GiB")
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert j["piece_size"] == 32 * GiB and j["payload_size"] == 127 and j["cid"].startswith("baga6ea4seaq")
    assert_one_line_error(cuzk("commp", tmp_path / "missing.car"), "missing.car", "no such file")
    assert_one_line_error(cuzk("commp", tmp_path), "is a directory")
    assert_one_line_error(cuzk("commp", f, "--piece-size", "12 parsecs"), "--piece-size", "not a size")
    assert_one_line_error(cuzk("commp", f, "--piece-size", "1000"), "not a power of two")


def test_cli_commd():
    args = [f"{c}:{s // MiB}MiB" for c, s in MAINNET_PIECES]
    out = cuzk("commd", "--sector-size", "32GiB", *args)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"CommD: {MAINNET_COMMD}"
    out = cuzk("commd", "--sector-size", str(2048), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cid"] == "baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy"
    assert_one_line_error(cuzk("commd", "--sector-size", "32GB"), "--sector-size", "not a size")
    assert_one_line_error(cuzk("commd", "--sector-size", "3000"), "sector size 3000")
    assert_one_line_error(cuzk("commd", "--sector-size", "2KiB", "nocolon"), "piece 1", "CID:SIZE")
    assert_one_line_error(cuzk("commd", "--sector-size", "2KiB", "bafyxyz:2KiB"), "bafyxyz")
    assert_one_line_error(cuzk("commd", "--sector-size", "2KiB", f"{LOTUS_SEALED}:2KiB"), "sealed-sector")
    assert_one_line_error(cuzk("commd", "--sector-size", "2KiB", f"{MAINNET_COMMD}:4KiB"), "does not fit")
    assert_one_line_error(cuzk("commd", "--sector-size", "2KiB", f"{MAINNET_COMMD}:lots"), "piece 1", "size")
