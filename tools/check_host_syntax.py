#!/usr/bin/env python3
"""Syntax check of the Ascend host side against CANN's public headers, without a CANN install.

Compiles every OpDef (``aicore/*/*/op_host/*_def.cpp``) and every TilingFunc/InferShape
registration (``*_tiling.cpp``, with the tiling-data and infer headers they include) with
``g++ -fsyntax-only -std=c++17 -Wall -Wextra``, the include directories laid out as an installed
CANN has them:

* ``--metadef``: a checkout of Ascend's metadef (``inc/``: register/, exe_graph/, asc/register/...);
* ``--graph-metadef``: a checkout of Ascend's ge, whose ``inc/graph_metadef`` holds the graph
  headers metadef's op_def.h includes (graph/operator_reg.h...);
* ``--asc-devkit``: a checkout of asc-devkit (``include/``: tiling/platform/platform_ascendc.h,
  the high-level API tiling behind tiling/tiling_api.h). CANN generates
  kernel_tiling/kernel_tiling.h from asc-devkit's tiling definitions at build time; this script
  runs asc-devkit's own generator on the checkout, into a temporary directory.

Headers that ship only inside an installed CANN (securec.h, platform/soc_spec.h) come from
``tools/cann_stubs``. Nothing is fetched: the checkouts are given as paths.

    python tools/check_host_syntax.py --metadef ../ext/metadef --graph-metadef ../ext/ge \\
        --asc-devkit ../ext/asc-devkit [files...]

Prints one line per file and the compiler's errors of those that fail; exits 1 if any fails.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUBS = os.path.join(ROOT, "tools", "cann_stubs")
KERNEL_TILING_GENERATOR = os.path.join("impl", "adv_api", "cmake", "scripts", "gen_kernel_tiling_data_def.py")


def host_sources():
    found = []
    for pattern in ("*_def.cpp", "*_tiling.cpp"):
        found += glob.glob(os.path.join(ROOT, "aicore", "*", "*", "op_host", pattern))
    return sorted(found)


def require_dir(parser, path, what, inside):
    """The checkout's directory `inside`, or a usage error naming the argument."""
    d = os.path.join(path, inside)
    if not os.path.isdir(d):
        parser.error(f"{what}: {path} has no {inside}/ (expected a checkout of {what.lstrip('-')})")
    return d


def cann_layout(asc_devkit, work):
    """Include directories for what an installed CANN has and the checkouts lay out differently:
    tiling/tiling_api.h (a link to asc-devkit's include/adv_api/tiling_api.h) and the generated
    kernel_tiling/kernel_tiling.h."""
    os.makedirs(os.path.join(work, "tiling"))
    os.symlink(os.path.join(asc_devkit, "include", "adv_api", "tiling_api.h"),
               os.path.join(work, "tiling", "tiling_api.h"))
    generator = os.path.join(asc_devkit, KERNEL_TILING_GENERATOR)
    if not os.path.isfile(generator):
        sys.exit(f"check_host_syntax: {asc_devkit} has no {KERNEL_TILING_GENERATOR}")
    subprocess.run([sys.executable, generator, os.path.join(asc_devkit, "include", "adv_api"),
                    os.path.join(work, "kernel_tiling", "kernel_tiling.h")],
                   check=True, stdout=subprocess.DEVNULL)
    return [work]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metadef", required=True, help="checkout of Ascend's metadef")
    parser.add_argument("--graph-metadef", required=True, help="checkout of Ascend's ge (inc/graph_metadef)")
    parser.add_argument("--asc-devkit", required=True, help="checkout of asc-devkit")
    parser.add_argument("--cxx", default=os.environ.get("CXX", "g++"), help="compiler (default g++ or $CXX)")
    parser.add_argument("files", nargs="*", help="host sources (default: every *_def.cpp and *_tiling.cpp)")
    args = parser.parse_args()

    metadef_inc = require_dir(parser, args.metadef, "--metadef", "inc")
    graph_inc = require_dir(parser, args.graph_metadef, "--graph-metadef", os.path.join("inc", "graph_metadef"))
    asc_inc = require_dir(parser, args.asc_devkit, "--asc-devkit", "include")
    files = [os.path.abspath(f) for f in args.files] or host_sources()

    with tempfile.TemporaryDirectory(prefix="ms_ops_cann_inc_") as work:
        # Ours first (the CMake build's -I of the registrations), then the stand-ins, then CANN's
        # as system headers: their own warnings are not ours to fix.
        ours = [os.path.join(ROOT, "aicore", "cann"), os.path.join(ROOT, "aicore", "common")]
        cann = cann_layout(args.asc_devkit, work) + [
            os.path.join(asc_inc, "adv_api"), os.path.join(asc_inc, "utils"),
            metadef_inc, os.path.join(metadef_inc, "external"), os.path.join(metadef_inc, "external", "asc"),
            graph_inc, os.path.join(graph_inc, "external")]
        flags = ["-fsyntax-only", "-std=c++17", "-Wall", "-Wextra", *(f"-I{d}" for d in ours), f"-I{STUBS}",
                 *(a for d in cann for a in ("-isystem", d))]
        failed = 0
        for f in files:
            run = subprocess.run([args.cxx, *flags, f], capture_output=True, text=True)
            name = os.path.relpath(f, ROOT)
            print(f"{'ok  ' if run.returncode == 0 else 'FAIL'} {name}", flush=True)
            if run.returncode != 0:
                failed += 1
                print("\n".join(line for line in run.stderr.splitlines() if " error: " in line), flush=True)
    print(f"{len(files) - failed} of {len(files)} host files compile")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
