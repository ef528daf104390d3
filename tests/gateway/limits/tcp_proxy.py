"""A TCP proxy the test starts and kills: Redis "going away" and coming back, without
touching the Redis server other tests use."""

from __future__ import annotations

import asyncio
import contextlib


class Proxy:
    """Forwards 127.0.0.1:``port`` to ``target``. :meth:`kill` closes the listener and every
    open connection (clients see resets, then refused connects); :meth:`start` again listens
    on the same port."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def kill(self) -> None:
        assert self._server is not None
        self._server.close()
        for w in self._writers:
            w.transport.abort()
        self._writers.clear()
        await self._server.wait_closed()
        self._server = None
