"""Encoder-decoder and speech workloads: how the `[model]` and `[inference]` keys of T5- and Whisper-style
models fit together (docs/workload.md).

`[model]` gains `encoder_layers` (of `layers`, the encoder's share: the model is encoder-decoder),
`encoder_tokens` (encoder positions per input: Whisper's 1,500 frames per 30-s window), `audio_window_s`
(seconds of audio one encoder input holds: a speech model), `mel_bins` (the input channels of Whisper's
convolutional front end) and `decoder_max_tokens` (the decoder's positions: Whisper's 448).
`[inference]` gains `audio_hours` (the amount of work; or `requests`, clips of one window each), `window_s`
(seconds of audio per window, at most the model's) and `overlap_s` (seconds each window shares with the
next: Hugging Face's pipeline strides 5 s on each side of a 30-s chunk by default). `engine` ("eager" |
"compiled") says how an encoder-decoder model's decode steps are launched, `beams` its beam width.

The checks raise ValueError with the fix in the message; the loader turns them into one exit-2 message.
Must not import the CLI, the catalog or the estimator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuwise.locale import _

if TYPE_CHECKING:
    from gpuwise.workload.spec import InferenceSpec, ModelSpec, TrainSpec

_SPEECH_KEYS = ("audio_window_s", "mel_bins")


def check_model(m: ModelSpec) -> None:
    """The encoder-decoder keys of `[model]` agree with each other and with `layers`."""
    enc = m.encoder_layers
    speech = [k for k in _SPEECH_KEYS if getattr(m, k) is not None]
    if enc is None:
        given = [k for k in ("encoder_tokens", "decoder_max_tokens", *speech) if getattr(m, k) is not None]
        if given:
            message = (
                _(
                    "{keys} describes an encoder-decoder model: give encoder_layers too (how many of the "
                    "layers are the encoder; Whisper large-v3: 32 of 64), or use a preset such as "
                    '"whisper-large-v3"'
                )
                if len(given) == 1
                else _(
                    "{keys} describe an encoder-decoder model: give encoder_layers too (how many of the "
                    "layers are the encoder; Whisper large-v3: 32 of 64), or use a preset such as "
                    '"whisper-large-v3"'
                )
            )
            raise ValueError(message.format(keys=", ".join(given)))
        return
    if m.kind != "transformer":
        raise ValueError(_('encoder_layers is for transformers, not kind = "{kind}"').format(kind=m.kind))
    if m.layers is not None and enc >= m.layers:
        raise ValueError(
            _(
                "encoder_layers ({enc}) must be less than layers ({layers}): layers counts the encoder and "
                "the decoder together (T5-base: layers = 24, encoder_layers = 12)"
            ).format(enc=enc, layers=m.layers)
        )
    if m.experts > 1:
        raise ValueError(_("encoder-decoder mixture-of-experts models are not modelled: leave experts at 1"))
    if speech and (m.audio_window_s is None or m.encoder_tokens is None):
        raise ValueError(
            _(
                "a speech encoder needs audio_window_s and encoder_tokens together (Whisper: 30 s of audio "
                "become 1500 encoder positions)"
            )
        )


def is_speech(m: ModelSpec) -> bool:
    return m.encoder_layers is not None and m.audio_window_s is not None


def check_inference(m: ModelSpec, inf: InferenceSpec) -> None:
    """The `[inference]` audio keys fit the model: a speech model, a window it can take, outputs its decoder
    can hold."""
    audio = [k for k in ("audio_hours", "window_s") if getattr(inf, k) is not None]
    if inf.overlap_s:
        audio.append("overlap_s")
    if audio and not is_speech(m):
        what = _("an encoder-decoder text model") if m.encoder_layers is not None else _("not a speech model")
        message = (
            _(
                "{keys} needs a speech model, and this one is "
                '{what} (no audio_window_s): use a speech preset (e.g. preset = "whisper-large-v3"), a '
                "Whisper "
                "hf_config, or give the model's "
                "encoder_layers, encoder_tokens and audio_window_s; for text give requests instead"
            )
            if len(audio) == 1
            else _(
                "{keys} need a speech model, and this one is "
                '{what} (no audio_window_s): use a speech preset (e.g. preset = "whisper-large-v3"), a '
                "Whisper "
                "hf_config, or give the model's "
                "encoder_layers, encoder_tokens and audio_window_s; for text give requests instead"
            )
        )
        raise ValueError(message.format(keys=", ".join(audio), what=what))
    if inf.engine is not None and m.encoder_layers is None:
        raise ValueError(
            _(
                "engine is modelled for encoder-decoder models (T5, Whisper) only: decoder-only serving is "
                "estimated with vLLM-class CUDA graphs already; remove engine"
            )
        )
    if inf.beams > 1 and m.encoder_layers is None:
        raise ValueError(
            _(
                "beams is modelled for encoder-decoder models (T5, Whisper) only; remove it (decoder-only "
                "serving is estimated with greedy or sampled decoding)"
            )
        )
    if not is_speech(m):
        if m.encoder_layers is not None:
            _check_decoder_room(m, inf, prompt_is_encoder=True)
        return
    model_window = m.audio_window_s or 0.0
    window = inf.window_s if inf.window_s is not None else model_window
    if window > model_window:
        raise ValueError(
            _(
                "window_s = {window} is longer than the {model_window} s the model's encoder takes: longer "
                "audio is cut into windows of at most {model_window} s (Hugging Face's pipeline: "
                "chunk_length_s ≤ {model_window}); write window_s = {model_window} or less"
            ).format(window=f"{window:g}", model_window=f"{model_window:g}")
        )
    if inf.overlap_s >= window:
        raise ValueError(
            _(
                "overlap_s ({overlap}) must be less than window_s ({window}): each window must bring "
                "new audio (Hugging Face's default: window 30, overlap 10 = stride_length_s 5 on each side)"
            ).format(overlap=f"{inf.overlap_s:g}", window=f"{window:g}")
        )
    if inf.audio_hours is None and inf.requests is None:
        raise ValueError(
            _(
                "a speech model's amount of work is audio_hours (hours of audio to transcribe) or requests "
                "(clips of at most one window each), not a target rate of output tokens; write e.g. "
                "audio_hours = 100"
            )
        )
    _check_decoder_room(m, inf, prompt_is_encoder=False)


def check_training(m: ModelSpec, train: TrainSpec) -> None:
    """A training target fits the decoder's positions (Whisper: 448)."""
    cap = m.decoder_max_tokens
    if cap is not None and train.seq_len is not None and train.seq_len > cap:
        raise ValueError(
            _(
                "seq_len = {seq_len} is more than the decoder's {cap} positions (decoder_max_tokens): an "
                "encoder-decoder model trains on targets of at most {cap} tokens, the audio or input going "
                "to the encoder; set seq_len to the longest target (at most {cap})"
            ).format(seq_len=train.seq_len, cap=cap)
        )


def _check_decoder_room(m: ModelSpec, inf: InferenceSpec, *, prompt_is_encoder: bool) -> None:
    cap = m.decoder_max_tokens
    decoded = inf.output_tokens + (0 if prompt_is_encoder else inf.prompt_tokens)
    if cap is not None and decoded > cap:
        what = "output_tokens" if prompt_is_encoder else "prompt_tokens + output_tokens"
        raise ValueError(
            _(
                "{what} = {decoded} is more than the decoder's {cap} positions (decoder_max_tokens): "
                "one window "
                "of speech decodes at most {cap} tokens (about 100-150 for 30 s of English speech); lower "
                "output_tokens, or shorten window_s"
            ).format(what=what, decoded=decoded, cap=cap)
        )


def windows(inf: InferenceSpec, m: ModelSpec) -> tuple[float, float]:
    """(windows to run, seconds of new audio each brings): `audio_hours` cut into windows, or `requests`
    clips of one window each."""
    window = inf.window_s if inf.window_s is not None else (m.audio_window_s or 0.0)
    advance = window - inf.overlap_s
    if inf.audio_hours is None:
        return inf.requests or 0.0, advance
    return inf.audio_hours * 3600.0 / advance, advance


__all__ = ["check_inference", "check_model", "check_training", "is_speech", "windows"]
