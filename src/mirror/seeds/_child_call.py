"""One function of ours run in a child Python process meanwhile: the second core for pure-Python work.

A plain `python -c` child, neither forked (the caller may have threads) nor spawned by
multiprocessing (which runs the caller's `__main__` again: a script without a main guard
would start over). Arguments go through a temporary file, or, for a child started before
they are known (`ChildCall.waiting`: its Python starts while the caller works them out), its
stdin; the result comes back on the child's stdout, both pickled. Any failure means no
result: the caller does the work itself.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

__all__ = ["ChildCall"]

# the child imports the very package this process runs (not another copy first on its path)
_CHILD = """
import gc, os, pickle, sys
from importlib import import_module
from importlib.util import find_spec
gc.disable()
module, function, arguments, root = sys.argv[1:5]
spec = find_spec(module.partition(".")[0])
if spec is None or os.path.dirname(os.path.dirname(os.path.realpath(spec.origin or ""))) != root:
    sys.path.insert(0, root)
if arguments == "-":  # sent once the caller has them
    args = pickle.load(sys.stdin.buffer)
else:
    with open(arguments, "rb") as f:
        args = pickle.load(f)
result = getattr(import_module(module), function)(*args)
pickle.dump(result, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
sys.stdout.buffer.flush()
os._exit(0)  # (Python's teardown would free each of the result's objects while the caller waits for the end)
"""


class ChildCall:
    """`with ChildCall("mirror.seeds.text", "function", *args) as call:` ... `call.result()`.

    The child has ended when the block has (killed if the block ends before it did).
    """

    def __init__(self, module: str, function: str, *args: object) -> None:
        self._call = (module, function, args)
        self._process: subprocess.Popen | None = None
        self._arguments: Path | None = None
        self._waiting = False

    @classmethod
    def waiting(cls, module: str, function: str) -> ChildCall:
        """A child started at `with`, its arguments given later by `send()` (or never: then it is
        killed at the block's end)."""
        call = cls(module, function)
        call._waiting = True
        return call

    def send(self, *args: object) -> None:
        """The arguments of a `waiting` child; a child that cannot take them gives no result."""
        process = self._process
        if process is None or process.stdin is None:
            return
        pipe, process.stdin = process.stdin, None  # (closed here: `result()`'s communicate() leaves it be)
        try:
            with pipe:
                pickle.dump(args, pipe, protocol=pickle.HIGHEST_PROTOCOL)
        except (OSError, ValueError, pickle.PicklingError, RecursionError):  # (a child that died: a broken pipe)
            process.kill()
            process.wait()
            process.stdout.close()
            self._process = None

    def __enter__(self) -> ChildCall:
        module, function, args = self._call
        try:
            name = "-"  # a waiting child's arguments come on its stdin
            if not self._waiting:
                handle, name = tempfile.mkstemp(prefix="mirror-call-", suffix=".pickle")
                self._arguments = Path(name)
                with os.fdopen(handle, "wb") as file:
                    pickle.dump(args, file, protocol=pickle.HIGHEST_PROTOCOL)
            self._start(module, function, name)
        except (OSError, ValueError, pickle.PicklingError, RecursionError):  # (nested past pickle's depth)
            self._process = None
            if self._arguments is not None:
                self._arguments.unlink(missing_ok=True)
                self._arguments = None
        except BaseException:  # a Ctrl-C while the arguments are written (an export's size): nothing left behind
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, module: str, function: str, arguments: str) -> None:
        """The child, reading its arguments from the file `arguments`, or from stdin ("-")."""
        package_root = os.path.realpath(Path(__file__).parents[2])  # the folder that holds mirror/
        self._process = subprocess.Popen(  # -P: not the working folder first on its path (a pickle.py there would run)
            [sys.executable, "-P", "-c", _CHILD, module, function, arguments, package_root],
            stdin=subprocess.PIPE if arguments == "-" else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def result(self) -> object | None:
        """What the function returned, or None if the child could not give it."""
        if self._process is None:
            return None
        try:
            output, _ = self._process.communicate()
            if self._process.returncode != 0:
                return None
            enabled = gc.isenabled()
            gc.disable()  # millions of small objects, none in a cycle
            try:
                return pickle.loads(output)
            finally:
                if enabled:
                    gc.enable()
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            self._process.stdout.close()
            if self._process.stdin is not None:
                self._process.stdin.close()
        if self._arguments is not None:
            self._arguments.unlink(missing_ok=True)
