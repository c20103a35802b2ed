"""A corpus's rows: read from JSONL or CSV, checked one by one (a bad row is a failed row with its
reason, never the end of the run), and multiplied by a variation grid (scales, speakers)."""
from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Optional, Sequence

FIELDS = ("id", "text", "phoneme_ids", "voice", "speaker", "speaker_mix", "length_scale", "noise_scale", "noise_w_scale",
          "seed")


@dataclass
class Row:
    id: str
    text: Optional[str] = None
    phoneme_ids: Optional[list[int]] = None
    voice: Optional[str] = None
    speaker: Optional[int] = None
    speaker_mix: Optional[tuple] = None  # (speaker a, speaker b, t): a voice between two speakers
    length_scale: Optional[float] = None
    noise_scale: Optional[float] = None
    noise_w_scale: Optional[float] = None
    seed: Optional[int] = None
    error: Optional[str] = None  # set when the row cannot be made; it is recorded as failed
    line: int = 0  # where it came from (1-based), for messages
    extra: dict = field(default_factory=dict)


def default_seed(row_id: str) -> int:
    """A row's noise seed when it names none: from its id, so it does not depend on the order,
    the batch or the worker."""
    return int.from_bytes(hashlib.sha256(row_id.encode()).digest()[:4], "little")


def read_rows(path: Path) -> list[Row]:
    """Rows from a .jsonl (one object a line) or .csv (a header line) file. Unknown columns are
    kept in ``extra``; ids must be unique (a repeated id is that row's error)."""
    path = Path(path)
    raw: list[tuple[int, dict]] = []
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as f:
            for n, rec in enumerate(csv.DictReader(f), start=2):
                raw.append((n, {k: v for k, v in rec.items() if v not in (None, "")}))
    else:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raw.append((n, {"__error__": f"line {n} is not JSON: {e.msg}"}))
                    continue
                raw.append((n, rec if isinstance(rec, dict) else {"__error__": f"line {n} is not a JSON object"}))
    rows, seen = [], set()
    for n, rec in raw:
        row = _parse(n, rec)
        if row.id in seen:
            row.error = row.error or f"id {row.id!r} repeats an earlier row's"
            row.id = f"{row.id}#line{n}"
        seen.add(row.id)
        rows.append(row)
    return rows


def _parse(line: int, rec: dict) -> Row:
    row = Row(id=str(rec.get("id", f"line{line}")), line=line)
    if "__error__" in rec:
        row.error = rec["__error__"]
        return row
    row.extra = {k: v for k, v in rec.items() if k not in FIELDS}
    try:
        if "text" in rec:
            row.text = str(rec["text"])
        if "phoneme_ids" in rec:
            ids = rec["phoneme_ids"]
            ids = json.loads(ids) if isinstance(ids, str) else ids
            if not isinstance(ids, list) or not all(isinstance(i, int) and i >= 0 for i in ids):
                raise ValueError(f"phoneme_ids must be a list of non-negative integers, got {rec['phoneme_ids']!r}")
            row.phoneme_ids = ids
        if row.text is None and row.phoneme_ids is None:
            raise ValueError("the row has neither text nor phoneme_ids")
        if row.text is not None and not row.text.strip() and row.phoneme_ids is None:
            raise ValueError("empty text")
        if row.phoneme_ids is not None and not row.phoneme_ids:
            raise ValueError("empty phoneme_ids")
        if "voice" in rec:
            row.voice = str(rec["voice"])
        if "speaker" in rec:
            row.speaker = _integer(rec["speaker"], "speaker")
        if "speaker_mix" in rec:
            row.speaker_mix = _mix(rec["speaker_mix"])
        for name in ("length_scale", "noise_scale", "noise_w_scale"):
            if name in rec:
                setattr(row, name, _scale(rec[name], name))
        if "seed" in rec:
            row.seed = _integer(rec["seed"], "seed")
    except ValueError as e:
        row.error = str(e)
    return row


def _integer(value, name: str) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}") from None
    if v < 0 or (isinstance(value, float) and v != value):
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return v


def _mix(value) -> tuple:
    """[a, b, t] or "a,b,t": speakers a and b, t in [0, 1] from a to b."""
    parts = value.split(",") if isinstance(value, str) else value
    try:
        a, b, t = parts
        a, b, t = _integer(a, "speaker_mix's speaker"), _integer(b, "speaker_mix's speaker"), float(t)
    except (TypeError, ValueError) as e:
        raise ValueError(f"speaker_mix must be [speaker, speaker, t], got {value!r}") from e
    if not (math.isfinite(t) and 0.0 <= t <= 1.0):
        raise ValueError(f"speaker_mix's t must be in [0, 1], got {t!r}")
    return (a, b, t)


def _scale(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or (name == "length_scale" and v == 0):
        raise ValueError(f"{name} must be finite and {'> 0' if name == 'length_scale' else '>= 0'}, got {value!r}")
    return v


def expand_grid(rows: Sequence[Row], length_scales: Sequence[float] = (), noise_scales: Sequence[float] = (),
                noise_w_scales: Sequence[float] = (), speakers: Sequence[int] = ()) -> list[Row]:
    """Each row once per combination of the given values (wake-word data: one text at many speeds,
    noise levels and speakers); the new ids say which (``hey.ls0.8.ns0.667.sp3``). An empty list
    keeps the row's own value. Failed rows pass through once."""
    axes = [("ls", "length_scale", list(length_scales)), ("ns", "noise_scale", list(noise_scales)),
            ("nw", "noise_w_scale", list(noise_w_scales)), ("sp", "speaker", list(speakers))]
    axes = [a for a in axes if a[2]]
    if not axes:
        return list(rows)
    out = []
    for row in rows:
        if row.error:
            out.append(row)
            continue
        for combo in itertools.product(*[a[2] for a in axes]):
            changes = {name: value for (_, name, _), value in zip(axes, combo)}
            suffix = ".".join(f"{tag}{value:g}" if isinstance(value, float) else f"{tag}{value}"
                              for (tag, _, _), value in zip(axes, combo))
            out.append(replace(row, id=f"{row.id}.{suffix}", **changes))
    return out


def parse_list(text: Optional[str], kind=float) -> list:
    """'0.8,1,1.2' -> [0.8, 1.0, 1.2]; for speakers also ranges '0-9'."""
    if not text:
        return []
    values = []
    for part in text.split(","):
        part = part.strip()
        if kind is int and "-" in part:
            lo, hi = part.split("-", 1)
            values.extend(range(int(lo), int(hi) + 1))
        else:
            values.append(kind(part))
    return values


def iter_batches(items: Sequence, size: int, key) -> Iterator[list]:
    """Items grouped by ``key`` (voice), sorted by length within a group, cut into batches of
    ``size``: companions of similar length, so that lanes finish together."""
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    for group in groups.values():
        group.sort(key=lambda it: it.length)
        for i in range(0, len(group), size):
            yield group[i:i + size]
