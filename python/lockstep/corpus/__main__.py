"""``python -m lockstep.corpus ROWS --voice VOICE.onnx -o OUT``: see docs/corpus.md."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .rows import expand_grid, parse_list, read_rows
from .run import Settings, run_corpus

MAX_BATCH = 1024


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lockstep corpus", description=(
        "Make a speech corpus with a Piper voice on Ray: one WAV per row and a Parquet manifest. "
        "Without --address, Ray starts on this machine; a rerun skips what is done."))
    p.add_argument("rows", type=Path, help="rows: .jsonl (one JSON object a line) or .csv (a header line); "
                   "fields id, text or phoneme_ids, voice, speaker, length_scale, noise_scale, noise_w_scale, seed")
    p.add_argument("-o", "--out", type=Path, required=True, help="output folder (wav/, manifest.parquet)")
    p.add_argument("--voice", help="the Piper voice (.onnx, its .onnx.json beside it) for rows that name none")
    p.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "vulkan", "reference"))
    p.add_argument("--address", help="a Ray cluster to join (e.g. 127.0.0.1:6379 or auto); default: Ray on this machine")
    p.add_argument("--workers", type=int, default=0, help="Ray actors (default: the cluster's CPUs / --threads, "
                   "or its GPUs / --num-gpus)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per worker, the utterances it makes at once (default 1)")
    p.add_argument("--num-gpus", type=float, default=0.0, help="GPUs per worker (with --backend cuda)")
    p.add_argument("--batch-size", type=int, default=16, help="rows per engine call (default 16)")
    p.add_argument("--length-scales", help="variation grid: every row at each of these length scales (0.8,1,1.2)")
    p.add_argument("--noise-scales", help="... at each of these noise scales")
    p.add_argument("--noise-w-scales", help="... at each of these noise_w scales")
    p.add_argument("--speakers", help="... by each of these speakers (0-9,12)")
    p.add_argument("--retry-failed", action="store_true", help="make rows recorded as failed again")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    for name in ("workers", "batch_size", "threads"):
        if getattr(args, name) < (0 if name == "workers" else 1):
            print(f"lockstep corpus: --{name.replace('_', '-')} must be "
                  f"{'>= 0' if name == 'workers' else '>= 1'}, got {getattr(args, name)}", file=sys.stderr)
            return 2
    if args.batch_size > MAX_BATCH:  # a batch's audio is held until its WAVs are written
        print(f"lockstep corpus: --batch-size {args.batch_size} is over {MAX_BATCH} (a batch's audio is held in "
              "memory until its files are written)", file=sys.stderr)
        return 2
    if args.num_gpus < 0:
        print(f"lockstep corpus: --num-gpus must be >= 0, got {args.num_gpus}", file=sys.stderr)
        return 2
    try:
        rows = read_rows(args.rows)
        rows = expand_grid(rows, parse_list(args.length_scales), parse_list(args.noise_scales),
                           parse_list(args.noise_w_scales), parse_list(args.speakers, int))
    except (OSError, ValueError) as e:
        print(f"lockstep corpus: {args.rows}: {e}", file=sys.stderr)
        return 2
    if not args.address:  # on this machine the workers have what the driver has: an absent backend is said now
        from .. import backends
        ok, why = backends().get(args.backend, (False, "unknown backend"))
        if not ok:
            print(f"lockstep corpus: --backend {args.backend} cannot run here: {why}", file=sys.stderr)
            return 2
    if args.voice and not Path(args.voice).is_file():
        print(f"lockstep corpus: --voice {args.voice}: no such file", file=sys.stderr)
        return 2
    settings = Settings(out=args.out, voice=args.voice, backend=args.backend, address=args.address,
                        workers=args.workers, threads=args.threads, num_gpus=args.num_gpus,
                        batch_size=args.batch_size, retry_failed=args.retry_failed, progress=not args.no_progress)
    log = (lambda *a: print(*a, file=sys.stderr))
    summary = run_corpus(rows, settings, log=log)
    if args.json:
        print(json.dumps(summary.as_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
