"""lockstep.piper (issue 45) against piper-tts itself: the same API, the same phonemes and lengths,
audio within float32 rounding of piper-tts's ONNX Runtime audio, piper's alignments, the command's
modes, and clear errors. Skips without piper-tts or the joe voice (scripts/setup.sh and
scripts/fetch-voice.sh bring both)."""
import inspect
import io
import os
import subprocess
import sys
import wave

import numpy as np
import pytest

piper = pytest.importorskip("piper", reason="piper-tts is not installed (pip install 'lockstep[piper]')")
import lockstep.piper as lp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOICE = os.environ.get("LOCKSTEP_VOICE", os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
TEXT = "Hello there. The quick brown fox jumps over the lazy dog."
QUIET = dict(noise_scale=0.0, noise_w_scale=0.0)  # no noise: both runtimes compute the same function

needs_voice = pytest.mark.skipif(not os.path.exists(VOICE), reason=f"no Piper voice at {VOICE}: scripts/fetch-voice.sh")


@pytest.fixture(scope="module")
def voices():
    return lp.PiperVoice.load(VOICE, threads=2), piper.PiperVoice.load(VOICE)


def test_the_public_names_and_signatures_are_piper_tts_ones():
    for name in piper.__all__:
        assert hasattr(lp, name), name
    ours, theirs = inspect.signature(lp.PiperVoice.load), inspect.signature(piper.PiperVoice.load)
    positional = [p for p in ours.parameters.values() if p.kind != p.KEYWORD_ONLY]
    assert [(p.name, p.default) for p in positional] == [(p.name, p.default) for p in theirs.parameters.values()]
    assert {p.name for p in ours.parameters.values() if p.kind == p.KEYWORD_ONLY} == {"backend", "seed", "threads"}
    def params(f):
        return [(p.name, p.default, p.kind) for p in inspect.signature(f).parameters.values()]
    for method in ("synthesize", "synthesize_wav", "phoneme_ids_to_audio", "phonemize", "phonemes_to_ids"):
        ours_params = [p for p in params(getattr(lp.PiperVoice, method)) if p[2] != inspect.Parameter.KEYWORD_ONLY]
        assert ours_params == params(getattr(piper.PiperVoice, method)), method
    # lockstep's additions are keyword-only: synthesize's stream=False
    assert [p[:2] for p in params(lp.PiperVoice.synthesize) if p[2] == inspect.Parameter.KEYWORD_ONLY] == [("stream", False)]
    assert lp.SynthesisConfig is piper.SynthesisConfig and lp.AudioChunk is piper.AudioChunk
    from lockstep.piper.config import PiperConfig  # the submodules programs import
    from lockstep.piper.voice import PhonemeAlignment  # noqa: F401
    assert PiperConfig is piper.PiperConfig


@needs_voice
def test_sentences_match_piper_tts_in_phonemes_length_and_audio(voices):
    ours, theirs = voices
    syn = lp.SynthesisConfig(**QUIET)
    mine, ref = list(ours.synthesize(TEXT, syn)), list(theirs.synthesize(TEXT, syn))
    assert len(mine) == len(ref) == 2
    for a, b in zip(mine, ref):
        assert a.phonemes == b.phonemes and a.phoneme_ids == b.phoneme_ids
        assert a.sample_rate == b.sample_rate == 22050 and a.audio_int16_array.dtype == np.int16
        assert a.audio_float_array.shape == b.audio_float_array.shape
        rel = np.linalg.norm(a.audio_float_array - b.audio_float_array) / np.linalg.norm(b.audio_float_array)
        assert rel < 1e-4, rel  # both float32; lockstep's is the one nearer float64 (bench/RESULTS.md)
    # The same bits on every call, and with noise on, for the same seed.
    again = list(ours.synthesize(TEXT, syn))
    assert all(np.array_equal(a.audio_float_array, b.audio_float_array) for a, b in zip(mine, again))
    noisy = [c.audio_int16_bytes for c in ours.synthesize(TEXT)]
    assert noisy == [c.audio_int16_bytes for c in ours.synthesize(TEXT)]


@needs_voice
def test_synthesize_wav_and_alignments_equal_piper_tts(voices, tmp_path):
    ours = lp.PiperVoice.load(VOICE, include_alignments=True, threads=2)
    theirs = piper.PiperVoice.load(VOICE, include_alignments=True)
    syn = lp.SynthesisConfig(**QUIET)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        mine = ours.synthesize_wav(TEXT, wav, syn_config=syn, include_alignments=True)
    ref = theirs.synthesize_wav(TEXT, wave.open(str(tmp_path / "ref.wav"), "wb"), syn_config=syn,
                                include_alignments=True)
    assert mine and [(a.phoneme, a.num_samples) for a in mine] == [(a.phoneme, a.num_samples) for a in ref]
    out.seek(0)
    with wave.open(out, "rb") as wav:
        assert wav.getframerate() == 22050 and wav.getnframes() == sum(a.num_samples for a in mine)


@needs_voice
def test_alignments_need_no_patched_file():
    import lockstep
    model = lockstep.load(VOICE)
    ceil = [name for name, op in model.nodes if op == "Ceil"]
    assert len(ceil) == 1 and len(model.outputs) == 1  # the file as published: audio only
    durations = model.node_outputs(ceil[0])[0]
    both = model.with_outputs([durations])
    assert [o.name for o in both.outputs] == [model.outputs[0].name, durations]
    assert len(lockstep.load(VOICE).outputs) == 1  # the file and the loaded model are untouched
    with pytest.raises(lockstep.Error, match="no value named 'nope'"):
        model.with_outputs(["nope"])


@needs_voice
def test_bad_scales_and_backends_are_errors_naming_the_value(voices):
    ours, _ = voices
    with pytest.raises(ValueError, match="noise_scale must be a finite number, got nan"):
        list(ours.synthesize("Hi.", lp.SynthesisConfig(noise_scale=float("nan"))))
    with pytest.raises(ValueError, match="length_scale must be positive"):
        list(ours.synthesize("Hi.", lp.SynthesisConfig(length_scale=0.0)))
    with pytest.raises(ValueError, match="backend 'tpu'"):
        lp.PiperVoice.load(VOICE, backend="tpu")
    assert list(ours.synthesize("Hi.", lp.SynthesisConfig(**QUIET)))  # the voice still speaks


def _cli(*args, text=TEXT, cwd=None):
    return subprocess.run([sys.executable, "-m", "lockstep.piper", "-m", VOICE, "--threads", "2", *args],
                          input=text.encode(), capture_output=True, cwd=cwd, timeout=300)


@needs_voice
def test_the_command_writes_raw_wav_and_one_file_per_line(voices, tmp_path):
    ours, _ = voices
    quiet = ["--noise-scale", "0", "--noise-w-scale", "0"]
    expected = b"".join(c.audio_int16_bytes for c in ours.synthesize(TEXT, lp.SynthesisConfig(**QUIET)))
    raw = _cli("--output-raw", *quiet)
    assert raw.returncode == 0, raw.stderr.decode()
    assert raw.stdout == expected  # the API's bits, sentence after sentence
    wav = _cli("-f", "-", *quiet)
    with wave.open(io.BytesIO(wav.stdout), "rb") as w:
        assert w.getframerate() == 22050 and w.readframes(w.getnframes()) == expected
    lines = "First line.\nSecond line here.\n"
    d = _cli("-d", str(tmp_path / "out"), "--output-dir-naming", "text", *quiet, text=lines)
    assert d.returncode == 0, d.stderr.decode()
    assert sorted(os.listdir(tmp_path / "out")) == ["First line.wav", "Second line here.wav"]  # piper's sanitized names
    with wave.open(str(tmp_path / "out" / "Second line here.wav"), "rb") as w:  # made in a batch: the API's bits alone
        frames = w.readframes(w.getnframes())
    assert frames == b"".join(c.audio_int16_bytes for c in ours.synthesize("Second line here.", lp.SynthesisConfig(**QUIET)))
    bad = _cli("-f", str(tmp_path / "x.wav"), "--length-scale", "nan")
    assert bad.returncode == 2 and b"length_scale must be a finite number" in bad.stderr
    assert not os.path.exists(tmp_path / "x.wav") and not [f for f in os.listdir(tmp_path) if f.endswith(".part")]


MULTI = os.path.join(ROOT, "tests/fixtures/piper_arch/piper_arch_s4.onnx")  # Piper's VITS, 4 speakers, random weights


@pytest.fixture(scope="module")
def multi_speaker(tmp_path_factory):
    """The 4-speaker Piper-architecture voice with a config (the joe voice's phonemes and ids, which the
    fixture's 256-entry embedding takes) as piper-tts and lockstep.piper both load it."""
    if not os.path.exists(f"{VOICE}.json"):
        pytest.skip(f"no Piper voice config at {VOICE}.json")
    import json
    config = json.load(open(f"{VOICE}.json"))
    config["num_speakers"] = 4
    config["speaker_id_map"] = {"ann": 0, "bob": 1, "cy": 2, "dee": 3}
    d = tmp_path_factory.mktemp("multi")
    model = d / "voice.onnx"
    os.symlink(MULTI, model)
    (d / "voice.onnx.json").write_text(json.dumps(config))
    return str(model), lp.PiperVoice.load(str(model), threads=2), piper.PiperVoice.load(str(model))


def test_a_multi_speaker_voice_speaks_each_speaker_as_piper_tts_does(multi_speaker):
    _, ours, theirs = multi_speaker
    per_speaker = []
    for sid in range(4):
        syn = lp.SynthesisConfig(speaker_id=sid, **QUIET)
        a = list(ours.synthesize(TEXT, syn))
        b = list(theirs.synthesize(TEXT, piper.SynthesisConfig(speaker_id=sid, **QUIET)))
        assert [c.phonemes for c in a] == [c.phonemes for c in b]
        assert [len(c.audio_float_array) for c in a] == [len(c.audio_float_array) for c in b]
        for x, y in zip(a, b):
            ref = np.linalg.norm(y.audio_float_array) or 1.0
            assert np.linalg.norm(x.audio_float_array - y.audio_float_array) / ref < 1e-4
        per_speaker.append(np.concatenate([c.audio_float_array for c in a]))
    assert not np.array_equal(per_speaker[0], per_speaker[1])  # the speaker reaches the audio
    with pytest.raises(ValueError, match="speaker_id 4 is not a speaker of this voice"):
        list(ours.synthesize(TEXT, lp.SynthesisConfig(speaker_id=4)))


def test_files_that_are_not_voices_are_errors_naming_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.onnx.json"):
        lp.PiperVoice.load(str(tmp_path / "nowhere.onnx"))
    node = "/usr/share/libonnx-testdata/data/node/test_abs/model.onnx"  # an ONNX file that is no voice
    if not (os.path.exists(node) and os.path.exists(f"{VOICE}.json")):
        pytest.skip("needs libonnx-testdata and the joe voice's config")
    import shutil
    shutil.copy(node, tmp_path / "abs.onnx")
    shutil.copy(f"{VOICE}.json", tmp_path / "abs.onnx.json")
    with pytest.raises(ValueError, match=r"abs.onnx: not a Piper voice: it has no input named 'input'"):
        lp.PiperVoice.load(str(tmp_path / "abs.onnx"))


@needs_voice
def test_empty_text_gives_nothing_and_long_text_comes_sentence_by_sentence(voices):
    import itertools
    ours, theirs = voices
    assert list(ours.synthesize("", lp.SynthesisConfig(**QUIET))) == list(theirs.synthesize("")) == []
    long_text = "This sentence is said many times over. " * 2565  # 100,035 characters
    first = list(itertools.islice(ours.synthesize(long_text, lp.SynthesisConfig(**QUIET)), 3))
    assert len(first) == 3  # the first sentences come without the other 2,562 being made
    assert first[0].audio_int16_bytes == first[1].audio_int16_bytes  # same sentence, same bits


@pytest.fixture(scope="module")
def aligned():
    return lp.PiperVoice.load(VOICE, threads=2, include_alignments=True)


LONG_SENTENCE = ("When the evening train finally pulled into the small station at the edge of the valley, the "
                 "passengers who had waited through the long delay gathered their bags, thanked the conductor, and "
                 "stepped out into the cool air that smelled of rain and pine.")


@needs_voice
@pytest.mark.parametrize("noise", [False, True], ids=["noise off", "noise on, seed 0"])
def test_streamed_chunks_are_the_whole_sentence_bit_for_bit(aligned, noise):
    ours = aligned
    syn = lp.SynthesisConfig(normalize_audio=False, **({} if noise else QUIET))
    text = "Short one. " + LONG_SENTENCE
    whole = list(ours.synthesize(text, syn, include_alignments=True))
    streamed = list(ours.synthesize(text, syn, include_alignments=True, stream=True))
    by_sentence = {}
    for c in streamed:
        by_sentence.setdefault(tuple(c.phonemes), []).append(c)
    assert [tuple(c.phonemes) for c in whole] == list(by_sentence)
    for w in whole:
        chunks = by_sentence[tuple(w.phonemes)]
        joined = np.concatenate([c.audio_float_array for c in chunks])
        assert np.array_equal(joined, w.audio_float_array), (len(chunks), np.abs(joined - w.audio_float_array).max())
        assert np.array_equal(chunks[0].phoneme_id_samples, w.phoneme_id_samples)
    assert len(by_sentence[tuple(whole[1].phonemes)]) >= 4  # the long sentence came in several windows
