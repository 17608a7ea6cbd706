"""Encoder-decoder and speech inference (gpuwise.estimate.encdec): Whisper in audio hours against cited public
measurements, the memory model's parts, and the bad input the audio keys can carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.cli.main import main
from gpuwise.errors import ConfigError
from gpuwise.estimate import estimate
from gpuwise.estimate.encdec import shape_of
from gpuwise.workload import Workload, parse_workload

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "whisper-large-v3-transcribe.toml"


def speech(preset: str = "whisper-large-v3", **inference: Any) -> Workload:
    inf: dict[str, Any] = {
        "weights_precision": "fp16",
        "audio_hours": 2.5,
        "prompt_tokens": 4,
        "output_tokens": 150,
        "concurrency": 24,
    }
    inf.update(inference)
    return parse_workload({"task": "inference", "model": {"preset": preset}, "inference": inf}, "s.toml")


def test_whisper_large_v3_batch_transcription_against_insanely_fast_whisper() -> None:
    """insanely-fast-whisper README (https://github.com/Vaibhavs10/insanely-fast-whisper, v0.0.15):
    "Here are some benchmarks we ran on a Nvidia A100 - 80GB ... large-v3 (Transformers) (fp16 + batching [24]
    + Flash Attention 2): ~2 (1 min 38 sec)" to transcribe 150 minutes of audio, with the HF pipeline at
    chunk_length_s=30 (stride 5 s each side: 20 s of new audio per window) and timestamps.

    Tolerance 0.4x-1.25x of the 98 s: the measured time is the whole CLI's wall clock, which includes decoding
    150 min of audio with ffmpeg, computing log-mel features on the CPU and merging chunks, none of which
    the GPU model counts, so the estimate should come in below it; more than 2.5x below would mean a GPU-side
    cost is missing. The same table's distil-large-v2 row (2 decoder layers instead of 32) takes 78 s, only
    1.26x less: most of the measured time does not scale with the decoder, which is why we do not tighten
    the band by fitting a constant to this row. output_tokens = 150 is our assumption (the podcast's speaking
    rate is not published): ~110 tokens for 30 s at ~160 words/min, timestamp tokens, the longest window of a
    batch of 24."""
    w = speech(audio_hours=150 / 60, window_s=30, overlap_s=10)
    est = estimate(w, resolve_gpu("A100-80GB"))
    seconds = est.hours * 3600
    assert 0.4 * 98 <= seconds <= 1.25 * 98, seconds
    assert est.fits
    assert est.throughput_unit == "audio seconds/s"
    assert est.details["windows"] == pytest.approx(150 * 60 / 20)
    assert est.details["realtime_factor"] == pytest.approx(150 * 60 / seconds)


def test_turbo_and_small_against_openai_whisper_relative_speeds() -> None:
    """openai/whisper README, "Available models and languages" (https://github.com/openai/whisper): "The
    relative speeds below are measured by transcribing English speech on a A100": large 1x, turbo ~8x,
    small ~4x. openai-whisper decodes one 30-s window at a time (batch 1).

    Tolerance: a factor of 2 either way of the table's one-significant-figure ratios ("~8x"), which the
    README itself says "may vary significantly" with language and speaking speed."""
    gpu = resolve_gpu("A100-80GB")

    def hours(preset: str) -> float:
        return estimate(speech(preset, concurrency=1, output_tokens=110), gpu).hours

    large = hours("whisper-large-v3")
    assert 8 / 2 <= large / hours("whisper-large-v3-turbo") <= 8 * 2
    assert 4 / 2 <= large / hours("whisper-small") <= 4 * 2


def test_example_answers_estimate_and_plan_per_audio_hour(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", str(EXAMPLE), "--gpu", "A100-80GB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["throughput_unit"] == "audio seconds/s"
    assert out["speech"]["realtime_factor"] == pytest.approx(out["throughput_total"])
    assert out["speech"]["rtf"] == pytest.approx(1 / out["throughput_total"])
    assert out["hours"] == pytest.approx(1000 * 3600 / out["throughput_total"] / 3600)
    assert main(["estimate", str(EXAMPLE), "--gpu", "A100-80GB"]) == 0
    assert "real-time factor" in capsys.readouterr().out
    assert main(["plan", str(EXAMPLE), "--gpu", "A100-80GB", "--top", "2", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    option = plan["options"][0]
    assert option["cost_per_unit_usd"]["per audio hour"] == pytest.approx(option["cost_usd"] / 1000)


def test_cross_attention_cache_grows_with_the_batch() -> None:
    """Each window keeps 2 x 32 decoder layers x 1280 x 1500 encoder positions x 2 bytes of cross-attention
    keys and values, beside its self-attention cache."""
    one = estimate(speech(concurrency=1), resolve_gpu("A100-80GB"))
    many = estimate(speech(concurrency=33), resolve_gpu("A100-80GB"))
    per_window = (many.memory.kv_cache - one.memory.kv_cache) / 32
    cross = 2 * 32 * 1280 * 1500 * 2
    self_kv = 2 * 32 * 1280 * (4 + 150) * 2
    assert per_window == pytest.approx(cross + self_kv)
    assert many.memory.activations > one.memory.activations


def test_a_shorter_window_costs_the_same_compute_per_window() -> None:
    """Whisper pads every window to 30 s: half the audio per window means twice the windows."""
    gpu = resolve_gpu("H100")
    full = estimate(speech(window_s=30), gpu)
    half = estimate(speech(window_s=15), gpu)
    assert half.hours == pytest.approx(2 * full.hours)


def test_shape_splits_whisper_large_v3_into_its_stacks() -> None:
    """Encoder 32 layers of 4·d² attention + 2·d·5120 MLP; the split keeps every counted parameter."""
    m = speech().arch
    s = shape_of(m, 1500)
    layer = 4 * 1280 * 1280 + 2 * 1280 * 5120
    assert s.enc_params == pytest.approx(32 * layer, rel=0.03)
    assert (s.dec_layers, s.enc_layers) == (32, 32)
    # conv1 over 3000 frames of 128 mels, conv2 over 1500 positions, kernel 3, 2 FLOPs per multiply-add
    assert s.front_flops == 2 * 3 * (128 * 1280 * 3000 + 1280 * 1280 * 1500)


def test_t5_is_estimated_per_stack_not_as_one_decoder() -> None:
    """flan-t5-xl: the 512-token input runs through the 24-layer encoder once; each output token runs only the
    decoder, so decoding costs about half of a 48-layer decoder-only model."""
    inf = {"prompt_tokens": 512, "output_tokens": 128, "concurrency": 16, "requests": 1e5}
    t5 = parse_workload({"task": "inference", "model": {"preset": "flan-t5-xl"}, "inference": inf}, "t.toml")
    flat = parse_workload(
        {"task": "inference", "model": {"preset": "flan-t5-xl", "encoder_layers": None}, "inference": inf},
        "t.toml",
    )
    gpu = resolve_gpu("A10G")
    per_stack, one_stack = estimate(t5, gpu), estimate(flat, gpu)
    assert per_stack.throughput_unit == "output tokens/s"
    assert per_stack.details["decode_memory_s"] < one_stack.details["decode_memory_s"]
    assert "encoder-decoder" in " ".join(per_stack.assumptions)


def test_requests_of_a_speech_model_are_clips_of_one_window() -> None:
    gpu = resolve_gpu("L4")
    clips = estimate(speech(audio_hours=None, requests=360.0, window_s=10), gpu)
    hours = estimate(speech(audio_hours=1.0, window_s=10), gpu)
    assert clips.throughput_unit == "audio seconds/s"
    assert clips.hours == pytest.approx(hours.hours)


def test_hf_config_of_whisper_fills_the_speech_keys(tmp_path: Path) -> None:
    src = REPO / "tests" / "fixtures" / "hf_configs" / "whisper-large-v3.json"
    (tmp_path / "config.json").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    data = {
        "task": "inference",
        "model": {"hf_config": "config.json"},
        "inference": {"audio_hours": 1.0, "prompt_tokens": 4, "output_tokens": 100, "concurrency": 8},
    }
    m = parse_workload(data, str(tmp_path / "w.toml")).arch
    assert (m.encoder_layers, m.encoder_tokens, m.audio_window_s, m.mel_bins, m.decoder_max_tokens) == (
        32,
        1500,
        30.0,
        128,
        448,
    )


BAD: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (
        "audio on a decoder-only model",
        {"preset": "llama-3-8b"},
        {"audio_hours": 10.0},
        "needs a speech model",
    ),
    ("audio on a text encoder-decoder", {"preset": "t5-base"}, {"audio_hours": 10.0}, "encoder-decoder text"),
    (
        "window longer than the model's",
        {"preset": "whisper-small"},
        {"window_s": 40.0},
        "longer than the 30 s",
    ),
    ("overlap as long as the window", {"preset": "whisper-small"}, {"overlap_s": 30.0}, "must be less than"),
    ("more tokens than the decoder holds", {"preset": "whisper-small"}, {"output_tokens": 500}, "448"),
    (
        "a token rate for a speech model",
        {"preset": "whisper-small"},
        {"audio_hours": None, "target_output_tokens_per_s": 100.0, "duration_hours": 1.0},
        "not a target rate",
    ),
    ("encoder as deep as the model", {"preset": "t5-base", "encoder_layers": 24}, {}, "less than layers"),
    ("audio window without encoder", {"preset": "llama-3-8b", "audio_window_s": 30.0}, {}, "encoder_layers"),
]


@pytest.mark.parametrize(("model", "inference", "phrase"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_speech_input_is_one_clear_error(
    model: dict[str, Any], inference: dict[str, Any], phrase: str
) -> None:
    inf: dict[str, Any] = {"audio_hours": 1.0, "prompt_tokens": 4, "output_tokens": 100, "concurrency": 8}
    inf.update(inference)
    inf = {k: v for k, v in inf.items() if v is not None}
    if "audio_hours" not in inf and "duration_hours" not in inf:
        inf["requests"] = 10.0
    with pytest.raises(ConfigError) as err:
        parse_workload({"task": "inference", "model": model, "inference": inf}, "bad.toml")
    assert phrase in str(err.value)


def test_bad_speech_file_exits_2_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "w.toml"
    bad.write_text(
        EXAMPLE.read_text(encoding="utf-8").replace("window_s = 30 ", "window_s = 45 "), encoding="utf-8"
    )
    assert main(["estimate", str(bad), "--gpu", "L4"]) == 2
    err = capsys.readouterr().err
    assert "window_s = 45" in err and "To fix" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("preset", "tp", "measured_ms"), [("flan-t5-xl", 2, 94), ("flan-t5-xxl", 4, 123)])
def test_t5_latency_against_nemo_t5_inference(preset: str, tp: int, measured_ms: float) -> None:
    """NVIDIA NeMo Framework user guide, "T5 Results"
    (https://docs.nvidia.com/nemo-framework/user-guide/latest/LLMs/T5/performance.html): "Inference
    performance was measured for NVIDIA DGX SuperPOD (1 × 8 × A100 80GB) ... Batch size: 1, Input tokens
    length: 60, Output tokens length: 20", average latency 3B: 94 ms on 2 GPUs (tensor parallel 2), 11B:
    123 ms on 4. NeMo's T5 3B / 11B have flan-t5-xl's / flan-t5-xxl's shapes (d_model 2048 / 4096, 24 + 24
    layers, GeGLU); its engine is compiled (FasterTransformer), so engine = "compiled".

    Tolerance 0.7x-1.4x: one batch-1 measurement per size with an unstated software version; at 20 output
    tokens a 2-ms difference in the per-step overhead alone moves the latency by 40 ms."""
    inf = {
        "weights_precision": "fp16",
        "prompt_tokens": 60,
        "output_tokens": 20,
        "concurrency": 1,
        "requests": 1000.0,
        "tensor_parallel": tp,
        "engine": "compiled",
    }
    w = parse_workload({"task": "inference", "model": {"preset": preset}, "inference": inf}, "t5.toml")
    est = estimate(w, resolve_gpu("A100-80GB"), tp)
    latency_ms = est.hours * 3600 / 1000 * 1000
    assert 0.7 * measured_ms <= latency_ms <= 1.4 * measured_ms, latency_ms
    eager = parse_workload(
        {"task": "inference", "model": {"preset": preset}, "inference": {**inf, "engine": "eager"}}, "t5.toml"
    )
    assert estimate(eager, resolve_gpu("A100-80GB"), tp).hours > est.hours


def test_engine_on_a_decoder_only_model_is_bad_input() -> None:
    inf = {"prompt_tokens": 60, "output_tokens": 20, "concurrency": 1, "requests": 10.0, "engine": "compiled"}
    with pytest.raises(ConfigError, match="encoder-decoder models"):
        parse_workload({"task": "inference", "model": {"preset": "llama-3-8b"}, "inference": inf}, "e.toml")


def test_a_training_target_longer_than_the_decoder_is_bad_input() -> None:
    """Whisper's decoder has 448 positions: a seq_len past them is a target no window can hold."""
    train = {"method": "lora", "precision": "bf16", "seq_len": 449, "micro_batch": 4, "samples": 1000}
    with pytest.raises(ConfigError, match="more than the decoder's 448 positions"):
        parse_workload({"task": "finetune", "model": {"preset": "whisper-small"}, "train": train}, "w.toml")
    train["seq_len"] = 448
    parse_workload({"task": "finetune", "model": {"preset": "whisper-small"}, "train": train}, "w.toml")


@given(
    preset=st.sampled_from(["whisper-small", "whisper-large-v3", "whisper-large-v3-turbo"]),
    gpu=st.sampled_from(["T4", "L4", "A100-80GB", "H100"]),
    concurrency=st.integers(1, 48),
    audio_hours=st.floats(0.01, 1e5),
    engine=st.sampled_from(["eager", "compiled"]),
)
@settings(max_examples=40, deadline=None)
def test_speech_estimates_are_consistent(
    preset: str, gpu: str, concurrency: int, audio_hours: float, engine: str
) -> None:
    """Hours scale with the audio, the real-time factor is the total throughput, a bigger batch never needs
    less memory, and two GPUs (two replicas) halve the time."""
    spec = resolve_gpu(gpu)
    w = speech(preset, concurrency=concurrency, audio_hours=audio_hours, engine=engine)
    est = estimate(w, spec)
    assert est.hours > 0
    assert est.details["realtime_factor"] == pytest.approx(est.throughput_total)
    assert est.hours == pytest.approx(audio_hours / est.throughput_total)
    assert estimate(w, spec, 2).hours == pytest.approx(est.hours / 2)
    bigger = estimate(
        speech(preset, concurrency=concurrency + 1, audio_hours=audio_hours, engine=engine), spec
    )
    assert bigger.memory.total > est.memory.total


def test_tensor_parallel_above_the_gpu_count_cannot_run() -> None:
    est = estimate(speech(tensor_parallel=2), resolve_gpu("L4"))
    assert est.infeasible_reason is not None and "tensor_parallel = 2" in est.infeasible_reason


def test_beams_multiply_the_decoded_sequences_and_their_caches() -> None:
    """A beam of 5 (openai-whisper's and faster-whisper's default) decodes 5 sequences per window, each with
    its own self- and cross-attention cache; the encoder still runs once per window."""
    gpu = resolve_gpu("A100-80GB")
    greedy = estimate(speech(concurrency=4), gpu)
    beam = estimate(speech(concurrency=4, beams=5), gpu)
    assert beam.memory.kv_cache == pytest.approx(5 * greedy.memory.kv_cache)
    assert beam.details["encode_s_per_batch"] == pytest.approx(greedy.details["encode_s_per_batch"])
    assert beam.details["decode_memory_s"] > greedy.details["decode_memory_s"]
    with pytest.raises(ConfigError, match="beams is modelled for encoder-decoder"):
        parse_workload(
            {
                "task": "inference",
                "model": {"preset": "llama-3-8b"},
                "inference": {
                    "prompt_tokens": 9,
                    "output_tokens": 9,
                    "concurrency": 1,
                    "requests": 1.0,
                    "beams": 2,
                },
            },
            "b.toml",
        )


def test_a_t5_target_rate_is_met_or_stretched() -> None:
    inf: dict[str, Any] = {
        "prompt_tokens": 256,
        "output_tokens": 64,
        "concurrency": 8,
        "duration_hours": 10.0,
    }
    gpu = resolve_gpu("L4")

    def est(rate: float) -> Any:
        data = {
            "task": "inference",
            "model": {"preset": "t5-base"},
            "inference": {**inf, "target_output_tokens_per_s": rate},
        }
        return estimate(parse_workload(data, "t.toml"), gpu)

    easy, hard = est(1.0), est(1e9)
    assert (easy.meets_target, easy.hours) == (True, 10.0)
    assert hard.meets_target is False and hard.hours > 10.0
