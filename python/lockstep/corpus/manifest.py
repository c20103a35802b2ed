"""The corpus manifest (Parquet, through pyarrow): one record per row, made or failed. While a run
goes, every finished batch is a part file of its own (written, then renamed), so an interrupted run
loses only the batches in flight; at the end the parts become ``manifest.parquet``, sorted by id."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([
    ("id", pa.string()),
    ("status", pa.string()),  # "ok" or "failed"
    ("error", pa.string()),
    ("text", pa.string()),
    ("phonemes", pa.list_(pa.string())),  # per sentence, its phonemes joined
    ("phoneme_ids", pa.list_(pa.int64())),  # every sentence's, in order
    ("alignments", pa.list_(pa.int64())),  # samples per phoneme id, where the voice gives durations
    ("voice", pa.string()),
    ("speaker", pa.int64()),
    ("speaker_mix", pa.list_(pa.float64())),  # [speaker a, speaker b, t] where the row mixes two
    ("length_scale", pa.float64()),
    ("noise_scale", pa.float64()),
    ("noise_w_scale", pa.float64()),
    ("seed", pa.int64()),
    ("samples", pa.int64()),
    ("sample_rate", pa.int64()),
    ("wav", pa.string()),  # relative to the output folder
    ("sha256", pa.string()),  # of the WAV file's bytes
    ("worker", pa.string()),  # host:pid of the Ray actor that made it
    ("seconds", pa.float64()),  # its share of its batch's synthesis time
    ("worker_peak_rss_mb", pa.float64()),  # the worker's peak resident memory when it made it
])

MANIFEST = "manifest.parquet"
PARTS = "manifest.parts"


def write_part(out: Path, records: list[dict]) -> None:
    """One finished batch's records as a part file: written beside, then renamed into place."""
    parts = Path(out) / PARTS
    parts.mkdir(parents=True, exist_ok=True)
    name = f"part-{uuid.uuid4().hex}.parquet"
    tmp = parts / f".{name}.tmp"
    pq.write_table(pa.Table.from_pylist(records, schema=SCHEMA), tmp)
    os.replace(tmp, parts / name)


def read_records(out: Path) -> dict[str, dict]:
    """Every record the manifest and its parts hold, by id (a later part wins: a redone row)."""
    out = Path(out)
    files = ([out / MANIFEST] if (out / MANIFEST).exists() else []) + \
        sorted((out / PARTS).glob("part-*.parquet"), key=lambda p: p.stat().st_mtime)
    records: dict[str, dict] = {}
    for f in files:
        for rec in pq.read_table(f, schema=SCHEMA).to_pylist():
            records[rec["id"]] = rec
    return records


def consolidate(out: Path, records: Iterable[dict]) -> Path:
    """``manifest.parquet`` from these records (sorted by id), then the parts removed."""
    out = Path(out)
    rows = sorted(records, key=lambda r: r["id"])
    tmp = out / f".{MANIFEST}.tmp"
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
    os.replace(tmp, out / MANIFEST)
    parts = out / PARTS
    if parts.exists():
        for p in parts.glob("part-*.parquet"):
            p.unlink()
        for p in parts.glob(".*.tmp"):
            p.unlink()
        parts.rmdir()
    return out / MANIFEST
