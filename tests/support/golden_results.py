"""Golden wire lines of every result, error and event, with the objects they are made of."""

from __future__ import annotations

from typing import Any

from agent.protocol import (
    Alert,
    ApiUsage,
    AuditEntry,
    AuditResult,
    AutopilotStage,
    AutopilotStatus,
    AutostartStatus,
    DatasetDetail,
    DatasetProgress,
    Done,
    DrafterCheck,
    DrafterField,
    ErrorCode,
    ErrorInfo,
    ErrorResponse,
    ErrorSummary,
    Event,
    EventsList,
    FilesHashResult,
    FileState,
    HelloResult,
    InstallResult,
    JobEvent,
    JobInfo,
    JobsList,
    LogChunk,
    LogInfo,
    LogLagged,
    LogsList,
    Message,
    NotifyStatus,
    OperationInfo,
    OperationsList,
    OperationStep,
    PingResult,
    PipelineApplied,
    ResponseSummary,
    Snapshot,
    StopResult,
    StopStep,
    TimelineEvent,
    TokenizerCheck,
    TokensAt,
)

DATASET = DatasetProgress(
    "B1_sharegpt", 10, 4, 4000, 10_000, tokens_per_s=12.5, status="idle",
    api_usage=ApiUsage(3, 1, 0.25, rate_limited=2), tokens_per_s_by_window=(2.5, None),
    truncated_responses=1, max_new_tokens=4096, turn_records=3, conversations_done=1,
)  # fmt: skip
SNAPSHOT = Snapshot(
    taken_at=1700000000.5,
    host_name="gpu-0",
    datasets_root="/data",
    datasets=(DATASET,),
    alerts=(Alert("over_budget", "error", "B1 is over budget", subject="B1_sharegpt"),),
)
HELLO_RESULT = HelloResult(
    2, "0.1.0", "ab" * 32, 42, "gpu-0", 1700000000.0,
    pipeline_differences=("datasets.root: /data/a → /data/b", "notify.url changed"),
)  # fmt: skip


JOB = JobInfo(
    "sleeper-1", "sleeper", "command", "running", ("sleep", "9"), pid=12, pgid=11, gpu=True
)
JOB_LINE = (
    '{"id":"sleeper-1","name":"sleeper","kind":"command","state":"running","argv":["sleep","9"],'
    '"pid":12,"pgid":11,"dataset":null,"started_at":null,"ended_at":null,"exit_code":null,'
    '"exit_signal":null,"gpu":true,"external":false,"log_path":null,"code_sha256":null,"cwd":null,'
    '"restart_of":null,"restarts":0,"restart_note":null,"exit_reason":null,"node":null}'
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
            {"top_k": "20", "turns": "all"},
        ),  # fmt: skip
        '{"id":1,"result":{"name":"B1","window_responses":2,"recent":[{"id":"p1","completion_tokens":30,'
        '"finish_reason":"length","latency_s":2.5}],"finish_reasons":{"length":1,"stop":1},'
        '"length_edges":[0,10,20],"length_counts":[1,1],"errors":[{"id":"p9","reason":'
        '"HTTP 400: too long","permanent":true}],"api_usage":{"reencoded_responses":1,'
        '"reencode_mismatches":0,"cost_credits":0.002,"rate_limited":0,"paused_until":null,'
        '"responses":2},"tokens_over_time":[{"ts":5.0,"tokens":300}],"budget":1000,'
        '"generation":{"top_k":"20","turns":"all"}}}',
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
        NotifyStatus("https://hooks.example/…", 3, 2, "HTTP 503", 7.0, 1),
        '{"id":1,"result":{"site":"https://hooks.example/\\u2026","sent":3,"dead_letters":2,'
        '"last_failure":"HTTP 503","last_failure_at":7.0,"pending":1}}',
    ),
    (
        "tokenizer.check",
        TokenizerCheck(
            "/models/kimi", True, True, "", "TikTokenTokenizer", 163840, True, "<think>", True
        ),
        '{"id":1,"result":{"path":"/models/kimi","trust_remote_code":true,"ok":true,"detail":"",'
        '"class_name":"TikTokenTokenizer","vocab_size":163840,"has_chat_template":true,'
        '"think_marker":"<think>","ships_code":true}}',
    ),  # fmt: skip
    (
        "drafter.check",
        DrafterCheck(
            "/out/e",
            False,
            (DrafterField("d2t/t2d", False, "no d2t", "d2t[K]", "save it"),),
            "specforge",
            "sglang",
            "",
            5.0,
        ),
        '{"id":1,"result":{"checkpoint":"/out/e","ok":false,"fields":[{"name":"d2t/t2d","ok":false,'
        '"found":"no d2t","expected":"d2t[K]","fix":"save it"}],"layout":"specforge",'
        '"server":"sglang","note":"","checked_at":5.0}}',
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
        '{"id":1,"result":{"protocol_version":2,"agent_version":"0.1.0","bundle_sha256":"'
        + "ab" * 32
        + '","pid":42,"host_name":"gpu-0","started_at":1700000000.0,"pipeline_taken":false,'
        '"pipeline_differences":["datasets.root: /data/a \\u2192 /data/b","notify.url changed"]}}',
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
        '"rate_limited":2,"paused_until":null,"responses":0},"tokens_per_s_by_window":[2.5,null],'
        '"truncated_responses":1,"max_new_tokens":4096,"turn_records":3,"conversations_done":1}],'
        '"alerts":[{'
        '"kind":"over_budget","severity":"error","message":"B1 is over budget",'
        '"subject":"B1_sharegpt","raised_at":0.0}],"jobs":[],"server":null,"gpus":[],"gpu_note":"",'
        '"training":[],"export":null,"evaluation":null,"hidden_states_plan":null,"hidden_states_check":null,"drafter_check":null,"operations":[],"autopilot":null}}',
    ),
    (
        "operations.redeploy",
        OPERATION,
        '{"id":1,"result":' + OPERATION_LINE + "}",
    ),
    ("operations.generate", OPERATION, '{"id":1,"result":' + OPERATION_LINE + "}"),
    ("operations.sequence", OPERATION, '{"id":1,"result":' + OPERATION_LINE + "}"),
    ("operations.sweep", OPERATION, '{"id":1,"result":' + OPERATION_LINE + "}"),
    (
        "operations.list",
        OperationsList((OPERATION,)),
        '{"id":1,"result":{"operations":[' + OPERATION_LINE + "]}}",
    ),
    ("autopilot.status", AutopilotStatus("off"), '{"id":1,"result":' + AUTOPILOT_OFF + "}"),
    ("autopilot.control", AUTOPILOT, '{"id":1,"result":' + AUTOPILOT_LINE + "}"),
    ("autostart.status", AUTOSTART, '{"id":1,"result":' + AUTOSTART_LINE + "}"),
    ("autostart.set", AUTOSTART, '{"id":1,"result":' + AUTOSTART_LINE + "}"),
    (
        "pipeline.apply",
        PipelineApplied(("jobs added: vocab",)),
        '{"id":1,"result":{"differences":["jobs added: vocab"]}}',
    ),
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
        '"training":[],"export":null,"evaluation":null,"hidden_states_plan":null,"hidden_states_check":null,"drafter_check":null,"operations":[],"autopilot":null}}',
    ),
    (Event("operation", OPERATION), '{"event":"operation","data":' + OPERATION_LINE + "}"),
]
