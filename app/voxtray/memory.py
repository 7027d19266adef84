"""Give freed heap memory back to the operating system.

glibc keeps memory that onnxruntime and numpy free in its heaps; after an utterance
that is tens of MB of resident memory nobody uses until the next one.
"""

from __future__ import annotations

import ctypes
import functools
import sys

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h
# Blocks this large or larger get their own mapping, unmapped when freed.
LARGE_BLOCK_BYTES = 1 << 20


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):  # not glibc (musl has neither call)
        return None
    return libc


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; False where the C library cannot."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def return_large_blocks() -> bool:
    """Keep large blocks out of the heap for the life of the process, so that freeing
    them gives their memory back at once; False where the C library cannot.

    glibc otherwise raises its threshold for a block of its own mapping to the largest
    block freed so far (up to 32 MiB), after which onnxruntime's arena regions and
    numpy's audio buffers are carved from the heap, where live small blocks pin them:
    ~30 MB that no trim returned after a long utterance. Call it before the models load.
    """
    libc = _glibc()
    return libc is not None and libc.mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES) == 1
