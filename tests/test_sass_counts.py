"""scripts/sass_counts.py on a small hand-written nvdisasm listing (real cubins are counted on a machine
with nvdisasm): instructions per kernel body and per out-of-line function, predicate spills counted."""

from __future__ import annotations

from conftest import load_script

sass_counts = load_script("sass_counts")

LISTING = """
.text.k:
        /*0000*/                   IMAD.WIDE.U32 R2, R4, R5, RZ ;
        /*0010*/              @!P0 CALL.REL.NOINC `($k$mul) ;
        /*0020*/                   EXIT ;
$k$mul:
        /*0030*/                   IMAD.WIDE.U32.X R6, P1, R7, R8, R6, P1 ;
        /*0040*/                   P2R R0, PR, RZ, 0x2 ;
        /*0050*/                   LOP3.LUT R2, R2, 0x40, RZ, 0xfc, !PT ;
        /*0060*/                   RET.REL.NODEC R2 `(k) ;
.text.j:
        /*0000*/                   EXIT ;
"""


def test_counts_split_kernel_bodies_and_functions():
    table = sass_counts.counts(LISTING)
    assert table == {"k": {"(kernel)": (3, 0), "mul": (4, 1)}, "j": {"(kernel)": (1, 0)}}
