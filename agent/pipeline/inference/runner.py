"""One run over one dataset: dispatch under the budget gate, keep every answer, stop cleanly.

Every request is an asyncio Task owned by the runner, so cancelling is real (`task.cancel()` plus
SGLang's `/abort_request`), never a bare coroutine that cannot be cancelled. Nothing generated is
thrown away unless the user asked for `--on-budget cancel` or sent a second signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import signal
import sys
import time
from collections import deque
from typing import Any

import aiohttp

from agent.datasets.writer_lock import take_writer_lock
from agent.pipeline.inference.answer_checks import usable_answer, writable_line
from agent.pipeline.inference.backends import Backend, Sampling, make_backend
from agent.pipeline.inference.backends.base import Generation, PromptRequest
from agent.pipeline.inference.backends.keys import key_source, read_key
from agent.pipeline.inference.backends.reencode import Reencoder
from agent.pipeline.inference.budget import BudgetGate
from agent.pipeline.inference.client import (
    AbortOutcome,
    RejectedError,
    Server,
    TransientError,
    backoff_s,
)
from agent.pipeline.inference.error_marks import clear_permanent_marks, prompt_kind
from agent.pipeline.inference.options import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_SIGNAL,
    EXIT_USAGE,
    RunnerOptions,
)
from agent.pipeline.inference.pool import ServerDownError, ServerPool
from agent.pipeline.inference.prompts import Prompt, PromptEncoder, PromptsError, read_prompts
from agent.pipeline.inference.records import (
    AppendLog,
    ResumeState,
    permanently_failed_ids,
    recover,
)
from agent.pipeline.inference.rejections import (
    RejectionJudge,
    RequestRejectedError,
    run_level_message,
)
from agent.pipeline.inference.response_line import DatasetTally, tally_responses
from agent.pipeline.inference.status import (
    RunStats,
    progress_line,
    status_record,
    write_status,
)
from agent.pipeline.inference.storage import StorageError
from agent.pipeline.inference.waiting import wait_for_servers
from agent.protocol import generation_done

log = logging.getLogger("runner")

ABORT_GRACE_S = 5.0
"""How long aborted requests get to come back with their partial counts before being cancelled."""
EMPTY_PROMPT = "the prompt encodes to no tokens (input_ids cannot be empty)"
ABORTED = "the server aborted the request (finish_reason abort)"


class RunFailedError(Exception):
    """The run cannot go on; the message says why, the exit code how (1 failure, 2 config)."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Runner:
    """Generates one dataset's responses up to its budget."""

    def __init__(self, options: RunnerOptions) -> None:
        self.options = options
        self.name = options.dataset_dir.name
        self.stats = RunStats()
        self.state = "starting"
        self.stop_reason: str | None = None
        self.failure: str | None = None
        self.storage_error: StorageError | None = None
        self.refusal: str | None = None
        self.failure_reason = "server_down"
        """stop_reason of a failed run: server_down, not_ready, rejected or nothing_generated."""
        self.pool: ServerPool | None = None
        self.stop_requested = False
        self.stopping = asyncio.Event()
        """Set with stop_requested: a prompt waiting to try again stops waiting (and trying)."""
        self.cancelling = False
        self.changed = asyncio.Event()
        self.hard_stop = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        self.prompt_of: dict[asyncio.Task[None], Prompt] = {}
        """Each task's prompt, so a task that fails in a way nobody foresaw still gets it marked."""
        self.in_flight: dict[asyncio.Task[None], tuple[Server, str]] = {}
        self.rng = random.Random()
        self.prompts: list[Prompt] = []
        self.todo: deque[Prompt] = deque()
        self.resume = ResumeState()
        self.earlier = DatasetTally()
        """Cost and re-encodings of the records earlier runs left, for per-dataset totals."""
        self.paused_until = 0.0
        """Monotonic time before which nothing new is sent (an API's rate limit)."""
        self.gate = BudgetGate(
            options.token_budget, float(options.max_new_tokens), options.on_budget == "cancel"
        )

    # ------------------------------------------------------------ the run

    async def run(self) -> int:
        """Run to the end; returns the exit code.

        Holds the dataset's writer lock from before the first byte it reads or writes until it
        exits, so a second runner on the same dataset stops at once having written nothing.
        """
        lock_fd = take_writer_lock(self.options.dataset_dir)
        try:
            return await self._run_locked()
        except StorageError as exc:
            self._stopped_by(exc)  # a write failed before the run could start, or while closing
            raise self.storage_error or exc from None
        finally:
            os.close(lock_fd)

    async def _run_locked(self) -> int:
        options = self.options
        api_key = read_key(options.api, options.api_key_file)
        self.key_source = key_source(options.api, options.api_key_file, api_key)
        try:
            self._prepare()
        except PromptsError as exc:
            self._refuse(str(exc))
            raise
        self._report()  # "starting", with what resume found, before the first request
        async with aiohttp.ClientSession() as session:
            client = self._backend(session, api_key)
            self.pool = pool = ServerPool(
                client, self.options.servers, self.options.server_down_timeout_s, self.changed.set
            )
            self.judge = RejectionJudge(client)
            self.writer = AppendLog(self.options.responses_path)
            self.errors_log = AppendLog(self.options.errors_path)
            reporter = asyncio.create_task(self._report_forever())
            self._install_signal_handlers()
            try:
                await self._check_servers(client, pool)
                await self._dispatch_all(client, pool)
                await self._wind_down(client)
            finally:
                self.judge.close()
                pool.close()
                reporter.cancel()
                self.writer.close()
                self.errors_log.close()
        return self._finish()

    def _backend(self, session: aiohttp.ClientSession, api_key: str | None) -> Backend:
        options = self.options
        sampling = Sampling(
            options.max_new_tokens, options.temperature, options.top_p, options.model
        )
        tokenizer = self.encoder.tokenizer
        reencoder = Reencoder(tokenizer) if tokenizer is not None else None
        return make_backend(
            options.api, session, options.request_timeout_s, api_key, sampling, reencoder
        )

    def _prepare(self) -> None:
        options = self.options
        if options.retry_errors:
            cleared = clear_permanent_marks(options.errors_path, options.retry_errors)
            log.info("[%s] --retry-errors: %d permanent mark(s) cleared", self.name, cleared)
        self.prompts = read_prompts(options.prompts_path, options.max_samples)
        self.encoder = PromptEncoder(
            options.tokenizer, self.prompts, trust_remote_code=options.trust_remote_code
        )
        self.resume = recover(options.responses_path, repair=options.repair)
        if options.api != "sglang":
            self.earlier = tally_responses(options.responses_path)
        skip = self.resume.done_ids | permanently_failed_ids(options.errors_path)
        self.todo = deque(p for p in self.prompts if p.id not in skip)
        self.gate.resume(self.resume.lengths)
        log.info(
            "[%s] %d prompts, %d done before (%d tokens), %d to go; torn tail moved: %d bytes",
            self.name, len(self.prompts), len(self.resume.done_ids), self.resume.tokens,
            len(self.todo), self.resume.torn_bytes_moved,
        )  # fmt: skip

    def _refuse(self, reason: str) -> None:
        """Say in runner.json why the run never started: nothing was sent, no prompt failed."""
        self.state, self.stop_reason, self.refusal = "refused", "refused", reason
        with contextlib.suppress(OSError):  # no dataset folder to write in: the line says it all
            self._report()

    async def _check_servers(self, client: Backend, pool: ServerPool) -> None:
        """Wait (bounded) for a server that is still loading or warming up."""
        failure = await wait_for_servers(
            client, pool, self.options.wait_for_server_s, self.changed,
            on_waiting=lambda _: self._set_state("waiting_for_server"),
            stopping=lambda: self.stop_requested,
        )  # fmt: skip
        if failure is not None:
            self._fail_run(failure, "not_ready")

    def _set_state(self, state: str) -> None:
        self.state = state
        self._report()

    def _fail_run(self, message: str, reason: str) -> None:
        """Stop the whole run: the message is its one line, `reason` its stop_reason."""
        if self.failure is None:
            self.failure, self.failure_reason = message, reason
        self.stop_requested = True
        self.stopping.set()
        self.changed.set()

    async def _dispatch_all(self, client: Backend, pool: ServerPool) -> None:
        self.state = "running"
        while not self.stop_requested and (self.todo or self.tasks):
            if self._may_dispatch():
                self._launch(self.todo.popleft(), client, pool)
                continue
            if not self.tasks and self._done():
                break
            if self.options.on_budget == "cancel" and self.gate.reached:
                break
            self.changed.clear()
            pause_s = self.paused_until - time.monotonic()
            with contextlib.suppress(asyncio.TimeoutError):  # a pause ends by itself
                await asyncio.wait_for(self.changed.wait(), pause_s if pause_s > 0 else None)

    def _done(self) -> bool:
        """The one rule: the budget is met or no prompt is left (`generation_done`)."""
        return generation_done(self.gate.tokens_done, self.gate.budget, len(self.todo))

    def _may_dispatch(self) -> bool:
        """Room for one more request; while every server is down its task waits for one."""
        return (
            bool(self.todo)
            and len(self.tasks) < self.options.concurrency
            and time.monotonic() >= self.paused_until
            and self.gate.may_dispatch(time.monotonic())
        )

    def _launch(self, prompt: Prompt, client: Backend, pool: ServerPool) -> None:
        task = asyncio.create_task(self._serve(prompt, client, pool), name=f"prompt {prompt.id}")
        self.tasks.add(task)
        self.prompt_of[task] = prompt
        self.gate.sent(task, time.monotonic())
        self.stats.dispatched += 1
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self.in_flight.pop(task, None)
        prompt = self.prompt_of.pop(task)
        self.gate.answered(task, None, time.monotonic())
        if not task.cancelled() and (exc := task.exception()) is not None:
            if isinstance(exc, ServerDownError):
                self._fail_run(str(exc), "server_down")
            elif isinstance(exc, RequestRejectedError):
                self._fail_run(str(exc), "rejected")
            else:  # never dropped silently: the prompt is marked with what went wrong
                log.error("[%s] %s failed: %r", self.name, task.get_name(), exc)
                reason = f"the runner failed on it: {type(exc).__name__}: {exc}"
                self._fail(prompt, reason, permanent=False)
        self.changed.set()

    # ------------------------------------------------------------ one prompt

    async def _serve(self, prompt: Prompt, client: Backend, pool: ServerPool) -> None:
        try:
            input_ids = self.encoder.input_ids(prompt)
        except (
            Exception
        ) as exc:  # a tokenizer can raise anything; the prompt fails, the run goes on
            self._fail(prompt, f"cannot tokenize: {exc}", permanent=True)
            return
        if not input_ids:  # SGLang refuses it (io_struct.py:499): no need to ask
            self._fail(prompt, EMPTY_PROMPT, permanent=True)
            return
        request = PromptRequest(prompt, input_ids, self._rid(prompt))
        failures = 0
        while True:
            started = time.monotonic()
            server = await pool.acquire()
            task = asyncio.current_task()
            assert task is not None
            self.in_flight[task] = (server, request.rid)
            self.gate.sent(task, time.monotonic())
            try:
                answer = await usable_answer(client, server, request)
                line = writable_line(prompt, answer, time.monotonic() - started, self.options.api)
                pool.succeeded(server)
            except TransientError as exc:
                failures += self._note_transient(exc, server, pool)
                if not await self._wait_to_retry(prompt, failures, exc):
                    return
                request = PromptRequest(prompt, input_ids, self._rid(prompt))
                continue
            except RejectedError as exc:
                if await self._refused_for_good(prompt, exc, server, request):
                    return
                failures += 1  # whose refusal it is could not be told yet: retried
                if not await self._wait_to_retry(prompt, failures, exc):
                    return
                request = PromptRequest(prompt, input_ids, self._rid(prompt))
                continue
            finally:
                pool.release(server)
            if self._keep(prompt, answer, line):
                return
            failures += 1  # aborted by someone else: tried again, but not for ever
            if not await self._wait_to_retry(prompt, failures, TransientError(ABORTED)):
                return
            request = PromptRequest(prompt, input_ids, self._rid(prompt))

    async def _wait_to_retry(self, prompt: Prompt, failures: int, exc: Exception) -> bool:
        """Wait before another try; False past --max-retries (the prompt marked) or on a stop.

        The server's Retry-After (429/503) is honoured when it gives one, else the runner's own
        capped backoff; a rate limit (429) pauses every dispatch, not just this prompt's.
        """
        if failures > self.options.max_retries:
            self._fail(prompt, f"gave up after {failures} failures: {exc}", permanent=False)
            return False
        retry_after = exc.retry_after_s if isinstance(exc, TransientError) else None
        if isinstance(exc, TransientError) and exc.rate_limited:
            self._pause_dispatch(retry_after if retry_after is not None else backoff_s(1, self.rng))
        delay_s = retry_after if retry_after is not None else backoff_s(failures, self.rng)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), delay_s)
        return not self.stop_requested  # once a stop is asked, the prompt stays to do: no retry

    def _pause_dispatch(self, seconds: float) -> None:
        """Send nothing new for `seconds`: the API's rate limit is the whole run's, not a prompt's."""
        until = time.monotonic() + seconds
        if until > self.paused_until:
            self.paused_until = until
            self.stats.rate_limited += 1
            log.warning("[%s] rate limited: dispatch paused for %.1f s", self.name, seconds)

    async def _refused_for_good(
        self, prompt: Prompt, exc: RejectedError, server: Server, request: PromptRequest
    ) -> bool:
        """True when this prompt is refused (marked permanent); raises if every request is."""
        verdict = await self.judge.is_run_level(exc, server, request)
        if verdict:
            assert self.pool is not None
            key_env = self.pool.client.key_env
            raise RequestRejectedError(run_level_message(exc, self.key_source, key_env))
        if verdict is False:
            self._fail(prompt, str(exc), permanent=True, status=exc.status)
        return verdict is False

    def _note_transient(self, exc: TransientError, server: Server, pool: ServerPool) -> int:
        self.stats.retries += 1
        if exc.rate_limited:
            return 0  # a rate limit is waited out, not counted against the prompt
        if exc.server_down:
            pool.mark_down(server, str(exc))
            return 0  # an outage is waited out, not counted against the prompt
        log.info("[%s] retrying after: %s", self.name, exc)
        return 1

    def _rid(self, prompt: Prompt) -> str:
        return f"{self.name}-{prompt.id}-{secrets.token_hex(4)}"

    def _keep(self, prompt: Prompt, answer: Generation, line: bytes) -> bool:
        """Write one answer's checked line; False if it was aborted by someone else (retried)."""
        finish, tokens = answer.finish_reason, answer.completion_tokens
        if finish == "abort":
            if self.cancelling:
                self.stats.discarded_tokens += tokens
                return True
            self.stats.retries += 1
            return False
        if self.cancelling:
            self.stats.discarded_tokens += tokens
            return True
        if finish == "length":
            self.stats.truncated += 1
            if self.options.drop_truncated:
                self._fail(
                    prompt, "hit max_new_tokens; dropped by --drop-truncated", permanent=True
                )
                return True
        try:
            self.writer.append_line(line)
        except StorageError as exc:
            self._storage_failed(exc, tokens)
            return True
        self.gate.answered(asyncio.current_task(), tokens, time.monotonic())
        self.stats.completed += 1
        self.stats.tokens_this_run += tokens
        self.stats.count_answer(answer)
        return True

    def _fail(
        self, prompt: Prompt, reason: str, *, permanent: bool, status: int | None = None
    ) -> None:
        self.stats.errors += 1
        log.warning(
            "[%s] prompt %s failed%s: %s", self.name, prompt.id, " for good" * permanent, reason
        )
        if self.storage_error is not None:
            return  # nowhere to note it; the prompt stays to do
        try:
            self.errors_log.append(
                {
                    "id": prompt.id,
                    "reason": reason,
                    "status": status,
                    "permanent": permanent,
                    "kind": prompt_kind(reason) if permanent else "transient",
                    "ts": time.time(),
                }
            )
        except StorageError as exc:
            self._storage_failed(exc, 0)

    def _storage_failed(self, exc: StorageError, tokens_lost: int) -> None:
        """A file cannot be written: stop dispatching now; answers still coming have nowhere to go."""
        self.stats.discarded_tokens += tokens_lost
        if self.storage_error is not None:
            return
        log.error("[%s] %s: stopping", self.name, exc)
        self.storage_error = exc
        self.failure = str(exc)
        self.stop_requested = True
        self.stopping.set()
        self.cancelling = True
        self.changed.set()

    # ------------------------------------------------------------ stopping

    async def _wind_down(self, client: Backend) -> None:
        if self.failure is not None:
            await self._cancel_in_flight(client)
            return
        if self.stop_requested:
            self.state = "draining"
            await self._drain()
            if self.tasks:
                await self._cancel_in_flight(client)
            return
        if self.tasks:  # --on-budget cancel, budget reached
            await self._cancel_in_flight(client)

    async def _drain(self) -> None:
        deadline = time.monotonic() + self.options.drain_timeout_s
        log.warning("[%s] draining %d request(s) in flight", self.name, len(self.tasks))
        while self.tasks and not self.hard_stop.is_set() and time.monotonic() < deadline:
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), deadline - time.monotonic())

    async def _cancel_in_flight(self, client: Backend) -> None:
        self.state = "cancelling"
        self.cancelling = True
        log.warning("[%s] cancelling %d request(s) in flight", self.name, len(self.tasks))
        outcomes = await asyncio.gather(
            *(client.abort(s, rid) for s, rid in list(self.in_flight.values()))
        )
        if AbortOutcome.UNSUPPORTED in outcomes:  # sglang-router has no /abort_request
            log.warning(
                "[%s] /abort_request is not there (HTTP 404, a router?): closing %d in-flight "
                "connection(s) at once", self.name, len(self.tasks),
            )  # fmt: skip
        elif self.tasks and not self.hard_stop.is_set():
            await asyncio.wait(set(self.tasks), timeout=ABORT_GRACE_S)
        for task in list(self.tasks):
            task.cancel()
            self.stats.cancelled_requests += 1
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal, signum)

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.stop_requested:
            log.warning("[%s] second %s: cancelling now", self.name, name)
            self.hard_stop.set()
        else:
            log.warning("[%s] %s: draining, send again to cancel at once", self.name, name)
            self.stop_requested = True
            self.stopping.set()
            self.stop_reason = "signal"
            self.state = "draining"
        self.changed.set()

    def _finish(self) -> int:
        if self.storage_error is not None:
            raise self.storage_error
        if self.failure is None and self.stop_reason != "signal" and self._nothing_generated():
            self.failure, self.failure_reason = (
                f"nothing could be generated: {self.stats.errors} prompt(s) failed "
                f"(see {self.options.errors_path})",
                "nothing_generated",
            )
        if self.failure is not None:
            self.state, self.stop_reason = "failed", self.failure_reason
        elif self.stop_reason != "signal":
            self.state = "stopped"
            self.stop_reason = "budget" if self.gate.reached else "exhausted"
        else:
            self.state = "stopped"
        self._report()
        self._say_failed_prompts()
        if self.failure is not None:
            code = EXIT_USAGE if self.failure_reason == "rejected" else EXIT_FAILURE
            raise RunFailedError(self.failure, code)
        return EXIT_SIGNAL if self.stop_reason == "signal" else EXIT_OK

    def _say_failed_prompts(self) -> None:
        """The last word of a run that lost no prompt silently: how many failed, and where."""
        if self.stats.errors and self.storage_error is None:
            log.warning(
                "[%s] %s: %d response(s) written, %d prompt failure(s) marked in %s",
                self.name, self.stop_reason, self.stats.completed, self.stats.errors,
                self.options.errors_path,
            )  # fmt: skip

    def _stopped_by(self, exc: StorageError) -> None:
        """Say in runner.json (where there is room) and in the error why the run stopped."""
        self.storage_error = self.storage_error or exc
        stats = self.stats
        said = [
            f"kept every record written: {stats.completed:,} new this run, "
            f"{self.gate.tokens_done:,} tokens in the dataset"
        ]
        if stats.cancelled_requests or stats.discarded_tokens:
            said.append(
                f"dropped {stats.cancelled_requests} request(s) in flight and "
                f"{stats.discarded_tokens:,} tokens of answers there was no room for"
            )
        said.append("free space and rerun: it resumes exactly where it stopped")
        self.storage_error.detail = "; ".join(filter(None, (self.storage_error.detail, *said)))
        self.state, self.stop_reason = "failed", "write_failed"
        self._report()

    def _nothing_generated(self) -> bool:
        """Requests went out and not one answer came back to keep."""
        return self.stats.dispatched > 0 and self.stats.completed + self.stats.truncated == 0

    # ------------------------------------------------------------ reporting

    def _live_state(self) -> str:
        """The state to report: a running run with every server down is waiting for one."""
        if self.state == "running" and self.pool is not None and self.pool.all_down:
            return "waiting_for_server"
        return self.state

    async def _report_forever(self) -> None:
        last_line = 0.0
        while True:
            await asyncio.sleep(self.options.status_interval_s)
            try:
                self.writer.sync()
            except StorageError as exc:
                self._storage_failed(exc, 0)
            record = self._report()
            if time.monotonic() - last_line >= self.options.progress_interval_s:
                with contextlib.suppress(OSError):  # a log on a full disk must not end the run
                    print(progress_line(self.name, record), file=sys.stderr, flush=True)  # noqa: T201
                last_line = time.monotonic()

    def _dataset_tally(self) -> dict[str, Any]:
        """Cost and re-encoding figures of the whole dataset: earlier records and this run's."""
        stats = self.stats
        tally = self.earlier.plus(stats.cost, stats.reencoded, stats.reencode_mismatches)
        return {
            "dataset_cost": tally.cost,
            "dataset_reencoded": tally.reencoded,
            "dataset_reencode_mismatches": tally.reencode_mismatches,
            "reencode_mismatch_share": tally.mismatch_share,
        }

    def _report(self) -> dict[str, Any]:
        gate, options = self.gate, self.options
        record = status_record(
            {
                "state": self._live_state(),
                "stop_reason": self.stop_reason,
                "failure": self.failure,
                "refusal": self.refusal,
                "dataset_dir": str(options.dataset_dir),
                "servers": list(options.servers),
                "api": options.api,
                "model": options.model,
                "rate_limited_until_s": round(max(self.paused_until - time.monotonic(), 0.0), 1),
                **self._dataset_tally(),
                "budget": options.token_budget,
                "max_samples": options.max_samples,
                "on_budget": options.on_budget,
                "concurrency": options.concurrency,
                "max_new_tokens": options.max_new_tokens,
                "prompts": len(self.prompts),
                "in_flight": len(self.tasks),
                "responses": gate.responses_done,
                "tokens": gate.tokens_done,
                "expected_tokens_per_response": round(gate.expected_tokens, 1),
                "projected_tokens": round(gate.projected_tokens(time.monotonic())),
                "resumed_responses": len(self.resume.done_ids),
                "resumed_tokens": self.resume.tokens,
                "duplicates_skipped": self.resume.duplicates,
                "torn_bytes_moved": self.resume.torn_bytes_moved,
                "corrupt_lines_moved": self.resume.corrupt_lines_moved,
                "write_error": self.storage_error.as_record() if self.storage_error else None,
            },
            self.stats,
        )
        write_status(options.status_path, record)
        return record


__all__ = ["PromptsError", "RunFailedError", "Runner"]
