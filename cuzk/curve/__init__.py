"""Group arithmetic on the CPU through each curve's point library (:mod:`cuzk.curve.library`), and the
byte encodings of points (:mod:`cuzk.curve.points`)."""

from __future__ import annotations

from ..curves import Curve, all_curves


def curve_of(point) -> Curve:
    """The curve a point-library object (G1, G2 or GT element) belongs to."""
    cls = type(point)
    for c in all_curves():
        if cls.__module__ == c.cpu_library:
            return c
    for c in all_curves():
        lib = c.lib
        if cls in (lib.G1Point, lib.G2Point, lib.GT):
            return c
    raise TypeError(f"{cls.__name__} is not a point of any known curve's library")
