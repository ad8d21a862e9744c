"""What the simulator is started with: its one config, read by the server and its info bodies."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.simulator.engine import EngineSettings
from agent.simulator.faults import Faults
from agent.simulator.flavors import FlavorSettings
from agent.simulator.tokens import LengthProfile


@dataclass(frozen=True, slots=True)
class SimulatorConfig:
    """Everything the simulator is started with."""

    host: str = "127.0.0.1"
    port: int = 30000
    seed: int = 0
    vocab_size: int = 32000
    stop_id: int | None = None
    """The id an answer that stops ends with (the model's end of turn); None: the last id."""
    context_length: int = 32768
    model_path: str = "sim/eagle-target-sim"
    skip_tokenizer_init: bool = False
    log_file: Path | None = None
    port_file: Path | None = None
    lengths: LengthProfile = field(default_factory=LengthProfile)
    engine: EngineSettings = field(default_factory=EngineSettings)
    faults: Faults = field(default_factory=Faults)
    dp_size: int = 1
    max_running_requests_flag: int | None = None
    """--max-running-requests as given (None when left out), which /server_info echoes."""
    api_key: str | None = None
    warmup_s: float = 0.0
    """Simulated seconds after start during which /health answers 503, as while SGLang warms up."""
    flavor: FlavorSettings = field(default_factory=FlavorSettings)
    """Which server it pretends to be: SGLang (native API), vLLM or a hosted API (/v1)."""
