"""The wire contract: golden lines for every message, and clear errors for every bad line."""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.protocol import (
    EVENTS,
    MAX_LINE_BYTES,
    METHODS,
    Alert,
    ApiUsage,
    AuditEntry,
    AuditParams,
    AuditResult,
    AutopilotParams,
    AutopilotStage,
    AutopilotStatus,
    AutopilotStatusParams,
    AutostartParams,
    AutostartStatus,
    AutostartStatusParams,
    DatasetDetail,
    DatasetProgress,
    DatasetsConfig,
    DetailParams,
    Done,
    ErrorCode,
    ErrorInfo,
    ErrorResponse,
    ErrorSummary,
    Event,
    EventsList,
    EventsParams,
    FilesHashParams,
    FilesHashResult,
    FileState,
    GenerateParams,
    HelloParams,
    HelloResult,
    InstallParams,
    InstallResult,
    JobEvent,
    JobInfo,
    JobsList,
    JobsParams,
    LaunchParams,
    LineFramer,
    LogChunk,
    LogInfo,
    LogLagged,
    LogReadParams,
    LogsList,
    LogsParams,
    LogSubscribeParams,
    LogUnsubscribeParams,
    Message,
    Method,
    NotifyStatus,
    NotifyStatusParams,
    OperationInfo,
    OperationsList,
    OperationsParams,
    OperationStep,
    OversizedLine,
    PingParams,
    PingResult,
    PipelineConfig,
    ProtocolError,
    RedeployParams,
    Request,
    Response,
    ResponseSummary,
    RollbackParams,
    SequenceParams,
    SequenceStep,
    Snapshot,
    SnapshotParams,
    StagedFile,
    StopParams,
    StopResult,
    StopStep,
    TimelineEvent,
    TokenizerCheck,
    TokenizerCheckParams,
    TokensAt,
    WatchParams,
    WireMemo,
    bundle_digest,
    decode,
    encode,
    encode_result,
    encoding,
    parse_result,
    to_wire,
)

DATASET = DatasetProgress(
    "B1_sharegpt", 10, 4, 4000, 10_000, tokens_per_s=12.5, status="idle",
    api_usage=ApiUsage(3, 1, 0.25, rate_limited=2), tokens_per_s_by_window=(2.5, None),
)  # fmt: skip
SNAPSHOT = Snapshot(
    taken_at=1700000000.5,
    host_name="gpu-0",
    datasets_root="/data",
    datasets=(DATASET,),
    alerts=(Alert("over_budget", "error", "B1 is over budget", subject="B1_sharegpt"),),
)
HELLO_RESULT = HelloResult(1, "0.1.0", "ab" * 32, 42, "gpu-0", 1700000000.0)

GOLDEN_REQUESTS: list[tuple[Request[object], str]] = [
    (
        Request(
            1,
            "hello",
            HelloParams(
                1,
                "eagle-console 0.1.0",
                PipelineConfig(
                    DatasetsConfig("/data", budget=10_000_000, budgets={"B8_math": 5_000_000}),
                    sglang_url="http://127.0.0.1:30000",
                ),
            ),
        ),  # fmt: skip
        '{"id":1,"method":"hello","params":{"protocol_version":1,"client_version":"eagle-console'
        ' 0.1.0","pipeline":{"datasets":{"root":"/data","prompts_file":"prompts.jsonl",'
        '"responses_file":"raw_responses.jsonl","budget":10000000,"budgets":{"B8_math":5000000},'
        '"stall_after_s":600.0,"overrun_alert_share":0.02,"low_disk_floor_bytes":1073741824,'
        '"guard":"alert","guards":{},"stall_guard_s":null},'
        '"sglang_url":"http://127.0.0.1:30000","sglang_log":null,"sglang_api_key_file":null,'
        '"sglang_api":null,"sglang_model":null,"jobs":{},"external":{},'
        '"deploy_roots":[],"tokenizer":null,"trust_remote_code":false,"notify":null}}}',
    ),
    (
        Request(17, "tokenizer.check", TokenizerCheckParams(30.0)),
        '{"id":17,"method":"tokenizer.check","params":{"timeout_s":30.0}}',
    ),
    (Request(2, "ping", PingParams()), '{"id":2,"method":"ping","params":{}}'),
    (Request(3, "snapshot", SnapshotParams()), '{"id":3,"method":"snapshot","params":{}}'),
    (Request(4, "jobs.list", JobsParams()), '{"id":4,"method":"jobs.list","params":{}}'),
    (
        Request(18, "events.list", EventsParams(3600.0, 50)),
        '{"id":18,"method":"events.list","params":{"since_s":3600.0,"limit":50}}',
    ),
    (
        Request(19, "notify.status", NotifyStatusParams()),
        '{"id":19,"method":"notify.status","params":{}}',
    ),
    (
        Request(15, "audit.read", AuditParams(20)),
        '{"id":15,"method":"audit.read","params":{"limit":20}}',
    ),
    (
        Request(16, "datasets.detail", DetailParams("B1", 5)),
        '{"id":16,"method":"datasets.detail","params":{"name":"B1","recent":5}}',
    ),
    (
        Request(14, "snapshot.watch", WatchParams(0.5)),
        '{"id":14,"method":"snapshot.watch","params":{"interval_s":0.5}}',
    ),
    (
        Request(5, "jobs.launch", LaunchParams("inference", "B1", ("python", "-m", "x")), "k-1"),
        '{"id":5,"method":"jobs.launch","params":{"job":"inference","dataset":"B1","argv":'
        '["python","-m","x"]},"idempotency_key":"k-1"}',
    ),
    (
        Request(6, "jobs.stop", StopParams("inference-B1-20261129-120000"), "k-2"),
        '{"id":6,"method":"jobs.stop","params":{"job_id":"inference-B1-20261129-120000"},'
        '"idempotency_key":"k-2"}',
    ),
    (Request(7, "logs.list", LogsParams()), '{"id":7,"method":"logs.list","params":{}}'),
    (
        Request(11, "files.hash", FilesHashParams(("/r/a.py",))),
        '{"id":11,"method":"files.hash","params":{"paths":["/r/a.py"]}}',
    ),
    (
        Request(
            12,
            "files.install",
            InstallParams("/r/a.py", "/r/.a.py.eagle-upload-1", "ab", 420),
            "k-3",
        ),
        '{"id":12,"method":"files.install","params":{"target":"/r/a.py","staged":'
        '"/r/.a.py.eagle-upload-1","sha256":"ab","mode":420},"idempotency_key":"k-3"}',
    ),
    (
        Request(13, "files.rollback", RollbackParams("/r/a.py"), "k-4"),
        '{"id":13,"method":"files.rollback","params":{"target":"/r/a.py"},"idempotency_key":"k-4"}',
    ),
    (
        Request(8, "logs.read", LogReadParams("sglang", -4096)),
        '{"id":8,"method":"logs.read","params":{"name":"sglang","offset":-4096,"inode":null,'
        '"max_bytes":524288}}',
    ),
    (
        Request(9, "logs.subscribe", LogSubscribeParams("job:x", 1024, 77)),
        '{"id":9,"method":"logs.subscribe","params":{"name":"job:x","offset":1024,"inode":77}}',
    ),
    (
        Request(10, "logs.unsubscribe", LogUnsubscribeParams("job:x")),
        '{"id":10,"method":"logs.unsubscribe","params":{"name":"job:x"}}',
    ),
    (
        Request(
            20,
            "operations.redeploy",
            RedeployParams("j1", None, (StagedFile("/r/a.py", "/r/.a.py.eagle-upload-1", "ab"),)),
            "k-5",
        ),  # fmt: skip
        '{"id":20,"method":"operations.redeploy","params":{"job_id":"j1","argv":null,"files":['
        '{"target":"/r/a.py","staged":"/r/.a.py.eagle-upload-1","sha256":"ab","mode":420}]},'
        '"idempotency_key":"k-5"}',
    ),
    (
        Request(21, "operations.generate", GenerateParams("inference", ("B1", "B2")), "k-6"),
        '{"id":21,"method":"operations.generate","params":{"job":"inference","datasets":'
        '["B1","B2"]},"idempotency_key":"k-6"}',
    ),
    (
        Request(
            27,
            "operations.sequence",
            SequenceParams(
                "hand-over", (SequenceStep("stop", job_id="j1"), SequenceStep("start", job="train"))
            ),
            "k-9",
        ),  # fmt: skip
        '{"id":27,"method":"operations.sequence","params":{"subject":"hand-over","steps":['
        '{"action":"stop","job_id":"j1","job":null,"dataset":null},{"action":"start",'
        '"job_id":null,"job":"train","dataset":null}]},"idempotency_key":"k-9"}',
    ),
    (
        Request(22, "operations.list", OperationsParams("redeploy-1")),
        '{"id":22,"method":"operations.list","params":{"operation_id":"redeploy-1"}}',
    ),
    (
        Request(23, "autopilot.status", AutopilotStatusParams()),
        '{"id":23,"method":"autopilot.status","params":{}}',
    ),
    (
        Request(24, "autopilot.control", AutopilotParams("pause"), "k-7"),
        '{"id":24,"method":"autopilot.control","params":{"action":"pause"},"idempotency_key":"k-7"}',
    ),
    (
        Request(25, "autostart.status", AutostartStatusParams()),
        '{"id":25,"method":"autostart.status","params":{}}',
    ),
    (
        Request(26, "autostart.set", AutostartParams("install"), "k-8"),
        '{"id":26,"method":"autostart.set","params":{"action":"install"},"idempotency_key":"k-8"}',
    ),
]

JOB = JobInfo(
    "sleeper-1", "sleeper", "command", "running", ("sleep", "9"), pid=12, pgid=11, gpu=True
)
JOB_LINE = (
    '{"id":"sleeper-1","name":"sleeper","kind":"command","state":"running","argv":["sleep","9"],'
    '"pid":12,"pgid":11,"dataset":null,"started_at":null,"ended_at":null,"exit_code":null,'
    '"exit_signal":null,"gpu":true,"external":false,"log_path":null,"code_sha256":null,"cwd":null,'
    '"restart_of":null,"restarts":0,"restart_note":null}'
)

CHUNK = LogChunk("sglang", 10, 20, "a line\n", 20, 77)
CHUNK_LINE = (
    '{"name":"sglang","start_offset":10,"end_offset":20,"text":"a line\\n","size_bytes":20,'
    '"inode":77,"reset":false}'
)

OPERATION = OperationInfo(
    "redeploy-1", "redeploy", "inference (B3)", "running",
    (OperationStep("stop", "done", "SIGINT", 5.0),), 4.0, asked_by="eagle-console 0.1.0",
    job_id="j1",
)  # fmt: skip
OPERATION_LINE = (
    '{"id":"redeploy-1","kind":"redeploy","subject":"inference (B3)","state":"running",'
    '"steps":[{"name":"stop","state":"done","detail":"SIGINT","at":5.0}],"started_at":4.0,'
    '"ended_at":null,"asked_by":"eagle-console 0.1.0","outcome":"","job_id":"j1",'
    '"new_job_id":null}'
)
AUTOPILOT = AutopilotStatus(
    "running", (AutopilotStage("generate", "running", "1 of 2", 1),), "generate", "B3", 2, 3.0
)
AUTOPILOT_LINE = (
    '{"state":"running","stages":[{"name":"generate","state":"running","detail":"1 of 2",'
    '"attempts":1}],"stage":"generate","waiting_for":"B3","restarts":2,"started_at":3.0,'
    '"paused_reason":null,"verdict":null}'
)
AUTOPILOT_OFF = (
    '{"state":"off","stages":[],"stage":null,"waiting_for":"","restarts":0,"started_at":null,'
    '"paused_reason":null,"verdict":null}'
)
AUTOSTART = AutostartStatus(True, "@reboot x", "x", True, "installed")
AUTOSTART_LINE = (
    '{"installed":true,"cron_line":"@reboot x","command":"x","cron_available":true,'
    '"detail":"installed"}'
)

GOLDEN_RESULTS: list[tuple[str, Any, str]] = [
    (
        "files.hash",
        FilesHashResult((FileState("/r/a.py", "ab", 3, 420), FileState("/r/b.py", None))),
        '{"id":1,"result":{"files":[{"path":"/r/a.py","sha256":"ab","size_bytes":3,"mode":420},'
        '{"path":"/r/b.py","sha256":null,"size_bytes":null,"mode":null}]}}',
    ),
    (
        "files.install",
        InstallResult("/r/a.py", "ab", "cd", "/r/a.py.eagle-backup"),
        '{"id":1,"result":{"target":"/r/a.py","sha256":"ab","previous_sha256":"cd",'
        '"backup":"/r/a.py.eagle-backup","removed_leftovers":[]}}',
    ),
    (
        "files.rollback",
        InstallResult("/r/a.py", "cd", None, None),
        '{"id":1,"result":{"target":"/r/a.py","sha256":"cd","previous_sha256":null,"backup":null,'
        '"removed_leftovers":[]}}',
    ),
    (
        "logs.list",
        LogsList((LogInfo("sglang", "/root/sglang.log", 20),)),
        '{"id":1,"result":{"logs":[{"name":"sglang","path":"/root/sglang.log","size_bytes":20}]}}',
    ),
    ("logs.read", CHUNK, '{"id":1,"result":' + CHUNK_LINE + "}"),
    ("logs.subscribe", Done(), '{"id":1,"result":{}}'),
    ("snapshot.watch", Done(), '{"id":1,"result":{}}'),
    (
        "datasets.detail",
        DatasetDetail(
            "B1",
            2,
            (ResponseSummary("p1", 30, "length", 2.5),),
            {"length": 1, "stop": 1},
            (0, 10, 20),
            (1, 1),
            (ErrorSummary("p9", "HTTP 400: too long", True),),
            ApiUsage(1, 0, 0.002, responses=2),
            (TokensAt(5.0, 300),),
            1000,
        ),  # fmt: skip
        '{"id":1,"result":{"name":"B1","window_responses":2,"recent":[{"id":"p1","completion_tokens":30,'
        '"finish_reason":"length","latency_s":2.5}],"finish_reasons":{"length":1,"stop":1},'
        '"length_edges":[0,10,20],"length_counts":[1,1],"errors":[{"id":"p9","reason":'
        '"HTTP 400: too long","permanent":true}],"api_usage":{"reencoded_responses":1,'
        '"reencode_mismatches":0,"cost_credits":0.002,"rate_limited":0,"paused_until":null,'
        '"responses":2},"tokens_over_time":[{"ts":5.0,"tokens":300}],"budget":1000}}',
    ),
    (
        "audit.read",
        AuditResult(
            (AuditEntry(5.0, "eagle-console 0.1.0", "jobs.stop", {"job_id": "j"}, "k", "ok"),)
        ),
        '{"id":1,"result":{"entries":[{"ts":5.0,"client":"eagle-console 0.1.0","method":"jobs.stop",'
        '"params":{"job_id":"j"},"idempotency_key":"k","outcome":"ok"}]}}',
    ),
    ("logs.unsubscribe", Done(), '{"id":1,"result":{}}'),
    (
        "events.list",
        EventsList(
            (TimelineEvent(5.0, "job_stopped", "j1", "info", "job j1 ended", "budget guard"),)
        ),
        '{"id":1,"result":{"events":[{"ts":5.0,"kind":"job_stopped","subject":"j1","severity":'
        '"info","message":"job j1 ended","asked_by":"budget guard"}]}}',
    ),
    (
        "notify.status",
        NotifyStatus("https://hooks.example/…", 3, 2, "HTTP 503", 7.0),
        '{"id":1,"result":{"site":"https://hooks.example/\\u2026","sent":3,"dead_letters":2,'
        '"last_failure":"HTTP 503","last_failure_at":7.0}}',
    ),
    (
        "tokenizer.check",
        TokenizerCheck(
            "/models/kimi", True, True, "", "TikTokenTokenizer", 163840, True, "<think>"
        ),
        '{"id":1,"result":{"path":"/models/kimi","trust_remote_code":true,"ok":true,"detail":"",'
        '"class_name":"TikTokenTokenizer","vocab_size":163840,"has_chat_template":true,'
        '"think_marker":"<think>"}}',
    ),  # fmt: skip
    ("jobs.list", JobsList((JOB,)), '{"id":1,"result":{"jobs":[' + JOB_LINE + "]}}"),
    ("jobs.launch", JOB, '{"id":1,"result":' + JOB_LINE + "}"),
    (
        "jobs.stop",
        StopResult(JOB, "stopped", (StopStep("SIGTERM", 5.0, (11, 12)),)),
        '{"id":1,"result":{"job":' + JOB_LINE + ',"outcome":"stopped","steps":[{"action":'
        '"SIGTERM","at":5.0,"pids":[11,12]}]}}',
    ),
    (
        "hello",
        HELLO_RESULT,
        '{"id":1,"result":{"protocol_version":1,"agent_version":"0.1.0","bundle_sha256":"'
        + "ab" * 32
        + '","pid":42,"host_name":"gpu-0","started_at":1700000000.0}}',
    ),
    ("ping", PingResult(1700000001.25), '{"id":1,"result":{"agent_time":1700000001.25}}'),
    (
        "snapshot",
        SNAPSHOT,
        '{"id":1,"result":{"taken_at":1700000000.5,"host_name":"gpu-0","datasets_root":"/data",'
        '"datasets":[{"name":"B1_sharegpt","prompts":10,"responses":4,"tokens":4000,'
        '"budget":10000,"corrupt_lines":0,"torn_tail_bytes":0,"tokens_per_s":12.5,"eta_s":null,'
        '"projected_tokens":null,"projected_overrun_tokens":null,"status":"idle","responses_per_s":null,'
        '"mean_tokens_per_response":null,"stop_condition":"all_prompts","target_responses":null,'
        '"target_tokens":null,"eta_low_s":null,"eta_high_s":null,"projected_overrun_hours":null,'
        '"in_flight":0,"runner_state":null,"runner_sha256":null,"stale_code":false,'
        '"last_response_at":null,"writer_active":false,"failed_prompts":0,"writer":null,"writer_pid":null,"writer_stopped":false,'
        '"api_usage":{"reencoded_responses":3,"reencode_mismatches":1,"cost_credits":0.25,'
        '"rate_limited":2,"paused_until":null,"responses":0},"tokens_per_s_by_window":[2.5,null]}],"alerts":[{'
        '"kind":"over_budget","severity":"error","message":"B1 is over budget",'
        '"subject":"B1_sharegpt","raised_at":0.0}],"jobs":[],"server":null,"gpus":[],"gpu_note":"",'
        '"training":[],"export":null,"evaluation":null,"operations":[],"autopilot":null}}',
    ),
    (
        "operations.redeploy",
        OPERATION,
        '{"id":1,"result":' + OPERATION_LINE + "}",
    ),
    ("operations.generate", OPERATION, '{"id":1,"result":' + OPERATION_LINE + "}"),
    ("operations.sequence", OPERATION, '{"id":1,"result":' + OPERATION_LINE + "}"),
    (
        "operations.list",
        OperationsList((OPERATION,)),
        '{"id":1,"result":{"operations":[' + OPERATION_LINE + "]}}",
    ),
    ("autopilot.status", AutopilotStatus("off"), '{"id":1,"result":' + AUTOPILOT_OFF + "}"),
    ("autopilot.control", AUTOPILOT, '{"id":1,"result":' + AUTOPILOT_LINE + "}"),
    ("autostart.status", AUTOSTART, '{"id":1,"result":' + AUTOSTART_LINE + "}"),
    ("autostart.set", AUTOSTART, '{"id":1,"result":' + AUTOSTART_LINE + "}"),
]

GOLDEN_OTHERS: list[tuple[Message, str]] = [
    (Event("log", CHUNK), '{"event":"log","data":' + CHUNK_LINE + "}"),
    (
        Event("log_lagged", LogLagged("sglang", 4096, 77, "subscribe again from byte 4096")),
        '{"event":"log_lagged","data":{"name":"sglang","resume_offset":4096,"inode":77,'
        '"reason":"subscribe again from byte 4096"}}',
    ),
    (
        Event("job", JobEvent(JOB, "launched")),
        '{"event":"job","data":{"job":' + JOB_LINE + ',"message":"launched"}}',
    ),
    (
        ErrorResponse(7, ErrorInfo(ErrorCode.NOT_FOUND, "no job 'x'")),
        '{"id":7,"error":{"code":"not_found","message":"no job \'x\'"}}',
    ),
    (
        ErrorResponse(None, ErrorInfo(ErrorCode.MALFORMED, "line is not JSON")),
        '{"id":null,"error":{"code":"malformed","message":"line is not JSON"}}',
    ),
    (
        Event("snapshot", Snapshot(1.0, "h", None, ())),
        '{"event":"snapshot","data":{"taken_at":1.0,"host_name":"h","datasets_root":null,'
        '"datasets":[],"alerts":[],"jobs":[],"server":null,"gpus":[],"gpu_note":"",'
        '"training":[],"export":null,"evaluation":null,"operations":[],"autopilot":null}}',
    ),
    (Event("operation", OPERATION), '{"event":"operation","data":' + OPERATION_LINE + "}"),
]


@pytest.mark.parametrize(
    ("request_", "golden"), GOLDEN_REQUESTS, ids=lambda v: getattr(v, "method", "")
)
def test_every_request_round_trips_through_its_golden_line(
    request_: Request[object], golden: str
) -> None:
    assert encode(request_) == golden.encode() + b"\n"
    assert decode(golden) == request_


@pytest.mark.parametrize(("method", "result", "golden"), GOLDEN_RESULTS, ids=lambda v: str(v)[:8])
def test_every_result_round_trips_through_its_golden_line(
    method: str, result: Any, golden: str
) -> None:
    response = Response(1, json.loads(golden)["result"])
    assert encode(Response(1, result)) == golden.encode() + b"\n"
    decoded = decode(golden)
    assert decoded == response
    assert isinstance(decoded, Response)
    assert parse_result(METHODS[method], decoded) == result


@pytest.mark.parametrize(("message", "golden"), GOLDEN_OTHERS, ids=lambda v: type(v).__name__)
def test_errors_and_events_round_trip(message: Message, golden: str) -> None:
    assert encode(message) == golden.encode() + b"\n"
    assert decode(golden) == message


def test_the_goldens_cover_every_method_and_event() -> None:
    assert {r.method for r, _ in GOLDEN_REQUESTS} == set(METHODS)
    assert {m for m, _, _ in GOLDEN_RESULTS} == set(METHODS)
    assert {m.event for m, _ in GOLDEN_OTHERS if isinstance(m, Event)} == set(EVENTS)


@pytest.mark.parametrize(
    ("line", "code", "fragment"),
    [
        (b"not json", ErrorCode.MALFORMED, "not JSON"),
        (b"\xff\xfe", ErrorCode.MALFORMED, "not UTF-8"),
        (b"[1, 2]", ErrorCode.MALFORMED, "not object"),
        (b'{"id": 1}', ErrorCode.MALFORMED, "none of method"),
        (b'{"id": "1", "method": "ping"}', ErrorCode.MALFORMED, "integer id"),
        (b'{"id": 1, "method": "jobs.nuke", "params": {}}', ErrorCode.UNKNOWN_METHOD, "jobs.nuke"),
        (
            b'{"id": 1, "method": "ping", "params": []}',
            ErrorCode.INVALID_PARAMS,
            "expected an object",
        ),
        (
            b'{"id": 1, "method": "hello", "params": {"protocol_version": "1", "client_version": "x"}}',
            ErrorCode.INVALID_PARAMS,
            "HelloParams.protocol_version: expected int, got string",
        ),
        (
            b'{"id": 1, "method": "hello", "params": {"protocol_version": 1}}',
            ErrorCode.INVALID_PARAMS,
            "client_version",
        ),
        (
            b'{"id": 1, "method": "ping", "params": {"surprise": true}}',
            ErrorCode.INVALID_PARAMS,
            "unknown field 'surprise'",
        ),
        (b'{"event": "fireworks", "data": {}}', ErrorCode.MALFORMED, "unknown event"),
        (b"x" * (MAX_LINE_BYTES + 1), ErrorCode.OVERSIZED, "exceeds"),
        (b"[" * 100_000, ErrorCode.MALFORMED, "nested too deeply"),
        (b'{"id": ' + b"1" * 5000 + b', "method": "ping"}', ErrorCode.MALFORMED, "usable JSON"),
    ],
)
def test_bad_lines_raise_a_clear_protocol_error(line: bytes, code: str, fragment: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(line)
    assert caught.value.code == code
    assert fragment in caught.value.message


def test_an_error_for_a_known_id_carries_that_id() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(b'{"id": 9, "method": "nope"}')
    assert caught.value.request_id == 9


@given(st.binary(max_size=300))
def test_any_bytes_decode_or_raise_protocol_error(line: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode(line)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_any_json_in_a_request_decodes_or_raises_protocol_error(params: Any) -> None:
    for method in METHODS:
        with contextlib.suppress(ProtocolError):
            decode(json.dumps({"id": 1, "method": method, "params": params}))


def test_framer_splits_lines_across_chunks() -> None:
    framer = LineFramer(max_bytes=100)
    assert framer.feed(b'{"a"') == []
    assert framer.feed(b':1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert framer.pending_bytes == 4


def test_framer_drops_an_oversized_line_and_keeps_going() -> None:
    framer = LineFramer(max_bytes=10)
    out = framer.feed(b"short\n" + b"y" * 25)
    out += framer.feed(b"y" * 25 + b"\nnext\n")
    assert out == [b"short", OversizedLine(50), b"next"]
    assert framer.pending_bytes == 0


def test_bundle_digest_depends_on_paths_and_contents_not_order() -> None:
    files = [("agent/a.py", b"x"), ("agent/b.py", b"y")]
    assert bundle_digest(files) == bundle_digest(list(reversed(files)))
    assert bundle_digest(files) != bundle_digest([("agent/a.py", b"y"), ("agent/b.py", b"x")])
    assert bundle_digest([("agent/ab", b"")]) != bundle_digest([("agent/a", b"b")])


def test_mutating_requests_need_an_idempotency_key(monkeypatch: pytest.MonkeyPatch) -> None:
    poke = Method("jobs.poke", PingParams, PingResult, mutating=True)
    monkeypatch.setitem(METHODS, "jobs.poke", poke)
    with pytest.raises(ProtocolError) as caught:
        decode(b'{"id": 4, "method": "jobs.poke", "params": {}}')
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert "idempotency_key" in caught.value.message
    assert caught.value.request_id == 4
    keyed = Request(4, "jobs.poke", PingParams(), idempotency_key="launch-7f3a")
    assert decode(encode(keyed)) == keyed
    assert b'"idempotency_key":"launch-7f3a"' in encode(keyed)


def test_a_dataset_line_from_an_agent_without_window_rates_still_decodes() -> None:
    result: Any = SNAPSHOT  # a Response holds any result
    line = encode(Response(1, result)).decode()
    older = line.replace(',"tokens_per_s_by_window":[2.5,null]', "")
    assert older != line
    response = decode(older)
    assert isinstance(response, Response)
    [dataset] = parse_result(METHODS["snapshot"], response).datasets
    assert dataset.tokens_per_s_by_window == ()
    assert dataset.api_usage == DATASET.api_usage


def test_a_memo_reuses_unchanged_objects_and_never_an_old_form_of_a_new_one() -> None:
    memo = WireMemo()
    first = encode(Event("snapshot", SNAPSHOT), memo)
    changed = replace(SNAPSHOT, datasets=(replace(DATASET, tokens=4001), DATASET))
    second = encode(Event("snapshot", changed), memo)
    assert encode(Event("snapshot", SNAPSHOT), memo) == first
    assert second == encode(Event("snapshot", changed))
    assert b'"tokens":4001' in second


def test_a_memo_writes_the_very_line_json_dumps_writes() -> None:
    memo = WireMemo()
    odd = replace(
        DATASET, name="B2_ünïcode \"quoted\"\n", tokens_per_s=math.nan, eta_s=math.inf,
        eta_low_s=-math.inf, stale_code=True, last_response_at=1699999997.0,
    )  # fmt: skip
    aged = replace(odd, last_response_at=1699999997.5)
    for snapshot in (
        replace(SNAPSHOT, datasets=(DATASET, odd)),
        replace(SNAPSHOT, taken_at=1700000001.5, datasets=(DATASET, aged)),
        replace(SNAPSHOT, datasets=(aged, DATASET, replace(aged, api_usage=None))),
        replace(SNAPSHOT, datasets=()),
    ):
        assert encode(Event("snapshot", snapshot), memo) == encode(Event("snapshot", snapshot))
        assert encode_result(7, snapshot, memo) == encode(Response(7, to_wire(snapshot)))


def test_a_memo_encodes_only_the_fields_that_changed_since_the_last_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memo = WireMemo()
    settled = replace(DATASET, last_response_at=1699999940.0)
    encode(Event("snapshot", SNAPSHOT), memo)
    encode(Event("snapshot", replace(SNAPSHOT, datasets=(settled,))), memo)
    encoded: list[Any] = []
    text = encoding._text

    def recording(value: Any, *args: Any) -> str:
        encoded.append(value)
        return text(value, *args)

    monkeypatch.setattr(encoding, "_text", recording)
    moved = replace(settled, last_response_at=1699999941.25)
    line = encode(Event("snapshot", replace(SNAPSHOT, datasets=(moved,))), memo)
    assert 1699999941.25 in encoded
    assert b'"last_response_at":1699999941.25' in line
    assert not {"B1_sharegpt", 4000, 12.5} & {
        v for v in encoded if isinstance(v, (str, int, float))
    }
    assert DATASET.api_usage not in encoded
    assert DATASET.tokens_per_s_by_window not in encoded


@dataclass(frozen=True)
class WithList:
    items: list[int]
    count: int


def test_a_memo_encodes_again_a_list_that_changed_in_place() -> None:
    memo = WireMemo()
    items = [1]
    encode_result(1, WithList(items, 1), memo)
    items.append(2)
    assert (
        encode_result(2, WithList(items, 2), memo)
        == b'{"id":2,"result":{"items":[1,2],"count":2}}\n'
    )
