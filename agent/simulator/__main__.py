"""`python -m agent.simulator`: run the SGLang stand-in on loopback."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path

from agent.simulator.config import SimulatorConfig
from agent.simulator.engine import EngineSettings
from agent.simulator.faults import Faults
from agent.simulator.flavors import FLAVORS, FlavorSettings
from agent.simulator.server import SHUTDOWN_GRACE_S, Simulator
from agent.simulator.speculative import Speculation
from agent.simulator.tokens import LengthProfile

DEFAULT_MAX_RUNNING = 64


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The simulator's flags."""
    parser = argparse.ArgumentParser(prog="python -m agent.simulator", description=__doc__)
    add = parser.add_argument
    add(
        "--flavor",
        choices=FLAVORS,
        default="sglang",
        help="sglang: native /generate; vllm: /v1 with token ids; hosted: /v1, text only",
    )
    add("--reasoning", action="store_true", help="chat answers carry reasoning (vllm, hosted)")
    add("--rate-limit-rate", type=float, default=0.0, help="hosted: share answered 429")
    add("--retry-after", type=float, default=1.0, help="hosted: Retry-After seconds of a 429")
    add(
        "--stream-error-rate",
        type=float,
        default=0.0,
        help="hosted: share of chat streams that fail after they began",
    )
    add(
        "--vllm-dev-mode",
        action="store_true",
        help="vllm: answer /server_info with vLLM's config, as VLLM_SERVER_DEV_MODE=1 does",
    )
    add("--host", default="127.0.0.1")
    add("--port", type=int, default=30000, help="0 picks a free port (see --port-file)")
    add("--port-file", type=Path, help="write the port here once listening")
    add("--seed", type=int, default=0)
    add("--vocab-size", type=int, default=32000)
    add(
        "--stop-id", type=int, default=None,
        help="the id a stopped answer ends with: the tokenizer's end of turn (default: the last id)",
    )  # fmt: skip
    add("--context-length", type=int, default=32768)
    add("--model-path", default="sim/eagle-target-sim")
    add("--skip-tokenizer-init", action="store_true", help="answer without text, ids only")
    add("--log-file", type=Path, help="SGLang-format log (default: stderr)")
    add("--speed", type=float, default=1.0, help="simulated seconds per wall second; 0: instant")
    add("--decode-rate", type=float, default=5000.0, help="total decode tokens/s")
    add("--per-request-rate", type=float, default=80.0, help="max decode tokens/s per request")
    add(
        "--max-running-requests",
        type=_positive_int,
        help=f"whole-server cap on running requests (default {DEFAULT_MAX_RUNNING}); queued beyond",
    )
    add(
        "--dp-size",
        type=_positive_int,
        default=1,
        help="data-parallel ranks, each with a share of it all",
    )
    add("--hybrid-swa", action="store_true", help="log as a hybrid sliding-window model")
    add("--api-key", help="require `Authorization: Bearer KEY`, as SGLang's --api-key")
    add("--warmup-s", type=float, default=0.0, help="/health answers 503 this long after start")
    add("--mean-tokens", type=float, default=600.0, help="mean response length")
    add("--sd-tokens", type=float, default=250.0, help="response length spread")
    add("--runaway-share", type=float, default=0.0, help="share that runs to max_new_tokens")
    add(
        "--tokens-per-prompt-token",
        type=float,
        default=0.0,
        help="added to the mean length per prompt token (longer prompts, longer answers)",
    )
    add("--error-rate", type=float, default=0.0, help="share of HTTP 500 answers")
    add("--spike-rate", type=float, default=0.0, help="share of requests delayed by --spike-s")
    add("--spike-s", type=float, default=5.0)
    add("--hang-rate", type=float, default=0.0, help="share of requests never answered")
    add("--die-after", type=int, default=0, help="exit after this many /generate requests")
    add(
        "--speculative-accept-length",
        type=float,
        help="serve with a drafter of this mean accept length (EAGLE3; 1 to num-draft-tokens)",
    )
    add("--speculative-num-draft-tokens", type=int, default=4, help="tokens verified per step")
    add("--speculative-algorithm", help="taken as SGLang takes it; the simulator drafts as EAGLE3")
    add(
        "--speculative-draft-model-path",
        "--speculative-draft-model",
        help="the drafter's folder, as SGLang names it (the agent checks it before serving)",
    )
    add(
        "--speculative-step-overhead",
        type=float,
        default=0.25,
        help="a verify step costs 1 + this plain decode steps (the draft model's passes)",
    )
    return parser


def _speculation(args: argparse.Namespace) -> Speculation | None:
    if args.speculative_accept_length is None:
        return None
    return Speculation(
        args.speculative_accept_length,
        args.speculative_num_draft_tokens,
        args.speculative_step_overhead,
    )


def config_from(args: argparse.Namespace) -> SimulatorConfig:
    """The simulator config the flags describe."""
    return SimulatorConfig(
        host=args.host, port=args.port, seed=args.seed, vocab_size=args.vocab_size,
        stop_id=_stop_id(args.stop_id, args.vocab_size),
        context_length=args.context_length, model_path=args.model_path,
        skip_tokenizer_init=args.skip_tokenizer_init, log_file=args.log_file,
        port_file=args.port_file,
        lengths=LengthProfile(
            args.mean_tokens, args.sd_tokens, args.runaway_share, args.tokens_per_prompt_token
        ),
        engine=EngineSettings(
            decode_tokens_per_s=args.decode_rate,
            max_tokens_per_s_per_request=args.per_request_rate,
            max_running_requests=args.max_running_requests or DEFAULT_MAX_RUNNING,
            speed=args.speed, hybrid_swa=args.hybrid_swa, speculation=_speculation(args),
        ),
        dp_size=args.dp_size, max_running_requests_flag=args.max_running_requests,
        api_key=args.api_key, warmup_s=args.warmup_s,
        flavor=FlavorSettings(
            flavor=args.flavor, reasoning=args.reasoning, rate_limit_rate=args.rate_limit_rate,
            retry_after_s=args.retry_after, stream_error_rate=args.stream_error_rate,
            vllm_dev_mode=args.vllm_dev_mode,
        ),
        faults=Faults(
            error_rate=args.error_rate, spike_rate=args.spike_rate, spike_s=args.spike_s,
            hang_rate=args.hang_rate, die_after_requests=args.die_after,
        ),
    )  # fmt: skip


async def serve(config: SimulatorConfig) -> None:
    """Run until SIGINT or SIGTERM; a second one ends the stop's grace at once."""
    simulator = Simulator(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():  # a second one: the requests in flight are cut now, not after the grace
            simulator.log.line("Second stop signal: exiting at once.")
            simulator.log.close()
            os._exit(130)
        simulator.log.line(
            f"Stop signal: requests in flight get {SHUTDOWN_GRACE_S:g} s; a second one ends them now."
        )
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal)
    await simulator.start()
    url = f"http://{config.host}:{simulator.port}"
    print(f"{config.flavor.flavor} simulator listening on {url}", flush=True)  # noqa: T201
    await stop.wait()
    await simulator.stop()


def _stop_id(stop_id: int | None, vocab_size: int) -> int | None:
    if stop_id is not None and not 0 <= stop_id < vocab_size:
        raise SystemExit(f"--stop-id {stop_id} must be an id below --vocab-size {vocab_size}")
    return stop_id


def main(argv: list[str] | None = None) -> int:
    """Parse flags and serve."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from(args)
    except ValueError as exc:
        parser.error(str(exc))
    asyncio.run(serve(config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
