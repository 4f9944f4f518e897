"""scripts/check_sass.py on small hand-written SASS listings (the real cubins are checked on a machine
with nvdisasm): the uniform-register hazard is found, and the kernel prologue that sets the register is not a clobber."""

from __future__ import annotations

from conftest import load_script

check_sass = load_script("check_sass")

KERNEL = """
.text.k:
        /*0000*/                   R2UR UR10, R1 ;
        /*0010*/                   CALL.REL.NOINC `($k$add) ;
        /*0020*/                   EXIT ;
$k$sqr:
        /*0030*/                   UMOV UR10, URZ ;
        /*0040*/                   RET.REL.NODEC R2 `(k) ;
$k$add:
        /*0050*/                   UIADD3 UR14, -UR5, UR10, URZ ;
        /*0060*/                   CALL.REL.NOINC `($k$sqr) ;
        /*0070*/                   CALL.REL.NOINC `($k$dbl) ;
        /*0080*/                   RET.REL.NODEC R2 `(k) ;
$k$dbl:
        /*0090*/                   IADD3 R5, -R5, UR10, RZ ;
        /*00a0*/                   LDL R54, [R5+0x64] ;
        /*00b0*/                   RET.REL.NODEC R6 `(k) ;
"""


def test_a_sibling_that_writes_the_entry_register_is_reported():
    found = check_sass.hazards(KERNEL)
    assert any(line.startswith("k: dbl reads UR10") and "sqr" in line for line in found), found
    assert any(line.startswith("k: add reads UR10") for line in found), found


def test_the_kernel_prologue_setting_the_register_is_not_reported():
    sass = KERNEL.replace("        /*0030*/                   UMOV UR10, URZ ;\n", "")
    assert check_sass.hazards(sass) == []
