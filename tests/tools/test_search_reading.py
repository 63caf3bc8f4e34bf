"""How ``grep`` reads a matched file to check rg's lines: in blocks, the same lines a whole read gives."""

import os
import random

from pi_daemon.tools.search import BLOCK, TEXT_BYTES, _lines_at


def reference(data: bytes, wanted: set[int]) -> dict[int, tuple[bytes, bool]]:
    lines = data.split(b"\n")
    return {n: (lines[n - 1][:TEXT_BYTES], len(lines[n - 1]) > TEXT_BYTES) for n in wanted if n <= len(lines)}


def test_lines_read_in_blocks_are_the_lines_of_the_whole_file(tmp_path):
    rng = random.Random(30)
    for round_ in range(12):
        sizes = [rng.choice([0, 1, 5, 80, TEXT_BYTES, TEXT_BYTES + 1, BLOCK - 1, BLOCK + 7]) for _ in range(40)]
        data = b"\n".join(bytes([97 + n % 26]) * size for n, size in enumerate(sizes))
        if round_ % 2:
            data += b"\n"
        path = tmp_path / f"f{round_}"
        path.write_bytes(data)
        wanted = set(rng.sample(range(1, len(sizes) + 3), rng.randrange(1, 12)))
        fd = os.open(path, os.O_RDONLY)
        try:
            assert _lines_at(fd, wanted) == reference(data, wanted), (sizes, sorted(wanted))
        finally:
            os.close(fd)
