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
import secrets
import signal
import sys
import time
from collections import deque
from typing import Any

import aiohttp

from agent.datasets.writer_lock import take_writer_lock
from agent.pipeline.inference.answer_checks import usable_answer, writable_line
from agent.pipeline.inference.backends import Backend
from agent.pipeline.inference.backends.base import Generation, PromptRequest
from agent.pipeline.inference.backends.keys import key_source, read_key
from agent.pipeline.inference.budget import BudgetGate
from agent.pipeline.inference.client import RejectedError, Server, TransientError
from agent.pipeline.inference.conversations import Conversation, ConversationCounts
from agent.pipeline.inference.error_marks import error_mark
from agent.pipeline.inference.in_flight import InFlight
from agent.pipeline.inference.options import EXIT_FAILURE, RunnerOptions
from agent.pipeline.inference.pool import ServerDownError, ServerPool
from agent.pipeline.inference.prompts import Prompt, PromptsError
from agent.pipeline.inference.records import AppendLog, ResumeState
from agent.pipeline.inference.rejections import (
    RejectionJudge,
    RequestRejectedError,
    run_level_message,
)
from agent.pipeline.inference.response_line import DatasetTally
from agent.pipeline.inference.retry_pacing import RetryPacing
from agent.pipeline.inference.run_ending import ending_words, how_it_ended
from agent.pipeline.inference.run_report import (
    dataset_tally,
    options_fields,
    progress_fields,
    write_failed_detail,
)
from agent.pipeline.inference.run_setup import backend_for, prepare
from agent.pipeline.inference.status import RunStats, progress_line, status_record, write_status
from agent.pipeline.inference.storage import StorageError
from agent.pipeline.inference.turn_requests import TurnRequests
from agent.pipeline.inference.waiting import wait_for_servers
from agent.pipeline.tokenizer.identity import STAMP
from agent.protocol import generation_done

log = logging.getLogger("runner")

EMPTY_PROMPT = "the prompt encodes to no tokens (input_ids cannot be empty)"
WRITTEN, DROPPED, RETRY = "written", "dropped", "retry"
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
        self.flight = InFlight(self.name)
        self.pacing = RetryPacing(self.name, self.stats, self.stopping)
        self.prompts: list[Prompt] = []
        self.todo: deque[Prompt] = deque()
        self.resume = ResumeState()
        self.earlier = DatasetTally()
        """Cost and re-encodings of the records earlier runs left, for per-dataset totals."""
        self.tokenizer_stamp: str | None = None
        self.conversations: dict[str, Conversation] = {}
        self.conversation_counts = ConversationCounts()
        self.broken: list[tuple[Prompt, str]] = []
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
            client = backend_for(self.options, session, api_key, self.encoder)
            self.pool = pool = ServerPool(
                client, self.options.servers, self.options.server_down_timeout_s, self.changed.set
            )
            self.judge = RejectionJudge(client)
            self.writer = AppendLog(self.options.responses_path)
            self.errors_log = AppendLog(self.options.errors_path)
            reporter = asyncio.create_task(self._report_forever())
            self._install_signal_handlers()
            for prompt, reason in self.broken:
                self._fail(prompt, reason, permanent=True)
            try:
                await self._check_servers(client, pool)
                await self._dispatch_all(client, pool)
                await self._wind_down(client)
            finally:
                self.judge.close()
                self.turns.close()
                pool.close()
                reporter.cancel()
                self.writer.close()
                self.errors_log.close()
        return self._finish()

    def _prepare(self) -> None:
        prepared = prepare(self.options, self.name)
        self.prompts, self.encoder, self.resume = (
            prepared.prompts,
            prepared.encoder,
            prepared.resume,
        )
        self.earlier, self.todo = prepared.earlier, prepared.todo
        self.tokenizer_stamp = prepared.tokenizer_stamp
        self.conversations, self.broken = prepared.conversations or {}, prepared.broken or []
        self.conversation_counts = ConversationCounts.of(self.conversations)
        self.turns = TurnRequests(self.encoder, self.options)
        self.gate.resume(self.resume.lengths)

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
        while not self.stop_requested and (self.todo or self.flight):
            if self._may_dispatch():
                self._launch(self.todo.popleft(), client, pool)
                continue
            if not self.flight and self._done():
                break
            if self.options.on_budget == "cancel" and self.gate.reached:
                break
            self.changed.clear()
            pause_s = self.pacing.paused_for(time.monotonic())
            with contextlib.suppress(asyncio.TimeoutError):  # a pause ends by itself
                await asyncio.wait_for(self.changed.wait(), pause_s or None)

    def _done(self) -> bool:
        """The one rule: the budget is met or no prompt is left (`generation_done`)."""
        return generation_done(self.gate.tokens_done, self.gate.budget, len(self.todo))

    def _may_dispatch(self) -> bool:
        """Room for one more request; while every server is down its task waits for one."""
        return (
            bool(self.todo)
            and len(self.flight) < self.options.concurrency
            and not self.pacing.paused_for(time.monotonic())
            and self.gate.may_dispatch(time.monotonic())
        )

    def _launch(self, prompt: Prompt, client: Backend, pool: ServerPool) -> None:
        task = asyncio.create_task(self._serve(prompt, client, pool), name=f"prompt {prompt.id}")
        self.flight.add(task, prompt)
        self.gate.sent(task, time.monotonic())
        self.stats.dispatched += 1
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        prompt = self.flight.finished(task)
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
        """Answer the prompt, or the next turn of its conversation (then queued for the next)."""
        conversation = self.conversations.get(prompt.id)
        try:
            asked = await self.turns.request_for(prompt, conversation)
        except (
            Exception
        ) as exc:  # a tokenizer can raise anything; the prompt fails, the run goes on
            self._fail(prompt, f"cannot tokenize: {exc}", permanent=True)
            return
        if not asked.input_ids:  # SGLang refuses it (io_struct.py:499): no need to ask
            self._fail(prompt, EMPTY_PROMPT, permanent=True)
            return
        output = await self._answer(prompt, asked.prompt, asked.input_ids, asked.fields, client,
                                    pool)  # fmt: skip
        if conversation is None:
            return
        if output is None:
            conversation.answers = []  # failed or stopped: not continued in this run
            return
        conversation.answered(output)
        self.conversation_counts.answered(conversation.done)
        if not conversation.done:
            self.todo.appendleft(prompt)  # its next turn goes before any new prompt
            self.changed.set()

    async def _answer(
        self, prompt: Prompt, asked: Prompt, input_ids: list[int], fields: dict[str, Any],
        client: Backend, pool: ServerPool,
    ) -> list[int] | None:  # fmt: skip
        """Ask until an answer is written (its ids), or the prompt fails or the run stops (None).

        `asked` is what is sent and recorded (a conversation's turn); failures mark `prompt`.
        """
        request = PromptRequest(asked, input_ids, self._rid(asked))
        failures = 0
        while True:
            started = time.monotonic()
            server = await pool.acquire()
            task = asyncio.current_task()
            assert task is not None
            self.flight.sent(task, server, request.rid)
            self.gate.sent(task, time.monotonic())
            try:
                answer = await usable_answer(client, server, request)
                line = writable_line(
                    asked, answer, time.monotonic() - started, self.options.api,
                    self.tokenizer_stamp, fields,
                )  # fmt: skip
                pool.succeeded(server)
            except TransientError as exc:
                failures += self.pacing.counts_against_prompt(exc, server, pool)
                if not await self._wait_to_retry(prompt, failures, exc):
                    return None
                request = PromptRequest(asked, input_ids, self._rid(asked))
                continue
            except RejectedError as exc:
                if await self._refused_for_good(prompt, exc, server, request):
                    return None
                failures += 1  # whose refusal it is could not be told yet: retried
                if not await self._wait_to_retry(prompt, failures, exc):
                    return None
                request = PromptRequest(asked, input_ids, self._rid(asked))
                continue
            finally:
                pool.release(server)
            kept = self._keep(prompt, answer, line)
            if kept != RETRY:
                return answer.output_ids if kept == WRITTEN else None
            failures += 1  # aborted by someone else: tried again, but not for ever
            if not await self._wait_to_retry(prompt, failures, TransientError(ABORTED)):
                return None
            request = PromptRequest(asked, input_ids, self._rid(asked))

    async def _wait_to_retry(self, prompt: Prompt, failures: int, exc: Exception) -> bool:
        """Wait before another try; False past --max-retries (the prompt marked) or on a stop."""
        if failures > self.options.max_retries:
            self._fail(prompt, f"gave up after {failures} failures: {exc}", permanent=False)
            return False
        await self.pacing.wait(failures, exc)
        return not self.stop_requested  # once a stop is asked, the prompt stays to do: no retry

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

    def _rid(self, prompt: Prompt) -> str:
        return f"{self.name}-{prompt.id}-{secrets.token_hex(4)}"

    def _keep(self, prompt: Prompt, answer: Generation, line: bytes) -> str:
        """Write one answer's checked line: WRITTEN, DROPPED, or RETRY (aborted by someone else)."""
        finish, tokens = answer.finish_reason, answer.completion_tokens
        if self.cancelling or self._past_budget_to_cut():  # an abort too: never tried again
            self.stats.discarded_tokens += tokens
            return DROPPED
        if finish == "abort":
            self.stats.retries += 1
            return RETRY
        refusal = self.turns.refusal(answer.output_ids)
        if refusal is not None:
            self._fail(prompt, refusal, permanent=True)
            return DROPPED
        if finish == "length":
            self.stats.truncated += 1
            if self.options.drop_truncated:
                self._fail(
                    prompt, "hit max_new_tokens; dropped by --drop-truncated", permanent=True
                )
                return DROPPED
        try:
            self.writer.append_line(line)
        except StorageError as exc:
            self._storage_failed(exc, tokens)
            return DROPPED
        self.gate.answered(asyncio.current_task(), tokens, time.monotonic())
        self.stats.completed += 1
        self.stats.tokens_this_run += tokens
        self.stats.count_answer(answer)
        return WRITTEN

    def _past_budget_to_cut(self) -> bool:
        """--on-budget cancel, and an answer before this one met the budget: it is cut.

        The answers of one batch end together (a real vLLM, equal lengths): each that came back
        before the dispatcher woke to cancel was written, and cancel overshot as finish does.
        """
        return self.options.on_budget == "cancel" and self.gate.reached

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
            self.errors_log.append(error_mark(prompt.id, reason, permanent, status))
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
            if self.flight:
                await self._cancel_in_flight(client)
            return
        if self.flight:  # --on-budget cancel, budget reached
            await self._cancel_in_flight(client)

    async def _drain(self) -> None:
        await self.flight.drain(self.changed, self.hard_stop, self.options.drain_timeout_s)

    async def _cancel_in_flight(self, client: Backend) -> None:
        self.state = "cancelling"
        self.cancelling = True
        self.stats.cancelled_requests += await self.flight.cancel(client, self.hard_stop)

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
        failure = (self.failure, self.failure_reason) if self.failure is not None else None
        options = self.options
        end = how_it_ended(
            failure, self.stop_reason, self.stats, self.gate.reached, options.errors_path
        )
        self.state, self.stop_reason, self.failure = end.state, end.stop_reason, end.failure
        self._report()
        self._say_failed_prompts()
        if end.failure is not None:
            raise RunFailedError(end.failure, end.exit_code)
        words = ending_words(end, self.stats, self.gate.tokens_done, self.gate.budget)
        log.info("[%s] %s", self.name, words)
        return end.exit_code

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
        said = write_failed_detail(self.stats, self.gate.tokens_done)
        self.storage_error.detail = "; ".join(filter(None, (self.storage_error.detail, *said)))
        self.state, self.stop_reason = "failed", "write_failed"
        self._report()

    # ------------------------------------------------------------ reporting

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

    def _live_state(self) -> str:
        """The state to report: a running run with every server down is waiting for one."""
        if self.state == "running" and self.pool is not None and self.pool.all_down:
            return "waiting_for_server"
        return self.state

    def _report(self) -> dict[str, Any]:
        now = time.monotonic()
        record = status_record(
            {
                "state": self._live_state(),
                "stop_reason": self.stop_reason,
                "failure": self.failure,
                "refusal": self.refusal,
                "rate_limited_until_s": round(self.pacing.paused_for(now), 1),
                "prompts": len(self.prompts),
                "in_flight": len(self.flight),
                STAMP: self.tokenizer_stamp,
                "write_error": self.storage_error.as_record() if self.storage_error else None,
                **options_fields(self.options),
                **self.conversation_counts.fields(),
                **progress_fields(self.gate, self.resume, now),
                **dataset_tally(self.earlier, self.stats),
            },
            self.stats,
        )
        write_status(self.options.status_path, record)
        return record


__all__ = ["PromptsError", "RunFailedError", "Runner"]
