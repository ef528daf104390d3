"""The workers' shared file: workers keep sharing one file when it is deleted under them."""

from __future__ import annotations

from pathlib import Path

from gateway.workers_state import WorkersState


async def test_a_file_deleted_under_the_workers_is_opened_afresh_and_shared_again(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    one, two = WorkersState(path), WorkersState(path)  # two processes' handles
    try:
        assert await one.claim("before", 1.0)
        assert not await two.claim("before", 1.0)  # one file: the first claim holds
        for f in tmp_path.iterdir():  # a temporary-folder cleaner removes it while serving
            f.unlink()
        assert await two.claim("after", 2.0)
        assert not await one.claim("after", 2.0)  # both reopened the same new file
        assert await one.claim("before", 3.0)  # what the old file held is gone (logged)
    finally:
        await one.aclose()
        await two.aclose()
