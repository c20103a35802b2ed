"""piper-tts's Python API on lockstep: ``from lockstep.piper import PiperVoice`` where a program said
``from piper import PiperVoice``, and it speaks through lockstep's backends (cpu by default; cuda,
vulkan, reference) with the same names, signatures, defaults and behaviour (docs/piper.md).

The phonemizer, the voice config and the text handling are piper-tts's own (its espeak-ng bridge and
id maps): piper-tts is a dependency of this subpackage only, GPL-3.0-or-later, installed with
``pip install lockstep[piper]``. The rest of lockstep does not need it."""
try:
    import piper as _piper  # noqa: F401  (piper-tts; imports onnxruntime, as it always does)
except ImportError as e:  # pragma: no cover - exercised where piper-tts is absent
    raise ImportError(
        "lockstep.piper needs piper-tts 1.8 (its phonemizer and voice config; GPL-3.0-or-later): "
        "pip install 'lockstep[piper]'") from e

from .config import PhonemeType, PiperConfig, SynthesisConfig
from .batch import BatchItemError
from .voice import AudioChunk, PhonemeAlignment, PiperVoice

__all__ = ["AudioChunk", "BatchItemError", "PhonemeAlignment", "PhonemeType", "PiperConfig", "PiperVoice", "SynthesisConfig"]
