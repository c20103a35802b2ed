"""lockstep corpus (issue 47) on a real Ray: every made row's WAV is what PiperVoice.synthesize_wav
writes for its text and seed, byte for byte; bad rows are failed records with their reasons; the
manifest's SHA-256s do not change with the workers, the batch size or a 2-node cluster; a worker
killed mid-run leaves each id made once; a rerun after an interrupted run skips what was done.
Skips without Ray, pyarrow, piper-tts or the voice."""
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import wave

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'lockstep[corpus]')")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (pip install 'lockstep[corpus]')")
pytest.importorskip("piper", reason="piper-tts is not installed")
import lockstep  # noqa: E402
import lockstep.piper as lp  # noqa: E402
from lockstep.corpus import Settings, read_rows, run_corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOICE = os.environ.get("LOCKSTEP_VOICE", os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
pytestmark = pytest.mark.skipif(not os.path.exists(VOICE), reason=f"no Piper voice at {VOICE}: scripts/fetch-voice.sh")

WORDS = ["hey jarvis", "okay computer", "alexa", "turn it off", "good night", "lights on", "stop", "play music",
         "what is the weather", "set a timer for ten minutes", "call mom", "next song"]
BAD = [{"id": "empty", "text": "  "}, {"id": "slow", "text": "hello", "length_scale": 0},
       {"id": "nan", "text": "hello", "noise_scale": "nan"}, {"id": "nothing"}]


def write_rows(path, n):
    rows = [{"id": f"w{i:03d}", "text": WORDS[i % len(WORDS)] + ("." if i % 3 else "!"),
             "length_scale": 0.9 + 0.1 * (i % 3)} for i in range(n)]
    rows[5]["seed"] = 7
    with open(path, "w") as f:
        for r in rows[:n // 2] + BAD + rows[n // 2:]:
            f.write(json.dumps(r) + "\n")
        f.write("{not json\n")
    return path


def manifest(out):
    return {r["id"]: r for r in pq.read_table(os.path.join(out, "manifest.parquet")).to_pylist()}


def hashes(out):
    return {i: r["sha256"] for i, r in manifest(out).items()}


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory):
    return str(write_rows(tmp_path_factory.mktemp("rows") / "rows.jsonl", 16))


@pytest.fixture(scope="module")
def first(rows_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    summary = run_corpus(read_rows(rows_file), Settings(out=out, voice=VOICE, workers=1, threads=2, batch_size=8,
                                                        progress=False))
    return out, summary


def test_rows_become_wavs_equal_to_synthesize_wav_and_bad_rows_are_recorded(first):
    out, summary = first
    m = manifest(out)
    assert (summary.made, summary.failed) == (16, 5)
    assert len(m) == 21
    reasons = {i: m[i]["error"] for i in m if m[i]["status"] == "failed"}
    assert "empty text" in reasons["empty"]
    assert "length_scale must be finite and > 0" in reasons["slow"]
    assert "noise_scale must be finite" in reasons["nan"]
    assert "neither text nor phoneme_ids" in reasons["nothing"]
    assert any("is not JSON" in r for r in reasons.values())
    voice = lp.PiperVoice.load(VOICE, threads=2)
    for i in ("w000", "w005", "w013"):
        rec = m[i]
        data = open(os.path.join(out, rec["wav"]), "rb").read()
        assert hashlib.sha256(data).hexdigest() == rec["sha256"]
        voice.session.seed = rec["seed"]
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            voice.synthesize_wav(rec["text"], w, lp.SynthesisConfig(length_scale=rec["length_scale"]))
        assert buf.getvalue() == data, f"{i}: not the bytes synthesize_wav writes"
        assert rec["samples"] == (len(data) - 44) // 2 and rec["sample_rate"] == 22050
        assert rec["alignments"] and sum(rec["alignments"]) <= rec["samples"]
    assert m["w005"]["seed"] == 7
    assert not [p for p in os.listdir(os.path.join(out, "wav")) if p.endswith(".tmp")]


def test_the_hashes_do_not_depend_on_workers_batches_or_nodes(first, rows_file, tmp_path):
    expected = hashes(first[0])
    for workers, size in ((2, 1), (1, 32)):
        out = tmp_path / f"w{workers}b{size}"
        run_corpus(read_rows(rows_file), Settings(out=out, voice=VOICE, workers=workers, threads=1, batch_size=size,
                                                  progress=False))
        assert hashes(out) == expected, f"{workers} workers, batches of {size}"
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    try:
        run_corpus(read_rows(rows_file), Settings(out=tmp_path / "nodes", voice=VOICE, address=cluster.address,
                                                  workers=2, threads=1, batch_size=8, progress=False))
        nodes = {r["worker"].split("@")[1] for r in manifest(tmp_path / "nodes").values() if r["worker"]}
        assert len(nodes) == 2, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert hashes(tmp_path / "nodes") == expected


def _cli(rows, out, *extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "lockstep.corpus", str(rows), "-o", str(out), "--voice", VOICE,
                             "--no-progress", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _wait_for_wavs(out, count, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        wavs = os.path.join(out, "wav")
        if os.path.isdir(wavs) and len([p for p in os.listdir(wavs) if p.endswith(".wav")]) >= count:
            return True
        time.sleep(0.05)
    return False


def test_a_worker_killed_mid_run_leaves_each_id_made_once(first, tmp_path):
    psutil = pytest.importorskip("psutil")
    rows = write_rows(tmp_path / "rows.jsonl", 40)
    out = tmp_path / "out"
    proc = _cli(rows, out, "--workers", "2", "--batch-size", "2")
    assert _wait_for_wavs(out, 6, proc), proc.communicate()
    victims = [p for p in psutil.process_iter(["cmdline"]) if "ray::VoiceWorker" in " ".join(p.info["cmdline"] or [])]
    assert victims, "no Ray worker process found"
    victims[0].kill()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    m = manifest(out)
    assert len(m) == 45 and sum(r["status"] == "ok" for r in m.values()) == 40
    assert len({r["worker"] for r in m.values() if r["worker"]}) >= 3  # the killed one, its restart, the other
    small = hashes(first[0])
    assert all(m[i]["sha256"] == small[i] for i in small if small[i])  # the rows both corpora share


def test_a_rerun_after_an_interrupted_run_skips_what_was_done(first, tmp_path):
    rows = write_rows(tmp_path / "rows.jsonl", 40)
    out = tmp_path / "out"
    proc = _cli(rows, out, "--workers", "1", "--batch-size", "4")
    assert _wait_for_wavs(out, 10, proc), proc.communicate()
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its Ray, at once
    proc.communicate()
    time.sleep(1)
    again = _cli(rows, out, "--workers", "1", "--batch-size", "4", "--json")
    stdout, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["skipped"] >= 8 and summary["skipped"] + summary["made"] + summary["failed"] == 45, summary
    m = manifest(out)
    assert len(m) == 45 and sum(r["status"] == "ok" for r in m.values()) == 40
    for rec in m.values():
        if rec["status"] == "ok":
            assert hashlib.sha256(open(os.path.join(out, rec["wav"]), "rb").read()).hexdigest() == rec["sha256"]
    assert not [p for p in os.listdir(out / "wav") if p.endswith(".tmp")]


MULTI = os.path.join(ROOT, "tests/fixtures/piper_arch/piper_arch_s4.onnx")  # Piper's VITS, 4 speakers, random weights


@pytest.fixture
def multi(tmp_path):
    """The 4-speaker Piper-architecture voice with a config (the joe voice's phonemes)."""
    config = json.load(open(f"{VOICE}.json"))
    config.update(num_speakers=4, speaker_id_map={"ann": 0, "bob": 1, "cy": 2, "dee": 3})
    model = tmp_path / "voice.onnx"
    os.symlink(MULTI, model)
    (tmp_path / "voice.onnx.json").write_text(json.dumps(config))
    return model


def test_a_grid_of_scales_and_speakers_on_a_multi_speaker_voice(tmp_path, multi):
    """--length-scales/--speakers make every combination, each clip the voice's own for that speaker and
    scale; a speaker the voice lacks is a failed row naming it."""
    model = multi
    rows = tmp_path / "rows.csv"
    rows.write_text("id,text\nhi,hey jarvis\n")
    from lockstep.corpus.__main__ import main
    assert main([str(rows), "-o", str(tmp_path / "out"), "--voice", str(model), "--workers", "1", "--threads", "2",
                 "--length-scales", "0.8,1.2", "--speakers", "1-3,9", "--no-progress"]) == 0
    m = manifest(tmp_path / "out")
    made = sorted(i for i, r in m.items() if r["status"] == "ok")
    assert made == [f"hi.ls{ls}.sp{sp}" for ls in ("0.8", "1.2") for sp in (1, 2, 3)]
    failed = {i: r["error"] for i, r in m.items() if r["status"] == "failed"}
    assert sorted(failed) == ["hi.ls0.8.sp9", "hi.ls1.2.sp9"]
    assert all("speaker 9 is not a speaker of this voice (it has 4: 0..3)" in e for e in failed.values())
    # At a lane's thread count: the worker ran the grid's rows as a batch on lanes of one thread, and
    # this fixture's 8- and 16-channel convs (oneDNN) give other bits at other thread counts on AVX-512
    # (docs/piper.md "Batches"; the real voices' do not).
    voice = lp.PiperVoice.load(str(model), threads=1)
    rec = m["hi.ls1.2.sp2"]
    voice.session.seed = rec["seed"]
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        voice.synthesize_wav("hey jarvis", w, lp.SynthesisConfig(speaker_id=2, length_scale=1.2))
    assert buf.getvalue() == open(tmp_path / "out" / rec["wav"], "rb").read()
    assert len({r["sha256"] for r in m.values() if r["sha256"]}) == 6  # every speaker and scale differs


def test_rows_between_two_speakers(tmp_path, multi):
    """speaker_mix [a, b, t]: the clip PiperVoice makes with speaker_embedding(a, b, t); a speaker the
    voice lacks or a t outside [0, 1] is a failed row naming it."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in [
        {"id": "mix", "text": "hey jarvis", "speaker_mix": [0, 1, 0.5]},
        {"id": "lost", "text": "hey jarvis", "speaker_mix": "0,7,0.5"},
        {"id": "far", "text": "hey jarvis", "speaker_mix": [0, 1, 2]}]) + "\n")
    run_corpus(read_rows(rows), Settings(out=tmp_path / "out", voice=str(multi), workers=1, threads=2, progress=False))
    m = manifest(tmp_path / "out")
    assert m["mix"]["status"] == "ok" and m["mix"]["speaker_mix"] == [0.0, 1.0, 0.5]
    assert "speaker 7 is not a speaker of this voice" in m["lost"]["error"]
    assert "speaker_mix's t must be in [0, 1]" in m["far"]["error"]
    voice = lp.PiperVoice.load(str(multi), threads=2)
    chunks = voice.synthesize_batch(["hey jarvis"], seeds=[m["mix"]["seed"]],
                                    speaker_embeddings=[voice.speaker_embedding(0, 1, 0.5)])[0]
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setframerate(22050), w.setsampwidth(2), w.setnchannels(1)
        for c in chunks:
            w.writeframes(c.audio_int16_bytes)
    assert buf.getvalue() == open(tmp_path / "out" / m["mix"]["wav"], "rb").read()


def test_a_voice_that_cannot_load_fails_its_rows_and_bad_arguments_are_refused(tmp_path):
    """A malformed model (its config fine): each of its rows is a failed record naming why, the run ends
    normally; a batch size that would hold too much audio, and a missing voice, are refused."""
    (tmp_path / "broken.onnx").write_bytes(b"\x08\x07not a model at all")
    (tmp_path / "broken.onnx.json").write_text(open(f"{VOICE}.json").read())
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "a", "text": "hello"}) + "\n" + json.dumps({"id": "b", "text": "bye"}) + "\n")
    summary = run_corpus(read_rows(rows), Settings(out=tmp_path / "out", voice=str(tmp_path / "broken.onnx"),
                                                   workers=1, progress=False))
    m = manifest(tmp_path / "out")
    assert summary.failed == 2 and {r["status"] for r in m.values()} == {"failed"}
    assert all("the batch failed" in r["error"] and "broken.onnx" in r["error"] for r in m.values()), m
    from lockstep.corpus.__main__ import main
    assert main([str(rows), "-o", str(tmp_path / "x"), "--voice", VOICE, "--batch-size", "5000"]) == 2
    assert main([str(rows), "-o", str(tmp_path / "x"), "--voice", str(tmp_path / "nope.onnx")]) == 2
    if not lockstep.backends()["cuda"][0]:  # a machine without a GPU: said before Ray starts
        assert main([str(rows), "-o", str(tmp_path / "x"), "--voice", VOICE, "--backend", "cuda"]) == 2
    assert not os.path.exists(tmp_path / "x")
