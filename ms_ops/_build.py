"""Builds the CPU kernel library from the ``aicore/`` sources with g++.

Used by ``setup.py`` (at install time) and by the twin's own tests (which compile test kernels
against the same headers with the same flags). Kept free of MindSpore imports so that it runs in
pip's isolated build environment.

Parallel: one g++ per source file, ``os.cpu_count()`` at a time.

Incremental: objects are kept in ``build/kernels/`` of the source tree, each named by a digest of
everything that determines it: the g++ command line, what ``g++ -v`` reports for it (compiler
version, and what ``-march=native`` means on this machine), and the content (not the mtime: a
fresh clone has new mtimes) of the source and of every header it included when it was last
compiled (g++'s ``-MD`` dependency file; ``-MD`` rather than ``-MMD`` so that a libc or libstdc++
header update counts too: hashing them takes milliseconds). An object whose inputs changed gets a
new name, so a stale one is never found; the library is relinked only when its object list
changed or the file itself was replaced since our last link. Concurrent builds (pip while pytest
builds the test kernels) are safe: each writes temp files and renames them into place, and a name
always matches its content. The only blind spot is the one make and ninja share: a new header that
shadows an included one further down the include path is not seen.

Progress: pip runs a build backend with its output captured and shows it only with ``-v`` or on
failure, so the README's plain ``pip install -e .`` would sit on a spinner for a minute with no
sign of what it does. So when stderr is not a terminal but the process has one (``/dev/tty``
opens: pip started from a shell), ``build`` writes its progress there; otherwise (CI, no terminal)
to stderr, which ``pip -v`` and CI logs show. Errors always go to stderr/the exception, which pip
prints. ``compile_library`` called directly (the twin tests) writes to stderr, for pytest to
capture.
"""
import glob
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

LIB_NAME = "libms_ops_cpu.so"

CXXFLAGS = [
    "-O3", "-march=native", "-std=c++17", "-fPIC", "-fopenmp",
    # MindSpore 2.10 is built with the old libstdc++ ABI; AotExtra passes std::string by value.
    "-D_GLIBCXX_USE_CXX11_ABI=0",
    "-fvisibility=hidden",
    # TLS descriptors: the twin reads its running block from a __thread on every UB and scalar
    # access (aicore/twin/twin_runtime.h).
    "-mtls-dialect=gnu2",
    "-Wall", "-Wextra", "-Wno-unused-parameter",
]

# -I order, relative to the source root; folders that do not exist (yet) are left out.
INCLUDE_DIRS = ["aicore/twin", "aicore/common", "aicore/ms_cpu", "aicore"]

CACHE_DIR = os.path.join("build", "kernels")  # in the source tree; git-ignored with build/

# Other versions of an object are deleted once unused this long: a concurrent build may still be
# about to link one it chose a moment ago.
_PRUNE_AFTER_S = 3600


def aicore_dir(root):
    return os.path.join(root, "aicore")


def include_dirs(root):
    dirs = [os.path.join(root, *d.split("/")) for d in INCLUDE_DIRS]
    return [d for d in dirs if os.path.isdir(d)]


def cpu_sources(root):
    """Twin runtime, every op kernel and every op's MindSpore CPU entry, at any folder depth.

    CANN-only host files (``*_def.cpp``, ``*_tiling.cpp``, ``*_infershape.cpp``) are not part of
    the CPU build: they need the CANN headers.
    """
    base = glob.escape(aicore_dir(root))
    found = set()
    for pattern in ("twin/*.cpp", "**/op_kernel/*.cpp", "**/op_host/*_cpu.cpp"):
        found.update(glob.glob(os.path.join(base, pattern), recursive=True))
    return sorted(found)


def _run(cmd, show_warnings=True):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("g++ failed:\n" + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    if proc.stderr and show_warnings:
        sys.stderr.write(proc.stderr)
    return proc.stderr


def _compiler_identity(flags):
    # Compiler version, configuration, search paths and the -march=native expansion; ~20 ms.
    cmd = ["g++", *flags, "-E", "-v", "-x", "c++", os.devnull, "-o", os.devnull]
    return "\0".join(flags) + "\0" + _run(cmd, show_warnings=False)


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _file_sha(path, memo):
    if path not in memo:
        try:
            with open(path, "rb") as f:
                memo[path] = _sha(f.read())
        except FileNotFoundError:  # a header that was deleted: the digest changes
            memo[path] = "missing"
    return memo[path]


def _digest(deps, identity, memo):
    text = identity + "".join(f"\0{p}\0{_file_sha(p, memo)}" for p in deps)
    return _sha(text.encode())[:24]


def _read_deps(dep_file):
    # Make syntax written with -MT x: "x: a.cpp b.h \<newline> c.h"; a space in a path is "\ ".
    with open(dep_file) as f:
        text = f.read().replace("\\\n", " ")
    return [p.replace("\0", " ") for p in text.partition(":")[2].replace("\\ ", "\0").split()]


def _write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}-{threading.get_ident()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _edited_since(paths, stamp_ns):
    try:
        return any(os.stat(p).st_mtime_ns >= stamp_ns for p in paths)
    except FileNotFoundError:
        return True


class _Object:
    """The cache entries of one source: ``<slot>.deps`` (its inputs at its last compile) and
    ``<slot>-<digest>.o`` (one object per set of input contents)."""

    def __init__(self, cache, source, identity):
        self.source, self.identity = source, identity
        # Readable, and unique per path: two ops may have sources of the same name.
        name = f"{os.path.basename(source)}-{_sha(os.path.abspath(source).encode())[:8]}"
        self.slot = os.path.join(cache, name)

    def cached(self, memo):
        """The object built from the current inputs, or None."""
        try:
            with open(self.slot + ".deps") as f:
                deps = json.load(f)
        except (OSError, ValueError):
            return None
        path = f"{self.slot}-{_digest(deps, self.identity, memo)}.o"
        try:
            os.utime(path)  # marks it used, for _prune
        except FileNotFoundError:
            return None
        return path

    def compile(self, flags):
        tmp = f"{self.slot}.tmp{os.getpid()}-{threading.get_ident()}"
        # The file system's clock, read just before g++ starts: an input with a later mtime was
        # edited while g++ ran.
        open(tmp + ".d", "w").close()
        started = os.stat(tmp + ".d").st_mtime_ns
        try:
            _run(["g++", *flags, "-MD", "-MT", "x", "-MF", tmp + ".d",
                  "-c", self.source, "-o", tmp + ".o"])
            deps = _read_deps(tmp + ".d")
            digest = _digest(deps, self.identity, {})
            if _edited_since(deps, started):
                # The object may hold either version of the edited file: a name no lookup
                # matches keeps it out of the cache (linked this once, pruned later).
                digest = "unverified" + tmp.rpartition(".tmp")[2]
            path = f"{self.slot}-{digest}.o"
            os.replace(tmp + ".o", path)
            _write_atomic(self.slot + ".deps", json.dumps(deps))  # after the object: see cached()
        finally:
            for leftover in (tmp + ".o", tmp + ".d"):
                if os.path.exists(leftover):
                    os.remove(leftover)
        self._prune(path)
        return path

    def _prune(self, keep):
        # Other versions of this object and temp files of killed builds, unused for a while.
        for path in glob.glob(glob.escape(self.slot) + "[-.]*"):
            if path in (keep, self.slot + ".deps"):
                continue
            try:
                if time.time() - os.stat(path).st_mtime > _PRUNE_AFTER_S:
                    os.remove(path)
            except FileNotFoundError:
                pass


def _show(path, root):
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel


def _printer(stream):
    def log(msg):
        stream.write(f"ms_ops: {msg}\n")  # one write: lines from the compile threads stay whole
        stream.flush()
    return log


def _progress_printer():
    """Progress to the user's terminal even when pip captures our output (see the docstring)."""
    if sys.stderr.isatty():
        return _printer(sys.stderr)
    try:
        tty = open("/dev/tty", "w")
    except OSError:  # no controlling terminal (CI, cron, ...)
        return _printer(sys.stderr)
    tty.write("\n")  # ends pip's "Building editable for ms_ops ... -" spinner line
    return _printer(tty)


def compile_library(sources, output, root, extra_flags=(), log=None):
    """Compiles ``sources`` (one g++ per file, in parallel) and links the shared library ``output``.

    Objects are reused from ``<root>/build/kernels`` when none of their inputs changed; the library
    is relinked only when needed. Progress goes to ``log(message)`` (default: stderr). Raises with
    g++'s output on failure.
    """
    log = log or _printer(sys.stderr)
    start = time.monotonic()
    flags = [*CXXFLAGS, *extra_flags, *(f"-I{d}" for d in include_dirs(root))]
    cache = os.path.join(root, CACHE_DIR)
    os.makedirs(cache, exist_ok=True)
    identity = _compiler_identity(flags)

    entries = [_Object(cache, s, identity) for s in sources]
    memo = {}
    objects = [e.cached(memo) for e in entries]
    todo = [i for i, o in enumerate(objects) if o is None]
    log(f"{len(sources) - len(todo)} of {len(sources)} objects up to date, compiling {len(todo)}")

    def compile_one(k_i):
        k, i = k_i
        log(f"compiling [{k}/{len(todo)}] {_show(sources[i], root)}")
        objects[i] = entries[i].compile(flags)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(compile_one, enumerate(todo, 1)))

    # Link inputs: compiler and flags (in identity), the objects (their names hold their inputs'
    # digest) and where the library goes. The stamp also holds the library's own hash, so a
    # library replaced by anything else is relinked.
    out = os.path.abspath(output)
    link_key = _sha("\0".join([identity, out, *objects]).encode())
    stamp = os.path.join(cache, os.path.basename(out) + ".link")
    try:
        with open(stamp) as f:
            if f.read() == f"{link_key} {_file_sha(out, {})}":
                log(f"{_show(output, root)} up to date ({time.monotonic() - start:.1f} s)")
                return output
    except FileNotFoundError:
        pass
    # Linked beside the library and renamed over it: a process that has the old one loaded keeps
    # its (unchanged) file.
    tmp = os.path.join(os.path.dirname(out), f".{os.path.basename(out)}.tmp{os.getpid()}")
    try:
        # BLAS symbols (scipy_cblas_sgemm, ...) stay undefined here: ms_ops loads scipy-openblas32's
        # library with RTLD_GLOBAL before this library, so they resolve at load time in any venv.
        _run(["g++", *flags, "-shared", "-o", tmp, *objects])
        linked = _file_sha(tmp, {})  # hashed before the rename: another build may replace it after
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    _write_atomic(stamp, f"{link_key} {linked}")
    log(f"linked {_show(output, root)} in {time.monotonic() - start:.1f} s")
    return output


def build(root, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    return compile_library(cpu_sources(root), os.path.join(out_dir, LIB_NAME), root,
                           log=_progress_printer())


if __name__ == "__main__":
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build(here, os.path.join(here, "ms_ops", "lib"))
