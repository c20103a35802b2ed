"""piper-tts's voice and synthesis configuration, unchanged (``piper.config``)."""
from piper.config import (DEFAULT_HOP_LENGTH, DEFAULT_LENGTH_SCALE, DEFAULT_NOISE_SCALE,  # noqa: F401
                          DEFAULT_NOISE_W_SCALE, PhonemeType, PiperConfig, SynthesisConfig)
