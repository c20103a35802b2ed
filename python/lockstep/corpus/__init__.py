"""``lockstep corpus`` / ``python -m lockstep.corpus``: speech corpora at scale on Ray (docs/corpus.md).
Rows (JSONL or CSV: id, text or phoneme_ids, voice, speaker, scales, seed) are phonemized, grouped by
length and made in batches by Ray actors that each hold one compiled voice; every row gets a WAV and
a record in a Parquet manifest. Every clip is bit-identical to its ``PiperVoice.synthesize`` with the
same seed, whatever its batch, worker or node. Needs ``pip install 'lockstep[corpus]'`` (Ray,
pyarrow, piper-tts)."""
from .rows import Row, expand_grid, read_rows
from .run import Settings, Summary, run_corpus

__all__ = ["Row", "Settings", "Summary", "expand_grid", "read_rows", "run_corpus"]
