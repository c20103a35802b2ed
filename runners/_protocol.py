"""Shared helpers of the runner protocol (docs/runner-protocol.md)."""
import os
import re
import sys

import numpy as np

_UNSAFE = re.compile(rb"[^A-Za-z0-9._-]")


def file_stem(name):
    """The protocol's file name of a tensor (without .npy): every byte outside [A-Za-z0-9._-]
    of its UTF-8 form becomes '_'."""
    return _UNSAFE.sub(b"_", name.encode("utf-8")).decode("ascii")


def parse_args(argv, usage):
    """MODEL INPUT_DIR OUTPUT_DIR NAME [NAME ...] with options (--opt VALUE) anywhere before."""
    opts, rest = {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and i + 1 < len(argv) and not rest:
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        rest.append(a)
        i += 1
    if len(rest) < 4:
        fail(usage)
    return opts, rest[0], rest[1], rest[2], rest[3:]


def load_inputs(input_dir, names):
    """{name: array} for each graph input name, from INPUT_DIR/<stem>.npy."""
    feeds = {}
    for name in names:
        path = os.path.join(input_dir, file_stem(name) + ".npy")
        if not os.path.exists(path):
            fail("no input file %s for graph input '%s'" % (path, name))
        feeds[name] = np.load(path, allow_pickle=False)
    return feeds


def write_outputs(output_dir, values):
    os.makedirs(output_dir, exist_ok=True)
    for name, value in values.items():
        path = os.path.join(output_dir, file_stem(name) + ".npy")
        tmp = path + ".tmp.npy"
        np.save(tmp, np.ascontiguousarray(value))
        os.replace(tmp, path)


def fail(message, code=1):
    sys.stderr.write("runner: %s\n" % message)
    sys.exit(code)
