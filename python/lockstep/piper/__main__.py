"""``python -m lockstep.piper`` / ``lockstep-piper``: the ``piper`` command's flags and behaviour, on
lockstep. Text from the arguments, from ``-i`` files or from stdin, a line at a time; audio to a WAV
file (``-f``; ``-`` for stdout), one WAV per line (``-d``), raw s16le on stdout flushed per sentence
(``--output-raw``), or played with ffplay. Added: ``--backend``, ``--seed``, ``--threads``, WAV files
written whole or not at all, and a progress line on stderr for long inputs (docs/piper.md)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Iterable, Iterator

_LOGGER = logging.getLogger("lockstep.piper")
_PROGRESS_EVERY_S = 2.0  # a progress line on stderr at most this often, once a job has run this long


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lockstep-piper", description="Piper text to speech on lockstep.")
    p.add_argument("-m", "--model", required=True, help="Path to Onnx model file (or a voice name in --data-dir)")
    p.add_argument("-c", "--config", help="Path to model config file")
    p.add_argument("-i", "--input-file", "--input_file", action="append", help="Paths to input text files")
    p.add_argument("-f", "--output-file", "--output_file", help="Path to output WAV file ('-' for stdout)")
    p.add_argument("-d", "--output-dir", "--output_dir", help="Path to output directory (one WAV per line)")
    p.add_argument("--output-dir-naming", choices=("timestamp", "text"), default="timestamp",
                   help="Naming scheme for WAV files in output directory (default: timestamp)")
    p.add_argument("--output-raw", "--output_raw", action="store_true", help="Stream raw audio to stdout")
    p.add_argument("-s", "--speaker", type=int, help="Id of speaker (default: 0)")
    p.add_argument("--length-scale", "--length_scale", type=float, help="Phoneme length")
    p.add_argument("--noise-scale", "--noise_scale", type=float, help="Generator noise")
    p.add_argument("--noise-w-scale", "--noise_w_scale", "--noise-w", "--noise_w", type=float,
                   help="Phoneme width noise")
    p.add_argument("--cuda", action="store_true", help="Use GPU (lockstep's cuda backend)")
    p.add_argument("--sentence-silence", "--sentence_silence", type=float, default=0.0,
                   help="Seconds of silence after each sentence")
    p.add_argument("--volume", type=float, default=1.0, help="Volume multiplier (default: 1.0)")
    p.add_argument("--no-normalize", action="store_true", help="Don't normalize audio")
    p.add_argument("--data-dir", "--data_dir", action="append", default=[str(Path.cwd())],
                   help="Data directory to check for voice models (default: current directory)")
    p.add_argument("--debug", action="store_true", help="Print DEBUG messages to console")
    # lockstep's own
    p.add_argument("--backend", choices=("cpu", "cuda", "vulkan", "reference"),
                   help="lockstep backend (default cpu; cuda with --cuda)")
    p.add_argument("--seed", type=int, default=0, help="Seed of the voice's noise (default 0): same text, same bits")
    p.add_argument("--threads", type=int, help="CPU threads (default: the CPUs this process may use)")
    p.add_argument("--batch-size", type=int, default=16,
                   help="with --output-dir: lines made in one engine call, one thread each (default 16); "
                        "every file is the same bits as alone")
    return p


def _lines(args: argparse.Namespace, words: list[str]) -> Iterator[str]:
    if args.input_file:
        for path in args.input_file:
            with open(path, "r", encoding="utf-8") as f:
                yield from (line.strip() for line in f if line.strip())
        return
    texts: Iterable[str] = [" ".join(words)] if words else sys.stdin
    yield from (line.strip() for line in texts if line.strip())


def _find_model(args: argparse.Namespace) -> Path:
    model = Path(args.model)
    if not model.exists():
        for data_dir in args.data_dir:
            candidate = Path(data_dir) / f"{args.model}.onnx"
            if candidate.exists():
                return candidate
        raise SystemExit(f"lockstep-piper: no voice {args.model!r}: not a file, and no {args.model}.onnx in "
                         f"{', '.join(args.data_dir)}")
    return model


class _Progress:
    """One stderr line every few seconds on long jobs: lines, sentences, audio seconds, real-time factor."""

    def __init__(self, sample_rate: int):
        self.rate, self.start, self.last = sample_rate, time.monotonic(), time.monotonic()
        self.lines = self.sentences = self.samples = 0
        self.shown = False

    def sentence(self, samples: int) -> None:
        self.sentences += 1
        self.samples += samples
        now = time.monotonic()
        if now - self.start >= _PROGRESS_EVERY_S and now - self.last >= _PROGRESS_EVERY_S:
            self.last, self.shown = now, True
            print(self._text(now), file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.shown:
            print(self._text(time.monotonic()) + " (done)", file=sys.stderr, flush=True)

    def _text(self, now: float) -> str:
        audio, spent = self.samples / self.rate, now - self.start
        return (f"lockstep-piper: {self.lines} lines, {self.sentences} sentences, {audio:.1f} s of audio in "
                f"{spent:.1f} s ({audio / spent if spent else 0:.1f}x real time)")


def _write_wav(path: str, chunks: Iterable, silence: bytes, rate: int) -> None:
    """The WAV written beside `path` and renamed into place: whole or not at all."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, part = tempfile.mkstemp(prefix=".lockstep-piper-", suffix=".wav.part", dir=folder)
    os.close(fd)
    try:
        with wave.open(part, "wb") as wav:
            _write_frames(wav, chunks, silence, rate)
        os.replace(part, path)
    except BaseException:
        os.unlink(part)
        raise


def _write_frames(wav: wave.Wave_write, chunks: Iterable, silence: bytes, rate: int) -> None:
    """`chunks`: (sentence index within its line, chunk) pairs. No text still gives a valid, empty WAV."""
    wav.setframerate(rate)
    wav.setsampwidth(2)
    wav.setnchannels(1)
    params_set = False
    for i, chunk in chunks:
        if not params_set:
            wav.setframerate(chunk.sample_rate)
            wav.setsampwidth(chunk.sample_width)
            wav.setnchannels(chunk.sample_channels)
            params_set = True
        if i > 0:
            wav.writeframes(silence)
        wav.writeframes(chunk.audio_int16_bytes)


def main(argv: list[str] | None = None) -> int:
    args, words = _parser().parse_known_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO)
    from . import PiperVoice, SynthesisConfig  # piper-tts is needed from here on

    try:
        voice = PiperVoice.load(_find_model(args), config_path=args.config, use_cuda=args.cuda,
                                backend=args.backend, seed=args.seed, threads=args.threads)
    except (OSError, ValueError) as e:
        print(f"lockstep-piper: cannot load the voice: {e}", file=sys.stderr)
        return 2
    syn = SynthesisConfig(speaker_id=args.speaker, length_scale=args.length_scale, noise_scale=args.noise_scale,
                          noise_w_scale=args.noise_w_scale, normalize_audio=not args.no_normalize,
                          volume=args.volume)
    silence = bytes(int(voice.config.sample_rate * args.sentence_silence) * 2)  # whole 16-bit samples
    progress = _Progress(voice.config.sample_rate)

    def speak(line: str) -> Iterator:
        """(sentence index within the line, chunk): piper puts the silence between a line's sentences."""
        progress.lines += 1
        for i, chunk in enumerate(voice.synthesize(line, syn)):
            progress.sentence(len(chunk.audio_float_array))
            yield i, chunk

    def every_line() -> Iterator:
        for line in _lines(args, words):
            yield from speak(line)

    try:
        if args.output_raw:
            for i, chunk in every_line():
                if i > 0:
                    sys.stdout.buffer.write(silence)
                sys.stdout.buffer.write(chunk.audio_int16_bytes)
                sys.stdout.buffer.flush()  # a sentence is heard as soon as it is made
        elif args.output_dir:
            from pathvalidate import sanitize_filename  # piper-tts's dependency, piper's file names
            out = Path(args.output_dir)
            out.mkdir(parents=True, exist_ok=True)
            lines = list(_lines(args, words))
            for k in range(0, len(lines), max(1, args.batch_size)):  # lines batched: one thread each
                group = lines[k:k + max(1, args.batch_size)]
                for line, chunks in zip(group, voice.synthesize_batch(group, syn)):
                    progress.lines += 1
                    for chunk in chunks:
                        progress.sentence(len(chunk.audio_float_array))
                    name = sanitize_filename(line) if args.output_dir_naming == "text" else str(time.monotonic_ns())
                    _write_wav(str(out / f"{name}.wav"), enumerate(chunks), silence, voice.config.sample_rate)
                    _LOGGER.info("Wrote %s", out / f"{name}.wav")
        elif args.output_file == "-":
            with tempfile.NamedTemporaryFile("wb+", suffix=".wav") as tmp:
                with wave.open(tmp.name, "wb") as wav:
                    _write_frames(wav, every_line(), silence, voice.config.sample_rate)
                tmp.seek(0)
                sys.stdout.buffer.write(tmp.read())
                sys.stdout.buffer.flush()
        else:
            from piper.audio_playback import AudioPlayer
            if not args.output_file and AudioPlayer.is_available():
                with AudioPlayer(voice.config.sample_rate) as player:
                    for i, chunk in every_line():
                        if i > 0:
                            player.play(silence)
                        player.play(chunk.audio_int16_bytes)
            else:
                if not args.output_file:
                    _LOGGER.warning("Audio playback is not available (ffplay). Writing audio to output.wav.")
                _write_wav(args.output_file or "output.wav", every_line(), silence, voice.config.sample_rate)
    except ValueError as e:  # a bad speaker or scale (a BatchItemError too): the message names it
        print(f"lockstep-piper: {e}", file=sys.stderr)
        return 2
    progress.done()
    return 0


def cli() -> None:
    """The ``lockstep-piper`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
