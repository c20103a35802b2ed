#!/usr/bin/env python3
"""apache/tvm#20157's repro.py, rewritten on lockstep.

The report: a 174-node piece of a Piper (VITS) voice's flow, compiled by TVM Relax for Apple's
GPU (Metal), gave cosine 0.76 against the same model on the CPU, and a second compile in the same
process gave yet another wrong answer. The reporter found the cause by hand over days: subgraphs
cut at anchor nodes, fresh processes against in-process runs, SHA-256 of every output, tables of
cosines. Here that is four calls:

  lockstep.compare      both sides on the same inputs: cosine, rel_l2, SHA-256 per output
  lockstep.determinism  the test side's bits in fresh processes and after other compiles here
  lockstep.bisect       if the sides disagree: the first divergent node, made there or inherited
  lockstep.reduce       that node alone as a reproducer folder (model, inputs, manifest)

A side is a lockstep backend ("reference", "cpu", "cuda"), a runner command line
(docs/runner-protocol.md) or, with --runner ort, ONNX Runtime as an in-process Python callable.

  python3 examples/repro.py                         # the embedded 174-node flow, reference vs cuda (else cpu)
  python3 examples/repro.py --test cpu
  python3 examples/repro.py model.onnx --inputs inputs.npz --ref cpu --test cuda
  python3 examples/repro.py --test "python3 runners/ort_runner.py"
  python3 examples/repro.py --runner ort --markdown report.md   # tables for an issue comment

Exit status 0 when the sides agree and the test side repeats bit for bit, 1 otherwise.
"""
import argparse
import os
import sys

import numpy as np

import lockstep


def ort_runner(model_path, feeds, wanted):
    """ONNX Runtime (CPU) as a lockstep runner: lockstep calls it in this process with each
    (sub)model it cuts, the inputs by name and the outputs it wants."""
    import onnxruntime

    sess = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    return dict(zip(wanted, sess.run(wanted, feeds)))


def report_inputs(model):
    """The report's inputs, as the CLI feeds the embedded default: z_p[0,c,t] = 0.5 sin(2π(3c+t)/128),
    y_mask = 1 (drawn uniform noise would make y_mask meaningless)."""
    z, mask = model.inputs
    _, channels, frames = z.shape
    c, t = np.arange(channels)[:, None], np.arange(frames)[None, :]
    z_p = (0.5 * np.sin(2 * np.pi * (3 * c + t) / 128.0)).astype(np.float32)[None]
    return {z.name: z_p, mask.name: np.ones((1, 1, frames), np.float32)}


def default_test():
    return "cuda" if lockstep.backends()["cuda"][0] else "cpu"


def section(title):
    print(f"\n== {title}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", help="an ONNX model (default: the embedded 174-node flow)")
    ap.add_argument("--ref", default="reference", help="the side trusted (default: reference, float64)")
    ap.add_argument("--test", help="the side under test (default: cuda when available, else cpu)")
    ap.add_argument("--runner", choices=["ort"], help="test ONNX Runtime through an in-process Python callable")
    ap.add_argument("--inputs", help="a .npz of the inputs by name (default: the report's for the embedded "
                                     "flow, else drawn from --seed)")
    ap.add_argument("--seed", type=int, default=0, help="seed of drawn inputs and random ops (default 0)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads, 0 = all (the same N, the same bits)")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes for determinism (default 3)")
    ap.add_argument("--out", default="repro", help="folder for the reducer's reproducer (default: repro/)")
    ap.add_argument("--markdown", help="also write every table as markdown to this file")
    args = ap.parse_args()
    if args.runner and args.test:
        ap.error("--runner ort is the test side: give it or --test, not both")

    model = lockstep.load(args.model) if args.model else lockstep.embedded_default()
    if args.inputs:
        with np.load(args.inputs) as npz:
            feeds = {k: npz[k] for k in npz.files}
    elif args.model is None:
        feeds = report_inputs(model)
    else:
        feeds = None  # drawn from --seed, as the CLI draws them
    ref = args.ref
    test = ort_runner if args.runner == "ort" else (args.test or default_test())
    options = {"threads": args.threads} if args.threads else {}
    print(f"model: {model!r}")
    results = []

    section("compare: the same inputs on both sides")
    compared = lockstep.compare(model, ref, test, feeds, seed=args.seed, **options)
    print(compared)
    results.append(compared)

    # The report's second symptom: another answer from a second compile in the same process.
    section("determinism: the same bits on every run")
    fresh = lockstep.cli_path() is not None  # fresh processes need the CLI installed with the package
    if not fresh and isinstance(test, str) and test in ("reference", "cpu", "cuda"):
        print("(the lockstep CLI is not beside this Python: in-process runs only)")
    same_bits = lockstep.determinism(model, test, feeds, runs=args.runs, seed=args.seed, fresh=fresh,
                                     progress=True, **options)
    print(same_bits)
    results.append(same_bits)

    if not compared:
        section("bisect: the first node where the sides part")
        where = lockstep.bisect(model, ref, test, feeds, seed=args.seed, progress=True, **options)
        print(where)
        results.append(where)
        if where.node:
            made = {"local": ": made there", "inherited": ": carried in by its inputs"}.get(where.verdict, "")
            print(f"\nfirst divergent node: {where.node} ({where.op}), {where.verdict or 'not replayed'}{made}")

        section(f"reduce: a reproducer in {args.out}/")
        reduced = lockstep.reduce(model, ref, test, args.out, feeds, seed=args.seed, progress=True, **options)
        print(reduced)
        results.append(reduced)

    if args.markdown:
        with open(args.markdown + ".part", "w", encoding="utf-8") as f:  # renamed when whole
            f.write(f"model: `{model!r}`\n\n" + "\n".join(r.to_markdown() for r in results))
        os.replace(args.markdown + ".part", args.markdown)
        print(f"\nmarkdown: {args.markdown}")
    return 0 if compared and same_bits else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except lockstep.Error as e:  # one line, like the CLI's
        sys.exit(f"repro: {e}")
    except KeyboardInterrupt:
        sys.exit(130)
