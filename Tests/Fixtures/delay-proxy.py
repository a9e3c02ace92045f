#!/usr/bin/env python3
"""A TCP proxy on loopback that delays each direction of every connection as a carrier network
does: each chunk it reads waits a delay drawn from a distribution before it is written on, and
never overtakes the chunk before it (TCP keeps order). Each client's connection goes on from the
client's own address (127.0.0.x), so the server behind it logs the NAT address the client had.

    delay-proxy.py --target 8080 --delay normal:40:20 [--listen 18080] [--seed 1] [--seconds 900]

--delay is normal:MEAN:SD or lognormal:MEAN:SD, in milliseconds, each way (a normal draw below 0
is 0). Without --listen it takes a free port of the system's. Once listening it prints
"delay-proxy listening on 127.0.0.1:PORT". The proxy stops by itself after --seconds (a test
that forgets it leaves nothing behind for long), and on SIGTERM or SIGINT.
"""
import argparse
import asyncio
import math
import random
import signal
import socket


def sampler(spec, rng):
    kind, mean, deviation = spec.split(":")
    mean, deviation = float(mean) / 1000, float(deviation) / 1000
    if kind == "normal":
        return lambda: max(0.0, rng.gauss(mean, deviation))
    if kind == "lognormal":
        sigma = math.sqrt(math.log(1 + deviation * deviation / (mean * mean)))
        mu = math.log(mean) - sigma * sigma / 2
        return lambda: rng.lognormvariate(mu, sigma)
    raise SystemExit(f"--delay: {kind} is not normal or lognormal")


async def pump(reader, writer, draw):
    """Copies reader to writer, each chunk written a drawn delay after it was read, in order."""
    loop = asyncio.get_running_loop()
    last = 0.0
    try:
        while True:
            data = await reader.read(65536)
            release = max(loop.time() + draw(), last)
            last = release
            if not data:
                loop.call_at(release, close, writer, True)
                return
            loop.call_at(release, write, writer, data)
    except (ConnectionError, OSError):
        loop.call_at(max(loop.time(), last), close, writer, False)


def write(writer, data):
    if not writer.is_closing():
        writer.write(data)


def close(writer, graceful):
    if writer.is_closing():
        return
    try:
        if graceful and writer.can_write_eof():
            writer.write_eof()
        else:
            writer.close()
    except (ConnectionError, OSError):
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, default=0)
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--delay", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=900)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    draw = sampler(args.delay, rng)

    async def serve(client_reader, client_writer):
        address = client_writer.get_extra_info("peername")[0]
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", args.target, local_addr=(address, 0))
        except OSError:
            client_writer.close()
            return
        for writer in (client_writer, server_writer):
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(pump(client_reader, server_writer, draw), pump(server_reader, client_writer, draw))

    server = await asyncio.start_server(serve, "127.0.0.1", args.listen, backlog=4096)
    print(f"delay-proxy listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.get_running_loop().create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
    try:
        await asyncio.wait_for(stop, args.seconds)
    except asyncio.TimeoutError:
        pass
    server.close()


asyncio.run(main())
