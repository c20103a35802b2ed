"""``python -m lockstep.piper.http_server``: piper-tts's HTTP server (``GET /``, ``GET /voices``,
``GET /info``, ``POST /synthesize`` with piper's JSON fields, returning audio/wav) on lockstep, plus
streaming and the limits a shared server needs (docs/piper.md, "HTTP server").

Built on Starlette with uvicorn (ASGI): a streamed response is written sentence by sentence as the
voice makes it, a client that goes away is noticed between sentences and its work stops, and one
process serves many connections while the compiled voice runs in worker threads (lockstep releases
the GIL). piper's own server is Flask: one request at a time, whole WAVs only.

Added to piper's: ``"stream": true`` (a WAV with open-ended sizes, or raw s16le PCM with
``"format": "raw"``, in chunked transfer), ``"seed"``; ``--max-concurrent`` requests synthesizing at
once, ``--max-queue`` more waiting (then 503 with Retry-After), ``--max-text`` characters,
``--timeout`` seconds per request. A bad request is a 4xx with ``{"error": ..., "field": ...}``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import struct
import threading
import time
from pathlib import Path
from typing import Any, Optional

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from . import PiperVoice, SynthesisConfig

_LOGGER = logging.getLogger("lockstep.piper.http_server")
_PAGE = Path(__file__).with_name("web") / "index.html"
# Scales a request may ask for: piper's defaults are 1, 0.667, 0.8; beyond these the voice makes
# noise or silence, and a length scale of 1000 would hold a worker for minutes.
_SCALE_LIMITS = {"length_scale": (0.05, 20.0), "noise_scale": (0.0, 10.0), "noise_w_scale": (0.0, 10.0)}


class BadRequest(Exception):
    def __init__(self, status: int, error: str, field: Optional[str] = None):
        super().__init__(error)
        self.status, self.error, self.field = status, error, field


class Busy(Exception):
    pass


class Gate:
    """At most `concurrent` requests synthesizing and `queue` more waiting; beyond that, Busy."""

    def __init__(self, concurrent: int, queue: int):
        self._slots = asyncio.Semaphore(concurrent)
        self._queue, self._waiting = queue, 0

    async def __aenter__(self) -> None:
        if self._slots.locked() and self._waiting >= self._queue:
            raise Busy()
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1

    async def __aexit__(self, *exc: Any) -> None:
        self._slots.release()


class Voices:
    """Voices by id (file name without .onnx): the default one loaded at start, others from the data
    directories when first asked for, each compiled once and shared by every request."""

    def __init__(self, args: argparse.Namespace, default_path: Path):
        self.args, self.default_id = args, default_path.name[: -len(".onnx")]
        self._paths = {self.default_id: default_path}
        self._loaded: dict[str, PiperVoice] = {}
        self._lock = threading.Lock()
        self.get(self.default_id)

    def path(self, voice_id: str) -> Optional[Path]:
        if voice_id in self._paths:
            return self._paths[voice_id]
        if "/" in voice_id or voice_id.startswith("."):
            return None
        for d in self.args.data_dir:
            p = Path(d) / f"{voice_id}.onnx"
            if p.exists() and Path(f"{p}.json").exists():
                return p
        return None

    def get(self, voice_id: str) -> PiperVoice:
        with self._lock:
            if voice_id not in self._loaded:
                path = self.path(voice_id)
                if path is None:
                    raise BadRequest(404, f"no voice named {voice_id!r} (GET /voices lists them)", "voice")
                self._loaded[voice_id] = PiperVoice.load(
                    path, include_alignments=True, backend=self.args.backend or ("cuda" if self.args.cuda else "cpu"),
                    seed=self.args.seed, threads=self.args.threads)
                self._paths[voice_id] = path
            return self._loaded[voice_id]

    def configs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        candidates = [self._paths[self.default_id]]
        for d in self.args.data_dir:
            candidates += sorted(Path(d).glob("*.onnx"))
        for p in candidates:
            voice_id, config = p.name[: -len(".onnx")], Path(f"{p}.json")
            if voice_id not in out and config.exists():
                with open(config, "r", encoding="utf-8") as f:
                    out[voice_id] = json.load(f)
        return out


def _number(data: dict, name: str, default: float) -> float:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(400, f"{name} must be a number, got {value!r}", name)
    value = float(value)
    lo, hi = _SCALE_LIMITS[name]
    if not math.isfinite(value) or not lo <= value <= hi:
        raise BadRequest(400, f"{name} must be a finite number in [{lo:g}, {hi:g}], got {value!r}", name)
    return value


def parse_request(body: bytes, voices: Voices, args: argparse.Namespace) -> tuple[str, PiperVoice, SynthesisConfig, dict]:
    """The request's text, voice and synthesis settings, or BadRequest naming the field."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(400, f"the body is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise BadRequest(400, f"the body must be a JSON object, got {type(data).__name__}")
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest(400, "text is required: a non-empty string", "text")
    text = text.strip()
    if len(text) > args.max_text:
        raise BadRequest(413, f"text has {len(text)} characters; this server takes at most {args.max_text}", "text")
    voice_id = data.get("voice", voices.default_id)
    if not isinstance(voice_id, str):
        raise BadRequest(400, f"voice must be a string, got {voice_id!r}", "voice")
    voice = voices.get(voice_id)
    config = voice.config
    speaker_id = data.get("speaker_id")
    if speaker_id is not None:
        if isinstance(speaker_id, bool) or not isinstance(speaker_id, int) or not 0 <= speaker_id < max(1, config.num_speakers):
            raise BadRequest(400, f"speaker_id {speaker_id!r} is not a speaker of {voice_id!r} "
                                  f"(0..{max(1, config.num_speakers) - 1})", "speaker_id")
    elif data.get("speaker") is not None:
        speaker = data["speaker"]
        speaker_id = config.speaker_id_map.get(speaker) if isinstance(speaker, str) else None
        if speaker_id is None:
            names = ", ".join(sorted(config.speaker_id_map)) or "none: it has one speaker"
            raise BadRequest(400, f"speaker {speaker!r} is not a speaker of {voice_id!r} ({names})", "speaker")
    elif config.num_speakers > 1:
        speaker_id = args.speaker if args.speaker is not None else 0
    fmt = data.get("format", "wav")
    if fmt not in ("wav", "raw"):
        raise BadRequest(400, f"format must be 'wav' or 'raw', got {fmt!r}", "format")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(400, f"stream must be true or false, got {stream!r}", "stream")
    syn = SynthesisConfig(
        speaker_id=speaker_id,
        length_scale=_number(data, "length_scale", args.length_scale if args.length_scale is not None else config.length_scale),
        noise_scale=_number(data, "noise_scale", args.noise_scale if args.noise_scale is not None else config.noise_scale),
        noise_w_scale=_number(data, "noise_w_scale",
                              args.noise_w_scale if args.noise_w_scale is not None else config.noise_w_scale))
    return text, voice, syn, {"format": fmt, "stream": stream, "voice": voice_id}


def wav_header(sample_rate: int, data_bytes: Optional[int]) -> bytes:
    """A 44-byte PCM s16le mono WAV header; sizes 0xFFFFFFFF when the length is not known yet (a
    stream: players read to the end)."""
    riff = 0xFFFFFFFF if data_bytes is None else 36 + data_bytes
    data = 0xFFFFFFFF if data_bytes is None else data_bytes
    return (b"RIFF" + struct.pack("<I", riff) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data" + struct.pack("<I", data))


def create_app(args: argparse.Namespace, voices: Voices) -> Starlette:
    gate = Gate(args.max_concurrent, args.max_queue)
    last: dict[str, Any] = {}

    def error(status: int, message: str, field: Optional[str] = None, headers: Optional[dict] = None) -> JSONResponse:
        return JSONResponse({"error": message, "field": field}, status_code=status, headers=headers)

    async def sentences(request: Request, text: str, voice: PiperVoice, syn: SynthesisConfig, deadline: float,
                        watch: bool):
        """The request's audio a sentence at a time (int16 bytes), made in a worker thread; stops when
        the deadline has passed, or (`watch`) the client has gone. A streamed response is not watched
        here: Starlette closes this generator when a write to a gone client fails."""
        chunks = iter(voice.synthesize(text, syn, include_alignments=True))
        silence = bytes(int(voice.config.sample_rate * args.sentence_silence) * 2)
        phonemes: list[str] = []
        alignments: list[dict[str, Any]] = []
        start, first = time.monotonic(), True
        while True:
            if watch and await request.is_disconnected():
                _LOGGER.info("client went away: stopping its synthesis")
                return
            if time.monotonic() > deadline:
                raise TimeoutError
            chunk = await anyio.to_thread.run_sync(next, chunks, None)
            if chunk is None:
                break
            phonemes.extend(chunk.phonemes)
            for a in chunk.phoneme_alignments or []:
                alignments.append({"phoneme": a.phoneme, "seconds": a.num_samples / chunk.sample_rate})
            yield (b"" if first else silence) + chunk.audio_int16_bytes
            first = False
        last.clear()
        last.update(text=text, synthesize_seconds=time.monotonic() - start, phonemes=phonemes, alignments=alignments)

    async def synthesize(request: Request) -> Response:
        try:
            body = await request.body()
            text, voice, syn, opts = await anyio.to_thread.run_sync(parse_request, body, voices, args)
        except BadRequest as e:
            return error(e.status, e.error, e.field)
        rate = voice.config.sample_rate
        deadline = time.monotonic() + args.timeout
        try:
            await gate.__aenter__()
        except Busy:
            return error(503, f"busy: {args.max_concurrent} requests synthesizing and {args.max_queue} waiting",
                         headers={"Retry-After": "1"})
        if not opts["stream"]:
            try:
                audio = b"".join([c async for c in sentences(request, text, voice, syn, deadline, True)])
            except TimeoutError:
                return error(504, f"synthesis took longer than {args.timeout:g} s", "text")
            finally:
                await gate.__aexit__()
            if opts["format"] == "raw":
                return Response(audio, media_type=f"audio/L16; rate={rate}; channels=1")
            return Response(wav_header(rate, len(audio)) + audio, media_type="audio/wav")

        async def body_stream():
            try:
                if opts["format"] == "wav":
                    yield wav_header(rate, None)
                async for c in sentences(request, text, voice, syn, deadline, False):
                    yield c
            except TimeoutError:
                _LOGGER.warning("streamed request over %g s: cut short", args.timeout)
            finally:
                await gate.__aexit__()

        media = "audio/wav" if opts["format"] == "wav" else f"audio/L16; rate={rate}; channels=1"
        return StreamingResponse(body_stream(), media_type=media)

    async def info(request: Request) -> JSONResponse:
        v = voices.get(voices.default_id)
        return JSONResponse({"voice": {"name": voices.default_id, "language": v.config.espeak_voice,
                                       "num_speakers": v.config.num_speakers,
                                       "lockstep": {"backend": v.session.get_providers()[0]}},
                             "last": last or None})

    async def list_voices(request: Request) -> JSONResponse:
        return JSONResponse(await anyio.to_thread.run_sync(voices.configs))

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(_PAGE.read_text(encoding="utf-8"))

    return Starlette(routes=[Route("/", index), Route("/info", info), Route("/voices", list_voices),
                             Route("/synthesize", synthesize, methods=["POST"])])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lockstep.piper.http_server",
                                description="Piper's HTTP server on lockstep.")
    p.add_argument("--host", default="0.0.0.0", help="HTTP server host")
    p.add_argument("--port", type=int, default=5000, help="HTTP server port")
    p.add_argument("-m", "--model", required=True, help="Path to Onnx model file (or a voice name in --data-dir)")
    p.add_argument("-s", "--speaker", type=int, help="Id of speaker (default: 0)")
    p.add_argument("--length-scale", "--length_scale", type=float, help="Phoneme length")
    p.add_argument("--noise-scale", "--noise_scale", type=float, help="Generator noise")
    p.add_argument("--noise-w-scale", "--noise_w_scale", "--noise-w", "--noise_w", type=float, help="Phoneme width noise")
    p.add_argument("--cuda", action="store_true", help="Use GPU (lockstep's cuda backend)")
    p.add_argument("--sentence-silence", "--sentence_silence", type=float, default=0.0,
                   help="Seconds of silence after each sentence")
    p.add_argument("--data-dir", "--data_dir", action="append", default=[str(Path.cwd())],
                   help="Data directory to check for voices (default: current directory)")
    p.add_argument("--debug", action="store_true", help="Print DEBUG messages to console")
    # lockstep's own
    p.add_argument("--backend", choices=("cpu", "cuda", "vulkan", "reference"), help="default cpu; cuda with --cuda")
    p.add_argument("--seed", type=int, default=0, help="Seed of the voices' noise (same text, same bits)")
    p.add_argument("--threads", type=int, help="CPU threads per run (default: the CPUs this process may use)")
    p.add_argument("--max-concurrent", type=int, default=2, help="Requests synthesizing at once (default 2)")
    p.add_argument("--max-queue", type=int, default=32, help="Requests waiting beyond those (default 32; then 503)")
    p.add_argument("--max-text", type=int, default=20000, help="Characters of text a request may send (default 20000)")
    p.add_argument("--timeout", type=float, default=120.0, help="Seconds a request may take (default 120)")
    return p


def main(argv: Optional[list[str]] = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO)
    model = Path(args.model)
    if not model.exists():
        for d in args.data_dir:
            if (Path(d) / f"{args.model}.onnx").exists():
                model = Path(d) / f"{args.model}.onnx"
                break
    if not model.exists():
        raise SystemExit(f"http_server: no voice at {args.model} (nor {args.model}.onnx in {', '.join(args.data_dir)})")
    if min(args.max_concurrent, args.max_text) < 1 or args.max_queue < 0 or not args.timeout > 0:
        raise SystemExit("http_server: --max-concurrent and --max-text must be >= 1, --max-queue >= 0, --timeout > 0")
    voices = Voices(args, model)
    uvicorn.run(create_app(args, voices), host=args.host, port=args.port, log_level="debug" if args.debug else "info")


if __name__ == "__main__":
    main()
