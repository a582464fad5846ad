#!/usr/bin/env python3
"""A TCP relay on 127.0.0.1 that holds each direction DELAY_MS: a far server, on loopback.

Issue 44's benchmark: the kernel here has no netem, so latency is added in user space.
Bytes from the client reach the server DELAY_MS after they arrived, and replies reach the
client DELAY_MS after the server sent them: one round trip costs 2 x DELAY_MS. A new
connection's first bytes also wait one more round trip, as a TCP handshake would make
them (the client's connect completes at once here; a real one would take that round trip).

Usage: delay_relay.py LISTEN_PORT TARGET_PORT DELAY_MS
Prints "ready" when it listens, then serves until killed.
"""
import asyncio, socket, sys

# asyncio keeps only weak references to tasks: a connection's, once its client has gone, could
# be collected mid-way ("Task was destroyed but it is pending!"). These are held until done.
RUNNING = set()


async def pump(reader, writer, delay, not_before):
    loop = asyncio.get_running_loop()
    try:
        while True:
            data = await reader.read(1 << 16)
            at = max(loop.time() + delay, not_before)
            if not data:
                loop.call_at(at, close, writer)
                return
            loop.call_at(at, writer.write, data)
    except (ConnectionError, OSError):
        loop.call_soon(close, writer)


def close(writer):
    try:
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


async def main():
    listen_port, target_port, delay = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000.0

    async def serve(client_reader, client_writer):
        task = asyncio.current_task()
        RUNNING.add(task)
        task.add_done_callback(RUNNING.discard)
        loop = asyncio.get_running_loop()
        accepted = loop.time()
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        for sock in (client_writer.get_extra_info("socket"), server_writer.get_extra_info("socket")):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The handshake's round trip: nothing the client sends goes on before it would have.
        pumps = [asyncio.ensure_future(pump(client_reader, server_writer, delay, accepted + 3 * delay)),
                 asyncio.ensure_future(pump(server_reader, client_writer, delay, 0))]
        RUNNING.update(pumps)
        for each in pumps:
            each.add_done_callback(RUNNING.discard)
        await asyncio.gather(*pumps)
        await asyncio.sleep(delay + 0.01)
        for writer in (client_writer, server_writer):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", listen_port, backlog=128)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
