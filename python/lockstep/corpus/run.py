"""The corpus driver: rows -> phonemes -> batches of similar length -> Ray actors (one compiled voice
each) -> WAV files and the Parquet manifest. With no address Ray starts on this machine; with one it
joins that cluster. Nothing lost, nothing twice: rows whose WAV and record are complete are skipped,
a batch lost with its worker is made again by Ray on a restarted actor (or here, by the driver, on
another), and each id has one record."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import manifest
from .rows import Row, default_seed, iter_batches
from .worker import Task, VoiceWorker, record


@dataclass
class Settings:
    out: Path
    voice: Optional[str] = None  # rows that name none use this
    backend: str = "cpu"
    address: Optional[str] = None  # a Ray cluster to join; None: start Ray here
    workers: int = 0  # actors; 0: the cluster's CPUs (GPUs with num_gpus) over threads
    threads: int = 1  # CPU threads (engine lanes) per actor
    num_gpus: float = 0.0  # GPUs per actor (cuda)
    batch_size: int = 16
    retry_failed: bool = False
    progress: bool = True
    espeak_data_dir: Optional[str] = None


@dataclass
class Summary:
    total: int = 0
    skipped: int = 0
    made: int = 0
    failed: int = 0
    seconds: float = 0.0
    workers: dict = field(default_factory=dict)  # name -> peak RSS MB

    def as_dict(self) -> dict:
        return dict(total=self.total, skipped=self.skipped, made=self.made, failed=self.failed,
                    seconds=round(self.seconds, 3),
                    clips_per_s=round(self.made / self.seconds, 3) if self.seconds else None,
                    worker_peak_rss_mb=self.workers)


def complete(out: Path, rec: dict, retry_failed: bool) -> bool:
    """A record that needs no redoing: a failed row (unless asked to retry), or a made one whose WAV
    is there with the bytes the record hashed."""
    if rec["status"] == "failed":
        return not retry_failed
    wav = out / (rec["wav"] or "")
    if not rec["wav"] or not wav.is_file():
        return False
    return hashlib.sha256(wav.read_bytes()).hexdigest() == rec["sha256"]


def plan(rows: list[Row], settings: Settings) -> tuple[list[Task], list[dict]]:
    """Tasks for the rows that can be made, failed records for those that cannot: phonemized here
    with piper-tts's phonemizer and the voice's config (a speaker the voice lacks fails here)."""
    from ..piper.config import PiperConfig
    from ..piper.voice import check_speaker
    from piper.phonemize_espeak import ESPEAK_DATA_DIR
    from piper.voice import PiperVoice as _PiperVoice

    phonemizers: dict = {}
    tasks, failed = [], []
    for row in rows:
        voice = os.path.abspath(row.voice or settings.voice) if (row.voice or settings.voice) else None
        task = Task(id=row.id, text=row.text, sentences=[], ids=[], voice=voice or "", speaker=row.speaker,
                    speaker_mix=row.speaker_mix,
                    length_scale=row.length_scale, noise_scale=row.noise_scale, noise_w_scale=row.noise_w_scale,
                    seed=default_seed(row.id) if row.seed is None else row.seed)
        error = row.error
        if not error and voice is None:
            error = "no voice: the row names none and --voice was not given"
        if not error:
            try:
                if voice not in phonemizers:
                    with open(f"{voice}.json", encoding="utf-8") as f:
                        config = PiperConfig.from_dict(json.load(f))
                    phonemizers[voice] = _PiperVoice(config=config, session=None, espeak_data_dir=Path(
                        settings.espeak_data_dir or ESPEAK_DATA_DIR))
                p = phonemizers[voice]
                n = p.config.num_speakers
                for s in [row.speaker] + list(row.speaker_mix[:2] if row.speaker_mix else []):
                    if s is not None and n > 1:
                        check_speaker(n, s)
                if row.speaker_mix and n <= 1:
                    raise ValueError("speaker_mix: this voice has one speaker")
                if row.phoneme_ids is not None:
                    task.ids, task.sentences = [row.phoneme_ids], [[]]
                else:
                    task.sentences = p.phonemize(row.text)
                    task.ids = [p.phonemes_to_ids(s) for s in task.sentences if s]
                    if not task.ids:
                        raise ValueError(f"the text {row.text!r} has no phonemes")
            except (OSError, ValueError, KeyError) as e:
                error = str(e) if not isinstance(e, OSError) else f"voice {voice}: {e.strerror or e}"
        if error:
            rec = record(task, 0)
            rec.update(error=error)
            failed.append(rec)
        else:
            tasks.append(task)
    return tasks, failed


def run_corpus(rows: list[Row], settings: Settings, log=print) -> Summary:
    out = settings.out
    (out / "wav").mkdir(parents=True, exist_ok=True)
    for stale in (out / "wav").glob(".*.tmp"):  # a crashed run's unfinished files (never renamed)
        stale.unlink()
    summary = Summary(total=len(rows))
    started = time.perf_counter()
    done = {i: r for i, r in manifest.read_records(out).items() if complete(out, r, settings.retry_failed)}
    todo = [r for r in rows if r.id not in done]
    summary.skipped = len(rows) - len(todo)
    if summary.skipped:
        log(f"corpus: {summary.skipped} of {len(rows)} rows already made (manifest and WAV agree): skipped")
    tasks, failed = plan(todo, settings)
    if failed:
        manifest.write_part(out, failed)
        summary.failed += len(failed)
    if tasks:
        _make(tasks, settings, summary, log)
    for stale in (out / "wav").glob(".*.tmp"):  # a killed worker's unfinished file (its rows were made again)
        stale.unlink()
    kept = manifest.read_records(out)
    wanted = {r.id for r in rows}
    path = manifest.consolidate(out, [r for i, r in kept.items() if i in wanted])
    summary.seconds = time.perf_counter() - started
    log(f"corpus: {summary.made} made, {summary.failed} failed, {summary.skipped} skipped; manifest {path}")
    return summary


def _make(tasks: list[Task], settings: Settings, summary: Summary, log) -> None:
    import ray
    from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

    own_ray = not ray.is_initialized()
    if own_ray:
        kwargs = dict(address=settings.address) if settings.address else dict(include_dashboard=False)
        ray.init(logging_level="WARNING", log_to_driver=False, **kwargs)
    try:
        resources = ray.cluster_resources()
        n = settings.workers
        if n <= 0:
            n = int(resources.get("GPU", 0) // settings.num_gpus) if settings.num_gpus else \
                int(resources.get("CPU", 1) // max(1, settings.threads))
        n = max(1, n)
        # A worker that dies is started again and its batch made again (Ray's actor fault tolerance).
        Actor = ray.remote(max_restarts=-1, max_task_retries=-1)(VoiceWorker)
        workers = [Actor.options(num_cpus=settings.threads, num_gpus=settings.num_gpus).remote(
            str(settings.out.resolve()), settings.backend, settings.threads) for _ in range(n)]
        batches = deque(iter_batches(tasks, settings.batch_size, key=lambda t: t.voice))
        log(f"corpus: {len(tasks)} rows in {len(batches)} batches on {n} worker(s) "
            f"({settings.threads} thread(s) each, {settings.backend}; Ray {ray.__version__})")
        bar = _Progress(len(tasks), settings.progress)
        pending: dict = {}

        def submit(worker) -> None:
            if batches:
                batch = batches.popleft()
                pending[worker.make.remote(batch)] = (batch, worker)

        for _ in range(2):  # two batches each: the next is queued while one is made
            for w in workers:
                submit(w)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            batch, worker = pending.pop(ready[0])
            try:
                records = ray.get(ready[0])
            except (RayActorError, WorkerCrashedError) as e:  # the actor is gone for good: another makes it
                log(f"corpus: a worker was lost ({type(e).__name__}); its {len(batch)} rows go to another")
                workers = [w for w in workers if w is not worker]
                if not workers:
                    raise RuntimeError("corpus: every worker was lost") from e
                batches.appendleft(batch)
                submit(workers[0])
                continue
            except RayTaskError as e:  # the batch itself failed (not its worker): its rows fail, the rest goes on
                reason = f"the batch failed: {type(e.cause).__name__ if e.cause else 'error'}: {e.cause or e}"
                log(f"corpus: {reason} ({len(batch)} rows recorded as failed)")
                records = []
                for task in batch:
                    rec = record(task, 0)
                    rec.update(error=reason[:2000])
                    records.append(rec)
            manifest.write_part(settings.out, records)
            for rec in records:
                if rec["status"] == "ok":
                    summary.made += 1
                else:
                    summary.failed += 1
                summary.workers[rec["worker"]] = max(summary.workers.get(rec["worker"], 0.0),
                                                     rec["worker_peak_rss_mb"] or 0.0)
            bar.update(len(records))
            submit(worker)
        bar.close()
    finally:
        if own_ray:
            ray.shutdown()


class _Progress:
    """tqdm's bar (clips, clips/s, time left) where tqdm is installed, else a line every 5 s."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.n = total, enabled, 0
        self.start = self.last = time.perf_counter()
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="clip", dynamic_ncols=True, smoothing=0.1)
            except ImportError:
                pass

    def update(self, k: int) -> None:
        self.n += k
        if self.bar is not None:
            self.bar.update(k)
            return
        now = time.perf_counter()
        if self.enabled and (now - self.last > 5 or self.n == self.total):
            rate = self.n / (now - self.start)
            left = (self.total - self.n) / rate if rate else float("inf")
            print(f"corpus: {self.n}/{self.total} clips, {rate:.1f} clips/s, {left:.0f} s left", file=sys.stderr)
            self.last = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
