"""The corpus's worker: a Ray actor holding one compiled voice (per voice file it is asked for) that
makes a batch of rows in one engine call (``lockstep.piper``'s batches) and writes each row's WAV
(written beside, then renamed: never a half-written file under its final name)."""
from __future__ import annotations

import hashlib
import io
import os
import re
import resource
import socket
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass
class Task:
    """A row ready to make: its sentences' phonemes and ids were found by the driver."""
    id: str
    text: Optional[str]
    sentences: list[list[str]]
    ids: list[list[int]]
    voice: str
    speaker: Optional[int]
    speaker_mix: Optional[tuple]
    length_scale: Optional[float]
    noise_scale: Optional[float]
    noise_w_scale: Optional[float]
    seed: int

    @property
    def length(self) -> int:
        return sum(len(i) for i in self.ids)


def wav_name(row_id: str) -> str:
    """A file name for a row id: the id where it is a safe name, else its safe characters and a hash."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", row_id).lstrip(".") or "row"
    if safe != row_id:
        safe = f"{safe[:80]}-{hashlib.sha256(row_id.encode()).hexdigest()[:12]}"
    return f"{safe}.wav"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class VoiceWorker:
    """Made a Ray actor by the driver (``ray.remote(VoiceWorker)``), or used directly in-process."""

    def __init__(self, out: str, backend: str = "cpu", threads: int = 0, include_alignments: bool = True):
        self.out, self.backend, self.threads = Path(out), backend, threads
        self.include_alignments = include_alignments
        self.voices: dict = {}
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        try:  # under Ray: which node, too (a cluster's nodes may share a host name)
            import ray
            if ray.is_initialized():
                self.name += f"@{ray.get_runtime_context().get_node_id()[:8]}"
        except ImportError:
            pass
        (self.out / "wav").mkdir(parents=True, exist_ok=True)

    def _voice(self, path: str):
        if path not in self.voices:
            from ..piper import PiperVoice
            self.voices[path] = PiperVoice.load(path, backend=self.backend, threads=self.threads or None,
                                                include_alignments=self.include_alignments)
        return self.voices[path]

    def ready(self) -> str:
        return self.name

    def make(self, tasks: list[Task]) -> list[dict]:
        """Every task's record for the manifest; a task that cannot be made is a failed record."""
        from ..piper import SynthesisConfig
        from ..piper.batch import BatchItemError, Item, make_items
        voice = self._voice(tasks[0].voice)
        items = [Item(text=t.text or "", sentences=t.sentences, ids=t.ids, seed=t.seed,
                      embedding=voice.speaker_embedding(*t.speaker_mix) if t.speaker_mix else None,
                      syn=SynthesisConfig(speaker_id=t.speaker, length_scale=t.length_scale,
                                          noise_scale=t.noise_scale, noise_w_scale=t.noise_w_scale))
                 for t in tasks]
        start = time.perf_counter()
        made = make_items(voice, items, self.include_alignments)
        share = (time.perf_counter() - start) / len(tasks)
        records = []
        for task, chunks in zip(tasks, made):
            rec = record(task, voice.config.sample_rate)
            rec.update(worker=self.name, seconds=share)
            if isinstance(chunks, BatchItemError):
                rec.update(status="failed", error=chunks.reason)
            else:
                self._write(task, chunks, rec)
            rec["worker_peak_rss_mb"] = peak_rss_mb()
            records.append(rec)
        return records

    def _write(self, task: Task, chunks: list, rec: dict) -> None:
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:  # what piper-tts's synthesize_wav writes
            w.setframerate(rec["sample_rate"])
            w.setsampwidth(2)
            w.setnchannels(1)
            for c in chunks:
                w.writeframes(c.audio_int16_bytes)
        data = buf.getvalue()
        name = wav_name(task.id)
        tmp = self.out / "wav" / f".{name}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.out / "wav" / name)
        alignments = []
        for c in chunks:
            if c.phoneme_id_samples is not None:
                alignments.extend(int(x) for x in c.phoneme_id_samples)
        rec.update(status="ok", wav=f"wav/{name}", sha256=hashlib.sha256(data).hexdigest(),
                   samples=sum(len(c.audio_int16_bytes) // 2 for c in chunks), alignments=alignments)


def record(task: Task, sample_rate: int) -> dict:
    """A task's manifest fields that do not depend on making it."""
    return {"id": task.id, "status": "failed", "error": None, "text": task.text,
            "phonemes": ["".join(s) for s in task.sentences if s],
            "phoneme_ids": [i for ids in task.ids for i in ids], "alignments": None, "voice": task.voice,
            "speaker": task.speaker, "speaker_mix": list(task.speaker_mix) if task.speaker_mix else None,
            "length_scale": task.length_scale, "noise_scale": task.noise_scale,
            "noise_w_scale": task.noise_w_scale, "seed": task.seed, "samples": None, "sample_rate": sample_rate,
            "wav": None, "sha256": None, "worker": None, "seconds": None, "worker_peak_rss_mb": None}
