"""Several Python threads running one FusionDefinition, one traced function or one prepared
step at the same time, each on its own arrays: every thread gets what running the calls one
by one gives. And the GIL is released while a fusion compiles and runs, so other Python
threads go on meanwhile (proved without timing: a stand-in compiler waits for the main thread,
which can only answer when the GIL is free)."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np

import widefuse
from widefuse import DataType, FusionDefinition

THREADS = 6
STEPS = 4


def _step_definition():
    """p <- p - lr * g in place; returns p_new * p_new."""
    with FusionDefinition() as fd:
        p = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        g = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        lr = fd.define_scalar(dtype=DataType.Double)
        new = fd.ops.sub(p, fd.ops.mul(g, lr))
        fd.add_output(new, alias_input=p)
        fd.add_output(fd.ops.mul(new, new))
    return fd


def _inputs(rng, thread):
    """Thread `thread`'s arrays: sizes differ between threads (one is empty, some share a size
    so that they share a specialization), so threads run different bindings at once."""
    size = [4099, 17, 4099, 0, 65537, 1][thread % 6]
    return (rng.standard_normal(size).astype(np.float32),
            rng.standard_normal(size).astype(np.float32), 0.01 * (thread + 1))


def _run_together(work):
    """Runs work(thread) on THREADS threads released at once; re-raises the first failure."""
    barrier = threading.Barrier(THREADS)
    failures = []

    def body(thread):
        try:
            barrier.wait()
            work(thread)
        except BaseException as error:  # noqa: B902 (reported below, with its thread)
            failures.append((thread, error))

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        thread, error = failures[0]
        raise AssertionError(f"thread {thread} failed: {error!r}") from error


def _one_by_one(run, rng_seed):
    """Each thread's STEPS calls of run(p, g, lr) in turn on copies: the expected results."""
    rng = np.random.default_rng(rng_seed)
    expected = []
    for thread in range(THREADS):
        p, g, lr = _inputs(rng, thread)
        outputs = [run(p, g, lr) for _ in range(STEPS)]
        expected.append((p, outputs))
    return expected


def _check(results, expected):
    for thread, ((p, outputs), (p_expected, outputs_expected)) in enumerate(
            zip(results, expected)):
        np.testing.assert_array_equal(p, p_expected, err_msg=f"thread {thread}: p")
        for step, (output, wanted) in enumerate(zip(outputs, outputs_expected)):
            np.testing.assert_array_equal(output, wanted, err_msg=f"thread {thread} step {step}")


def test_threads_executing_one_fusion_definition_get_the_results_of_running_one_by_one():
    fd = _step_definition()

    def run(p, g, lr):
        return fd.execute([p, g, lr])[0].copy()

    expected = _one_by_one(run, 5)
    concurrent = _step_definition()  # a fresh definition: its executor is made in the race
    rng = np.random.default_rng(5)
    inputs = [_inputs(rng, thread) for thread in range(THREADS)]
    results = [None] * THREADS

    def work(thread):
        p, g, lr = inputs[thread]
        results[thread] = (p, [concurrent.execute([p, g, lr])[0].copy() for _ in range(STEPS)])

    _run_together(work)
    _check(results, expected)


def test_threads_with_several_host_threads_and_block_orders_agree():
    # Each thread asks for other options, so several executors of one fusion compile and run
    # at once (the same kernel source compiled by several threads: one build, shared).
    fd = _step_definition()
    options = [dict(threads=2), dict(block_order="reverse"), dict(mode="per-component"),
               dict(threads=3, block_order="shuffle:7"), dict(), dict(mode="batched")]

    def run(p, g, lr):
        return fd.execute([p, g, lr])[0].copy()

    expected = _one_by_one(run, 9)
    rng = np.random.default_rng(9)
    inputs = [_inputs(rng, thread) for thread in range(THREADS)]
    results = [None] * THREADS
    concurrent = _step_definition()

    def work(thread):
        p, g, lr = inputs[thread]
        results[thread] = (p, [concurrent.execute([p, g, lr], **options[thread])[0].copy()
                               for _ in range(STEPS)])

    _run_together(work)
    _check(results, expected)


def test_threads_calling_one_traced_function_get_the_results_of_running_one_by_one():
    def step(p, g, lr):
        new = p - g * lr
        widefuse.copy_(new, p)
        return new * new

    sequential = widefuse.trace(step)
    expected = _one_by_one(lambda p, g, lr: sequential(p, g, lr).copy(), 13)
    traced = widefuse.trace(step)  # its first calls, and so its recordings, race
    rng = np.random.default_rng(13)
    inputs = [_inputs(rng, thread) for thread in range(THREADS)]
    results = [None] * THREADS

    def work(thread):
        p, g, lr = inputs[thread]
        results[thread] = (p, [traced(p, g, lr).copy() for _ in range(STEPS)])

    _run_together(work)
    _check(results, expected)


def test_threads_launching_their_own_prepared_steps_of_one_fusion_agree():
    fd = _step_definition()
    expected = _one_by_one(lambda p, g, lr: fd.execute([p, g, lr])[0].copy(), 17)
    shared = _step_definition()
    rng = np.random.default_rng(17)
    inputs = [_inputs(rng, thread) for thread in range(THREADS)]
    results = [None] * THREADS

    def work(thread):
        p, g, lr = inputs[thread]
        prepared = shared.prepare([p, g, lr])  # one prepared run per thread, one executor
        results[thread] = (p, [prepared()[0].copy() for _ in range(STEPS)])

    _run_together(work)
    _check(results, expected)


# The child of the GIL test: a worker thread executes a fusion whose kernel is not cached, so
# the host compiler runs; the stand-in compiler waits for a line on a FIFO, which the main
# thread writes. Python bytecode (the write) runs in the main thread only if the worker
# released the GIL; otherwise the compiler gives up after a minute and the child hangs (the
# test then fails at its timeout; it takes about a second when the GIL is released).
_GIL_CHILD = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    from widefuse import DataType, FusionDefinition

    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(t, 3.0), alias_input=t)
    x = np.arange(5, dtype=np.float32)
    failure = []

    def work():
        try:
            fd.execute([x])
        except Exception as error:
            failure.append(repr(error))

    worker = threading.Thread(target=work)
    worker.start()
    with open(os.environ["GIL_TEST_FIFO"], "w") as fifo:  # opens when the compiler waits
        fifo.write("go\\n")
    worker.join()
    print("failure:", failure[0] if failure else "none")
    print("x:", x.tolist())
""")


def test_the_gil_is_released_while_a_fusion_compiles_and_runs(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    compiler = tmp_path / "cxx"
    compiler.write_text(
        "#!/bin/sh\n"
        # a version of its own: the kernel is built, not found in a cache
        f"if [ \"$1\" = --version ]; then echo 'gil test compiler {tmp_path.name}'; exit 0; fi\n"
        # the precompiled prelude is built first, without waiting: only the kernel waits
        "case \"$*\" in *c++-header*) exec c++ \"$@\";; esac\n"
        f"timeout 60 sh -c 'read line < \"{fifo}\"' || exit 1\n"
        "exec c++ \"$@\"\n")
    compiler.chmod(0o755)
    env = dict(os.environ, WIDEFUSE_HOST_CXX=str(compiler), GIL_TEST_FIFO=str(fifo),
               WIDEFUSE_CACHE_DIR=str(tmp_path / "cache"))
    try:
        child = subprocess.run([sys.executable, "-c", _GIL_CHILD], env=env,
                               capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as expired:
        # Without the release the main thread waits for the GIL while the compiler waits for
        # it; when the compiler gives up, the main thread waits on a FIFO nobody reads.
        raise AssertionError("the child hung: execute() kept the GIL while the kernel "
                             f"compiled\n{expired.stdout}\n{expired.stderr}") from None
    assert child.returncode == 0, child.stderr
    assert "failure: none" in child.stdout, child.stdout + child.stderr
    assert "x: [0.0, 3.0, 6.0, 9.0, 12.0]" in child.stdout, child.stdout
