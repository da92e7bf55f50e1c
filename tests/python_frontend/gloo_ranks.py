"""Runs one worker script as several processes of a torch.distributed job on 127.0.0.1 (the
tests of widefuse.optim under FSDP2, HSDP and DDP): each rank a child process, bounded in
time, its output kept for the message when it fails."""

import os
import socket
import subprocess
import sys
from pathlib import Path


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def run_ranks(worker: Path, world_size: int, arguments: list, timeout: float = 300,
              environment: dict = None) -> None:
    """`python WORKER RANK WORLD_SIZE PORT ARGUMENTS...` for every rank, the worker's folder on
    PYTHONPATH and one thread per process; asserts that every rank exits with 0."""
    port = free_port()
    environment = dict(os.environ, **(environment or {}), OMP_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([str(worker.parent),
                                                   os.environ.get("PYTHONPATH", "")]))
    ranks = [subprocess.Popen([sys.executable, str(worker), str(rank), str(world_size), port,
                               *map(str, arguments)], env=environment, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for rank in range(world_size)]
    try:
        logs = [rank.communicate(timeout=timeout)[0] for rank in ranks]
    finally:
        for rank in ranks:
            rank.kill()
    failed = [f"rank {number}:\n{log[-3000:]}" for number, (rank, log) in
              enumerate(zip(ranks, logs)) if rank.returncode != 0]
    assert not failed, "\n".join(failed)
