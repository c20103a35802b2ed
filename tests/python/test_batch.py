"""PiperVoice's batches (issue 47): synthesize_batch gives every text the AudioChunks synthesize gives
it alone, bit for bit (audio, phonemes, alignments), whatever its companions, its place and the batch
size; per-text seeds and configs; a text that cannot be made is an error naming it, and
phoneme_ids_to_audio_batch(errors="return") makes the rest. Skips without piper-tts or the voice."""
import os
import random

import numpy as np
import pytest

piper = pytest.importorskip("piper", reason="piper-tts is not installed (pip install 'lockstep[piper]')")
import lockstep.piper as lp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOICE = os.environ.get("LOCKSTEP_VOICE", os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
pytestmark = pytest.mark.skipif(not os.path.exists(VOICE), reason=f"no Piper voice at {VOICE}: scripts/fetch-voice.sh")

TEXTS = ["Hey Jarvis.", "Okay.", "The quick brown fox jumps over the lazy dog. It did not look back.",
         "Turn on the kitchen lights, please.", "Seven", "What time is it in Tokyo right now?",
         "A much longer sentence, with commas, pauses and a question at its end, to make a long row?"]


@pytest.fixture(scope="module")
def voice():
    return lp.PiperVoice.load(VOICE, threads=2, include_alignments=True)


def _same(a, b):
    assert [c.phonemes for c in a] == [c.phonemes for c in b]
    assert [c.phoneme_ids for c in a] == [c.phoneme_ids for c in b]
    for x, y in zip(a, b):
        assert x.audio_float_array.tobytes() == y.audio_float_array.tobytes()
        assert x.audio_int16_bytes == y.audio_int16_bytes
        assert (x.phoneme_alignments is None) == (y.phoneme_alignments is None)
        if x.phoneme_alignments is not None:
            assert [(p.phoneme, p.num_samples) for p in x.phoneme_alignments] == \
                   [(p.phoneme, p.num_samples) for p in y.phoneme_alignments]


def test_every_text_gets_the_bits_synthesize_gives_it_alone(voice):
    seeds = [3, 1, 4, 1, 5, 9, 2]
    configs = [lp.SynthesisConfig(length_scale=0.9 + 0.05 * i, noise_scale=0.5 + 0.05 * i) for i in range(len(TEXTS))]
    alone = []
    for t, c, s in zip(TEXTS, configs, seeds):  # each alone, its noise from its seed (the session's)
        voice.session.seed = s
        alone.append(list(voice.synthesize(t, c, include_alignments=True)))
    voice.session.seed = 0
    batch = voice.synthesize_batch(TEXTS, configs, include_alignments=True, seeds=seeds)
    assert len(batch) == len(TEXTS)
    for a, b in zip(batch, alone):
        _same(a, b)
    # Other companies and places: shuffled, halves, one alone.
    order = list(range(len(TEXTS)))
    random.Random(47).shuffle(order)
    shuffled = voice.synthesize_batch([TEXTS[i] for i in order], [configs[i] for i in order],
                                      include_alignments=True, seeds=[seeds[i] for i in order])
    for k, i in enumerate(order):
        _same(shuffled[k], alone[i])
    _same(voice.synthesize_batch(TEXTS[2:3], configs[2], include_alignments=True, seeds=seeds[2])[0], alone[2])


def test_a_text_that_cannot_be_made_is_named_and_the_rest_are_made(voice):
    with pytest.raises(lp.BatchItemError, match=r"batch item 1: length_scale must be positive"):
        voice.synthesize_batch(["One.", "Two.", "Three."], [None, lp.SynthesisConfig(length_scale=0.0), None])
    ids = [voice.phonemes_to_ids(p) for p in voice.phonemize("Good morning.")]
    got = voice.phoneme_ids_to_audio_batch([ids[0], [], ids[0]], [None, None, lp.SynthesisConfig(noise_scale=float("nan"))],
                                           errors="return")
    assert isinstance(got[0], np.ndarray) and got[0].size > 0
    assert isinstance(got[1], lp.BatchItemError) and "no phoneme ids" in str(got[1])
    assert isinstance(got[2], lp.BatchItemError) and "noise_scale must be a finite number" in str(got[2])
    assert got[0].tobytes() == voice.phoneme_ids_to_audio(ids[0]).tobytes()
    with pytest.raises(ValueError, match="seeds: 2 given for 3 items"):
        voice.synthesize_batch(["a.", "b.", "c."], seeds=[1, 2])
    assert voice.synthesize_batch([]) == []
    assert voice.synthesize_batch([""]) == [[]]


MULTI = os.path.join(ROOT, "tests/fixtures/piper_arch/piper_arch_s4.onnx")  # Piper's VITS, 4 speakers, random weights


def test_speaker_vectors_give_each_speakers_bits_and_mixes_between_them(tmp_path):
    import json
    config = json.load(open(f"{VOICE}.json"))
    config.update(num_speakers=4, speaker_id_map={"ann": 0, "bob": 1, "cy": 2, "dee": 3})
    os.symlink(MULTI, tmp_path / "voice.onnx")
    (tmp_path / "voice.onnx.json").write_text(json.dumps(config))
    voice = lp.PiperVoice.load(str(tmp_path / "voice.onnx"), threads=2)
    text = "Hey Jarvis, lights on."
    # Each speaker's bits as a lane makes them (two rows: lanes of one thread). This fixture's 8- and
    # 16-channel convs run on oneDNN, whose AVX-512 kernels give other bits at other thread counts
    # (docs/piper.md "Batches"), so a batch of one, run at both threads, is not the oracle here.
    by_id = [voice.synthesize_batch([text, text], lp.SynthesisConfig(speaker_id=s))[0] for s in range(4)]
    vectors = [voice.speaker_embedding(s) for s in (2, 0, 3)] + [None]
    got = voice.synthesize_batch([text] * 4, [None, None, None, lp.SynthesisConfig(speaker_id=1)],
                                 speaker_embeddings=vectors)
    for chunks, s in zip(got, (2, 0, 3, 1)):  # a table row, or no vector: the speaker's own bits
        _same(chunks, by_id[s])
    assert np.array_equal(voice.speaker_embedding(0, 1, 0.0), voice.speaker_embedding(0))
    mix = voice.synthesize_batch([text], speaker_embeddings=[voice.speaker_embedding(0, 1, 0.5)])[0]
    audio = np.concatenate([c.audio_float_array for c in mix])
    for s in (0, 1):
        assert not np.array_equal(audio, np.concatenate([c.audio_float_array for c in by_id[s]]))
    with pytest.raises(ValueError, match=r"speaker 4 is not a speaker of this voice \(it has 4: 0..3\)"):
        voice.speaker_embedding(0, 4, 0.5)
    with pytest.raises(ValueError, match="t must be a number in"):
        voice.speaker_embedding(0, 1, 1.5)
    bad = voice.phoneme_ids_to_audio_batch([[1, 20, 2]], speaker_embeddings=[np.zeros(7)], errors="return")[0]
    assert isinstance(bad, lp.BatchItemError) and "must be 32 finite numbers" in str(bad)


def test_a_single_speaker_voice_has_no_vectors_to_mix(voice):
    with pytest.raises(ValueError, match="this voice has one speaker"):
        voice.speaker_embedding(0)
