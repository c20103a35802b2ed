"""lockstep.piper.http_server (issue 46) on 127.0.0.1: piper's endpoints, audio equal to the API's,
streams equal to whole responses, a load test (concurrent clients, bad requests mixed in, every good
response bit-identical to its single request), 503 when full, a disconnected client's slot freed.
Skips without piper-tts, Starlette/uvicorn or the joe voice."""
import io
import json
import os
import socket
import sys
import time
import urllib.request
import wave

import pytest

pytest.importorskip("piper", reason="piper-tts is not installed (pip install 'lockstep[piper]')")
pytest.importorskip("starlette", reason="Starlette is not installed (pip install 'lockstep[server]')")
pytest.importorskip("uvicorn", reason="uvicorn is not installed (pip install 'lockstep[server]')")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import http_load  # noqa: E402

VOICE = os.environ.get("LOCKSTEP_VOICE", os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
QUIET = ["--noise-scale", "0", "--noise-w-scale", "0"]
pytestmark = pytest.mark.skipif(not os.path.exists(VOICE), reason=f"no Piper voice at {VOICE}: scripts/fetch-voice.sh")


@pytest.fixture(scope="module")
def server():
    proc, url = http_load.start_server(VOICE, *QUIET, "--threads", "1", "--max-concurrent", "2", "--max-queue", "64")
    yield proc, url
    proc.terminate()
    proc.wait(timeout=30)


def _get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.status, r.read(), r.headers


def test_piper_endpoints(server):
    _, url = server
    status, page, headers = _get(url + "/")
    assert status == 200 and b"<textarea" in page and b"/synthesize" in page
    info = json.loads(_get(url + "/info")[1])
    assert info["voice"]["name"] == "en_US-joe-medium" and info["voice"]["num_speakers"] == 1
    voices = json.loads(_get(url + "/voices")[1])
    assert voices["en_US-joe-medium"]["audio"]["sample_rate"] == 22050


def test_audio_equals_the_api_and_streams_equal_whole_responses(server):
    import lockstep.piper as lp
    _, url = server
    text = "Hello there. The quick brown fox jumps over the lazy dog."
    voice = lp.PiperVoice.load(VOICE, threads=1)
    expected = b"".join(c.audio_int16_bytes for c in voice.synthesize(text, lp.SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)))
    status, body, headers = http_load.post(url, json.dumps({"text": text}).encode())
    assert status == 200 and headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(body)) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (22050, 2, 1)
        assert w.readframes(w.getnframes()) == expected  # the API's bits, sentence after sentence
    raw = http_load.post(url, json.dumps({"text": text, "format": "raw"}).encode())[1]
    streamed_raw = http_load.post(url, json.dumps({"text": text, "format": "raw", "stream": True}).encode())[1]
    streamed_wav = http_load.post(url, json.dumps({"text": text, "stream": True}).encode())[1]
    assert raw == streamed_raw == expected
    assert streamed_wav[:4] == b"RIFF" and streamed_wav[44:] == expected
    info = json.loads(_get(url + "/info")[1])
    # piper's alignments: each sentence's phonemes with its start and end markers (2 sentences here)
    assert info["last"]["text"] == text and len(info["last"]["alignments"]) == len(info["last"]["phonemes"]) + 2 * 2


def test_bad_requests_name_the_field(server):
    _, url = server
    for body, status, field in http_load.BAD:
        got, data, _ = http_load.post(url, body)
        err = json.loads(data)
        assert (got, err["field"]) == (status, field), f"{body!r}: {got} {err}"
        assert err["error"]
    long_text = json.dumps({"text": "a" * 20001}).encode()
    got, data, _ = http_load.post(url, long_text)
    assert got == 413 and json.loads(data)["field"] == "text"


def test_load_concurrent_clients_get_their_single_request_bits(server):
    proc, url = server
    requests = int(os.environ.get("LOCKSTEP_HTTP_LOAD_REQUESTS", "400"))
    r = http_load.run_load(url, proc.pid, clients=16, requests=requests)
    print(f"\nhttp load: {json.dumps({k: v for k, v in r.items() if k != 'failures'})}")
    assert not r["failures"], "\n".join(r["failures"][:10])
    assert r["good"] + r["bad"] == requests
    # Resident memory flat after warm-up: compiled lengths are cached, nothing else accumulates.
    assert r["rss_kib_end"] < 1.15 * r["rss_kib_after_warmup"] + 20_000, r


def test_a_full_server_says_503_and_a_gone_client_frees_its_slot():
    proc, url = http_load.start_server(VOICE, *QUIET, "--threads", "1", "--max-concurrent", "1", "--max-queue", "0")
    try:
        long_text = " ".join(["This sentence keeps the only slot busy for a while."] * 12)
        port = int(url.rsplit(":", 1)[1])
        # A streamed request whose client reads the first bytes and goes away.
        s = socket.create_connection(("127.0.0.1", port))
        body = json.dumps({"text": long_text, "stream": True, "format": "raw"}).encode()
        s.sendall(b"POST /synthesize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert s.recv(64).startswith(b"HTTP/1.1 200")
        status, data, headers = http_load.post(url, json.dumps({"text": "Hi."}).encode())
        assert status == 503 and headers.get("retry-after") == "1" and b"busy" in data
        s.close()
        # Its synthesis stops at the next sentence and the slot is free again.
        deadline = time.monotonic() + 30
        while True:
            status, _, _ = http_load.post(url, json.dumps({"text": "Hi."}).encode())
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
