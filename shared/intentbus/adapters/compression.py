"""How stored JSON is compressed: zlib, readable by plain ``zlib.decompress``.

A log entry or a stored result is a few KB at most, so a 4 KB window gives the same size as
``zlib.compress(data, 9)``. Memory level 7 (a 16 K-entry hash, 8 K symbols a block) writes the bytes the
default level 8 wrote for the entries the stages write (every one of a bench capture, all under 2.2 KB),
with half its state to allocate and clear: ~30 k fewer instructions an entry, and ~a third less time
(min of repeats on a 2-core VM). Levels 4-6 also write those bytes, in more CPU (more hash collisions);
a longer text may be split into blocks otherwise than level 8 split it, an equally valid stream of about
the same size.
"""

from __future__ import annotations

import zlib

MEMORY_LEVEL = 7


def compressed(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 12, MEMORY_LEVEL)
    return packer.compress(data) + packer.flush()
